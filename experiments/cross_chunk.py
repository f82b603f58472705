"""Disease–variant pairs in different chunks: could a document-feature rule add them? (docs/experiments/
document-scope.md, §22)

    .venv/bin/python experiments/cross_chunk.py --tokenizer runs/biored/tokenizer/tokenizer.json \\
        [--config configs/biored.yaml] [--thresholds 0.2 0.3 0.35 0.4 0.5 0.6]

§21 left one door open: disease–variant pairs whose two entities no chunk holds together are never
asked (the shipped scope asks these pairs over the chunk), and a third of the outside-sentence ones
are gold on dev. This study counts them with the run's tokenizer and the config's chunking, gold
entities, on BioRED train and dev, and asks whether a logistic regression over document features
picks them precisely enough to pay: adding n pairs of which t are gold raises F1 exactly when
t / n > F1 / 2 (§21).

The features are :mod:`graphmert.extract.cross_chunk`'s (mention counts, most mentioned, title,
entities per category, sentence distance, chunks shared with the other category, sentence shares).
Chosen by 5-fold document cross-validation over BioRED train (folds by
:func:`_study.document_fold`); the tuning slice's rows are also scored by the regression fitted on
the rest of BioRED train and added to the shipped slice run's pairs by arithmetic (its P and R,
``--slice-p``, ``--slice-r``, ``--slice-gold``). Dev's pairs are counted, never fitted or chosen on.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _study import document_fold, print_table, require_shared, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.extract.cross_chunk import cross_chunk_pairs  # noqa: E402
from graphmert.kg.schema import mention_category  # noqa: E402
from pipelines.holdout import in_slice  # noqa: E402

PAIR = frozenset({"biolink:Disease", "biolink:SequenceVariant"})


def pair_rows(path: Path, tokenizer, cfg) -> tuple[list[dict], Counter]:
    """One row per disease–variant pair that no chunk holds (the features of
    :mod:`graphmert.extract.cross_chunk`), and the counts of every disease–variant pair by (same
    chunk or not, gold or not)."""
    docs = list(TextAnalyzer(sentences=True, abbreviations=False).annotate(read_corpus([path])))
    chunks = list(chunk_documents(docs, tokenizer, cfg.corpus, cfg.graph))
    rows = [{"doc": p.doc.id, "gold": frozenset((p.a, p.b)) in _gold(p.doc), "x": list(p.x)}
            for p in cross_chunk_pairs(docs, chunks, [PAIR])]
    counts = Counter()
    for doc in docs:
        cats = {i: mention_category(m.type) for m in doc.mentions for i in m.ids}
        pairs = {frozenset((a, b)) for a, ca in cats.items() for b, cb in cats.items() if {ca, cb} == PAIR}
        counts[("all", True)] += len(pairs & _gold(doc))
        counts[("all", False)] += len(pairs - _gold(doc))
    for r in rows:
        counts[("cross chunk", r["gold"])] += 1
    return rows, counts


def _gold(doc) -> set[frozenset[str]]:
    return {frozenset((r.head, r.tail)) for r in doc.relations}


def _fit(rows: list[dict]):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=1.0, max_iter=2000).fit(np.array([r["x"] for r in rows], float),
                                                        np.array([r["gold"] for r in rows]))


def _predict(model, rows: list[dict]) -> np.ndarray:
    return model.predict_proba(np.array([r["x"] for r in rows], float))[:, 1] if rows else np.zeros(0)


def cross_validated(rows: list[dict], salt: str = "", folds: int = 5) -> np.ndarray:
    """Each row's probability from the regression fitted on the other folds' documents; a document's
    fold is :func:`_study.document_fold`, or with ``salt`` sha256(salt + id) mod ``folds``."""
    fold = np.array([document_fold(salt + r["doc"], folds) for r in rows])
    p = np.zeros(len(rows))
    for f in range(folds):
        p[fold == f] = _predict(_fit([r for r, g in zip(rows, fold) if g != f]), [r for r, g in zip(rows, fold) if g == f])
    return p


def f1_with(tp: float, predicted: float, gold: int, added: int, right: int) -> float:
    """F1 of a system (tp right of ``predicted``, ``gold`` gold pairs) with ``added`` pairs of which
    ``right`` are gold: 2(TP + t) / (S + n + G)."""
    return 2 * (tp + right) / (predicted + added + gold)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", required=True, help="a run's tokenizer.json (RUN/tokenizer/tokenizer.json)")
    ap.add_argument("--config", default="configs/biored.yaml")
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.2, 0.3, 0.35, 0.4, 0.5, 0.6])
    ap.add_argument("--salts", nargs="+", default=["", "a", "b", "c", "d"],
                    help="fold assignments of the cross-validation ('' is _study.document_fold's)")
    ap.add_argument("--out", type=Path, default=None, help="the JSON rows (default experiments/results/)")
    ap.add_argument("--slice-fraction", type=float, default=0.2, help="the tuning slice's extract.document_fraction")
    ap.add_argument("--slice-p", type=float, default=0.685, help="the shipped slice run's pair precision")
    ap.add_argument("--slice-r", type=float, default=0.790,
                    help="… and recall (docs/experiments/evaluation-history.md)")
    ap.add_argument("--slice-gold", type=int, default=692, help="… and gold pairs")
    args = ap.parse_args(argv)
    from tokenizers import Tokenizer
    cfg, tok = load_config(args.config), Tokenizer.from_file(args.tokenizer)
    biored = require_shared("biored")
    train, train_counts = pair_rows(biored / "Train.PubTator", tok, cfg)
    _, dev_counts = pair_rows(biored / "Dev.PubTator", tok, cfg)
    print_table([{"split": name, **{f"{k[0]}, {'gold' if k[1] else 'not gold'}": c[k] for k in sorted(c)}}
                 for name, c in (("train", train_counts), ("dev (counted only)", dev_counts))],
                title="disease–variant pairs of gold entities")
    y = np.array([r["gold"] for r in train])
    cv = [cross_validated(train, salt) for salt in args.salts]
    sliced = [r for r in train if in_slice(r["doc"], args.slice_fraction)]
    rest = [r for r in train if not in_slice(r["doc"], args.slice_fraction)]
    ps, ys = _predict(_fit(rest), sliced), np.array([r["gold"] for r in sliced])
    tp = args.slice_r * args.slice_gold
    base = f1_with(tp, tp / args.slice_p, args.slice_gold, 0, 0)
    table = []
    for t in args.thresholds:
        added = [int((p >= t).sum()) for p in cv]
        right = [int(y[p >= t].sum()) for p in cv]
        precision = [g / n for g, n in zip(right, added) if n]
        ks = ps >= t
        table.append({"threshold": t, "train added": round(float(np.mean(added)), 1),
                      "train gold": round(float(np.mean(right)), 1),
                      "train precision": f"{np.mean(precision):.3f} ± {np.std(precision, ddof=1):.3f}"
                      if len(precision) > 1 else (round(precision[0], 3) if precision else None),
                      "gold − added·F/2": round(float(np.mean(right) - np.mean(added) * base / 2), 1),
                      "slice added": int(ks.sum()), "slice gold": int(ys[ks].sum()),
                      "slice ΔF1": round(f1_with(tp, tp / args.slice_p, args.slice_gold, int(ks.sum()),
                                                 int(ys[ks].sum())) - base, 4)})
    print_table(table, title=f"cross-chunk disease–variant pairs added at p ≥ threshold (train: 5-fold CV "
                             f"under {len(args.salts)} fold assignments, mean; {len(train)} pairs, {int(y.sum())} "
                             f"gold; F = the slice's F1 before, {base:.4f})")
    write_json("cross_chunk", table, args.out, train_counts={str(k): v for k, v in train_counts.items()},
               dev_counts={str(k): v for k, v in dev_counts.items()})


if __name__ == "__main__":
    main()
