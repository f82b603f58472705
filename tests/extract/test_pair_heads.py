"""The pair heads (graphmert/extract/pair_heads.py, issue #48): the pair vectors against the model's
states read by hand, their symmetry, that a head learns a typing built to be learnable, the blend
with the typer, that only the model rankers' pairs take the type head's types, and that the
relatedness head's probability pools into the model rankers' scores only."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from graphmert.extract.pair_heads import (RELATED, PairHead, PairHeadError, _deterministic, _sum_rows, blend,
                                         pair_sums, pair_vectors, question_vectors)
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import layout_arrays
import graphmert.extract.pairs as pairs_module
import test_pairs
from test_pairs import OneTypeTyper, extractor

world = test_pairs.world                   # the fixture: three one-chunk documents and a tiny model


def by_hand(ex, plans) -> dict:
    """x(h, c) per question, each question in a graph of its own, read position by position."""
    out = {}
    for plan in plans:
        for q in plan.queries:
            g = ex._graph(plan, [q])
            with torch.no_grad():
                hidden = ex.model(collate_graphs([g], "packed")).hidden[0]                 # [L, H]
            spans = plan.entities.spans
            for c in q.candidates:
                tokens = [t for a, b, _ in spans[c] for t in range(a, b)]
                a, b, _ = min(spans[c], key=lambda s: abs(s[0] - q.root))     # nearest start, first on ties
                lo, hi = (q.end, a) if a >= q.end else (b, q.root) if b <= q.root else (0, 0)
                between = hidden[lo:hi].mean(0) if hi > lo else torch.zeros(hidden.shape[-1])
                leaf = int(layout_arrays(g, "packed").leaf_position[q.root, 0])
                out[(plan.doc.id, q.chunk, q.root, q.head, q.relation, c)] = torch.cat([
                    hidden[q.root:q.end].mean(0), hidden[tokens].mean(0), between, hidden[leaf]]).numpy()
    return out


def test_question_vectors_are_the_models_states_read_by_hand(world):
    ex = extractor(world, pack_queries=False, batch_size=3)             # several padded batches
    plans = ex.questions(world["docs"], world["chunks"])
    (got,), want = question_vectors(ex, [ex.model], plans), by_hand(ex, plans)
    assert set(got) == set(want) and len(got) == sum(len(q.candidates) for p in plans for q in p.queries)
    for key, x in want.items():
        np.testing.assert_allclose(got[key], x, rtol=1e-4, atol=1e-5)


def oriented(x: dict, plans, H: int):
    """(document pair, x(h, c)) per question of ``x`` in its order, the first two blocks swapped
    where the head comes after the candidate in (category, id) order (pair_heads' docstring)."""
    cats = {(p.doc.id, e): c for p in plans for e, c in p.entities.categories.items()}
    for (doc, _, _, h, _, c), v in x.items():
        if (cats[(doc, h)], h) > (cats[(doc, c)], c):
            v = np.concatenate([v[H:2 * H], v[:H], v[2 * H:]])
        yield (doc, frozenset((h, c))), v


def test_a_pair_vector_averages_its_questions_whoever_asks(world):
    """Both directions of a pair land in one vector, the first block always the entity first in
    (category, id) order; an ensemble concatenates its members' vectors."""
    ex = extractor(world, members=[world["model"]])
    plans = ex.questions(world["docs"], world["chunks"])
    (x,) = question_vectors(ex, [ex.model], plans)
    want: dict = {}
    for key, v in oriented(x, plans, world["model"].config.hidden_size):
        want.setdefault(key, []).append(v)
    got = pair_vectors(ex, plans)
    assert set(got) == set(want)
    assert any(len({(k[1], k[2], k[4]) for k in x if (k[0], frozenset((k[3], k[5]))) == key}) > 1
               for key in want)                                # some pair is asked several times
    for key, vs in want.items():
        one = np.mean(vs, axis=0)
        np.testing.assert_allclose(got[key], np.concatenate([one, one]), rtol=1e-5, atol=1e-6)


def test_pair_sums_give_the_per_question_average_in_its_order(world):
    """PairSums (extraction's accumulation, batch by batch in integer pair codes) equals the loop over
    per-question vectors it replaced, to float32 rounding, in first-seen pair order, across batches
    that split a pair's questions."""
    ex = extractor(world, pack_queries=False, batch_size=2, members=[world["model"]])
    plans = ex.questions(world["docs"], world["chunks"])
    (x,) = question_vectors(ex, [ex.model], plans)
    sums: dict = {}
    for key, v in oriented(x, plans, world["model"].config.hidden_size):
        acc = sums.setdefault(key, [0.0, 0])
        acc[0], acc[1] = acc[0] + v, acc[1] + 1
    found = pair_sums(ex, plans)
    got = pair_vectors(ex, plans, found)
    assert list(got) == list(sums) and len(got) > 3
    # every question-candidate row summed once; a pair's sum copied once per batch that holds it
    assert found[0].rows == len(x) and len(got) < found[0].batch_pairs < found[0].rows
    for key, (total, n) in sums.items():
        assert got[key].dtype == np.float32
        np.testing.assert_allclose(got[key], np.concatenate([total / n, total / n]), rtol=1e-6, atol=1e-7)


def naive_sums(x: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    out = np.zeros((groups, x.shape[1]), dtype=np.float64)
    for row, g in zip(x, group):
        out[g] += row
    return out


def test_rows_are_summed_per_group_as_a_loop_sums_them():
    """_sum_rows (the per-batch pair sums PairSums takes to the host) against a loop in float64,
    groups unsorted and one group left empty."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 16)).astype(np.float32)
    group = rng.integers(0, 40, 500)
    group[group == 7] = 8                                                        # group 7 has no row
    got = _sum_rows(torch.from_numpy(x), torch.from_numpy(group), 40)
    assert got.shape == (40, 16) and got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), naive_sums(x, group, 40), rtol=1e-5, atol=1e-5)
    assert not got[7].any()


def test_the_deterministic_block_restores_the_callers_setting():
    """_deterministic (the CUDA sums' mode) is on inside its block only, and the caller's setting and
    warn-only flag come back after it, also when the block raises."""
    assert not torch.are_deterministic_algorithms_enabled()
    with _deterministic():
        assert torch.are_deterministic_algorithms_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with pytest.raises(KeyError), _deterministic():
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
            raise KeyError("inside")
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_rows_are_summed_on_cuda_the_same_way_every_time():
    """On CUDA the sums are bit-identical from call to call (index_add_'s atomics would not be), equal
    the CPU's to float32 rounding, and the caller's deterministic-algorithms setting is restored."""
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.normal(size=(20000, 256)).astype(np.float32))
    group = torch.from_numpy(rng.integers(0, 50, 20000))
    runs = [_sum_rows(x.cuda(), group.cuda(), 50).cpu() for _ in range(5)]
    assert all(torch.equal(runs[0], r) for r in runs[1:])
    np.testing.assert_allclose(runs[0].numpy(), naive_sums(x.numpy(), group.numpy(), 50), rtol=1e-4, atol=1e-3)
    assert not torch.are_deterministic_algorithms_enabled()


def test_the_head_learns_a_typing_built_to_be_learnable():
    """Three relations whose pairs sit around three centres in 24 dimensions: fitted on 300 pairs,
    the head types 200 new ones almost always right, and a wrong centre would not."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 24)) * 2
    rels = ["Association", "Negative_Correlation", "Positive_Correlation"]

    def draw(n: int, tag: str):
        y = rng.integers(0, 3, n)
        return ({(f"{tag}{i}", frozenset((f"a{i}", f"b{i}"))): centres[t] + rng.normal(size=24) for i, t in enumerate(y)},
                {(f"{tag}{i}", frozenset((f"a{i}", f"b{i}"))): rels[t] for i, t in enumerate(y)})

    x, y = draw(300, "fit")
    head = PairHead(rels, c=1.0).fit(x, {**y, ("other", frozenset()): "Bind"})
    assert head.fit_counts["pairs"] == 300 and sum(head.fit_counts[r] for r in rels) == 300
    new_x, new_y = draw(200, "new")
    answers = head.log_probabilities(new_x)
    right = sum(max(lp, key=lp.get) == new_y[k] for k, lp in answers.items())
    assert right >= 190
    for lp in answers.values():
        assert set(lp) == set(rels) and math.isclose(sum(math.exp(v) for v in lp.values()), 1.0, rel_tol=1e-6)


def test_the_head_needs_two_relations_and_a_fit():
    with pytest.raises(PairHeadError, match="needs labelled pairs of at least two of"):
        PairHead(["Association", "Bind"]).fit({("d", frozenset("ab")): np.ones(4)}, {("d", frozenset("ab")): "Bind"})
    with pytest.raises(PairHeadError, match="not fitted"):
        PairHead(["Association", "Bind"]).log_probabilities({("d", frozenset("ab")): np.ones(4)})


def test_blend_weighs_typer_and_head():
    typer = {"a": math.log(0.6), "b": math.log(0.3), "Bind": math.log(0.1)}
    head = {"a": math.log(0.2), "b": math.log(0.8)}
    assert max(blend(typer, head, 0.0), key=blend(typer, head, 0.0).get) == "a"
    assert blend(typer, head, 1.0) == head and blend(None, head, 0.3) == head
    half = blend(typer, head, 0.5)
    assert set(half) == {"a", "b"} and max(half, key=half.get) == "b"          # 0.6·0.2 < 0.3·0.8
    assert half["a"] == pytest.approx(0.5 * math.log(0.6) + 0.5 * math.log(0.2))


class OneTypeHead:
    """A fitted head that calls every pair ``relation``."""

    def __init__(self, relations, relation):
        self.relations, self.relation, self.asked = relations, relation, 0

    def log_probabilities(self, vectors):
        self.asked += 1
        return {k: {r: 0.0 if r == self.relation else -20.0 for r in self.relations} for k in vectors}


class HashRelated:
    """A fitted relatedness head whose ρ is a fixed function of the pair: (1 + hash) / 10."""

    classes = list(RELATED)

    @staticmethod
    def rho(key) -> float:
        return 0.1 + 0.8 * (sum(map(ord, "".join(sorted(key[1])))) % 7) / 6

    def log_probabilities(self, vectors):
        return {k: {RELATED[0]: math.log(1 - self.rho(k)), RELATED[1]: math.log(self.rho(k))} for k in vectors}


class LexicalTyper(OneTypeTyper):
    """Finds every pair related with probability ``related``, for the lexical score q too."""

    def relatedness(self, items, cache=None):
        return [self.related for _ in items]


def test_the_relatedness_head_pools_into_the_model_rankers_scores_only(world):
    """s^(1−v) ρ^v after the lexical pooling for the model rankers; the model-alone row keeps ρ and
    drops the lexical score; the controls' scores do not move."""
    docs, chunks = world["docs"], world["chunks"]
    ex = extractor(world, related_head_weight=0.4, lexical_weight=0.5, typer_files=["x"])
    ex.typer, ex.related_head = LexicalTyper("associated_with", related=0.3), HashRelated()
    plans = ex.questions(docs, chunks)
    queries = [q for p in plans for q in p.queries]
    alone = ex.answers(plans, queries, "model", pooled=False)
    rho = [np.array([HashRelated.rho((plans[q.chunk].doc.id, frozenset((q.head, c)))) for c in q.candidates])
           for q in queries]
    assert len({float(x) for r in rho for x in r}) > 2
    got = ex.pooled(plans, queries, alone, "model")
    for p, r, g in zip(alone, rho, got):
        np.testing.assert_allclose(g, (p ** 0.5 * 0.3 ** 0.5) ** 0.6 * r ** 0.4, rtol=1e-6)
    own = ex.pooled(plans, queries, alone, "model", weight=0.0)
    for p, r, g in zip(alone, rho, own):
        np.testing.assert_allclose(g, p ** 0.6 * r ** 0.4, rtol=1e-6)
    nearest = ex.answers(plans, queries, "nearest", pooled=False)
    assert all(np.array_equal(a, b) for a, b in zip(ex.pooled(plans, queries, nearest, "nearest"), nearest))
    out, _ = ex.extract(docs, chunks, rankers=["model"], untyped="alone")       # the model-alone row: own
    ex.cfg = dataclasses.replace(ex.cfg, related_head_weight=0.0, lexical_weight=0.0)
    want = ex.without_typer().decide(plans, queries, own, "model")
    assert [t.to_dict() for t in out["alone"]] == [t.to_dict() for t in want] and want


def test_the_model_rankers_pairs_take_the_heads_types_and_the_controls_keep_the_typer(world, monkeypatch):
    """relation_choice typer at type_head_weight 1: graphmert's pairs and the model-alone row take
    the head's type, the same pairs as at weight 0, where the typer types them; the nearest control
    keeps the typer's; the model encodes the pairs once for every decision over the same questions,
    and at weight 0 the head is never asked."""
    from graphmert.kg.schema import RelationSchema

    monkeypatch.setattr(RelationSchema, "allows", lambda self, relation, a, b: True)   # a choice everywhere
    passes, vectors = [], []
    encoded = pairs_module.PairExtractor.encoded
    monkeypatch.setattr(pairs_module.PairExtractor, "encoded",
                        lambda self, models, plans, **kw: passes.append(len(models)) or encoded(self, models, plans, **kw))
    monkeypatch.setattr(pairs_module, "pair_vectors", lambda ex, plans, found=None: vectors.append(found is not None)
                        or pair_vectors(ex, plans, found))
    docs, chunks = world["docs"], world["chunks"]
    typer = OneTypeTyper("associated_with", related=1.0)
    out = {}
    for weight in (0.0, 1.0):
        ex = extractor(world, type_head_weight=weight, relation_choice="typer", one_relation_per_pair=True,
                       tails_per_query=5)
        ex.typer, ex.type_head = typer, OneTypeHead(ex.relations, "treats")
        passes.clear()
        out[weight], _ = ex.extract(docs, chunks, rankers=["model", "nearest"], untyped="alone")
        assert ex.type_head.asked == (2 if weight else 0)          # graphmert and the model-alone row
        assert passes == [1]               # ... from the one encoder pass that gives the model's answers
    assert vectors == [True]                                        # the vectors of that pass, once
    pairs = lambda ts: {(t.documents[0], frozenset((t.head_id, t.tail_id))) for t in ts}  # noqa: E731
    assert pairs(out[0.0]["model"]) == pairs(out[1.0]["model"]) and out[0.0]["model"]
    assert {t.relation for t in out[0.0]["model"]} == {"associated_with"}
    assert {t.relation for t in out[1.0]["model"]} == {t.relation for t in out[1.0]["alone"]} == {"treats"}
    assert [t.to_dict() for t in out[1.0]["nearest"]] == [t.to_dict() for t in out[0.0]["nearest"]]
    assert {t.relation for t in out[1.0]["nearest"]} == {"associated_with"}


def test_one_pass_gives_every_members_answers_and_the_pair_vectors(world):
    """An ensemble with a pair head in use: the answers of the shared pass are each member's own
    (averaged), and the pair vectors it leaves behind are those a pass of their own gives."""
    other = test_pairs.tiny_model(world["tok"].get_vocab_size(), len(world["kg"].relations), seed=7)
    ex = extractor(world, members=[other], related_head_weight=0.5, batch_size=2)
    ex.related_head = object()                                          # read only through reads_pair_vectors
    plans = ex.questions(world["docs"], world["chunks"])
    assert ex.reads_pair_vectors
    got = ex.ensemble_scores(plans, "candidate", "model")
    assert ex._vectors[0] is plans                                      # the pass left these plans' vectors
    alone = [ex.model_scores(m, plans, "candidate") for m in (world["model"], other)]
    assert len(got) == len(alone[0]) and not all(np.allclose(a, b) for a, b in zip(*alone))   # two models
    for g, a, b in zip(got, *alone):
        np.testing.assert_allclose(g, (a + b) / 2, rtol=1e-6, atol=1e-7)
    cached = ex.pair_vectors(plans)
    fresh = pair_vectors(ex, plans)
    assert set(cached) == set(fresh) and cached
    for key, x in fresh.items():
        np.testing.assert_allclose(cached[key], x, rtol=1e-5, atol=1e-6)
        assert len(x) == 2 * 4 * world["model"].config.hidden_size      # both members, concatenated
