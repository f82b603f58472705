"""Can a learned combination of the typer, the model's relation scores and the seed KG type pairs
better than the typer alone? (docs/experiments/stacked-baselines.md)

    .venv/bin/python experiments/typing_stack.py --config configs/biored.yaml --run-dir runs/tune \\
        [--selection 0.5,6,0.4] [--folds 5] [--c 0.1 1 10] [override ...]

The extraction's pairs do not depend on how they are typed, so this takes the pairs of one selection
(``extract.lexical_weight``, k, threshold) once and then retypes them. For every kept pair and each
relation r that the schema admits for its categories, the features are

* ``typer``: the relation typer's log P(r | pair) (zero, with a flag, when the pair shares no
  sentence and the typer has no answer);
* ``model``: the candidate head's probability for the pair's tail under r's question (the better of
  the two directions), log-normalised over the admitted relations, also crossed with the category
  pair (the model's scores may mean more for chemical–disease pairs, whose seed triples are typed,
  than for gene–gene pairs);
* ``kg``: whether the seed KG holds an edge of r between the two ids (its relation mapped by
  ``evaluate.relation_map``); the slice's own relations are held out of the KG as in training;
* ``category``: the category pair, crossed with r (the prior).

A multinomial logistic regression over the admitted relations (a conditional logit: one weight
vector shared by every relation, the features above per relation) is fitted on the kept pairs that
are gold pairs with a gold type among the asked relations, in document folds: each fold's pairs are
typed by the regression fitted on the other folds. Every feature set is scored the same way; the
``typer`` row is the shipped choice, so what the ``model`` features add over ``typer`` (and over
``typer+kg``) is the model's share of the typing.

Written as an experiment, not an ``extract.*`` option: on the slice every source added to the
typer lowers its type accuracy (the record).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tune_extraction import split_overrides, study_parser, tuning_questions  # noqa: E402
from typing_blend import BlendTyping  # noqa: E402
from _study import document_fold, print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.metrics import evaluate_system, pair_sets  # noqa: E402
from graphmert.extract.pairs import _id  # noqa: E402

FEATURE_SETS = ("typer", "typer+category", "typer+kg", "typer+model", "typer+model+category",
                "typer+kg+model", "typer+kg+model+category", "model+category")


@dataclasses.dataclass
class Row:
    """One kept pair: where it is, what each source says per admitted relation."""

    doc: str
    pair: frozenset
    cats: str                       # the category pair, sorted, joined by '|'
    admitted: list[str]
    typer: dict[str, float] | None  # log P_typer(r)
    model: dict[str, float]         # log P_model(r), normalised over the admitted relations
    kg: set[str]                    # relations the seed KG holds between the two ids
    chosen: str                     # the shipped choice


class StackTyping(BlendTyping):
    """A :class:`PairExtractor` (through :class:`BlendTyping` at weight 0: the typer's choice) that
    records each kept pair's typing features (``record``) or types it from ``chosen`` ((doc, pair) →
    relation) instead of the typer."""

    record: list[Row] | None = None
    chosen: dict | None = None
    kg_types: dict = {}

    def _one_relation(self, rows, cats, typed):
        top = super()._one_relation(rows, cats, typed)
        doc, head, relation, tail, v, q = top
        admitted = [r for r in self.relations if self.schema.allows(r, cats(doc, head), cats(doc, tail))]
        if len(admitted) < 2:
            return top
        pair = frozenset((_id(head), _id(tail)))
        if self.chosen is not None:
            return (doc, head, self.chosen.get((doc, pair), relation), tail, v, q)
        if self.record is not None:
            p = np.array([max(self._pairs.get((doc, head, r, tail), (0.0,))[0],
                              self._pairs.get((doc, tail, r, head), (0.0,))[0], 1e-6) for r in admitted])
            self.record.append(Row(
                doc=doc, pair=pair, cats="|".join(sorted((cats(doc, head), cats(doc, tail)))),
                admitted=admitted, typer=None if typed is None else {r: typed.get(r, -20.0) for r in admitted},
                model=dict(zip(admitted, np.log(p / p.sum()))), kg=self.kg_types.get(pair, set()),
                chosen=relation))
        return top


def kg_relation_types(kg, relation_map: dict) -> dict[frozenset, set[str]]:
    """Unordered id pair → the (mapped) relations of the seed KG's edges between them."""
    out: dict[frozenset, set[str]] = {}
    for e in kg.edges:
        if e.subject != e.object:
            out.setdefault(frozenset((e.subject, e.object)), set()).add(relation_map.get(e.predicate, e.predicate))
    return out


def features(row: Row, relation: str, which: str, relations: list[str], categories: list[str]) -> np.ndarray:
    """The feature vector of ``relation`` for ``row`` under the feature set ``which`` (module docstring)."""
    parts = which.split("+")
    f: list[float] = []
    if "typer" in parts:
        f += [row.typer[relation] if row.typer else 0.0, float(row.typer is None)]
    if "model" in parts:
        f.append(row.model[relation])
        if "category" in parts:
            f += [row.model[relation] * (row.cats == c) for c in categories]
    if "kg" in parts:
        f += [float(relation in row.kg), float(bool(row.kg) and relation not in row.kg)]
    if "category" in parts:
        f += [float(row.cats == c and relation == r) for c in categories for r in relations]
    return np.array(f)


def fit_conditional_logit(X: list[np.ndarray], y: list[int], c: float, steps: int = 300) -> np.ndarray:
    """Weights w maximising Σ log softmax_j(X_i[j] · w)[y_i] − ‖w‖² / (2c), by L-BFGS (torch):
    ``X_i`` is [admitted relations, features] for row i, ``y_i`` its gold relation's index."""
    d = X[0].shape[1]
    w = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    xs = [torch.from_numpy(x) for x in X]
    opt = torch.optim.LBFGS([w], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -sum(torch.log_softmax(x @ w, 0)[t] for x, t in zip(xs, y)) + (w @ w) / (2 * c)
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy()


def stacked_choices(rows: list[Row], gold_type: dict, which: str, c: float, k: int,
                    relations: list[str], categories: list[str], mat=None) -> dict:
    """(doc, pair) → relation chosen by the regression fitted on the other folds' labelled rows;
    ``mat`` (row → [admitted, features]) replaces the features of ``which``."""
    if mat is None:
        def mat(row: Row) -> np.ndarray:
            return np.stack([features(row, r, which, relations, categories) for r in row.admitted])

    chosen = {}
    for f in range(k):
        train = [(mat(r), r.admitted.index(gold_type[(r.doc, r.pair)])) for r in rows
                 if document_fold(r.doc, k) != f and gold_type.get((r.doc, r.pair)) in r.admitted]
        w = fit_conditional_logit([x for x, _ in train], [t for _, t in train], c) if train else None
        for r in rows:
            if document_fold(r.doc, k) == f:                 # no labelled pair in the other folds: shipped choice
                chosen[(r.doc, r.pair)] = r.chosen if w is None else r.admitted[int(np.argmax(mat(r) @ w))]
    return chosen


def main() -> None:
    p = study_parser(__doc__)
    p.add_argument("--selection", default="0.5,6,0.4", metavar="W,K,T",
                   help="(extract.lexical_weight, tails_per_query, min_confidence)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--c", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, overrides)
    rmap = dict(cfg.evaluate.relation_map)
    docs, gold, ex, plans, queries = tuning_questions(cfg, a.run_dir, a.models, StackTyping.wrap)
    ex.kg_types = kg_relation_types(ex.kg, rmap)
    w, k, t = (float(x) for x in a.selection.split(","))
    scores = ex.pooled(plans, queries, ex.answers(plans, queries, "model", pooled=False), "model", weight=w)
    ex.cfg = dataclasses.replace(cfg.extract, tails_per_query=int(k), min_confidence=t, relation_choice="typer")

    def score(chosen: dict | None) -> dict:
        ex.chosen = chosen
        m = evaluate_system(*pair_sets(ex.decide(plans, queries, scores, "model"), rmap), gold)
        u, ty = m["untyped"]["all"], m["typed"]["all"]
        return {"F1": u["f1"], "typed_F1": ty["f1"], "type_acc": ty["tp"] / u["tp"] if u["tp"] else 0.0}

    ex.record = []
    shipped = score(None)
    rows, ex.record = ex.record, None
    relations = list(ex.relations)
    categories = sorted({r.cats for r in rows})
    gold_type = {(d, pr): ty for d, pr, ty in gold.typed if ty in relations}
    labelled = sum(gold_type.get((r.doc, r.pair)) in r.admitted for r in rows)
    table = [{"features": "typer (shipped)", "C": "-", **shipped}]
    for which in FEATURE_SETS:
        for c in a.c:
            table.append({"features": which, "C": c,
                          **score(stacked_choices(rows, gold_type, which, c, a.folds, relations, categories))})
    print_table(table, f"stacked typing on {len(docs)} documents: {len(rows)} pairs with a choice, "
                       f"{labelled} of them gold pairs of an asked type; {a.folds} document folds")
    write_json("typing_stack", table, a.out, run_dir=str(a.run_dir), documents=len(docs),
               pairs=len(rows), labelled=labelled, selection=a.selection, overrides=overrides)


if __name__ == "__main__":
    main()
