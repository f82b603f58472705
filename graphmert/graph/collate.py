"""Collation: B leafy chain graphs → one :class:`~graphmert.graph.batch.GraphBatch`.

Each graph is laid out with :func:`~graphmert.graph.layout.layout_arrays` (``dense``: L = R + R·K;
``packed``: L_b = roots + filled leaves, then padded to L = max_b L_b) and stacked:

    input_ids, attention_mask, root_index, leaf_slot   [B, L]
    relation_ids, head_length                          [B, R]
    hgat_edge_index                                    [2, E]  into the flattened B·L positions
    hgat_edge_type                                     [E]
    entity_type, entity_salience                       [B, L]  (0 outside entity mentions)

H-GAT edges of graph b: source = b·L + (head root position), target = b·L + (leaf position); head
roots are positions i..i+m−1 in both layouts.

    collate = Collator(graph_cfg.layout)
    loader = DataLoader(graphs, batch_size=32, collate_fn=collate)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from graphmert.config import ConfigError
from graphmert.graph.batch import GraphBatch
from graphmert.graph.layout import LAYOUTS, LayoutArrays, LeafyChainGraph, layout_arrays

__all__ = ["collate_graphs", "uncollate", "Collator"]


def collate_graphs(graphs: Sequence[LeafyChainGraph], layout: str = "dense",
                   arrays: Sequence[LayoutArrays] | None = None) -> GraphBatch:
    """Stack ``graphs`` (same R, K, pad id) into a :class:`GraphBatch` in ``layout``; ``arrays``:
    their :func:`layout_arrays` in ``layout`` when the caller needs them too (computed here otherwise)."""
    if layout not in LAYOUTS:
        raise ConfigError(f"graph.layout: unknown layout {layout!r}; choose from {list(LAYOUTS)}")
    if not graphs:
        raise ValueError("collate_graphs: empty list of graphs")
    R, K, pad = graphs[0].R, graphs[0].K, graphs[0].pad_id
    for g in graphs:
        if (g.R, g.K, g.pad_id) != (R, K, pad):
            raise ValueError(f"collate_graphs: graph of chunk {g.chunk_id} has (R, K, pad) = "
                             f"{(g.R, g.K, g.pad_id)}, the batch has {(R, K, pad)}")
    if arrays is None:
        arrays = [layout_arrays(g, layout) for g in graphs]
    elif len(arrays) != len(graphs):
        raise ValueError(f"collate_graphs: {len(arrays)} layouts for {len(graphs)} graphs")
    B = len(graphs)
    L = max(len(a.input_ids) for a in arrays)
    input_ids = np.full((B, L), pad, dtype=np.int64)
    mask = np.zeros((B, L), dtype=bool)
    root_index = np.zeros((B, L), dtype=np.int64)
    leaf_slot = np.full((B, L), -1, dtype=np.int64)
    entity_type = np.zeros((B, L), dtype=np.int64)
    salience = np.zeros((B, L), dtype=np.int64)
    src, dst, typ = [], [], []
    for b, (g, a) in enumerate(zip(graphs, arrays)):
        n = len(a.input_ids)
        input_ids[b, :n] = a.input_ids
        mask[b, :n] = a.attention_mask
        root_index[b, :n] = a.root_index
        leaf_slot[b, :n] = a.leaf_slot
        if g.entities is not None:                       # roots sit at index i in both layouts
            entity_type[b, :g.num_roots] = g.entities.root_types(g.R)[:g.num_roots]
            salience[b, :g.num_roots] = g.entities.root_salience(g.R)[:g.num_roots]
        s_root, t_root, t_slot, rel = g.hgat_edges()
        src.append(b * L + s_root)
        dst.append(b * L + a.leaf_position[t_root, t_slot])
        typ.append(rel)
    relation_ids = np.stack([g.relation_ids for g in graphs])
    head_length = np.stack([g.head_length for g in graphs])
    edge_index = np.stack([np.concatenate(src), np.concatenate(dst)]).astype(np.int64)
    return GraphBatch(
        input_ids=torch.from_numpy(input_ids),
        attention_mask=torch.from_numpy(mask),
        root_index=torch.from_numpy(root_index),
        leaf_slot=torch.from_numpy(leaf_slot),
        relation_ids=torch.from_numpy(relation_ids.astype(np.int64)),
        head_length=torch.from_numpy(head_length.astype(np.int64)),
        hgat_edge_index=torch.from_numpy(edge_index),
        hgat_edge_type=torch.from_numpy(np.concatenate(typ).astype(np.int64)),
        layout=layout,
        entity_type=torch.from_numpy(entity_type),
        entity_salience=torch.from_numpy(salience),
    )


def uncollate(batch: GraphBatch, num_leaves: int, pad_id: int) -> list[LeafyChainGraph]:
    """Rebuild the graphs of a batch (roots, leaves, relations, head lengths; chunk ids, word ids and
    injection provenance are not part of a batch). Inverse of :func:`collate_graphs`."""
    B, R = batch.relation_ids.shape
    ids, mask = batch.input_ids.numpy(), batch.attention_mask.numpy()
    ri, ks = batch.root_index.numpy(), batch.leaf_slot.numpy()
    out = []
    for b in range(B):
        real = mask[b]
        roots = real & (ks[b] < 0)
        n = int(roots.sum())
        g = LeafyChainGraph.from_roots("", "", [0] * n, [], R, num_leaves, pad_id)
        g.root_ids[ri[b, roots]] = ids[b, roots]
        leaves = real & (ks[b] >= 0)
        g.leaf_ids[ri[b, leaves], ks[b, leaves]] = ids[b, leaves]
        g.leaf_length[:] = np.bincount(ri[b, leaves], minlength=R)[:R]
        g.relation_ids[:] = batch.relation_ids[b].numpy()
        g.head_length[:] = batch.head_length[b].numpy()
        out.append(g)
    return out


class Collator:
    """A picklable ``collate_fn`` for ``torch.utils.data.DataLoader``."""

    def __init__(self, layout: str = "dense") -> None:
        if layout not in LAYOUTS:
            raise ConfigError(f"graph.layout: unknown layout {layout!r}; choose from {list(LAYOUTS)}")
        self.layout = layout

    def __call__(self, graphs: Sequence[LeafyChainGraph]) -> GraphBatch:
        return collate_graphs(graphs, self.layout)
