"""The candidate-tail contract between graphs (with entity tables) and the model's candidate head.

A batch's query groups (masked K-leaf groups, ``model.leaf_query = "fixed"``) and, for each, the
entities of its chunk it chooses among (:class:`~graphmert.graph.layout.EntityTable` candidates)::

    query_index     [G]      flat position (into B·L) of each group's first leaf
    entity_token    [T]      flat positions of the root tokens of every entity mention of the batch
    entity_of_token [T]      the entity of each such token, numbered across the batch: e ∈ [0, E)
    cand_group      [C]      the group a candidate row belongs to
    cand_entity     [C]      its entity
    cand_features   [C, 6]   φ = (log(1 + mentions of the entity in the chunk),
                                  log(1 + roots from the head to the entity's nearest mention),
                                  log(1 + mentions of the entity in the document),
                                  log(1 + mentions of the head's entity in the document),
                                  1 if a mention of the entity starts in the head's sentence else 0,
                                  log(1 + sentence boundaries from the head to its nearest mention))
    cand_positive   [C]      a gold tail of the group (training / evaluation; False at extraction)
    cand_between    [C, 2]   flat positions [lo, hi) of the roots strictly between the head mention and
                             the candidate's nearest mention (lo = hi when they touch or overlap):
                             the words that say how the two relate (``model.pair_features``)

The last two are the locality features (``model.locality_features``; a model without them reads the
first four). Sentences come from the entity table (:attr:`~graphmert.graph.layout.EntityTable.sentences`);
a graph without them is one sentence (1, 0).

Groups appear in batch order, then root order. Roots sit at index i in both layouts, so mention
tokens need no layout arrays; leaf positions do (:func:`~graphmert.graph.layout.layout_arrays`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from graphmert.graph.layout import LeafyChainGraph

__all__ = ["CandidateQuery", "NUM_CANDIDATE_FEATURES", "NUM_LOCALITY_FEATURES", "between_span",
           "candidate_query", "candidate_feature_values"]

NUM_CANDIDATE_FEATURES = 6
NUM_LOCALITY_FEATURES = 2                # the last two of them


@dataclass
class CandidateQuery:
    """The query groups of a batch and the candidates each chooses among (module docstring)."""

    query_index: Tensor          # [G] long
    entity_token: Tensor         # [T] long
    entity_of_token: Tensor      # [T] long
    num_entities: int            # E
    cand_group: Tensor           # [C] long ∈ [0, G)
    cand_entity: Tensor          # [C] long ∈ [0, E)
    cand_features: Tensor        # [C, 6] float
    cand_positive: Tensor        # [C] bool
    cand_between: Tensor | None = None    # [C, 2] long flat [lo, hi); None: not built

    @property
    def num_groups(self) -> int:
        return int(self.query_index.numel())

    def _map(self, fn) -> "CandidateQuery":
        return dataclasses.replace(self, **{f.name: fn(getattr(self, f.name)) for f in dataclasses.fields(self)
                                            if isinstance(getattr(self, f.name), Tensor)})

    def to(self, device: torch.device | str) -> "CandidateQuery":
        return self._map(lambda t: t.to(device))

    def pin_memory(self) -> "CandidateQuery":
        return self._map(lambda t: t.pin_memory())


def candidate_feature_values(mention_starts: np.ndarray, head_root: int, doc_count: int,
                             head_doc_count: int, sentences: np.ndarray) -> tuple[float, ...]:
    """φ of one candidate (module docstring); ``sentences``: the chunk's sentence numbers per root
    (empty: one sentence)."""
    distance = int(np.abs(mention_starts - head_root).min()) if mention_starts.size else 0
    apart = 0
    if sentences.size and mention_starts.size:
        apart = int(np.abs(sentences[mention_starts] - sentences[head_root]).min())     # boundaries
    return (float(np.log1p(mention_starts.size)), float(np.log1p(distance)), float(np.log1p(doc_count)),
            float(np.log1p(head_doc_count)), float(apart == 0), float(np.log1p(apart)))


def between_span(mention_spans: np.ndarray, head_root: int, head_end: int) -> tuple[int, int]:
    """Roots [lo, hi) strictly between the head mention [head_root, head_end) and the nearest of a
    candidate's mentions ``mention_spans`` [M, 2] (nearest start, as φ's distance; ties: the first);
    (0, 0) when they touch or overlap, or the candidate has no mention."""
    if not len(mention_spans):
        return 0, 0
    a, end = (int(x) for x in mention_spans[np.abs(mention_spans[:, 0] - head_root).argmin()])
    if a >= head_end:
        return head_end, a
    if end <= head_root:
        return end, head_root
    return 0, 0


def candidate_query(graphs: Sequence[LeafyChainGraph], leaf_position: Sequence[np.ndarray],
                    queries: Sequence[np.ndarray], L: int) -> CandidateQuery:
    """The :class:`CandidateQuery` of a collated batch.

    Args:
        graphs: the batch's graphs (each with an entity table, or None: no groups from it).
        leaf_position: per graph, [R, K] leaf positions in its layout.
        queries: per graph, the roots whose groups are asked (masked K-leaf groups); a root with no
            candidate row asks nothing and is skipped.
        L: the batch's padded length.
    """
    q_index, tok, tok_ent, c_group, c_ent, c_feat, c_pos, c_between = [], [], [], [], [], [], [], []
    offset = 0
    for b, (g, pos, roots) in enumerate(zip(graphs, leaf_position, queries)):
        e = g.entities
        if e is None or not len(e.ids):
            continue
        for a, end, ent in e.mentions:
            tok.append(b * L + np.arange(a, end))
            tok_ent.append(np.full(end - a, offset + ent))
        spans = [e.mentions[e.mentions[:, 2] == k, :2] for k in range(len(e.ids))]
        starts = [sp[:, 0] for sp in spans]
        counts = e.document_counts()
        for root in roots:
            rows = e.candidates[e.candidates[:, 0] == root]
            if not len(rows):
                continue
            if pos[root, 0] < 0:
                raise ValueError(f"graph {g.chunk_id}: root {root} is asked but has no leaf group")
            group = len(q_index)
            q_index.append(b * L + int(pos[root, 0]))
            head = int(e.head[root])
            head_count = int(counts[head]) if head >= 0 else 0
            own = e.mentions[(e.mentions[:, 0] == root) & (e.mentions[:, 2] == head)]
            head_end = int(own[:, 1].max()) if len(own) else int(root) + 1
            for _, ent, is_tail in rows:
                c_group.append(group)
                c_ent.append(offset + ent)
                c_feat.append(candidate_feature_values(starts[ent], int(root), int(counts[ent]), head_count,
                                                       e.sentences))
                c_pos.append(bool(is_tail))
                lo, hi = between_span(spans[ent], int(root), head_end)
                c_between.append((b * L + lo, b * L + hi))
        offset += len(e.ids)
    cat = lambda xs: torch.as_tensor(np.concatenate(xs) if xs else np.zeros(0), dtype=torch.long)  # noqa: E731
    return CandidateQuery(
        query_index=torch.as_tensor(q_index, dtype=torch.long), entity_token=cat(tok),
        entity_of_token=cat(tok_ent), num_entities=offset,
        cand_group=torch.as_tensor(c_group, dtype=torch.long),
        cand_entity=torch.as_tensor(c_ent, dtype=torch.long),
        cand_features=torch.as_tensor(c_feat, dtype=torch.float32).reshape(-1, NUM_CANDIDATE_FEATURES),
        cand_positive=torch.as_tensor(c_pos, dtype=torch.bool),
        cand_between=torch.as_tensor(c_between, dtype=torch.long).reshape(-1, 2))
