"""Does a learned combination of the model's score with lexical and document features find pairs
better than the same combination without the model? (docs/experiments/stacked-baselines.md)

    .venv/bin/python experiments/pair_stack.py --config configs/biored.yaml --run-dir runs/tune \\
        [--folds 5] [--c 0.1 1] [--k 2 3 4 6 8] [--thresholds 0.1 0.2 ... 0.9] [--sets SET ...] \
        [override ...]

The shipped hybrid pools the model's probability p with the lexical one q as p^(1−w) q^w: one weight,
chosen on the slice. Here every (question, candidate) gets a logistic regression's probability that
the document relates the head and the candidate, over

* ``model``: log p, and whether the candidate is the question's best by p;
* ``lexical``: log q (the relation typer's related-or-not probability, as the ``lexical`` control);
* ``pooled``: log of the shipped hybrid's p^(1−w) q^w (``extract.lexical_weight``), one feature;
* ``document``: how often the document mentions the candidate and the head (log 1 + count:
  ``mentions``), the ``nearest`` control's 1 / (1 + roots between them: ``nearest``), the number of
  candidates (log: ``count``), the question's relation (``relation``) and the category pair
  (``category``), one-hot; ``--sets`` takes each group alone too.

The regression is fitted in document folds of the tuning documents: each fold's questions are scored
by the regression fitted on the other folds (labels: the gold's untyped pairs). The scores then go
through the shipped selection (k per question, a threshold, one relation per pair typed by the
typer), and each feature set is reported at its best k and threshold. ``lexical+document`` is the
supervised baseline with the same features but the model's; what ``model`` adds over it is the
model's share. Without a model feature the ranking is the lexical control's only when the document
features are left out too (``lexical`` alone), which this reports as a check.

``--apply-to RUN`` then scores each set on another run (BioRED dev, once): fitted on every tuning
question at the C, k and threshold of its best row, with nothing chosen on that run.

The model-free ``lexical+document`` set ships as the ``lexical_document`` control
(:mod:`graphmert.extract.lexical_document`), fitted on the typer's documents rather than slice folds;
this study keeps the sets with the model's features, which did not ship: the model adds nothing to
that regression on the slice (the record).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tune_extraction import split_overrides, study_parser, tuning_questions  # noqa: E402
from _study import document_fold, print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.extract.lexical_document import NUMERIC, candidate_features  # noqa: E402
from graphmert.eval.metrics import evaluate_system, pair_sets  # noqa: E402

#: the document features, each a group of its own
DOCUMENT = ["mentions", "nearest", "count", "relation", "category"]
#: the numeric columns of each feature group, in design order (relation and category are one-hot); the
#: lexical and document columns are the ``lexical_document`` control's own (graphmert.extract.lexical_document)
COLUMNS = {"model": ("log_p", "best_p"), "lexical": ("log_q",), "pooled": ("log_pooled",),
           "mentions": ("log_tail_mentions", "log_head_mentions"), "nearest": ("nearest",),
           "count": ("log_candidates",)}
FEATURE_SETS = ("lexical", "lexical+document", "model", "model+document", "model+lexical",
                "model+lexical+document", "pooled", "pooled+document")


def question_features(ex, plans, queries, p: list[np.ndarray], q: list[np.ndarray],
                      pooled: list[np.ndarray]) -> list[dict]:
    """Per question, the raw feature columns of its candidates (module docstring): the control's
    (:func:`~graphmert.extract.lexical_document.candidate_features`) and the model's."""
    near = ex.answers(plans, queries, "nearest", pooled=False)
    return [{"log_p": np.log(np.clip(pi, 1e-6, 1)), "best_p": (pi == pi.max()).astype(float),
             "log_pooled": np.log(np.clip(po, 1e-6, 1)), **dict(zip(NUMERIC, f.numeric.T)),
             "relation": f.relation, "category": list(f.category)}
            for f, pi, po in zip(candidate_features(plans, queries, q, near), p, pooled)]


def design(feats: dict, which: str, relations: list[str], categories: list[str]) -> np.ndarray:
    """[candidates, features] of one question under the feature set ``which``."""
    parts = which.split("+")
    parts += DOCUMENT if "document" in parts else []
    cols: list[np.ndarray] = [feats[c] for group, names in COLUMNS.items() if group in parts for c in names]
    n = len(feats["log_p"])
    if "relation" in parts:
        cols += [np.full(n, float(feats["relation"] == r)) for r in relations]
    if "category" in parts:
        cols += [np.array([float(c == k) for c in feats["category"]]) for k in categories]
    return np.stack(cols, axis=1)


def fit_stack(X: list[np.ndarray], labels: list[np.ndarray], c: float):
    """The standardised logistic regression of the questions' designs ``X`` on their ``labels``: a
    function from a design to its probabilities (one class only: that class's share, everywhere)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    y = np.concatenate(labels) if labels else np.zeros(0)
    if len(set(y.tolist())) < 2:
        share = y.mean() if len(y) else 0.0
        return lambda x: np.full(len(x), share)
    scaler = StandardScaler().fit(np.concatenate(X))
    clf = LogisticRegression(C=c, max_iter=2000).fit(scaler.transform(np.concatenate(X)), y)
    return lambda x: clf.predict_proba(scaler.transform(x))[:, 1]


def stacked_scores(feats: list[dict], labels: list[np.ndarray], docs: list[str], which: str, c: float,
                   k: int, relations: list[str], categories: list[str]) -> list[np.ndarray]:
    """Each question's candidate probabilities from the regression fitted on the other folds."""
    X = [design(f, which, relations, categories) for f in feats]
    out: list[np.ndarray | None] = [None] * len(X)
    for f in range(k):
        inside = [i for i, d in enumerate(docs) if document_fold(d, k) != f]
        predict = fit_stack([X[i] for i in inside], [labels[i] for i in inside], c)
        for i, d in enumerate(docs):
            if document_fold(d, k) == f:
                out[i] = predict(X[i])
    return out


@dataclasses.dataclass
class Questions:
    """One run's tuning questions with their features and labels (module docstring)."""

    docs: list
    gold: object
    ex: object
    plans: list
    queries: list
    model_p: list[np.ndarray]
    feats: list[dict]
    labels: list[np.ndarray]
    qdocs: list[str]


def run_questions(cfg, run: Path, models: list[int] | None) -> Questions:
    """The questions ``cfg``'s extraction asks of ``run``'s models on its tuning documents."""
    docs, gold, ex, plans, queries = tuning_questions(cfg, run, models)
    model_p = ex.answers(plans, queries, "model", pooled=False)
    lexical_q = ex.lexical_scores(plans, queries)
    shipped = ex.pooled(plans, queries, model_p, "model")
    feats = question_features(ex, plans, queries, model_p, lexical_q, shipped)
    qdocs = [plans[q.chunk].doc.id for q in queries]
    labels = [np.array([float((d, frozenset((q.head, c))) in gold.untyped) for c in q.candidates])
              for d, q in zip(qdocs, queries)]
    return Questions(docs, gold, ex, plans, queries, model_p, feats, labels, qdocs)


def score_at(qs: Questions, cfg, scores: list[np.ndarray], k: int, t: float, rmap: dict) -> dict:
    """Pair and typed F1 of ``scores`` through the shipped selection at k and threshold t."""
    qs.ex.cfg = dataclasses.replace(cfg.extract, tails_per_query=k, min_confidence=t)
    m = evaluate_system(*pair_sets(qs.ex.decide(qs.plans, qs.queries, scores, "model"), rmap), qs.gold)
    u, ty = m["untyped"]["all"], m["typed"]["all"]
    return {"k": k, "t": t, "P": u["precision"], "R": u["recall"], "F1": u["f1"], "typed_F1": ty["f1"]}


def main() -> None:
    p = study_parser(__doc__)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--sets", nargs="+", default=list(FEATURE_SETS),
                   help="feature sets: '+'-joined groups of model, lexical, pooled, document or its "
                        f"parts ({', '.join(DOCUMENT)})")
    p.add_argument("--c", nargs="+", type=float, default=[0.1, 1.0])
    p.add_argument("--k", nargs="+", type=int, default=[2, 3, 4, 6, 8])
    p.add_argument("--thresholds", nargs="+", type=float, default=[round(0.1 * i, 1) for i in range(1, 10)])
    p.add_argument("--apply-to", type=Path, default=None, metavar="RUN",
                   help="also score each set, fitted on every tuning document at its best C, k and "
                        "threshold, on the run RUN (its own config.yaml): BioRED dev, reported once")
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    for which in a.sets:
        unknown = set(which.split("+")) - set(COLUMNS) - {"document", "relation", "category"}
        if unknown:
            p.error(f"--sets {which}: unknown feature group(s) {sorted(unknown)}")
    cfg = load_config(a.config, overrides)
    rmap = dict(cfg.evaluate.relation_map)
    qs = run_questions(cfg, a.run_dir, a.models)
    relations = sorted({q.relation for q in qs.queries})
    categories = sorted({c for f in qs.feats for c in f["category"]})

    def best(scores: list[np.ndarray], label: dict) -> dict:
        return max(({**label, **score_at(qs, cfg, scores, k, t, rmap)} for k in a.k for t in a.thresholds),
                   key=lambda r: r["F1"])

    table = [best(qs.ex.pooled(qs.plans, qs.queries, qs.model_p, "model", weight=w),
                  {"features": f"pooled w={w}", "C": "-"}) for w in (0.0, 0.5, 1.0)]
    for which in a.sets:
        for c in a.c:
            s = stacked_scores(qs.feats, qs.labels, qs.qdocs, which, c, a.folds, relations, categories)
            table.append(best(s, {"features": which, "C": c}))
    print_table(table, f"stacked pair scores on {len(qs.docs)} documents, {len(qs.queries)} questions, "
                       f"{sum(int(x.sum()) for x in qs.labels)} positive candidates; {a.folds} document folds")
    rows = table
    if a.apply_to is not None:
        applied = apply_to(a, overrides, qs, table, relations, categories)
        print_table(applied, f"fitted on every tuning document at the settings above, applied to {a.apply_to}")
        rows = table + applied
    write_json("pair_stack", rows, a.out, run_dir=str(a.run_dir), documents=len(qs.docs), overrides=overrides)


#: the overrides that name a study's tuning documents, which ``--apply-to`` leaves to the other run
DOCUMENT_KEYS = ("extract.paths=", "extract.document_fraction=", "evaluate.gold=")


def apply_to(a, overrides: list[str], qs: Questions, table: list[dict], relations: list[str],
             categories: list[str]) -> list[dict]:
    """Each set's row on another run (``--apply-to RUN``: its own ``RUN/config.yaml`` with the
    command line's overrides less those naming the tuning documents): a stacked set fitted on every
    tuning question at the C of its best row, a pooled row as it is, each at its row's k and
    threshold. Nothing is chosen on that run."""
    cfg = load_config(a.apply_to / "config.yaml", [o for o in overrides if not o.startswith(DOCUMENT_KEYS)])
    rmap = dict(cfg.evaluate.relation_map)
    other = run_questions(cfg, a.apply_to, a.models)
    best: dict[str, dict] = {}
    for row in table:                                  # the first of the best F1 of each set
        if row["features"] not in best or row["F1"] > best[row["features"]]["F1"]:
            best[row["features"]] = row
    rows = []
    for which, row in best.items():
        if which.startswith("pooled w="):
            w = float(which.split("=")[1])
            scores = other.ex.pooled(other.plans, other.queries, other.model_p, "model", weight=w)
        else:
            predict = fit_stack([design(f, which, relations, categories) for f in qs.feats], qs.labels, row["C"])
            scores = [predict(design(f, which, relations, categories)) for f in other.feats]
        rows.append({"features": which, "C": row["C"], **score_at(other, cfg, scores, row["k"], row["t"], rmap),
                     "applied_to": str(a.apply_to)})
    return rows


if __name__ == "__main__":
    main()
