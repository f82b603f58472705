"""Which extracted raw-text pairs are false, by what their ends rest on (issue #49).

    .venv/bin/python experiments/raw_precision.py --run-dir runs/tune-raw-heads \
        --gold ../shared/datasets/biored/Train.PubTator                        # a few seconds

Reads a finished raw-text run (``configs/biored-raw.yaml``): its recognised, linked documents
(``RUN/extract/documents.parquet``), graphmert's triples and the run's linker, and the annotated gold
of the same documents. Each end of an extracted pair (document, {head, tail}) is described by

* its **support**: how many recognised mentions of the document carry the end's id;
* its **link**: the look-up step that gave the id (:class:`~graphmert.ner.linking.LinkResult`
  ``how``, found by linking the recognised mentions again with the run's linker and species
  settings; ``variant`` for the sequence variants the rules give), the most trusted over the end's
  mentions, in the order of :data:`TRUST`.

It prints the pairs and their precision by the weaker end's support and by the weaker end's link,
and the pair P / R / F1 that dropping each weak bucket would give: what a filter on the ends could
buy, chosen on the raw slice (never on dev). Every triple counts, so an unlinked end (a text node,
when ``extract.text_entities`` keeps them) is its own bucket.

Then whether the ends say what the confidence does not: the precision by confidence band and weaker
end's support, and the ROC AUC of a logistic regression on logit(confidence) alone, with log(support),
and with the weaker end's link step too, each fitted and scored by 5-fold cross-validation over the
documents (the pooled held-out predictions of ``cross_chunk.cross_validated``): what a confidence that read the ends would rank.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import document_fold, print_table, run_documents, system_files, write_json  # noqa: E402
from cross_chunk import cross_validated  # noqa: E402
from raw_pairs import run_linker  # noqa: E402

from graphmert.corpus.document import Document, read_documents  # noqa: E402
from graphmert.eval.calibration import pair_confidences  # noqa: E402
from graphmert.eval.gold import load_gold  # noqa: E402
from graphmert.eval.metrics import pair_sets  # noqa: E402
from graphmert.extract.triples import read_triples  # noqa: E402
from graphmert.ner.linking import EntityLinker  # noqa: E402
from graphmert.ner.variants import VARIANT_TYPE  # noqa: E402
from pipelines.stages import RECOGNIZED_FILE  # noqa: E402

#: look-up steps, most trusted first (an end takes the best over its mentions)
TRUST = ("dictionary", "abbreviation", "kg", "reference", "terms", "composite", "variant", "fuzzy",
         "none")


def end_links(doc: Document, linker: EntityLinker) -> dict[str, tuple[int, str]]:
    """Entity id → (recognised mentions carrying it, its most trusted look-up step) in ``doc``."""
    bare = copy.deepcopy(doc)
    variant = [bool(m.ids) and m.type == VARIANT_TYPE for m in bare.mentions]
    for m, keep in zip(bare.mentions, variant):
        if not keep:
            m.ids, m.xrefs = [], []
    support: Counter = Counter()
    how: dict[str, str] = {}
    for m, v, r in zip(doc.mentions, variant, linker.link_mentions(bare)):
        step = "variant" if v else (r.how if r is not None else "none")
        for eid in m.ids:
            support[eid] += 1
            if eid not in how or TRUST.index(step) < TRUST.index(how[eid]):
                how[eid] = step
    return {eid: (n, how[eid]) for eid, n in support.items()}


def _prf(kept: set, gold: set) -> dict:
    tp = len(kept & gold)
    p, r = tp / max(1, len(kept)), tp / max(1, len(gold))
    return {"P": round(p, 3), "R": round(r, 3), "F1": round(2 * p * r / max(1e-9, p + r), 3)}


def buckets(predicted: set, gold: set, ends: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(rows by the weaker end's support, rows by its link), each with the drop-this-bucket score."""
    by_support: dict[str, set] = defaultdict(set)
    by_link: dict[str, set] = defaultdict(set)
    for key in predicted:
        n, how = _weaker(key, ends)
        by_support["unlinked end" if n == 0 else str(n) if n < 3 else "3+"].add(key)
        by_link[how].add(key)
    tables = []
    for groups, name in ((by_support, "weaker end's support"), (by_link, "weaker end's link")):
        tables.append([{name: k, "pairs": len(v), "precision": round(len(v & gold) / len(v), 3),
                        **{f"{m} without": x for m, x in _prf(predicted - v, gold).items()}}
                       for k, v in sorted(groups.items())])
    return tables[0], tables[1]


BANDS = ((0.0, 0.7), (0.7, 0.9), (0.9, 1.01))


def _weaker(pair_key, ends: dict[str, dict]) -> tuple[int, str]:
    """(the lower support, the less trusted link) of the pair's two ends."""
    doc, pair = pair_key
    info = [ends.get(doc, {}).get(e, (0, "none")) for e in pair]
    return min(i[0] for i in info), max((i[1] for i in info), key=TRUST.index)


def cv_auc(x, y, docs: list[str]) -> float | None:
    """ROC AUC of the logistic regression of :func:`cross_chunk.cross_validated` on the columns ``x``,
    each document's rows predicted by the fit on the other folds' documents; None when a fit would
    see one label only."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    folds = np.array([document_fold(d, 5) for d in docs])
    if any(len(set(y[folds != f])) < 2 for f in set(folds)):
        return None
    p = cross_validated([{"x": row, "gold": g, "doc": d} for row, g, d in zip(x, y, docs)])
    return round(float(roc_auc_score(y, p)), 3)


def with_confidence(conf: dict, gold: set, ends: dict[str, dict]) -> tuple[list[dict], dict]:
    """(precision by confidence band × the weaker end's support 1, 2, 3+, the cross-validated AUCs)
    of the pairs ``conf`` (pair → confidence)."""
    import numpy as np

    keys = sorted(conf, key=lambda k: (k[0], sorted(k[1])))
    if not keys:
        return [], {}
    y = np.array([k in gold for k in keys], dtype=int)
    c = np.clip(np.array([conf[k] for k in keys], dtype=float), 1e-6, 1 - 1e-6)
    weak = [_weaker(k, ends) for k in keys]
    support = np.array([n for n, _ in weak])
    rows = []
    for lo, hi in BANDS:
        row = {"confidence": f"{lo:.1f}–{min(hi, 1):.1f}"}
        for n, name in ((1, "1"), (2, "2"), (3, "3+")):
            sel = (c >= lo) & (c < hi) & (np.minimum(support, 3) == n)
            row[f"support {name}: pairs"] = int(sel.sum())
            row[f"support {name}: P"] = round(float(y[sel].mean()), 3) if sel.any() else None
        rows.append(row)
    docs = [k[0] for k in keys]
    logit = np.log(c / (1 - c))[:, None]
    log_support = np.log(np.maximum(support, 1))[:, None]
    steps = np.array([[how == t for t in TRUST[1:]] for _, how in weak], dtype=float).reshape(len(keys), -1)
    auc = {"confidence": cv_auc(logit, y, docs), "+ support": cv_auc(np.c_[logit, log_support], y, docs),
           "+ support + link": cv_auc(np.c_[logit, log_support, steps], y, docs)}
    return rows, auc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--gold", required=True, nargs="+")
    p.add_argument("--system", default="graphmert", help="whose triples: graphmert or a control")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    ex = a.run_dir / "extract"
    docs = run_documents(a.run_dir)
    linker = run_linker(a.run_dir)
    if not (ex / RECOGNIZED_FILE).is_file() or linker is None:
        raise SystemExit(f"{ex / RECOGNIZED_FILE} or the run's linker: missing; this reads a raw-text run "
                         "(configs/biored-raw.yaml)")
    gold = load_gold(a.gold).subset(docs).untyped
    ends = {d.id: end_links(d, linker) for d in read_documents(ex / RECOGNIZED_FILE)}
    files = system_files(a.run_dir, a.system)
    if not files or not all(f.is_file() for f in files):
        raise SystemExit(f"{ex}: no triple files of {a.system!r}")
    predicted = {x for x in pair_sets(read_triples(files))[0] if x[0] in docs}
    print(f"{a.system}: {len(predicted)} pairs, {_prf(predicted, gold)} against {len(gold)} gold pairs")
    support, link = buckets(predicted, gold, ends)
    print_table(support, "by the weaker end's support (recognised mentions carrying its id)")
    print_table(link, "by the weaker end's link (the look-up step that gave its id)")
    conf = {k: c for k, (c, _) in pair_confidences(read_triples(files)).items() if k in predicted}
    bands, auc = with_confidence(conf, gold, ends)
    print_table(bands, "precision by confidence and the weaker end's support (pairs)")
    print(f"ROC AUC, 5-fold over documents: {auc}")
    write_json("raw_precision", support + link + bands, a.out, run_dir=str(a.run_dir), system=a.system, auc=auc)


if __name__ == "__main__":
    main()
