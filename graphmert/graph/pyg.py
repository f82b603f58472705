"""Conversion of a leafy chain graph to a PyTorch Geometric ``Data`` object.

Nodes are the real positions of the ``packed`` layout: roots 0..n−1, then the filled leaves root by
root (N = n + Σ leaf_length). Attributes:

=====================  =========  ==========================================================
``x``                  [N]        token id
``node_root``          [N]        root a node belongs to (i for root i and its leaves)
``node_leaf_slot``     [N]        −1 for roots, k for leaf k
``edge_index``         [2, 2·M]   chain-graph edges, both directions: roots i—i+1, leaf—root,
                                  leaves k—k+1 of one root
``hgat_edge_index``    [2, E]     head-token node → tail-token node (directed)
``hgat_edge_type``     [E]        relation id of each H-GAT edge
``root_relation``      [n]        relation id per root (−1 none)
``root_head_length``   [n]        head length per root (0 none)
=====================  =========  ==========================================================

Names avoid the substring ``index`` except for the two edge indices, so PyG's ``Batch`` offsets
exactly those by the node count when graphs are batched.
"""

from __future__ import annotations

import numpy as np
import torch

from graphmert.graph.layout import LeafyChainGraph, layout_arrays

__all__ = ["to_pyg", "chain_edges"]


def chain_edges(g: LeafyChainGraph) -> np.ndarray:
    """Undirected chain-graph edges over packed positions, as a [2, 2·M] array (both directions)."""
    a = layout_arrays(g, "packed")
    n = g.num_roots
    pos = a.leaf_position                                           # [R, K]
    ri, ki = np.nonzero(pos >= 0)
    root_chain = np.stack([np.arange(n - 1), np.arange(1, n)])     # [2, n−1]
    leaf_root = np.stack([pos[ri, ki], ri])                         # [2, Σt]
    nxt = (ki + 1 < g.K)
    nxt[nxt] = pos[ri[nxt], ki[nxt] + 1] >= 0
    leaf_chain = np.stack([pos[ri[nxt], ki[nxt]], pos[ri[nxt], ki[nxt] + 1]])
    und = np.concatenate([root_chain, leaf_root, leaf_chain], axis=1).astype(np.int64)
    return np.concatenate([und, und[::-1]], axis=1)


def to_pyg(g: LeafyChainGraph):
    """The graph as ``torch_geometric.data.Data`` (see module docstring)."""
    from torch_geometric.data import Data

    a = layout_arrays(g, "packed")
    s_root, t_root, t_slot, rel = g.hgat_edges()
    hgat = np.stack([s_root, a.leaf_position[t_root, t_slot]]).astype(np.int64)
    n = g.num_roots
    return Data(
        x=torch.from_numpy(a.input_ids),
        node_root=torch.from_numpy(a.root_index),
        node_leaf_slot=torch.from_numpy(a.leaf_slot),
        edge_index=torch.from_numpy(chain_edges(g)),
        hgat_edge_index=torch.from_numpy(hgat),
        hgat_edge_type=torch.from_numpy(rel.astype(np.int64)),
        root_relation=torch.from_numpy(g.relation_ids[:n].copy()),
        root_head_length=torch.from_numpy(g.head_length[:n].copy()),
        num_nodes=len(a.input_ids),
    )
