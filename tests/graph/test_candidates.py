"""The candidate-query contract: candidate_query on hand-built graphs with entity tables equals the
values worked out by hand (query leaf positions in both layouts, entity tokens numbered across the
batch, features, positives), graphs without tables or queries without candidates ask nothing, and
the masking collator's batch.candidates points at the masked groups' first leaves."""

from __future__ import annotations

import dataclasses
from math import log1p

import numpy as np
import pytest
import torch

from graphmert.graph.candidates import NUM_CANDIDATE_FEATURES, candidate_feature_values, candidate_query
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import layout_arrays
from entity_graphs import as_queries, graph_a, graph_b, graph_c

QUERIES = [[1, 6], [1], [2, 4]]               # per graph; b has no table, c's root 4 has no candidates
# hand-worked positions of each asked group's first leaf (module docstring of graph.layout):
#   dense  L = R + R·K = 48, leaf (i, 0) at R + K·i;  a: 15, 30;  c: 2·48 + 18
#   packed a: roots 0–9, then root 1's leaves 10–12, root 6's 13–15;  c: roots 0–8, root 2's from 9;
#          L = max(10 + 6, 5 + 3, 9 + 6) = 16
EXPECTED_QUERY_INDEX = {"dense": [15, 30, 2 * 48 + 18], "packed": [10, 13, 2 * 16 + 9]}
EXPECTED_L = {"dense": 48, "packed": 16}


def phi(mentions, distance, doc, head_doc, same=1.0, apart=0):
    return [log1p(mentions), log1p(distance), log1p(doc), log1p(head_doc), same, log1p(apart)]


def build(layout: str, a_sentences=()):
    graphs = [graph_a(), graph_b(), graph_c()]
    graphs[0].entities.sentences = np.asarray(a_sentences, dtype=np.int64)
    shown = [as_queries(g, q) for g, q in zip(graphs, QUERIES)]
    L = collate_graphs(shown, layout).input_ids.shape[1]
    positions = [layout_arrays(g, layout).leaf_position for g in shown]
    return graphs, shown, L, candidate_query(graphs, positions, [np.asarray(q) for q in QUERIES], L)


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_candidate_query_matches_hand_worked_values(layout):
    graphs, shown, L, cq = build(layout)
    assert L == EXPECTED_L[layout]
    assert cq.query_index.tolist() == EXPECTED_QUERY_INDEX[layout]
    assert cq.num_groups == 3
    # entities: a's 0..3, then c's as 4, 5 (b has no table and takes no numbers)
    assert cq.num_entities == 6
    tokens = sorted(zip(cq.entity_token.tolist(), cq.entity_of_token.tolist()))
    want = sorted([(1, 0), (2, 0), (4, 1), (4, 3), (6, 0), (8, 2),
                   (2 * L + 2, 4), (2 * L + 5, 5), (2 * L + 6, 5), (2 * L + 1, 5)])
    assert tokens == want
    assert cq.cand_group.tolist() == [0, 0, 0, 1, 1, 2]
    assert cq.cand_entity.tolist() == [1, 2, 3, 1, 2, 5]
    assert cq.cand_positive.tolist() == [True, False, False, False, False, True]
    want_phi = [phi(1, 3, 1, 5), phi(1, 7, 2, 5), phi(1, 3, 1, 5),        # group a@1: |4−1|, |8−1|, |4−1|
                phi(1, 2, 1, 5), phi(1, 2, 2, 5),                          # group a@6: |4−6|, |8−6|
                phi(2, 1, 2, 1)]                                           # group c@2: min(|5−2|, |1−2|);
    assert cq.cand_features.shape == (6, NUM_CANDIDATE_FEATURES)           # chunk counts: C1 ×2, C0 ×1
    assert cq.cand_features.dtype == torch.float32
    torch.testing.assert_close(cq.cand_features, torch.tensor(want_phi, dtype=torch.float32))
    for t in (cq.query_index, cq.entity_token, cq.entity_of_token, cq.cand_group, cq.cand_entity):
        assert t.dtype == torch.long


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_query_and_entity_positions_mean_what_they_say(layout):
    """In the collated batch of the shown graphs, each query index is slot 0 of its group's root, and
    every entity token is a root of its entity's mentions."""
    graphs, shown, L, cq = build(layout)
    batch = collate_graphs(shown, layout)
    root_index, leaf_slot = batch.root_index.reshape(-1), batch.leaf_slot.reshape(-1)
    asked = [(0, 1), (0, 6), (2, 2)]
    for q, (b, root) in zip(cq.query_index.tolist(), asked):
        assert q // L == b and int(root_index[q]) == root and int(leaf_slot[q]) == 0
    for t in cq.entity_token.tolist():
        assert int(leaf_slot[t]) == -1 and bool(batch.attention_mask.reshape(-1)[t])


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_candidate_query_builds_the_between_spans(layout):
    """graph a: head A0 at roots [1, 3) and [6, 7); graph c (third in the batch): C0 at [2, 3)
    (tests/entity_graphs.py); each candidate's nearest mention by start, as φ's distance."""
    _, _, L_, cq = build(layout)
    assert cq.cand_between.tolist() == [[3, 4], [3, 8], [3, 4],           # a@1: A1 [4,5), A2 [8,9), A3
                                        [5, 6], [7, 8],                   # a@6: A1 before, A2 after
                                        [2 * L_ + 2, 2 * L_ + 2]]         # c@2: C1 [1,2) touches C0


def test_nothing_to_ask():
    graphs = [graph_a(), graph_b()]
    positions = [layout_arrays(as_queries(graphs[0], [1, 6]), "packed").leaf_position,
                 layout_arrays(graphs[1], "packed").leaf_position]
    cq = candidate_query(graphs, positions, [np.zeros(0, dtype=np.int64), np.asarray([1])], 20)
    assert cq.num_groups == 0 and cq.cand_group.numel() == 0
    assert cq.cand_features.shape == (0, NUM_CANDIDATE_FEATURES)
    assert cq.num_entities == 4 and cq.entity_token.numel() == 6     # a's mentions are still listed
    cq = candidate_query([graph_b()], [layout_arrays(graph_b(), "packed").leaf_position], [np.asarray([1])], 8)
    assert cq.num_groups == 0 and cq.num_entities == 0 and cq.entity_token.numel() == 0


def test_the_locality_features_count_sentence_boundaries():
    # graph a: roots 0–3 in sentence 0, 4–7 in sentence 1, 8–9 in sentence 2
    *_, cq = build("packed", a_sentences=[0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    locality = cq.cand_features[:, 4:].tolist()
    want = [(0.0, log1p(1)), (0.0, log1p(2)), (0.0, log1p(1)),       # group a@1 (sentence 0): A1, A2, A3
            (1.0, 0.0), (0.0, log1p(1)),                             # group a@6 (sentence 1): A1, A2
            (1.0, 0.0)]                                               # c has no sentences: one sentence
    torch.testing.assert_close(torch.tensor(locality), torch.tensor(want))
    *_, plain = build("packed")
    torch.testing.assert_close(cq.cand_features[:, :4], plain.cand_features[:, :4])


def test_feature_values():
    none = np.zeros(0, dtype=np.int64)
    assert candidate_feature_values(np.asarray([9, 3, 14]), 6, 4, 2, none) == pytest.approx(
        (log1p(3), log1p(3), log1p(4), log1p(2), 1.0, 0.0))
    sentences = np.asarray([0] * 5 + [1] * 5 + [2] * 5)
    assert candidate_feature_values(np.asarray([9, 14]), 3, 4, 2, sentences)[4:] == pytest.approx(
        (0.0, log1p(1)))                                              # nearest by sentence: root 9
    assert candidate_feature_values(none, 6, 0, 0, sentences) == (0.0, 0.0, 0.0, 0.0, 1.0, 0.0)


def test_to_and_pin_keep_every_field():
    _, _, _, cq = build("packed")
    moved = cq.to("cpu")
    assert moved.num_entities == cq.num_entities
    for f in dataclasses.fields(cq):
        a, b = getattr(cq, f.name), getattr(moved, f.name)
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def reference_query(graphs, leaf_position, queries, L):
    """candidate_query one candidate at a time: candidate_feature_values and between_span per row."""
    from graphmert.graph.candidates import between_span

    q_index, tok, tok_ent, c_group, c_ent, c_feat, c_pos, c_between, offset = [], [], [], [], [], [], [], [], 0
    for b, (g, pos, roots) in enumerate(zip(graphs, leaf_position, queries)):
        e = g.entities
        if e is None or not len(e.ids):
            continue
        for a, end, ent in e.mentions:
            tok += [b * L + i for i in range(a, end)]
            tok_ent += [offset + ent] * (end - a)
        spans = [e.mentions[e.mentions[:, 2] == k, :2] for k in range(len(e.ids))]
        counts = e.document_counts()
        for root in roots:
            rows = e.candidates[e.candidates[:, 0] == root]
            if not len(rows):
                continue
            group = len(q_index)
            q_index.append(b * L + int(pos[root, 0]))
            head = int(e.head[root])
            own = e.mentions[(e.mentions[:, 0] == root) & (e.mentions[:, 2] == head)]
            head_end = int(own[:, 1].max()) if len(own) else int(root) + 1
            for _, ent, is_tail in rows:
                c_group.append(group)
                c_ent.append(offset + ent)
                c_feat.append(candidate_feature_values(spans[ent][:, 0], int(root), int(counts[ent]),
                                                       int(counts[head]) if head >= 0 else 0, e.sentences))
                c_pos.append(bool(is_tail))
                lo, hi = between_span(spans[ent], int(root), head_end)
                c_between.append((b * L + lo, b * L + hi))
        offset += len(e.ids)
    return dict(query_index=q_index, entity_token=tok, entity_of_token=tok_ent, cand_group=c_group,
                cand_entity=c_ent, cand_features=c_feat, cand_positive=c_pos, cand_between=c_between,
                num_entities=offset)


def random_graph(rng, R=24):
    """A graph stand-in with a random entity table: overlapping and touching mentions, heads without
    mentions at their root, candidates without mentions, sentences or not, document counts or not."""
    from types import SimpleNamespace

    from entity_graphs import table

    E = int(rng.integers(1, 6))
    mentions = []
    for _ in range(int(rng.integers(0, 9))):
        a = int(rng.integers(1, R - 3))
        mentions.append((a, a + int(rng.integers(1, 3)), int(rng.integers(0, E))))
    roots = sorted({int(r) for r in rng.integers(1, R - 1, size=int(rng.integers(1, 6)))})
    head = {r: int(rng.integers(-1, E)) for r in roots}
    candidates = [(r, c, int(rng.integers(0, 2))) for r in roots for c in range(E)
                  if c != head[r] and rng.random() < 0.7]
    counts = rng.integers(1, 9, size=E) if rng.random() < 0.5 else ()
    e = table([f"E{k}" for k in range(E)], [1] * E, mentions, head={r: h for r, h in head.items() if h >= 0},
              tail={}, candidates=candidates, counts=counts, R=R)
    if rng.random() < 0.5:
        e.sentences = np.sort(rng.integers(0, 4, size=R))
    return SimpleNamespace(entities=e, chunk_id="random"), roots


def test_candidate_query_equals_the_row_by_row_reference_on_random_tables():
    rng = np.random.default_rng(7)
    for _ in range(60):
        drawn = [random_graph(rng) for _ in range(int(rng.integers(1, 4)))]
        graphs = [g for g, _ in drawn]
        if rng.random() < 0.3:                                   # a graph without a table in the batch
            graphs[0].entities = None
        queries = [np.asarray(q[::-1] if rng.random() < 0.3 else q, dtype=np.int64) for _, q in drawn]
        positions = [np.arange(24 * 3).reshape(24, 3) + 24 for _ in graphs]
        L = 24 * 4
        got, want = candidate_query(graphs, positions, queries, L), reference_query(graphs, positions, queries, L)
        assert got.num_entities == want["num_entities"]
        for name in ("query_index", "entity_token", "entity_of_token", "cand_group", "cand_entity",
                     "cand_positive"):
            assert getattr(got, name).tolist() == want[name], name
        assert got.cand_between.tolist() == [list(x) for x in want["cand_between"]]
        assert torch.equal(got.cand_features, torch.tensor(want["cand_features"], dtype=torch.float32)
                           .reshape(-1, NUM_CANDIDATE_FEATURES))


def test_an_asked_root_without_a_leaf_group_is_an_error_naming_it():
    graphs, shown, L, _ = build("packed")
    positions = [layout_arrays(g, "packed").leaf_position for g in shown]
    positions[0] = positions[0].copy()
    positions[0][6, 0] = -1
    with pytest.raises(ValueError, match="graph a#0: root 6 is asked but has no leaf group"):
        candidate_query(graphs, positions, [np.asarray(q) for q in QUERIES], L)
