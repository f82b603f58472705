"""Entity recognizer variants, chosen on held-out BioRED-train documents (issue #19).

    .venv/bin/python experiments/recognizer.py --variant shipped \\
        --variant separate 'ner.separate_categories=[biolink:Gene]' \\
        --variant wide ner.width=128 ner.embed_rows=10000 [--out F]

A variant is a name and dotted overrides on top of configs/biored-raw.yaml (none: the config as it
is). Every variant trains the recognizer exactly as the ``ner`` stage does
(:func:`graphmert.ner.recognizer.train_recognizer`, on the documents of ``ner.sources`` in the shared
corpus) except that the held-out 20% of the BioRED-train documents (``_study.held_out``, the split
``experiments/linking.py`` chooses its threshold on: 82 documents) are left out. It is then scored there,
from the raw text, with ``graphmert evaluate``'s strict-span recognition scores
(:func:`graphmert.eval.entities.recognition_scores`). BioRED annotates all three categories, so those
documents need none of the partial-annotation care of the training set. BioRED dev is never read.

Variants train one after another (never two at once on the shared cores). Each row reports the
training minutes and the selection-slice F1 that picked its epoch beside the held-out scores. Each
variant is scored twice: as trained, and with ``extract.propagate_mentions`` (one sense per
document: every other occurrence of a recognised text is a mention too), which needs no training of
its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _study import ROOT, lent_documents, print_table, recognizer_documents, require_shared, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.entities import MICRO, recognition_scores  # noqa: E402
from graphmert.ner.recognizer import LABELS, train_recognizer  # noqa: E402

CONFIG = ROOT / "configs" / "biored-raw.yaml"


def further_texts(paths: list[str], held: set[str]) -> list[str]:
    """The texts of the variant's ``ner.paths`` beyond the shared corpus's abstracts (which
    :func:`_study.recognizer_documents` reads): what ``ner.vectors`` also learns from when a variant
    adds, say, ``pubmed_unlabeled/texts.jsonl.gz``. Never a held-out document."""
    from graphmert.corpus.readers import read_corpus

    corpus = require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz").resolve()
    further = [p for p in paths if Path(p).resolve() != corpus]
    return [d.text for d in read_corpus(further) if d.id not in held] if further else []


def score_row(name: str, recognizer, report: dict, held: list, propagate: bool = False) -> dict:
    found = list(recognizer.recognize([replace(d, mentions=[]) for d in held], propagate=propagate))
    s = recognition_scores(found, held)
    row = {"variant": name + (" + propagate" if propagate else ""), "minutes": report["minutes"],
           "selection F1": report["selection"]["f"]}
    for cat, label in LABELS.items():
        row[f"{label} P"], row[f"{label} R"], row[f"{label} F1"] = (
            round(s[cat][k], 4) for k in ("precision", "recall", "f1"))
    row.update({"micro P": round(s[MICRO]["precision"], 4), "micro R": round(s[MICRO]["recall"], 4),
                "micro F1": round(s[MICRO]["f1"], 4)})
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", nargs="+", action="append", default=[], metavar="NAME [OVERRIDE]",
                    help="a name, then its dotted overrides (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--save", type=Path, default=None, metavar="DIR",
                    help="also save each variant's recognizer in DIR/<name> (to score rules on top of it)")
    a = ap.parse_args()
    variants = [(v[0], v[1:]) for v in a.variant] or [("shipped", [])]
    split = recognizer_documents(load_config(CONFIG).ner.sources)
    train, held = split["train"], split["held"]
    print(f"{len(train)} training documents, {len(held)} held-out BioRED-train documents")
    rows = []
    for name, overrides in variants:
        cfg = load_config(CONFIG, overrides).ner
        extra = lent_documents(split, cfg.part_sources)
        t0 = time.perf_counter()
        texts = split["texts"] + further_texts(cfg.paths, {d.id for d in held})
        recognizer, report = train_recognizer(train, cfg, extra=extra, texts=texts)
        if a.save:
            recognizer.save(a.save / name, report)
        rows += [score_row(name, recognizer, report, held, propagate) for propagate in (False, True)]
        print(f"{name}: {time.perf_counter() - t0:.0f} s; {rows[-2:]}", flush=True)
    print_table(rows, f"recognition on {len(held)} held-out BioRED-train documents (strict spans)")
    if a.out:
        write_json("recognizer", rows, a.out, variants={n: o for n, o in variants})


if __name__ == "__main__":
    main()
