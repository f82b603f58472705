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

from graphmert.graph.layout import EntityTable, LeafyChainGraph

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
    (empty: one sentence). The per-row definition that :func:`_graph_rows` computes for a whole
    graph at once, and the reference its tests compare it with."""
    distance = int(np.abs(mention_starts - head_root).min()) if mention_starts.size else 0
    apart = 0
    if sentences.size and mention_starts.size:
        apart = int(np.abs(sentences[mention_starts] - sentences[head_root]).min())     # boundaries
    return (float(np.log1p(mention_starts.size)), float(np.log1p(distance)), float(np.log1p(doc_count)),
            float(np.log1p(head_doc_count)), float(apart == 0), float(np.log1p(apart)))


def between_span(mention_spans: np.ndarray, head_root: int, head_end: int) -> tuple[int, int]:
    """Roots [lo, hi) strictly between the head mention [head_root, head_end) and the nearest of a
    candidate's mentions ``mention_spans`` [M, 2] (nearest start, as φ's distance; ties: the first);
    (0, 0) when they touch or overlap, or the candidate has no mention. The per-row definition of
    :func:`_graph_rows`' between spans, as :func:`candidate_feature_values` is of its φ."""
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

    Each graph's rows are computed at once (:func:`_graph_rows`); they equal
    :func:`candidate_feature_values` and :func:`between_span` row by row (tests/graph).
    """
    q_index, tok, tok_ent, c_group, c_ent, c_feat, c_pos, c_between = [], [], [], [], [], [], [], []
    offset = groups = 0
    for b, (g, pos, roots) in enumerate(zip(graphs, leaf_position, queries)):
        e = g.entities
        if e is None or not len(e.ids):
            continue
        m = e.mentions
        lengths = m[:, 1] - m[:, 0]                                                   # [M]
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        tok.append(b * L + np.repeat(m[:, 0], lengths) + within)                      # [T_g]
        tok_ent.append(np.repeat(offset + m[:, 2], lengths))
        asked, rows = _graph_rows(e, np.asarray(roots, dtype=np.int64))
        if len(asked):
            missing = asked[pos[asked, 0] < 0]
            if len(missing):
                raise ValueError(f"graph {g.chunk_id}: root {int(missing[0])} is asked but has no leaf group")
            q_index.append(b * L + pos[asked, 0])
            c_group.append(groups + rows.group)
            c_ent.append(offset + rows.entity)
            c_feat.append(rows.features)
            c_pos.append(rows.positive)
            c_between.append(b * L + rows.between)
        groups += len(asked)
        offset += len(e.ids)
    cat = lambda xs, dtype=np.int64, width=0: np.concatenate(xs) if xs else np.zeros(  # noqa: E731
        (0, width) if width else 0, dtype=dtype)
    return CandidateQuery(
        query_index=torch.as_tensor(cat(q_index), dtype=torch.long), entity_token=torch.as_tensor(cat(tok)),
        entity_of_token=torch.as_tensor(cat(tok_ent)), num_entities=offset,
        cand_group=torch.as_tensor(cat(c_group)), cand_entity=torch.as_tensor(cat(c_ent)),
        cand_features=torch.as_tensor(cat(c_feat, np.float64, NUM_CANDIDATE_FEATURES), dtype=torch.float32),
        cand_positive=torch.as_tensor(cat(c_pos, bool)),
        cand_between=torch.as_tensor(cat(c_between, np.int64, 2)))


@dataclass
class _Rows:
    """One graph's candidate rows (local numbering): C rows."""

    group: np.ndarray            # [C] int64, the asked root's rank among the roots that ask
    entity: np.ndarray           # [C] int64 entity index
    features: np.ndarray         # [C, 6] float64 φ
    positive: np.ndarray         # [C] bool
    between: np.ndarray          # [C, 2] int64 roots [lo, hi)


def _graph_rows(e: EntityTable, roots: np.ndarray) -> tuple[np.ndarray, _Rows]:
    """The asked roots of one graph that have candidate rows (in ``roots`` order) and their rows (each
    root's in table order), with φ and the between span of every row computed over a [C, M] table of
    candidate × mention: what :func:`candidate_feature_values` and :func:`between_span` give one row at
    a time (row by row, a third of extraction's host time on BioRED dev; docs/experiments/extract-host-work.md)."""
    picks = [np.flatnonzero(e.candidates[:, 0] == r) for r in roots]
    asked = np.asarray([r for r, p in zip(roots, picks) if len(p)], dtype=np.int64)        # [G_g]
    taken = [p for p in picks if len(p)]
    idx = np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)                  # [C]
    root, ent, tail = (e.candidates[idx, k] for k in range(3))                              # [C] each
    start, end, of = e.mentions[:, 0], e.mentions[:, 1], e.mentions[:, 2]                  # [M] each
    far = np.iinfo(np.int64).max
    own = of[None, :] == ent[:, None]                                                       # [C, M]
    has = own.any(axis=1)                                                                   # [C]
    roots_to = np.where(own, np.abs(start[None, :] - root[:, None]), far)                   # [C, M]
    near = roots_to.argmin(axis=1) if len(start) else np.zeros(len(idx), dtype=np.int64)    # first nearest
    a, b = (start[near], end[near]) if len(start) else (near, near)    # its span; unread where not has
    distance = np.where(has, roots_to.min(axis=1, initial=far), 0)
    apart = np.zeros(len(idx), dtype=np.int64)
    if e.sentences.size:
        cut = np.abs(e.sentences[start][None, :] - e.sentences[root][:, None])             # [C, M]
        apart = np.where(has, np.where(own, cut, far).min(axis=1, initial=far), 0)
    counts = e.document_counts()
    head = e.head[root]                                                                     # [C]
    head_count = np.where(head >= 0, counts[np.maximum(head, 0)], 0)
    features = np.stack([np.log1p(own.sum(axis=1)), np.log1p(distance), np.log1p(counts[ent]),
                         np.log1p(head_count), (apart == 0).astype(np.float64), np.log1p(apart)], axis=1)
    head_ends = (start[None, :] == root[:, None]) & (of[None, :] == head[:, None])          # [C, M]
    head_end = np.where(head_ends.any(axis=1), np.where(head_ends, end, -1).max(axis=1, initial=-1), root + 1)
    between = np.zeros((len(idx), 2), dtype=np.int64)
    after, before = has & (a >= head_end), has & (a < head_end) & (b <= root)
    between[after] = np.stack([head_end, a], axis=1)[after]
    between[before] = np.stack([b, root], axis=1)[before]
    group = np.repeat(np.arange(len(taken)), [len(p) for p in taken]).astype(np.int64)
    return asked, _Rows(group=group, entity=ent, features=features, positive=tail.astype(bool), between=between)
