"""The batch contract between graphs (collation) and the model.

A :class:`GraphBatch` holds B leafy chain graphs in one of two layouts:

* ``dense``  — the paper's layout: L = R + R·K positions per graph; root i at index i, leaf k of
  root i at index R + K·i + k; unfilled leaves and roots past ``[SEP]`` are padding.
* ``packed`` — roots followed by only the filled leaves; L = max over the batch of (roots + filled
  leaves); the rest is padding.

Per position (shape [B, L]):

=================  ======  ==================================================================
``input_ids``      long    token id (``[PAD]`` at padding)
``attention_mask`` bool    True at real positions (roots up to ``[SEP]`` and filled leaves)
``root_index``     long    i for root i and for every leaf of root i (0 at padding)
``leaf_slot``      long    −1 for roots, k ∈ [0, K) for leaves (−1 at padding)
``entity_type``    long    entity-type id of a root inside an entity mention
                           (:data:`graphmert.kg.schema.ENTITY_TYPES`), 0 elsewhere
``entity_salience`` long   salience bucket of that entity's document mention count
                           (:func:`graphmert.graph.layout.salience_bucket`), 0 elsewhere
=================  ======  ==================================================================

Per root (shape [B, R]): ``relation_ids`` (long, −1 where nothing was injected) and ``head_length``
(long, 0 where nothing was injected).

H-GAT edges (head token → tail token), indexed into the flattened [B·L] positions:
``hgat_edge_index`` [2, E] (row 0 = source head-token position, row 1 = target leaf position) and
``hgat_edge_type`` [E] (relation id).

Graph distances are not stored: the model derives them from ``root_index`` and ``leaf_slot`` with
:func:`graph_distance` (closed form, DESIGN §4).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor

__all__ = ["GraphBatch", "graph_distance"]


@dataclass
class GraphBatch:
    input_ids: Tensor        # [B, L] long
    attention_mask: Tensor   # [B, L] bool
    root_index: Tensor       # [B, L] long
    leaf_slot: Tensor        # [B, L] long, −1 = root
    relation_ids: Tensor     # [B, R] long, −1 = none
    head_length: Tensor      # [B, R] long
    hgat_edge_index: Tensor  # [2, E] long, into flattened B·L
    hgat_edge_type: Tensor   # [E] long
    layout: str = "dense"
    entity_type: Tensor | None = None   # [B, L] long; None: no entity types (all 0)
    entity_salience: Tensor | None = None   # [B, L] long; None: no salience (all 0)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.input_ids.shape)  # type: ignore[return-value]

    def to(self, device: torch.device | str) -> "GraphBatch":
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for k, v in kw.items():
            if isinstance(v, Tensor):
                kw[k] = v.to(device, non_blocking=True)
        return GraphBatch(**kw)


def graph_distance(root_index: Tensor, leaf_slot: Tensor) -> Tensor:
    """Shortest-path distances of the leafy chain graph, closed form.

    Args:
        root_index: [..., L] long — the root a position belongs to.
        leaf_slot:  [..., L] long — −1 for roots, k for leaf k.
    Returns:
        [..., L, L] long distances:
        root i–root j: |i−j|; leaf(i,·)–root j: |i−j|+1; leaf(i,k)–leaf(i,k'): min(|k−k'|, 2);
        leaf(i,·)–leaf(j,·), i≠j: |i−j|+2.
    """
    ri = root_index.unsqueeze(-1)                      # [..., L, 1]
    rj = root_index.unsqueeze(-2)                      # [..., 1, L]
    is_leaf = (leaf_slot >= 0).long()
    d = (ri - rj).abs() + is_leaf.unsqueeze(-1) + is_leaf.unsqueeze(-2)   # [..., L, L]
    same_root_leaves = (ri == rj) & (is_leaf.unsqueeze(-1) == 1) & (is_leaf.unsqueeze(-2) == 1)
    dk = (leaf_slot.unsqueeze(-1) - leaf_slot.unsqueeze(-2)).abs().clamp(max=2)
    return torch.where(same_root_leaves, dk, d)
