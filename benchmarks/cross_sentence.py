"""What extraction could gain outside the sentence: the gold pairs that share none, and how well
document features find them (issue #15, deliverable 5; docs/EVALUATION.md, section 21).

    .venv/bin/python benchmarks/cross_sentence.py                      # about 1 min

Over the gold mentions of BioRED train and dev, every unordered pair of a document's entities whose
category pair some BioRED-train relation has is an *outside* pair when no sentence holds a mention
of both (sentences as ``graphmert evaluate`` splits them). Sentence-scope extraction never asks
outside pairs, so their gold ones are recall it cannot have. For each split it prints:

* the outside pairs, their gold ones and the base rate;
* the precision of a logistic regression over document features of the pair (mention counts and
  count ranks, title mentions, sentence distance, share of sentences, category pair), fitted on
  BioRED train less the tuning slice, at its top k and at thresholds, on the slice and on dev;
* the break-even: adding n pairs of which t are gold to a system with TP true among S predicted,
  against G gold pairs, gives F1' = 2(TP + t) / (S + n + G), above F1 = 2TP / (S + G) exactly when
  t / n > F1 / 2. Outside pairs pay only at a precision above half the reference F1;
* the ceiling: the reference F1 if every outside gold pair were added with no false one.

Disease–variant pairs are split off: the shipped config already asks them over the chunk
(``extract.tail_scope_by_category``), and their base rate is ten times the others'. Their ceiling
and "F1 with them" are upper bounds: the pairs in one chunk but no sentence are asked already, and
those the reference system found would count twice here.

The references are the shipped ensemble's sentence-scope numbers (``--slice-reference`` and
``--dev-reference``: P, R). Nothing is chosen on dev.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import print_table, require_shared, write_json  # noqa: E402

from graphmert.eval.gold import GoldSet, load_gold, mention_entity_ids  # noqa: E402
from graphmert.train.data import document_fraction  # noqa: E402

VARIANT_PAIR = "biolink:Disease|biolink:SequenceVariant"
SLICE_FRACTION = 0.2          # the tuning slice: extract.document_fraction=0.2 of Train.PubTator


def _sentence_of(spans: list[tuple[int, int]], pos: int) -> int:
    for i, (start, end) in enumerate(spans):
        if start <= pos < end:
            return i
    return max(0, len(spans) - 1)


def document_pairs(gold: GoldSet, doc_id: str) -> list[dict]:
    """Every entity pair of one document: category pair, whether a sentence holds both, gold, features."""
    doc = gold.documents[doc_id]
    where: dict[str, list[tuple[int, bool]]] = {}          # entity → [(sentence, in the title)]
    for m in doc.mentions:
        for eid in mention_entity_ids(m):
            where.setdefault(eid, []).append((_sentence_of(doc.sentences, m.start), m.start < len(doc.title)))
    counts = {e: len(v) for e, v in where.items()}
    rank = {e: 1 + sum(c > counts[e] for c in counts.values()) for e in counts}
    gold_pairs = {p for d, p in gold.untyped if d == doc_id}
    n_sent = max(1, len(doc.sentences))
    rows = []
    for a, b in itertools.combinations(sorted(where), 2):
        sa, sb = {s for s, _ in where[a]}, {s for s, _ in where[b]}
        ta, tb = any(t for _, t in where[a]), any(t for _, t in where[b])
        features = {
            "log_count_min": math.log(min(counts[a], counts[b])),
            "log_count_max": math.log(max(counts[a], counts[b])),
            "rank_min": min(rank[a], rank[b]), "rank_max": max(rank[a], rank[b]),
            "top_entity": float(min(rank[a], rank[b]) == 1),
            "both_top3": float(max(rank[a], rank[b]) <= 3),
            "title_one": float(ta or tb), "title_both": float(ta and tb),
            "log_distance": math.log1p(min(abs(x - y) for x in sa for y in sb)),
            "sentences_min": min(len(sa), len(sb)) / n_sent,
            "sentences_max": max(len(sa), len(sb)) / n_sent,
            "first_sentence": min(min(sa), min(sb)) / n_sent,
        }
        pair = "|".join(sorted((gold.category(doc_id, a), gold.category(doc_id, b))))
        rows.append({"doc": doc_id, "pair": pair,
                     "shared": bool(sa & sb), "gold": frozenset((a, b)) in gold_pairs, "features": features})
    return rows


def _matrix(rows: list[dict], pairs: list[str]) -> np.ndarray:
    keys = sorted(rows[0]["features"])
    return np.array([[r["features"][k] for k in keys] + [float(r["pair"] == p) for p in pairs]
                     for r in rows])


def _f1(tp: float, predicted: float, gold: float) -> float:
    return 2 * tp / (predicted + gold) if predicted + gold else 0.0


def score_split(name: str, rows: list[dict], probs: np.ndarray, gold_total: int,
                reference: tuple[float, float] | None) -> list[dict]:
    """Precision of the top k and of p ≥ t, and the reference F1 with those pairs added."""
    y = np.array([r["gold"] for r in rows])
    order = np.argsort(-probs)
    tp = predicted = None
    if reference:
        tp = reference[1] * gold_total
        predicted = tp / reference[0]
    out = []
    cuts = [("top", k, order[:k]) for k in (10, 25, 50, 100) if k <= len(rows)]
    cuts += [("p >=", t, np.flatnonzero(probs >= t)) for t in (0.3, 0.5, 0.7)]
    for kind, value, picked in cuts:
        t = int(y[picked].sum())
        row = {"split": name, "cut": f"{kind} {value}", "pairs": len(picked), "gold": t,
               "precision": round(t / len(picked), 3) if len(picked) else None}
        if reference:
            row["F1 with them"] = round(_f1(tp + t, predicted + len(picked), gold_total), 3)
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slice-reference", type=float, nargs=2, default=(0.638, 0.795), metavar=("P", "R"),
                    help="the shipped config's sentence-scope P and R on the tuning slice")
    ap.add_argument("--dev-reference", type=float, nargs=2, default=(0.611, 0.700), metavar=("P", "R"),
                    help="the same on BioRED dev (runs/biored-ens)")
    args = ap.parse_args()
    train = load_gold(require_shared("biored", "Train.PubTator"))
    dev = load_gold(require_shared("biored", "Dev.PubTator"))
    in_slice = {d for d in train.documents if document_fraction(d) < SLICE_FRACTION}
    splits = {
        "fit": [r for d in train.documents if d not in in_slice for r in document_pairs(train, d)],
        "slice": [r for d in sorted(in_slice) for r in document_pairs(train, d)],
        "dev": [r for d in dev.documents for r in document_pairs(dev, d)],
    }
    gold_totals = {"fit": sum(d not in in_slice for d, _ in train.untyped),
                   "slice": sum(d in in_slice for d, _ in train.untyped), "dev": len(dev.untyped)}
    admitted = {r["pair"] for r in splits["fit"] if r["gold"]}
    references = {"slice": tuple(args.slice_reference), "dev": tuple(args.dev_reference)}
    counts, scores = [], []
    groups = (("other pairs", lambda p: p != VARIANT_PAIR), ("disease-variant", lambda p: p == VARIANT_PAIR))
    for group, keep in groups:
        outside = {s: [r for r in rows if not r["shared"] and r["pair"] in admitted and keep(r["pair"])]
                   for s, rows in splits.items()}
        for s, rows in outside.items():
            g = sum(r["gold"] for r in rows)
            row = {"group": group, "split": s, "gold pairs": gold_totals[s], "outside pairs": len(rows),
                   "outside gold": g, "share of gold": round(g / gold_totals[s], 3),
                   "base rate": round(g / max(1, len(rows)), 3)}
            if s in references:
                p, r = references[s]
                tp = r * gold_totals[s]
                row["break-even precision"] = round(_f1(tp, tp / p, gold_totals[s]) / 2, 3)
                row["ceiling F1"] = round(_f1(tp + g, tp / p + g, gold_totals[s]), 3)
            counts.append(row)
        pair_names = sorted({r["pair"] for r in outside["fit"]})
        model = LogisticRegression(C=1.0, max_iter=5000)
        model.fit(_matrix(outside["fit"], pair_names), [r["gold"] for r in outside["fit"]])
        for s in ("slice", "dev"):
            probs = model.predict_proba(_matrix(outside[s], pair_names))[:, 1]
            for row in score_split(s, outside[s], probs, gold_totals[s], references[s]):
                scores.append({"group": group, **row})
    print_table(counts, "Gold pairs that share no sentence (outside pairs), BioRED gold mentions")
    print_table(scores, "A document-feature classifier on the outside pairs (fitted on train less the slice)")
    write_json("cross_sentence", counts + scores)


if __name__ == "__main__":
    main()
