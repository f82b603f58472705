"""Closed-form distances (graph_distance) equal networkx shortest paths on the chain graph; the packed
layout's distances equal the dense layout's on the retained positions."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from graphmert.graph.batch import graph_distance
from graphmert.graph.layout import distance_matrix, layout_arrays
from graphmert.graph.pyg import chain_edges

from graph_helpers import random_graph


def nx_distances(g) -> np.ndarray:
    """All-pairs shortest paths over packed positions, from the PyG chain edges."""
    a = layout_arrays(g, "packed")
    G = nx.Graph()
    G.add_nodes_from(range(len(a.input_ids)))
    G.add_edges_from(chain_edges(g).T.tolist())
    L = len(a.input_ids)
    D = np.full((L, L), -1)
    for s, lengths in nx.all_pairs_shortest_path_length(G):
        for t, d in lengths.items():
            D[s, t] = d
    return D


@pytest.mark.parametrize("seed", range(300))
def test_closed_form_equals_networkx(seed):
    rng = np.random.default_rng(seed)
    R, K = int(rng.integers(4, 17)), int(rng.integers(1, 8))
    g = random_graph(rng, R, K, fill=float(rng.random()))
    packed = distance_matrix(g, "packed").numpy()
    np.testing.assert_array_equal(packed, nx_distances(g))
    # dense: the same distances at the real positions
    dense = distance_matrix(g, "dense").numpy()
    ad, ap = layout_arrays(g, "dense"), layout_arrays(g, "packed")
    real = np.flatnonzero(ad.attention_mask)
    # map dense positions to packed ones through (root, slot)
    key = {(r, s): p for p, (r, s) in enumerate(zip(ap.root_index, ap.leaf_slot))}
    to_packed = np.array([key[(ad.root_index[p], ad.leaf_slot[p])] for p in real])
    np.testing.assert_array_equal(dense[np.ix_(real, real)], packed[np.ix_(to_packed, to_packed)])


def test_full_dense_chain_graph_against_networkx():
    """Every leaf slot filled: the paper's full 1024-node layout for R=128, K=7 (spot-checked rows)."""
    R, K = 128, 7
    G = nx.Graph()
    G.add_edges_from((i, i + 1) for i in range(R - 1))
    for i in range(R):
        for k in range(K):
            G.add_edge(R + K * i + k, i)
            if k + 1 < K:
                G.add_edge(R + K * i + k, R + K * i + k + 1)
    ri = torch.tensor([i for i in range(R)] + [i for i in range(R) for _ in range(K)])
    ks = torch.tensor([-1] * R + [k for _ in range(R) for k in range(K)])
    D = graph_distance(ri, ks)
    assert D.shape == (R + R * K, R + R * K)
    for s in [0, 5, 127, R, R + 3, R + K * 64 + 6, R + R * K - 1]:
        lengths = nx.single_source_shortest_path_length(G, s)
        assert all(D[s, t].item() == d for t, d in lengths.items())


def test_batched_shapes():
    rng = np.random.default_rng(1)
    gs = [random_graph(rng, 8, 3) for _ in range(4)]
    ri = torch.stack([torch.from_numpy(layout_arrays(g, "dense").root_index) for g in gs])
    ks = torch.stack([torch.from_numpy(layout_arrays(g, "dense").leaf_slot) for g in gs])
    D = graph_distance(ri, ks)                                   # [B, L, L]
    assert D.shape == (4, 8 + 24, 8 + 24)
    for b, g in enumerate(gs):
        assert torch.equal(D[b], distance_matrix(g, "dense"))
    assert torch.equal(D, D.transpose(-1, -2)) and (D.diagonal(dim1=-2, dim2=-1) == 0).all()
