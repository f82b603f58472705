"""BC5CDR test as a second held-out set: every system of a run on chemical-induced-disease pairs.

    .venv/bin/python experiments/cid_heldout.py --run-dir RUN \
        --gold ../shared/datasets/bc5cdr/CDR_TestSet.PubTator.txt [--resamples 1000]

RUN is a finished extract stage over BC5CDR's test abstracts with their gold chemicals and diseases
(``extract.paths`` and ``evaluate.gold`` both the test file, so that :mod:`pipelines.holdout` keeps
their relations out of the seed triples and the typer). Nothing was ever tuned on this set, and its
annotators are not BioRED's, so it checks whether the lead over the supervised baselines seen on
BioRED dev carries to documents no setting was chosen on.

BC5CDR annotates one relation, CID (the chemical induces the disease), and only chemicals and
diseases. The run's systems answer in BioRED's types, so each system is scored twice, per document
as ``graphmert evaluate`` scores (:func:`graphmert.eval.metrics.pair_sets`):

- **chemical–disease pairs**: its pairs of one chemical and one disease (the gold's category of each
  id in its document) against the gold's (BC5CDR: the CID pairs). A right pair typed as a treatment counts too, so
  precision here is a floor: BC5CDR leaves treatments and other relations unannotated;
- **induces**: only those typed ``Positive_Correlation`` (after ``evaluate.relation_map``), the
  BioRED type that holds CID, against the gold's so typed (BC5CDR: the CID pairs again).

Pairs of other category pairs (chemical–chemical) are left out of both: BC5CDR has no gold for them.
An end's category is the gold's where the gold names that id in the document, else the triple's own
(:func:`triple_categories`): on raw text (``configs/biored-raw.yaml``) a chemical–disease triple with a
mislinked or unlinked end is then a false chemical–disease pair, as every triple counts in
``graphmert evaluate``, not a pair the gold cannot judge.
For each system but graphmert, graphmert's F1 minus its own, with the paired-bootstrap interval over
the documents of ``graphmert evaluate`` (:func:`graphmert.eval.f1_difference`). A few seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import print_table, run_documents, system_files, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.bootstrap import document_counts, f1_difference  # noqa: E402
from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.eval.metrics import end_keys, pair_sets, prf, triple_documents  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402

CHEMICAL_DISEASE = frozenset({"biolink:ChemicalEntity", "biolink:Disease"})
INDUCES = "Positive_Correlation"       # the BioRED type that holds BC5CDR's CID


def chemical_disease(pairs: set, typed: set, categories: dict) -> tuple[set, set]:
    """(every chemical–disease pair, those typed :data:`INDUCES` or CID) of untyped and typed pair
    sets, each as ``(doc, {chemical, disease})``; ``categories``: the gold's (doc, id) → category.
    For BC5CDR's gold both are its CID pairs; for BioRED's, its chemical–disease pairs and those of
    them typed ``Positive_Correlation``."""
    def kept(doc, pair):
        return {categories.get((doc, i)) for i in pair} == CHEMICAL_DISEASE
    return ({(d, p) for d, p in pairs if kept(d, p)},
            {(d, p) for d, p, t in typed if t in (INDUCES, "CID") and kept(d, p)})


def triple_categories(triples: list) -> dict[tuple[str, str], str]:
    """(doc, end) → the Biolink category the triples give the end, for every document of each
    triple's evidence; an end is keyed as the pair scores key it (:func:`~graphmert.eval.metrics.end_keys`:
    its id, or ``unlinked:<name>``), so an unlinked end has its category too."""
    out: dict[tuple[str, str], str] = {}
    for t in triples:
        for end, category in zip(end_keys(t), (t.head_category, t.tail_category)):
            for doc in triple_documents(t):
                out.setdefault((doc, end), category)
    return out


def systems_of(run: Path) -> list[str]:
    """graphmert, then every control the run's extract stage wrote (``control-<name>.parquet``)."""
    return ["graphmert"] + sorted(f.stem.removeprefix("control-")
                                  for f in (run / "extract").glob("control-*.parquet"))


def score(run: Path, gold_files: list[str], resamples: int) -> list[dict]:
    """One row per system (module docstring)."""
    docs = run_documents(run)
    gold = load_gold(gold_files).subset(docs)
    order = sorted(gold.documents)
    rmap = dict(load_config(run / "config.yaml").evaluate.relation_map)
    found = {}
    for name in systems_of(run):
        triples = list(read_triples(system_files(run, name)))
        pairs, typed = pair_sets(triples, rmap)
        found[name] = chemical_disease(pairs, typed, {**triple_categories(triples), **gold.categories})
    truth = chemical_disease(gold.untyped, gold.typed, gold.categories)
    rows = []
    for name, parts in found.items():
        row = {"system": name}
        for k, label in enumerate(("pairs", "induces")):
            pred = {p for p in parts[k] if p[0] in gold.documents}
            s = prf(pred, truth[k])
            row.update({f"{label} P": s["precision"], f"{label} R": s["recall"], f"{label} F1": s["f1"],
                        f"{label} predicted": s["predicted"]})
            if name != "graphmert":
                d = f1_difference(document_counts(found["graphmert"][k], truth[k], order),
                                  document_counts(pred, truth[k], order), resamples)
                row[f"graphmert − it, {label}"] = f"{d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--gold", required=True, nargs="+")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    rows = score(a.run_dir, a.gold, a.resamples)
    print_table(rows, f"{a.run_dir}: chemical–disease pairs against the gold's (BC5CDR: CID)")
    write_json("cid_heldout", rows, a.out, run_dir=str(a.run_dir), gold=a.gold)


if __name__ == "__main__":
    main()
