"""Would a confidence threshold per category pair beat the one threshold graphmert keeps pairs at?
(docs/experiments/raw-slice.md, "A threshold per category pair").

    graphmert extract --config configs/biored-raw.yaml --run-dir COPY SLICE_OVERRIDES \\
        extract.min_confidence=0.05 extract.tails_per_query=20 'extract.calibration=[]'
    .venv/bin/python experiments/category_thresholds.py --run-dir COPY --gold GOLD

Reads graphmert's triples of a run extracted at a low threshold and many tails (so that every pair
the shipped settings could keep is there, with its uncalibrated confidence, the scale
``extract.min_confidence`` applies to), and prints, for every threshold, the kept pairs, the gold
ones among them and pair F1 (every triple counted, as ``graphmert evaluate`` counts them), then the
same per category pair (the two ends' categories as the linker gave them), and last the best
threshold per category pair found by coordinate ascent on the run's own gold: an in-sample bound on
what separate thresholds could buy there, and the same chosen by document cross-validation
(``--folds``: each fold's pairs kept at the thresholds chosen on the other folds), an honest
estimate of what they would buy on unseen documents, beside one threshold chosen the same way. Pairs are untyped: (document, {head id, tail id}), scored
on their best confidence.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import document_fold, print_table, run_documents  # noqa: E402

from graphmert.eval.gold import load_gold  # noqa: E402

THRESHOLDS = (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def scored_pairs(run: Path) -> dict[tuple, tuple[float, str]]:
    """(document, {head, tail}) → (best confidence, category pair) over graphmert's triples."""
    pairs: dict[tuple, tuple[float, str]] = {}
    with open(run / "extract" / "triples.jsonl", encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            cats = "–".join(sorted(c.removeprefix("biolink:") for c in (t["head_category"], t["tail_category"])))
            for doc in t["documents"]:
                key = (doc, frozenset((t["head_id"], t["tail_id"])))
                pairs[key] = (max(pairs.get(key, (0.0, cats))[0], t["confidence"]), cats)
    return pairs


def row(name: str, kept: list, gold: set, n_gold: int, **extra) -> dict:
    tp = sum(k in gold for k in kept)
    p, r = tp / max(1, len(kept)), tp / max(1, n_gold)
    return {**extra, "pairs": name, "kept": len(kept), "gold": tp, "P": round(p, 3),
            "F1": round(2 * p * r / max(p + r, 1e-9), 4)}


def best_per_category(pairs: dict, gold: set, n_gold: int, rounds: int = 5) -> tuple[dict[str, float], float]:
    """Thresholds per category pair (from :data:`THRESHOLDS`, starting at 0.4 each) that maximise
    pair F1 over all the pairs, by coordinate ascent; returns them and that F1 (in-sample)."""
    cats = sorted({x for _, x in pairs.values()})
    chosen = dict.fromkeys(cats, 0.4)

    def f1(th: dict) -> float:
        return row("", [k for k, (c, x) in pairs.items() if c >= th[x]], gold, n_gold)["F1"]

    for _ in range(rounds):
        for cats_ in cats:
            chosen[cats_] = max(THRESHOLDS, key=lambda t: (f1({**chosen, cats_: t}), t == chosen[cats_]))
    return chosen, f1(chosen)


def best_global(pairs: dict, gold: set, n_gold: int) -> tuple[dict[str, float], float]:
    """The one threshold of :data:`THRESHOLDS` that maximises pair F1, as :func:`best_per_category`
    gives its choice (every category pair at it)."""
    f1 = {t: row("", [k for k, (c, _) in pairs.items() if c >= t], gold, n_gold)["F1"] for t in THRESHOLDS}
    best = max(THRESHOLDS, key=lambda t: (f1[t], t == 0.4))
    return {x: best for _, x in pairs.values()}, f1[best]


def cross_validated(pairs: dict, gold: set, n_gold: int, folds: int, choose=best_per_category) -> float:
    """Pair F1 of every fold's pairs kept at the thresholds ``choose`` picks on the other folds
    (:func:`best_per_category` or :func:`best_global`; documents cut by :func:`_study.document_fold`)."""
    kept = []
    for k in range(folds):
        rest = {p: v for p, v in pairs.items() if document_fold(p[0], folds) != k}
        rest_gold = {p for p in gold if document_fold(p[0], folds) != k}
        chosen, _ = choose(rest, rest_gold, len(rest_gold))
        kept += [p for p, (c, x) in pairs.items() if document_fold(p[0], folds) == k and c >= chosen.get(x, 0.4)]
    return row("", kept, gold, n_gold)["F1"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--gold", nargs="+", required=True)
    ap.add_argument("--folds", type=int, default=4, help="document folds of the cross-validated choice")
    a = ap.parse_args()
    docs = run_documents(a.run_dir)
    gold = {p for p in load_gold(a.gold).untyped if p[0] in docs}
    pairs = scored_pairs(a.run_dir)
    rows = [row("all", [k for k, (c, _) in pairs.items() if c >= t], gold, len(gold), threshold=t)
            for t in THRESHOLDS]
    print_table(rows, f"{a.run_dir}: graphmert's pairs at each threshold ({len(gold)} gold pairs)")
    per = [row(cats, [k for k, (c, x) in pairs.items() if x == cats and c >= t], gold, len(gold), threshold=t)
           for cats in sorted({x for _, x in pairs.values()}) for t in (0.2, 0.3, 0.4, 0.5, 0.6)]
    print_table(per, "per category pair (F1 over all gold pairs: what the category's pairs alone would score)")
    chosen, f1 = best_per_category(pairs, gold, len(gold))
    print(f"best threshold per category pair, chosen on these documents (in-sample): F1 {f1:.4f}; "
          + ", ".join(f"{c} {t}" for c, t in chosen.items()))
    for name, choose in (("per category pair", best_per_category), ("one for all", best_global)):
        print(f"thresholds {name}, chosen by {a.folds}-fold document cross-validation: "
              f"F1 {cross_validated(pairs, gold, len(gold), a.folds, choose):.4f}")


if __name__ == "__main__":
    main()
