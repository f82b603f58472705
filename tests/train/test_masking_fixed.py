"""Leaf masking for "fixed" queries (``model.leaf_query = "fixed"``) and masking related groups together.

A masked group is shown as K [MASK] leaves whatever the 80/10/10 split; its targets are the tail's
tokens, then [SEP] at slot t (none when t = K); a group without a tail is always masked with [SEP] at
slot 0; groups sharing a tail, or a (head, tail) pair in either direction, are masked together (with
entity tables and with the paper's injection provenance); ``mnm_end`` marks the end targets; the
batch's candidate questions are the masked groups with candidate rows; and the paper's masking is
unchanged for graphs without twins. Whole-entity masking (``train.entity_mask_probability``) masks every
mention of a drawn entity as MLM targets, at its rate, in training only and only with an entity
table."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphmert.config import TrainConfig
from graphmert.graph.layout import Injection, LeafyChainGraph
from graphmert.train.masking import (MODE_MASK, MaskingCollator, MaskingSpec, mask_graph, related_groups,
                                     sample_rng)
from entity_graphs import CLS, MASK, PAD, SEP, UNK, K, R, graph_a, graph_b, graph_c, table
from train_helpers import random_graph

V = 64
SPECIALS = {"pad": PAD, "unk": UNK, "cls": CLS, "sep": SEP, "mask": MASK}


def make_spec(leaf_query: str = "fixed", **train) -> MaskingSpec:
    t = {"mlm_probability": 0.0, **train}
    return MaskingSpec.from_config(TrainConfig(**t), K, SPECIALS, V, sbo_max_span_length=None,
                                   leaf_query=leaf_query)


def graph_full() -> LeafyChainGraph:
    """A tail of exactly K tokens on root 2 (entity table, one gold candidate)."""
    g = LeafyChainGraph.from_roots("f#0", "f", [CLS, 50, 51, 52, 53, 54, 55, SEP], [-1, *range(6), -1],
                                   R, K, PAD)
    g.entities = table(["F0", "F1"], [1, 1], [(2, 3, 0), (4, 7, 1)], head={2: 0}, tail={2: 1},
                       candidates=[(2, 1, 1)])
    g.inject(2, [53, 54, 55], 0, 1)
    g.validate()
    return g


def targets(batch) -> list[tuple]:
    """(graph, root, slot, label, is_end) of every MNM target, read back through the batch layout."""
    L = batch.graph.input_ids.shape[1]
    ri, ls = batch.graph.root_index.reshape(-1), batch.graph.leaf_slot.reshape(-1)
    return sorted((int(p) // L, int(ri[p]), int(ls[p]), int(y), bool(e))
                  for p, y, e in zip(batch.mnm_index, batch.mnm_labels, batch.mnm_end))


def shown_leaves(batch, b: int, root: int) -> list[int]:
    g = batch.graph
    at = (g.root_index[b] == root) & (g.leaf_slot[b] >= 0) & g.attention_mask[b]
    order = g.leaf_slot[b][at].argsort()
    return g.input_ids[b][at][order].tolist()


# -- the shape of a query ----------------------------------------------------------------------------


@pytest.mark.parametrize("fractions", [(0.8, 0.1), (0.0, 1.0), (0.0, 0.0)])
def test_a_masked_group_is_k_mask_leaves_whatever_the_replacement_split(fractions):
    spec = make_spec(mnm_probability=1.0, mask_token_fraction=fractions[0], random_token_fraction=fractions[1])
    g = graph_c()
    for i in range(20):
        m = mask_graph(g, spec, sample_rng(0, 0, 0, i))
        assert m.leaf_groups.tolist() == [r in (2, 4) for r in range(R)]
        assert m.leaf_length[[2, 4]].tolist() == [K, K]
        assert (m.leaf_ids[[2, 4]] == MASK).all()
        assert (m.group_mode[[2, 4]] == MODE_MASK).all()
        assert (np.delete(m.leaf_length, [2, 4]) == 0).all()
    assert (g.leaf_ids[2, :2] == [44, 45]).all() and g.leaf_length[2] == 2     # the graph is untouched


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_targets_are_the_tail_then_the_end_token(layout):
    spec = make_spec(mnm_probability=1.0)
    items = [(0, i, g) for i, g in enumerate([graph_a(), graph_c(), graph_full()])]
    batch = MaskingCollator(spec, layout, seed=0)(items)
    assert targets(batch) == sorted([
        (0, 1, 0, 13, False), (0, 1, 1, SEP, True),              # a@1: tail 13 (t = 1), end at slot 1
        (0, 6, 0, SEP, True),                                    # a@6: no tail, end at slot 0
        (1, 2, 0, 44, False), (1, 2, 1, 45, False), (1, 2, 2, SEP, True),
        (1, 4, 0, 46, False), (1, 4, 1, SEP, True),
        (2, 2, 0, 53, False), (2, 2, 1, 54, False), (2, 2, 2, 55, False),   # t = K: no end target
    ])
    for b, root in [(0, 1), (0, 6), (1, 2), (1, 4), (2, 2)]:
        assert shown_leaves(batch, b, root) == [MASK] * K                  # every slot is asked
        assert int(batch.graph.relation_ids[b, root]) >= 0
    assert (batch.mnm_labels[batch.mnm_end] == SEP).all()
    assert (batch.mnm_labels[~batch.mnm_end] != SEP).all()
    assert batch.mnm_end.dtype == torch.bool
    # H-GAT edges reach all K leaves of a query (the relation is fused into every asked slot)
    L = batch.graph.input_ids.shape[1]
    dst = set(batch.graph.hgat_edge_index[1].tolist())
    ri, ls = batch.graph.root_index.reshape(-1), batch.graph.leaf_slot.reshape(-1)
    for b, root in [(0, 1), (0, 6), (1, 2)]:
        slots = {int(ls[p]) for p in dst if p // L == b and int(ri[p]) == root and int(ls[p]) >= 0}
        assert slots == set(range(K))


def test_a_group_without_tail_is_always_masked_and_others_follow_the_rate():
    spec = make_spec(mnm_probability=0.0)
    collate = MaskingCollator(spec, "packed", seed=0)
    for i in range(30):
        batch = collate([(0, i, graph_a())])
        assert targets(batch) == [(0, 6, 0, SEP, True)]
        assert shown_leaves(batch, 0, 1) == [13]                 # the other group stays visible
        assert shown_leaves(batch, 0, 6) == [MASK] * K
    rate = np.mean([mask_graph(graph_a(), make_spec(mnm_probability=0.4), sample_rng(0, 0, 0, i)).leaf_groups[1]
                    for i in range(2000)])
    assert abs(rate - 0.4) < 0.04


def test_paper_mode_leaves_a_group_without_tail_out():
    batch = MaskingCollator(make_spec("tail", mnm_probability=1.0), "packed", seed=0)([(0, 0, graph_a())])
    assert targets(batch) == [(0, 1, 0, 13, False)]               # no end token, no empty query
    assert int(batch.graph.relation_ids[0, 6]) == -1 and int(batch.graph.head_length[0, 6]) == 0
    assert shown_leaves(batch, 0, 6) == []
    assert not batch.mnm_end.any()


# -- related groups ----------------------------------------------------------------------------------


def twins(provenance: bool) -> LeafyChainGraph:
    """Entities X, Y, Z, W; groups 1: X→Y, 3: Z→Y (same tail), 5: Y→X (the reverse pair), 7: Z→W
    (unrelated), 9: X with no tail. With an entity table, or (``provenance``) the paper's Injection
    records instead."""
    g = LeafyChainGraph.from_roots("t#0", "t", [CLS, *range(10, 20), SEP], [-1, *range(10), -1], 16, K, PAD)
    names = "XYZW"
    groups = {1: (0, 1, [15]), 3: (2, 1, [15]), 5: (1, 0, [11]), 7: (2, 3, [19])}
    for root, (h, t, tail) in groups.items():
        g.inject(root, tail, 0, 1, Injection(root, 1, names[h], "r", names[t], 1.0) if provenance else None)
    if not provenance:
        g.entities = table(list(names), [1] * 4, [(1, 2, 0), (3, 4, 2), (5, 6, 1), (7, 8, 2), (9, 10, 0)],
                           head={1: 0, 3: 2, 5: 1, 7: 2, 9: 0}, tail={r: t for r, (_, t, _) in groups.items()},
                           candidates=[], R=16)
        g.inject(9, [], 1, 1, allow_empty=True)
    g.validate()
    return g


@pytest.mark.parametrize("provenance", [False, True])
def test_related_groups_are_masked_together(provenance):
    g = twins(provenance)
    for chosen, want in [({1}, {1, 3, 5}), ({3}, {1, 3, 5}), ({5}, {1, 3, 5}), ({7}, {7}),
                         ({1, 7}, {1, 3, 5, 7}), (set(), set())]:
        mask = np.zeros(g.R, dtype=bool)
        mask[list(chosen)] = True
        assert set(np.flatnonzero(related_groups(g, mask))) == want, chosen
    if not provenance:                                            # a group without a tail relates to nothing
        mask = np.zeros(g.R, dtype=bool)
        mask[9] = True
        assert set(np.flatnonzero(related_groups(g, mask))) == {9}


@pytest.mark.parametrize("provenance", [False, True])
@pytest.mark.parametrize("leaf_query", ["fixed", "tail"])
def test_no_masked_group_has_a_visible_twin(provenance, leaf_query):
    """Over many masks: {1, 3, 5} are masked all or none, and a visible group never shows a masked
    group's tail token; the unrelated group 7 keeps its own rate."""
    g = twins(provenance)
    spec = make_spec(leaf_query, mnm_probability=0.3, mask_token_fraction=1.0, random_token_fraction=0.0)
    collate = MaskingCollator(spec, "packed", seed=0)
    seen, sevens = set(), 0
    for i in range(300):
        m = collate.mask(0, i, g)
        family = tuple(bool(m.leaf_groups[r]) for r in (1, 3, 5))
        assert len(set(family)) == 1, (i, family)
        seen.add(family[0])
        sevens += bool(m.leaf_groups[7])
        batch = collate([(0, i, g)])
        masked_tails = {int(y) for y, e in zip(batch.mnm_labels, batch.mnm_end) if not e}
        for root in (1, 3, 5, 7):
            if not m.leaf_groups[root]:
                assert not set(shown_leaves(batch, 0, root)) & masked_tails or root == 7
    assert seen == {True, False}
    assert abs(sevens / 300 - 0.3) < 0.1


def test_paper_graphs_without_twins_relate_nothing():
    rng = np.random.default_rng(0)
    for _ in range(20):
        g = random_graph(rng, 16, K, V, fill=0.5)                 # no provenance, no table
        chosen = rng.random(g.R) < 0.5
        assert np.array_equal(related_groups(g, chosen), chosen)
    g = graph_b()
    g.injections.append(Injection(1, 1, "P", "r", "Q", 1.0))      # one injection: nothing to relate
    mask = np.zeros(g.R, dtype=bool)
    assert not related_groups(g, mask).any()


# -- candidate questions -----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_candidates_are_the_masked_groups_with_candidate_rows(layout):
    graphs = [graph_a(), graph_b(), graph_c(), graph_full()]
    items = [(0, i, g) for i, g in enumerate(graphs)]
    ri = lambda b: (b.graph.root_index.reshape(-1), b.graph.leaf_slot.reshape(-1))     # noqa: E731
    # nothing drawn: only a@6 (no tail, always asked); b has no table; c's groups stay visible
    batch = MaskingCollator(make_spec(mnm_probability=0.0), layout, seed=0)(items)
    cq = batch.candidates
    L = batch.graph.input_ids.shape[1]
    root_index, leaf_slot = ri(batch)
    assert [(int(q) // L, int(root_index[q]), int(leaf_slot[q])) for q in cq.query_index] == [(0, 6, 0)]
    assert cq.cand_group.tolist() == [0, 0] and cq.cand_entity.tolist() == [1, 2]
    assert cq.cand_positive.tolist() == [False, False]            # "none" is its answer
    assert batch.counts[3] == 1
    # everything drawn: a@1, a@6, c@2 (c@4 has no candidate row), f@2; entities numbered a, c, f
    batch = MaskingCollator(make_spec(mnm_probability=1.0), layout, seed=0)(items)
    cq = batch.candidates
    L = batch.graph.input_ids.shape[1]
    root_index, leaf_slot = ri(batch)
    assert [(int(q) // L, int(root_index[q]), int(leaf_slot[q])) for q in cq.query_index] == [
        (0, 1, 0), (0, 6, 0), (2, 2, 0), (3, 2, 0)]
    assert cq.num_entities == 4 + 2 + 2
    assert cq.cand_group.tolist() == [0, 0, 0, 1, 1, 2, 3]
    assert cq.cand_entity.tolist() == [1, 2, 3, 1, 2, 4 + 1, 6 + 1]
    assert cq.cand_positive.tolist() == [True, False, False, False, False, True, True]
    assert batch.counts[3] == 4


def test_paper_mode_also_asks_candidates_of_masked_groups():
    """leaf_query "tail" with tables (no candidate head can read them, but the contract holds): the
    question sits on the first leaf of the masked tail."""
    batch = MaskingCollator(make_spec("tail", mnm_probability=1.0), "packed", seed=0)([(0, 0, graph_a())])
    cq = batch.candidates
    assert cq.num_groups == 1
    q = int(cq.query_index[0])
    assert int(batch.graph.root_index.reshape(-1)[q]) == 1 and int(batch.graph.leaf_slot.reshape(-1)[q]) == 0


# -- the paper's masking ----------------------------------------------------------------------------


def test_tail_and_fixed_draw_the_same_roots_and_groups_on_twin_free_graphs():
    """Same seed: identical root spans and the same chosen groups; only how a group is shown and its
    end target differ. In tail mode leaf counts are the graph's and no target is an end token."""
    rng = np.random.default_rng(5)
    graphs = [random_graph(rng, 24, K, V, fill=0.4) for _ in range(40)]
    tail = make_spec("tail", mlm_probability=0.15, mnm_probability=0.5)
    fixed = make_spec("fixed", mlm_probability=0.15, mnm_probability=0.5)
    for i, g in enumerate(graphs):
        a, b = mask_graph(g, tail, sample_rng(0, 0, 0, i)), mask_graph(g, fixed, sample_rng(0, 0, 0, i))
        assert np.array_equal(a.root_ids, b.root_ids) and np.array_equal(a.spans, b.spans)
        assert np.array_equal(a.leaf_groups, b.leaf_groups)
        assert np.array_equal(a.leaf_length, g.leaf_length)
        assert np.array_equal(b.leaf_length, np.where(b.leaf_groups, K, g.leaf_length))
    batch = MaskingCollator(tail, "packed", seed=0)([(0, i, g) for i, g in enumerate(graphs)])
    assert batch.mnm_end.numel() == batch.mnm_index.numel() and not batch.mnm_end.any()
    assert batch.candidates.num_groups == 0
    want = sum(int(g.leaf_length[m.leaf_groups].sum()) for i, g in enumerate(graphs)
               for m in [mask_graph(g, tail, sample_rng(0, 0, 0, i))])
    assert batch.mnm_index.numel() == want                      # the tail tokens, nothing else


# -- whole-entity masking (train.entity_mask_probability) --------------------------------------------


def _mention_roots(g: LeafyChainGraph, entity: int) -> list[int]:
    return [r for a, end, e in g.entities.mentions if e == entity for r in range(a, end)]


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_a_drawn_entity_has_every_mention_masked_as_an_mlm_target(layout):
    spec = make_spec(mnm_probability=1.0, entity_mask_probability=1.0, mask_token_fraction=0.0,
                     random_token_fraction=0.0)                   # the 80/10/10 split does not apply
    g = graph_a()
    m = mask_graph(g, spec, sample_rng(0, 0, 0, 0))
    mentions = sorted({r for e in range(len(g.entities.ids)) for r in _mention_roots(g, e)})
    assert mentions == [1, 2, 4, 6, 8]
    assert np.flatnonzero(m.root_masked).tolist() == mentions      # no spans: mlm_probability is 0
    assert (m.root_ids[mentions] == MASK).all()
    others = np.setdiff1d(np.arange(R), mentions)
    assert (m.root_ids[others] == g.root_ids[others]).all()
    batch = MaskingCollator(spec, layout, seed=0)([(0, 0, g)])
    assert sorted(zip(batch.mlm_index.tolist(), batch.mlm_labels.tolist())) == \
        [(r, int(g.root_ids[r])) for r in mentions]                # targets: the names' own tokens
    assert (g.root_ids[mentions] != MASK).all()                    # the graph is untouched


def test_entities_are_masked_whole_at_the_configured_rate():
    spec = make_spec(entity_mask_probability=0.3)
    g = graph_a()
    drawn = []
    for i in range(2000):
        m = mask_graph(g, spec, sample_rng(0, 0, 0, i))
        for e in (0, 2):               # entities 1 and 3 share a mention: masked when either is drawn
            hit = m.root_masked[_mention_roots(g, e)]
            assert hit.all() or not hit.any(), (i, e)
            drawn.append(bool(hit.all()))
    assert abs(np.mean(drawn) - 0.3) < 0.03


def test_entity_masking_is_for_training_only_and_needs_an_entity_table():
    spec = make_spec(entity_mask_probability=1.0)
    assert spec.for_evaluation().entity_mask_probability == 0.0
    m = mask_graph(graph_a(), spec.for_evaluation(), sample_rng(0, 0, 0, 0))
    assert not m.root_masked.any()
    b = graph_b()                                                  # no entity table: nothing to mask
    assert not mask_graph(b, spec, sample_rng(0, 0, 0, 0)).root_masked.any()
