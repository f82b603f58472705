"""The pair heads on a tuning slice: does what the encoder's own pair states say rank and type pairs
better than the words? (docs/experiments/pair-heads.md)

    .venv/bin/python experiments/pair_heads.py --config configs/biored.yaml --run-dir runs/tune \\
        [--type-c 0.001 0.01 0.1 1] [--related-c 0.001 0.003 0.01 0.03] [--folds 5] \\
        [--lexical-weights 0 0.5] [--related-weights 0 0.2 0.3 0.5 0.7 1] [--k 3 4 6 8] \\
        [--thresholds 0.2 0.3 0.4 0.5 0.6] [--type-weights 0.2 0.3 0.5 1] [--selection W,V,K,T] \\
        [override ...]

RUN is a run trained with the slice held out (configs/biored.yaml shows the command). The heads
(graphmert.extract.pair_heads, whose docstring has the equations) are fitted as the extract stage
fits them: on the pairs the extractor's questions link in the typer's documents (BioRED train less
the slice: the labels the typer and the candidate head learn from), the run's models frozen. Each
head's C is chosen by 5 document folds of those documents: the type head's by its type accuracy,
the relatedness head's by its log-loss. Then, on the slice:

* **ranking**: every (``extract.lexical_weight`` w, ``extract.related_head_weight`` v) pooling of the
  model's answers, each at its best (k, threshold) of the grid, typed by the typer. w 0.5, v 0 is
  the shipped score of 2026-11-30; v 1 the relatedness head alone; w 0 the model without the words;
* **typing**: the pairs of one selection (``--selection``) typed by the typer, by the type head
  alone, by the blend ``extract.type_head_weight`` b computes, and by the conditional logits of
  ``typing_stack.py`` with the head's log-probability as one more feature, fitted in document folds
  of the slice (``typer+head``: the hybrid, whose ablation without the model is ``typer``).

Caveat: the encoder trained on the fit documents' relations as seed triples (injected leaves), so
its states there may separate the labels better than on unseen documents; the slice is unseen.
About 5 minutes on 2 cores (the encoder pass over 400 documents, twice the typer's fit, the grid).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tune_extraction import split_overrides, study_parser, tuning_questions  # noqa: E402
from typing_stack import StackTyping, stacked_choices  # noqa: E402
from typing_stack import features as stack_features  # noqa: E402
from _study import document_fold, print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.eval.gold import GoldSet  # noqa: E402
from graphmert.eval.metrics import evaluate_system, pair_sets  # noqa: E402
from graphmert.extract.pair_heads import RELATED, PairHead, blend  # noqa: E402
from pipelines.holdout import held_out_documents  # noqa: E402
from pipelines.stages.extract import typer_documents  # noqa: E402

FEATURE_SETS = ("typer", "typer+head", "typer+model", "typer+head+model")


def choose_c(vectors: dict, labels: dict, classes: list[str], cs: list[float], folds: int, loss: bool):
    """(the head fitted at the best C, [(C, fold score)]): type accuracy, or with ``loss`` the mean
    log-probability of the right class (the negative log-loss), over document folds."""
    keys = [k for k in vectors if labels.get(k) in classes]
    scores = []
    for c in cs:
        total = 0.0
        for f in range(folds):
            head = PairHead(classes, c).fit({k: vectors[k] for k in keys if document_fold(k[0], folds) != f}, labels)
            answers = head.log_probabilities({k: vectors[k] for k in keys if document_fold(k[0], folds) == f})
            total += sum(lp[labels[k]] if loss else float(max(lp, key=lp.get) == labels[k])
                         for k, lp in answers.items())
        scores.append((c, total / len(keys)))
    best = max(scores, key=lambda s: s[1])[0]
    return PairHead(classes, best).fit(vectors, labels), scores


def main() -> None:
    p = study_parser(__doc__)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--type-c", nargs="+", type=float, default=[0.001, 0.01, 0.1, 1.0])
    p.add_argument("--related-c", nargs="+", type=float, default=[0.001, 0.003, 0.01, 0.03])
    p.add_argument("--lexical-weights", nargs="+", type=float, default=[0.0, 0.5])
    p.add_argument("--related-weights", nargs="+", type=float, default=[0.0, 0.2, 0.3, 0.5, 0.7, 1.0])
    p.add_argument("--k", nargs="+", type=int, default=[3, 4, 6, 8])
    p.add_argument("--thresholds", nargs="+", type=float, default=[0.2, 0.3, 0.4, 0.5, 0.6])
    p.add_argument("--type-weights", nargs="+", type=float, default=[0.2, 0.3, 0.5, 1.0])
    p.add_argument("--c", nargs="+", type=float, default=[0.1], help="C of the stacked typing regressions")
    p.add_argument("--selection", default=None, metavar="W,V,K,T",
                   help="the selection whose pairs are retyped (default: the best ranking row with w > 0)")
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, overrides)
    rmap = dict(cfg.evaluate.relation_map)
    docs, gold, ex, plans, queries = tuning_questions(cfg, a.run_dir, a.models, StackTyping.wrap)
    relations = list(ex.relations)

    fit_docs = list(typer_documents(cfg, held_out_documents(cfg, (d.id for d in docs))))
    fit_plans = ex.questions(fit_docs, list(chunk_documents(fit_docs, ex.tok, cfg.corpus, cfg.graph)))
    fit_vectors = ex.pair_vectors(fit_plans)
    types = {(d, pr): ty for d, pr, ty in GoldSet.from_documents(fit_docs).typed}
    type_head, type_cv = choose_c(fit_vectors, types, relations, a.type_c, a.folds, loss=False)
    related = {k: RELATED[k in types] for k in fit_vectors}
    ex.related_head, related_cv = choose_c(fit_vectors, related, list(RELATED), a.related_c, a.folds, loss=True)
    print(f"heads fitted on {len(fit_docs)} documents: {type_head.fit_counts}, {ex.related_head.fit_counts}")
    print(f"type head fold accuracy by C: {type_cv}; relatedness head fold log-probability by C: {related_cv}")
    ex.pair_vectors(plans)                                             # the slice's vectors, cached

    def evaluate(scores, k: int, t: float, chosen: dict | None = None) -> dict:
        ex.cfg = dataclasses.replace(cfg.extract, tails_per_query=k, min_confidence=t, relation_choice="typer")
        ex.chosen = chosen
        m = evaluate_system(*pair_sets(ex.decide(plans, queries, scores, "model"), rmap), gold)
        u, ty = m["untyped"]["all"], m["typed"]["all"]
        return {"P": u["precision"], "R": u["recall"], "F1": u["f1"], "typed_F1": ty["f1"],
                "type_acc": ty["tp"] / u["tp"] if u["tp"] else 0.0}

    alone = ex.answers(plans, queries, "model", pooled=False)
    ranking = []
    for w in a.lexical_weights:
        for v in a.related_weights:
            ex.cfg = dataclasses.replace(cfg.extract, related_head_weight=v)
            scores = ex.pooled(plans, queries, alone, "model", weight=w)
            grid = [{"w": w, "v": v, "k": k, "t": t, **evaluate(scores, k, t)} for k in a.k for t in a.thresholds]
            ranking.append(max(grid, key=lambda r: r["F1"]))
    print_table(ranking, f"ranking on {len(docs)} documents, {len(gold.untyped)} gold pairs: each (w, v) at its "
                         f"best k and threshold")

    best = max((r for r in ranking if r["w"] > 0), key=lambda r: r["F1"])
    w, v, k, t = (float(x) for x in a.selection.split(",")) if a.selection else (best["w"], best["v"], best["k"], best["t"])
    ex.cfg = dataclasses.replace(cfg.extract, related_head_weight=v)
    scores = ex.pooled(plans, queries, alone, "model", weight=w)
    ex.record = []
    typing = [{"types": "typer", "C": "-", **evaluate(scores, int(k), t)}]
    rows, ex.record = ex.record, None
    head_of = type_head.log_probabilities(ex.pair_vectors(plans))
    # a pair with a text node has no id to key it by here; the typer types it
    head = lambda r: head_of.get((r.doc, r.pair)) or dict.fromkeys(relations, 0.0)  # noqa: E731
    for b in a.type_weights:                   # extract.type_head_weight: nothing fitted on the slice
        typing.append({"types": f"blend b={b}", "C": "-", **evaluate(scores, int(k), t, {
            (r.doc, r.pair): max(r.admitted, key=lambda x: blend(r.typer, head(r), b).get(x, -1e9))
            if (r.doc, r.pair) in head_of else r.chosen for r in rows})})
    gold_type = {(d, pr): ty for d, pr, ty in gold.typed if ty in relations}
    for which in FEATURE_SETS:
        for c in a.c:
            typing.append({"types": f"stacked: {which}", "C": c, **evaluate(
                scores, int(k), t, stacked(rows, gold_type, which, c, a.folds, relations, head))})
    print_table(typing, f"typing the pairs of w {w}, v {v}, k {int(k)}, t {t}: {len(rows)} with a choice")
    write_json("pair_heads", ranking + typing, a.out, run_dir=str(a.run_dir), documents=len(docs), pairs=len(rows),
               type_head=type_head.fit_counts, related_head=ex.related_head.fit_counts, type_cv=type_cv,
               related_cv=related_cv, selection=[w, v, int(k), t], overrides=overrides)


def stacked(rows, gold_type: dict, which: str, c: float, k: int, relations: list[str], head) -> dict:
    """(doc, pair) → relation chosen by the conditional logit over ``which`` fitted on the other
    document folds (typing_stack.stacked_choices, with the type head's log-probability as a feature)."""
    parts = which.split("+")
    base = "+".join(x for x in parts if x != "head")

    def mat(row) -> np.ndarray:
        return np.stack([np.concatenate([stack_features(row, r, base, relations, []),
                                         [head(row)[r]] if "head" in parts else []]) for r in row.admitted])

    return stacked_choices(rows, gold_type, which, c, k, relations, [], mat=mat)


if __name__ == "__main__":
    main()
