"""Does the model rank a head's related tails above unrelated ones as well outside its sentence as inside?

    .venv/bin/python benchmarks/locality.py --config configs/biored.yaml --run-dir RUN [override ...]

RUN is a finished run trained with the tuning documents held out (the BioRED slice command in
configs/biored.yaml); the same overrides select those documents. Every head asks its relations over
*all* of its chunk's admitted entities (``extract.outside_scope_weight`` 1: the config's tail scope
only marks which candidates lie outside it), and the trained and the untrained model answer
(P(candidate | question) from the candidate head). A candidate is gold when the document relates the
head and the candidate (BioRED pairs are unordered and untyped here). Per ranker it prints, for each
(gold tail inside / outside the scope) × (other candidate inside / outside), how often the question
ranks the gold tail above the other candidate (a within-question ROC AUC: pooling probabilities
across questions would mostly measure how many candidates each question has), the share of gold
candidates on the gold tail's side, and, of the questions with candidates on both sides, how often
the top answer lies outside.

It explains docs/EVALUATION.md section 13 (why a soft scope loses); it tunes nothing. Writes
``benchmarks/results/locality.json``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _common import print_table, write_json  # noqa: E402
from tune_extraction import _extractor, split_overrides, tuning_documents  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.extract.pairs import RANKERS  # noqa: E402


def locality_rows(ranker: str, plans, queries, scores, gold_pairs: set) -> list[dict]:
    """The rows of the module docstring for one ranker's answers."""
    mixed = [(q, s) for q, s in zip(queries, scores) if any(q.outside) and not all(q.outside)]
    top_outside = float(np.mean([q.outside[int(np.argmax(s))] for q, s in mixed])) if mixed else 0.0
    sides = list(itertools.product((False, True), repeat=2))          # (gold outside, other outside)
    wins: dict[tuple[bool, bool], list[float]] = {k: [0.0, 0.0] for k in sides}
    rows_gold: dict[bool, list[bool]] = {False: [], True: []}
    for q, s in zip(queries, scores):
        doc = plans[q.chunk].doc.id
        out = q.outside or (False,) * len(s)
        gold = [(doc, frozenset((q.head, c))) in gold_pairs for c in q.candidates]
        for o, g in zip(out, gold):
            rows_gold[o].append(g)
        for i, j in itertools.product(range(len(s)), repeat=2):   # every (gold, other) pair of a question
            if gold[i] and not gold[j]:
                w = wins[(out[i], out[j])]
                w[0] += 1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0
                w[1] += 1
    side = {False: "inside", True: "outside"}
    rows = []
    for (gi, oj), (won, n) in wins.items():
        rows.append({"ranker": ranker, "gold tail": side[gi], "other candidate": side[oj], "pairs": int(n),
                     "gold ranked above": won / n if n else float("nan"),
                     "gold share of rows (gold's side)": float(np.mean(rows_gold[gi] or [0.0])),
                     "top answer outside (mixed questions)": top_outside, "mixed questions": len(mixed)})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--out", type=Path)
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, [*overrides, "extract.outside_scope_weight=1"])
    docs, gold = tuning_documents(cfg)
    ex = _extractor(cfg, a.run_dir, docs)
    plans = ex.questions(docs, list(chunk_documents(docs, ex.tok, cfg.corpus, cfg.graph)))
    queries = [q for pl in plans for q in pl.queries]
    gold_pairs = {(d, frozenset(pair)) for d, pair in gold.untyped}
    rows = []
    for ranker in ("model", "untrained"):
        rows += locality_rows(ranker, plans, queries, RANKERS.get(ranker)(ex, plans, queries), gold_pairs)
    print_table(rows, f"candidate ranking inside and outside the tail scope, {len(docs)} documents")
    write_json("locality", rows, a.out, run_dir=str(a.run_dir), documents=len(docs), overrides=overrides)


if __name__ == "__main__":
    main()
