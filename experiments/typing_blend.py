"""Can the model's relation scores help the relation typer type the pairs? (docs/experiments/model-typing-blend.md)

    .venv/bin/python experiments/typing_blend.py --config configs/biored.yaml --run-dir runs/tune \\
        [--weights 0 0.1 0.2 0.3 0.5 0.7 1] [--selections 0.5,6,0.4 0,6,0.3] [override ...]

For every pair the extraction keeps (one relation per pair, ``relation_choice: typer``), the relation
becomes

    argmax_r  (1 − b) · log P_typer(r | pair) + b · log P_model(r | pair)

over the relations the schema admits for the pair's categories. P_model(r | pair) is the model's
probability for the pair's tail under relation r's question (the better of the pair's two
directions), normalised over the admitted relations; b = 0 is the shipped typer, b = 1 the model
alone. The pairs do not depend on b, only their types. RUN is a run trained with the tuning
documents held out (the slice overrides of configs/biored.yaml select them: tune_extraction.py).

Written as a subclass of the extractor rather than as an ``extract.*`` option: the blend lost to the
typer at every b > 0 on the slice, so the library does not carry it.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tune_extraction import split_overrides, study_parser, tuning_questions  # noqa: E402
from _study import print_table, write_json  # noqa: E402

from graphmert.config import load_config  # noqa: E402
from graphmert.eval.metrics import evaluate_system, pair_sets  # noqa: E402
from graphmert.extract.pairs import PairExtractor  # noqa: E402


class BlendTyping(PairExtractor):
    """A :class:`PairExtractor` whose typer choice also weighs the model's relation probabilities
    (``weight`` b; module docstring). Only ``relation_choice: typer`` rows change."""

    weight = 0.0
    _pairs: dict = {}

    @classmethod
    def wrap(cls, ex: PairExtractor) -> "BlendTyping":
        out = cls.__new__(cls)
        out.__dict__.update(ex.__dict__)
        return out

    def select(self, pairs, *args, **kwargs):
        self._pairs = pairs                  # (doc, head, relation, tail) → (probability, query)
        return super().select(pairs, *args, **kwargs)

    def _one_relation(self, rows, cats, typed):
        top = super()._one_relation(rows, cats, typed)
        if typed is None or self.weight <= 0:
            return top
        doc, head, _, tail, v, q = top
        admitted = [r for r in self.relations
                    if r in typed and self.schema.allows(r, cats(doc, head), cats(doc, tail))]
        if not admitted:
            return top
        p = np.array([max(self._pairs.get((doc, head, r, tail), (0.0,))[0],
                          self._pairs.get((doc, tail, r, head), (0.0,))[0], 1e-6) for r in admitted])
        score = (1 - self.weight) * np.array([typed[r] for r in admitted]) + self.weight * np.log(p / p.sum())
        return (doc, head, admitted[int(np.argmax(score))], tail, v, q)


def main() -> None:
    p = study_parser(__doc__)
    p.add_argument("--weights", nargs="+", type=float, default=[0, 0.1, 0.2, 0.3, 0.5, 0.7, 1])
    p.add_argument("--selections", nargs="+", default=["0.5,6,0.4", "0,6,0.3"], metavar="W,K,T",
                   help="(extract.lexical_weight, tails_per_query, min_confidence) settings")
    args, overrides = split_overrides(sys.argv[1:])
    a = p.parse_args(args)
    cfg = load_config(a.config, overrides)
    docs, gold, ex, plans, queries = tuning_questions(cfg, a.run_dir, a.models, BlendTyping.wrap)
    alone = ex.answers(plans, queries, "model", pooled=False)
    rmap, rows = dict(cfg.evaluate.relation_map), []
    for spec in a.selections:
        w, k, t = (float(x) for x in spec.split(","))
        scores = ex.pooled(plans, queries, alone, "model", weight=w)
        ex.cfg = dataclasses.replace(cfg.extract, tails_per_query=int(k), min_confidence=t, relation_choice="typer")
        for b in a.weights:
            ex.weight = b
            m = evaluate_system(*pair_sets(ex.decide(plans, queries, scores, "model"), rmap), gold)
            u, ty = m["untyped"]["all"], m["typed"]["all"]
            rows.append({"lexical_w": w, "k": int(k), "min_conf": t, "b": b, "F1": u["f1"],
                         "typed_F1": ty["f1"], "type_acc": ty["tp"] / u["tp"] if u["tp"] else 0.0})
    print_table(rows, f"typing blend on {len(docs)} documents, {len(gold.untyped)} gold pairs")
    write_json("typing_blend", rows, a.out, run_dir=str(a.run_dir), documents=len(docs), overrides=overrides)


if __name__ == "__main__":
    main()
