"""Folds of BioRED train that no setting was chosen on, and the systems' scores pooled over them.

    .venv/bin/python experiments/folds.py write ../shared/datasets/biored/Train.PubTator --lo 0.2 --hi 0.4 \\
        --output build/folds/Train.fold2.PubTator [--fresh-for-entities]
    graphmert run --config configs/biored.yaml --run-dir runs/fold2 \\
        'extract.paths=[build/folds/Train.fold2.PubTator]' 'evaluate.gold=[build/folds/Train.fold2.PubTator]'
    .venv/bin/python experiments/folds.py pool --run-dirs runs/fold2 runs/fold3 … [--resamples 1000]

``write`` keeps the documents with u(id) in [lo, hi), u the slice hash of ``extract.document_fraction``
(:func:`graphmert.corpus.fraction.document_fraction`): ``--lo 0 --hi 0.2`` is the tuning slice of
docs/EVALUATION.md, any range above it documents nothing was tuned on. Each kept document's block
(title, abstract, mention and relation lines) is copied byte for byte, in the input's order, and the
output is written atomically. ``--fresh-for-entities`` also leaves out the 82 held-out BioRED-train
documents the entity studies chose the recognizer's and linker's settings on
(``_study.held_out``, another hash), for a raw-text fold.

Given as a run's ``extract.paths`` and ``evaluate.gold`` (``extract.document_fraction`` left at 1.0),
a fold is held out as the slice is: its relations stay out of the seed triples, the relation typer,
the pair heads and the ``lexical_document`` fit (:func:`pipelines.holdout.held_out_documents`), and
only its documents are scored.

``pool`` reads finished runs (their ``evaluate.gold`` and relation map, graphmert's triples and each
control's, and the baselines of ``evaluate.baselines`` made again as the evaluate stage makes them)
and scores every system over all their documents at once, as ``graphmert evaluate`` scores one run
(every triple counts, :func:`graphmert.eval.metrics.pair_sets`): the pooled micro scores, each run's
F1, and graphmert's F1 minus each other system's with a paired bootstrap over the pooled documents
(:func:`graphmert.eval.bootstrap.f1_difference`). The runs' documents must be distinct. Where every
run recognised its documents (raw text: ``RUN/extract/documents.parquet``), it also scores the
entities over all of them at once: recognition and normalisation per category, as ``metrics.md``
does for one run (:mod:`graphmert.eval.entities`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import held_out, print_table, run_documents, system_files, write_json  # noqa: E402

import numpy as np  # noqa: E402

from graphmert.io import atomic_path  # noqa: E402
from graphmert.corpus.fraction import document_fraction  # noqa: E402


def blocks(text: str) -> list[str]:
    """The documents of a PubTator text: its blank-line separated blocks, each without the blank line."""
    return [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]


def block_id(block: str, where: str) -> str:
    """The document id of a PubTator block: what precedes the first ``|`` of its first line."""
    first = block.lstrip("\n").split("\n", 1)[0]
    doc_id, bar, _ = first.partition("|")
    if not bar or not doc_id:
        raise SystemExit(f"{where}: a block starts with {first[:60]!r}, not 'ID|t|title'")
    return doc_id


def fold(text: str, lo: float, hi: float, where: str, fresh_for_entities: bool = False) -> list[str]:
    """The blocks of the PubTator ``text`` whose document has u(id) in [lo, hi), in order; with
    ``fresh_for_entities`` not one the entity studies chose on (module docstring)."""
    ids = [(b, block_id(b, where)) for b in blocks(text)]
    return [b for b, i in ids if lo <= document_fraction(i) < hi and not (fresh_for_entities and held_out(i))]


def write(a: argparse.Namespace) -> None:
    if not 0.0 <= a.lo < a.hi <= 1.0:
        raise SystemExit(f"--lo {a.lo} --hi {a.hi}: need 0 <= lo < hi <= 1")
    if a.output.resolve() == a.input.resolve():
        raise SystemExit(f"{a.output}: the output would overwrite the input")
    kept = fold(a.input.read_text(encoding="utf-8"), a.lo, a.hi, str(a.input), a.fresh_for_entities)
    if not kept:
        raise SystemExit(f"{a.input}: no document has u in [{a.lo}, {a.hi})")
    with atomic_path(a.output) as tmp:
        Path(tmp).write_text("\n\n".join(kept) + "\n\n", encoding="utf-8")
    print(f"{a.output}: {len(kept)} documents with u in [{a.lo}, {a.hi})")


def run_counts(run: Path) -> tuple[list[str], dict[str, dict[str, np.ndarray]]]:
    """A finished run's scored documents and, per system (graphmert, its controls, then the baselines
    of ``evaluate.baselines`` over the mentions extraction had), the [D, 3] per-document (tp,
    predicted, gold) counts, untyped and typed, as ``graphmert evaluate`` counts them."""
    import json

    from graphmert.config import load_config
    from graphmert.eval.bootstrap import document_counts
    from graphmert.eval.gold import load_gold
    from graphmert.eval.metrics import pair_sets
    from graphmert.extract.triples import read_triples

    cfg = load_config(run / "config.yaml")
    if not cfg.evaluate.gold:
        raise SystemExit(f"{run}: its config names no evaluate.gold")
    gold = load_gold(cfg.evaluate.gold, format=cfg.evaluate.format).subset(run_documents(run))
    docs = sorted(gold.documents)
    manifest = json.loads((run / "extract" / "manifest.json").read_text(encoding="utf-8"))
    rmap = dict(cfg.evaluate.relation_map)
    pairs = {name: pair_sets(read_triples(system_files(run, name)), rmap)
             for name in ["graphmert", *manifest.get("controls", {})]}
    pairs.update(baselines(run, cfg, gold, manifest))
    return docs, {name: {"untyped": document_counts(untyped, gold.untyped, docs),
                         "typed": document_counts(typed, gold.typed, docs)}
                  for name, (untyped, typed) in pairs.items()}


def baselines(run: Path, cfg, gold, extract_manifest: dict) -> dict[str, tuple[set, set]]:
    """The run's ``evaluate.baselines`` pairs as its evaluate stage made them: over the recognised,
    linked mentions where extraction recognised them, with the seed KG less the held-out documents'
    relations and the graphs stage's relation schema."""
    from graphmert.kg.loaders import load_kg
    from graphmert.kg.schema import RelationSchema
    from pipelines.holdout import held_out_documents
    from pipelines.stages.evaluate import as_recognised, baseline_pairs, recognised_documents

    if not cfg.evaluate.baselines:
        return {}
    found = recognised_documents(run / "extract", extract_manifest, gold)
    kg = load_kg(cfg.kg, held_out_documents(cfg, run_documents(run)))
    schema = RelationSchema.load(run / "graphs" / "relation_schema.json")
    return baseline_pairs(cfg, as_recognised(gold, found) if found else gold, kg, schema)


def run_entities(run: Path) -> tuple[list, list] | None:
    """A finished run's recognised documents and the gold documents it is scored on (the same ids),
    or None for a run that recognised none (gold mentions)."""
    from graphmert.config import load_config
    from graphmert.corpus.document import read_documents
    from graphmert.eval.gold import load_gold
    from pipelines.stages import RECOGNIZED_FILE

    path = run / "extract" / RECOGNIZED_FILE
    if not path.is_file():
        return None
    cfg = load_config(run / "config.yaml")
    gold = load_gold(cfg.evaluate.gold, format=cfg.evaluate.format).subset(run_documents(run))
    return [d for d in read_documents(path) if d.id in gold.documents], list(gold.documents.values())


def pooled_entities(runs: list[tuple[list, list]]) -> list[dict]:
    """Recognition and normalisation P/R/F1 per category over every run's documents at once
    (:func:`run_entities` of each run), not the mean of the runs' scores."""
    from graphmert.eval.entities import normalisation_scores, recognition_scores

    found = [d for f, _ in runs for d in f]
    gold = [d for _, g in runs for d in g]
    rec, norm = recognition_scores(found, gold), normalisation_scores(found, gold)
    return [{"entities": c.replace("biolink:", ""),
             **{f"{name} {k}": round(scores[c][key], 4) for name, scores in (("recognition", rec),
                                                                            ("normalisation", norm))
                for k, key in (("P", "precision"), ("R", "recall"), ("F1", "f1"))}}
            for c in rec]


def pool(a: argparse.Namespace) -> None:
    from graphmert.eval.bootstrap import counts_f1, f1_difference

    runs = [run_counts(r) for r in a.run_dirs]
    seen: set[str] = set()
    for r, (docs, _) in zip(a.run_dirs, runs):
        if seen & set(docs):
            raise SystemExit(f"{r}: scores documents another run scores ({sorted(seen & set(docs))[:3]}); "
                             "pool folds of distinct documents")
        seen |= set(docs)
    systems = [s for s in runs[0][1] if all(s in c for _, c in runs)]
    pooled = {s: {k: np.concatenate([c[s][k] for _, c in runs]) for k in ("untyped", "typed")} for s in systems}
    rows = []
    for s in systems:
        per_run = [counts_f1(c[s]["untyped"]) for _, c in runs]
        tp, predicted, gold = pooled[s]["untyped"].sum(axis=0)
        row = {"system": s, "P": round(tp / predicted, 3) if predicted else 0.0,
               "R": round(tp / gold, 3) if gold else 0.0,
               "F1": round(counts_f1(pooled[s]["untyped"]), 3), "typed F1": round(counts_f1(pooled[s]["typed"]), 3),
               "F1 per run": " ".join(f"{f:.3f}" for f in per_run),
               "F1 mean ± sd over runs": f"{statistics.mean(per_run):.3f} ± "
                                         f"{statistics.stdev(per_run) if len(per_run) > 1 else 0.0:.3f}"}
        if s != "graphmert":
            for kind, label in (("untyped", ""), ("typed", "typed ")):
                d = f1_difference(pooled["graphmert"][kind], pooled[s][kind], a.resamples)
                row[f"graphmert − it, {label}Δ [95%]"] = f"{d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
        rows.append(row)
    print_table(rows, f"{len(seen)} documents of {len(runs)} runs pooled ({', '.join(map(str, a.run_dirs))}); "
                      f"paired bootstrap over the pooled documents, {a.resamples} resamples")
    entities = [run_entities(r) for r in a.run_dirs]
    entity_rows = pooled_entities(entities) if all(e is not None for e in entities) else []
    if entity_rows:
        print_table(entity_rows, "the recognised entities of the pooled documents (strict spans; document-level ids)")
    write_json("folds", rows, a.out, runs=[str(r) for r in a.run_dirs], documents=len(seen), entities=entity_rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write a fold of a PubTator file")
    w.add_argument("input", type=Path, help="a PubTator file")
    w.add_argument("--lo", type=float, required=True, help="the fold's lowest u (inclusive)")
    w.add_argument("--hi", type=float, required=True, help="the fold's highest u (exclusive)")
    w.add_argument("--output", type=Path, required=True)
    w.add_argument("--fresh-for-entities", action="store_true",
                   help="also leave out the documents the entity studies chose their settings on")
    p = sub.add_parser("pool", help="score every system over the documents of several finished runs")
    p.add_argument("--run-dirs", type=Path, nargs="+", required=True)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = ap.parse_args(argv)
    (write if a.command == "write" else pool)(a)


if __name__ == "__main__":
    main()
