"""Does averaging several trained models' answers rank candidates better than one model?

    .venv/bin/python benchmarks/ensemble.py --config configs/biored.yaml \\
        --run-dirs runs/biored-tune runs/biored-tune-6ep runs/tune-w192 [--k 2 3 4] \\
        [--thresholds 0.2 0.3 0.4] [override ...]

Each RUN is a finished run trained with the tuning documents held out (the BioRED slice command in
configs/biored.yaml, with different settings or seeds), on the same tokenizer and relation map. The
questions are built once, with the first run's tokenizer and the config's extraction settings; every
model answers them (the ``model`` ranker: P(candidate | question) from the candidate head); every
subset of the models is scored with the mean of its members' probabilities, at each
``tails_per_query`` × ``min_confidence``, as ``graphmert evaluate`` would. It prints, per subset, the
best setting and the config's own, and writes ``benchmarks/results/ensemble.json``. Tuning data only:
never point it at the evaluation set.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from graphmert.eval import evaluate_system, pair_sets  # noqa: E402
from graphmert.model.checkpoint import load_checkpoint  # noqa: E402


def _row(ex, base, plans, queries, scores, gold, rmap, k: int, threshold: float) -> dict:
    """Pair scores of ``scores`` with the ``base`` extract settings at k and threshold."""
    ex.cfg = dataclasses.replace(base, tails_per_query=k, min_confidence=threshold)
    m = evaluate_system(*pair_sets(ex.decide(plans, queries, scores, "model"), rmap), gold)
    u, t = m["untyped"]["all"], m["typed"]["all"]
    return {"k": k, "min_conf": threshold, "P": u["precision"], "R": u["recall"], "F1": u["f1"],
            "typed_F1": t["f1"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--run-dirs", nargs="+", required=True, type=Path)
    p.add_argument("--k", nargs="+", type=int, default=[2, 3, 4])
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.2, 0.3, 0.4])
    p.add_argument("--out", type=Path)
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, overrides)
    docs, gold = tuning_documents(cfg)
    rmap = dict(cfg.evaluate.relation_map)
    ex = _extractor(cfg, a.run_dirs[0], docs)
    plans = ex.questions(docs, list(chunk_documents(docs, ex.tok, cfg.corpus, cfg.graph)))
    queries = [q for pl in plans for q in pl.queries]
    answers = {}
    for run in a.run_dirs:
        ex.model, _ = load_checkpoint(run / "train" / "model", expected_vocab=ex.tok.get_vocab_size(),
                                      expected_relations=ex.relation_map)
        ex.model.eval()
        answers[run.name] = ex.answers(plans, queries, "model")
    base, rows = ex.cfg, []
    for n in range(1, len(answers) + 1):
        for members in itertools.combinations(answers, n):
            mean = [np.mean([answers[m][i] for m in members], axis=0) for i in range(len(queries))]
            grid = [_row(ex, base, plans, queries, mean, gold, rmap, k, th)
                    for k, th in itertools.product(a.k, a.thresholds)]
            shipped = _row(ex, base, plans, queries, mean, gold, rmap, base.tails_per_query,
                           base.min_confidence)
            best = max(grid, key=lambda r: r["F1"])
            rows.append({"models": "+".join(members), "best k": best["k"], "best min_conf": best["min_conf"],
                         "best P": best["P"], "best R": best["R"], "best F1": best["F1"],
                         "best typed_F1": best["typed_F1"], "config F1": shipped["F1"],
                         "config typed_F1": shipped["typed_F1"]})
    print_table(rows, f"mean of the models' answers on {len(docs)} documents, {len(gold.untyped)} gold pairs")
    write_json("ensemble", rows, a.out, run_dirs=[str(r) for r in a.run_dirs], documents=len(docs),
               gold_pairs=len(gold.untyped), overrides=overrides)


if __name__ == "__main__":
    main()
