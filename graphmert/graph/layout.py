"""The leafy chain graph of one chunk, and its two position layouts (DESIGN §4).

A :class:`LeafyChainGraph` has R root slots (the chunk's tokens ``[CLS] t_1 … t_n [SEP]`` in roots
0..num_roots−1, pad after) and K leaf slots per root. An injection at root i puts the tail's tokens
in leaf slots 0..len−1 of root i, records the relation at root i and the head mention's length m;
the head tokens are roots i..i+m−1. Per root::

    root_ids      [R]     token id (pad_id past num_roots)
    word_ids      [R]     whole-word index of the root token (−1 for specials and padding)
    leaf_ids      [R, K]  tail token ids, pad_id where unfilled
    leaf_length   [R]     filled leaf slots (0 = no injection); always slots 0..len−1
    relation_ids  [R]     relation id, −1 where nothing was injected
    head_length   [R]     head mention length in roots, 0 where nothing was injected

A *query group* is a root with a relation. Under the paper's injection every group has a tail; the
``cooccurrence`` injection (:mod:`graphmert.kg.distant`) also makes groups with an empty tail —
"this head has no tail for this relation in the chunk" — which are only ever shown masked
(:mod:`graphmert.train.masking`, ``model.leaf_query = "fixed"``). Such graphs carry an
:class:`EntityTable`: the chunk's entity mentions and, per group, its candidate tails, the targets of
the candidate objective.

Graph (undirected): root chain i—i+1, each filled leaf to its root, leaves k—k+1 of one root.

Layouts (positions of one graph; :mod:`graphmert.graph.collate` pads them into a batch):

* ``dense``:  L = R + R·K; root i at i, leaf (i, k) at R + K·i + k. Unfilled leaves and roots past
  num_roots are padding (root_index 0, leaf_slot −1, masked).
* ``packed``: L = num_roots + Σ leaf_length; roots 0..num_roots−1 then the filled leaves, root by
  root, slot by slot. No padding inside one graph.

Roots keep index i in both layouts, so head-token positions are the same; only leaf positions differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphmert.config import ConfigError
from graphmert.graph.batch import graph_distance

__all__ = ["Injection", "EntityTable", "LeafyChainGraph", "LayoutArrays", "layout_arrays",
           "distance_matrix", "LAYOUTS", "SALIENCE_BUCKETS", "salience_bucket"]

LAYOUTS = ("dense", "packed")


@dataclass
class Injection:
    """Provenance of one injected seed triple."""

    root: int
    head_length: int
    subject: str
    predicate: str
    object: str
    score: float


SALIENCE_BUCKETS = 7          # 0 = not a mention; 1: 1 mention, 2: 2, 3: 3–4, 4: 5–8, 5: 9–16, 6: more


def salience_bucket(counts: np.ndarray) -> np.ndarray:
    """Bucket of a document mention count: ⌈log₂ n⌉ + 1 capped at 6, 0 for n = 0."""
    n = np.asarray(counts, dtype=np.float64)
    out = np.where(n > 0, np.ceil(np.log2(np.maximum(n, 1))) + 1, 0)
    return np.minimum(out, SALIENCE_BUCKETS - 1).astype(np.int64)


@dataclass
class EntityTable:
    """The entities a chunk mentions and the candidate tails of its query groups.

    ``mentions`` lists every (first root, end root, entity) of the chunk (a mention with two ids gives
    two rows); ``head[i]`` / ``tail[i]`` are the entity of the head and of the injected tail of the
    group at root i (−1: none, or no group); ``candidates`` rows (root, entity, is_tail) are the
    entities the group at ``root`` chooses among (every entity of the chunk whose category the
    relation admits after the head's, the head itself excluded) and whether each is a gold tail.
    ``counts`` are how often the whole *document* mentions each entity (its salience, which a chunk
    of a longer document cannot see; empty when unknown). ``sentences[i]`` numbers the sentence of
    root i (:func:`graphmert.graph.scope.sentence_keys`: equal numbers, same sentence; differences,
    the sentence boundaries between; empty when unknown).
    """

    ids: list[str]                  # [E] entity ids
    types: np.ndarray               # [E] int64 entity-type id (graphmert.kg.schema.entity_type_id)
    mentions: np.ndarray            # [M, 3] int64 (first root, end root exclusive, entity index)
    head: np.ndarray                # [R] int64
    tail: np.ndarray                # [R] int64
    candidates: np.ndarray          # [C, 3] int64 (root, entity index, is_tail)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))   # [E] or [0]
    sentences: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [n] or [0]

    @classmethod
    def empty(cls, R: int) -> "EntityTable":
        z3 = np.zeros((0, 3), dtype=np.int64)
        return cls([], np.zeros(0, dtype=np.int64), z3, np.full(R, -1, dtype=np.int64),
                   np.full(R, -1, dtype=np.int64), z3.copy())

    def document_counts(self) -> np.ndarray:
        """[E] document-level mention counts; the chunk's own counts when the document's are unknown."""
        if len(self.counts) == len(self.ids):
            return self.counts
        return np.bincount(self.mentions[:, 2], minlength=len(self.ids)).astype(np.int64)

    def root_salience(self, R: int) -> np.ndarray:
        """[R] salience bucket of each root (:func:`salience_bucket` of its entity's document count;
        0 outside mentions)."""
        out = np.zeros(R, dtype=np.int64)
        buckets = salience_bucket(self.document_counts())
        for a, b, e in self.mentions:
            out[a:b] = buckets[e]
        return out

    def root_types(self, R: int) -> np.ndarray:
        """[R] entity-type id of each root (0 outside mentions; a root in several mentions takes the
        type of the last one listed)."""
        out = np.zeros(R, dtype=np.int64)
        for a, b, e in self.mentions:
            out[a:b] = self.types[e]
        return out


@dataclass
class LeafyChainGraph:
    chunk_id: str
    doc_id: str
    num_roots: int               # real roots incl. [CLS] and [SEP]
    root_ids: np.ndarray         # [R] int64
    word_ids: np.ndarray         # [R] int64
    leaf_ids: np.ndarray         # [R, K] int64
    leaf_length: np.ndarray      # [R] int64
    relation_ids: np.ndarray     # [R] int64, −1 = none
    head_length: np.ndarray      # [R] int64, 0 = none
    pad_id: int
    injections: list[Injection] = field(default_factory=list)
    # every document whose text the roots hold (a ``concatenate``-mode chunk spans several; doc_id is
    # only the first): the train/held-out split keeps each of them on one side
    documents: list[str] = field(default_factory=list)
    entities: EntityTable | None = None     # mentions and candidate tails (cooccurrence injection)

    @property
    def groups(self) -> np.ndarray:
        """[G] roots that carry a query group (a relation), with or without a tail."""
        return np.flatnonzero(self.relation_ids >= 0)

    @property
    def R(self) -> int:
        return int(self.root_ids.shape[0])

    @property
    def K(self) -> int:
        return int(self.leaf_ids.shape[1])

    @property
    def num_filled_leaves(self) -> int:
        return int(self.leaf_length.sum())

    @classmethod
    def from_roots(cls, chunk_id: str, doc_id: str, input_ids: list[int], word_ids: list[int],
                   R: int, K: int, pad_id: int, documents: list[str] | None = None) -> "LeafyChainGraph":
        """A graph with the given roots and no leaves; ``documents`` defaults to ``[doc_id]``."""
        n = len(input_ids)
        if n > R:
            raise ValueError(f"chunk {chunk_id}: {n} root tokens exceed graph.num_roots = {R}")
        root_ids = np.full(R, pad_id, dtype=np.int64)
        root_ids[:n] = input_ids
        words = np.full(R, -1, dtype=np.int64)
        words[:n] = word_ids if len(word_ids) == n else -1
        return cls(chunk_id, doc_id, n, root_ids, words, np.full((R, K), pad_id, dtype=np.int64),
                   np.zeros(R, dtype=np.int64), np.full(R, -1, dtype=np.int64),
                   np.zeros(R, dtype=np.int64), pad_id, documents=list(documents or [doc_id]))

    def inject(self, root: int, tail_ids: list[int] | np.ndarray, relation_id: int, head_length: int,
               provenance: Injection | None = None, *, allow_empty: bool = False) -> None:
        """Hang ``tail_ids`` on root ``root`` (one injection per root). ``allow_empty`` admits an
        empty tail: a query group whose answer is "no tail" (module docstring)."""
        t = len(tail_ids)
        if not (0 if allow_empty else 1) <= t <= self.K:
            raise ValueError(f"chunk {self.chunk_id}: tail of {t} tokens does not fit K = {self.K} leaves")
        if not (0 < root and root + head_length <= self.num_roots - 1 and head_length >= 1):
            raise ValueError(f"chunk {self.chunk_id}: head roots [{root}, {root + head_length}) are not "
                             f"inside the chunk's tokens [1, {self.num_roots - 1})")
        if self.relation_ids[root] >= 0:
            raise ValueError(f"chunk {self.chunk_id}: root {root} already has an injection")
        self.leaf_ids[root, :t] = tail_ids
        self.leaf_length[root] = t
        self.relation_ids[root] = relation_id
        self.head_length[root] = head_length
        if provenance is not None:
            self.injections.append(provenance)

    def hgat_edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """H-GAT edges head token → tail token: (source root, target root, target slot, relation), [E] each.

        For the injection at root i with head length m and t leaves: every head root i..i+m−1 to every
        filled leaf (i, 0..t−1), head-major (edge k of the injection: head i + k // t, slot k mod t),
        injections in root order. Built for every injection at once: a graph holds one per question
        in extraction, and a loop over them was a tenth of extraction's host time.
        """
        roots = np.flatnonzero(self.leaf_length)                                       # [I]
        m = self.head_length[roots].astype(np.int64)                                   # [I]
        t = self.leaf_length[roots].astype(np.int64)                                   # [I]
        n = m * t                                                                      # [I] edges each
        inj = np.repeat(np.arange(len(roots)), n)                                      # [E]
        k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)                   # [E] within its injection
        target = roots[inj].astype(np.int64)
        return (target + k // t[inj], target, k % t[inj],
                self.relation_ids[roots][inj].astype(np.int64))

    def validate(self) -> None:
        """Check the invariants of the module docstring; raise ValueError naming the chunk."""
        R, K, n = self.R, self.K, self.num_roots
        where = f"graph of chunk {self.chunk_id}"
        if self.leaf_ids.shape != (R, K) or any(a.shape != (R,) for a in (
                self.word_ids, self.leaf_length, self.relation_ids, self.head_length)):
            raise ValueError(f"{where}: inconsistent array shapes")
        if not 2 <= n <= R:
            raise ValueError(f"{where}: num_roots {n} not in [2, {R}]")
        if (self.root_ids[n:] != self.pad_id).any():
            raise ValueError(f"{where}: roots past num_roots must be padding")
        has = self.relation_ids >= 0                       # query groups, with or without a tail
        if ((self.leaf_length < 0) | (self.leaf_length > K)).any():
            raise ValueError(f"{where}: leaf_length outside [0, {K}]")
        if ((self.leaf_length > 0) & ~has).any() or (has != (self.head_length > 0)).any():
            raise ValueError(f"{where}: relation_ids/head_length disagree with leaf_length")
        if self.entities is None and (has & (self.leaf_length == 0)).any():
            raise ValueError(f"{where}: a group without a tail needs an entity table")
        if has[n:].any() or has[0] or (n and has[n - 1]):
            raise ValueError(f"{where}: injections only on real, non-special roots")
        filled = np.arange(K)[None, :] < self.leaf_length[:, None]
        if (self.leaf_ids[~filled] != self.pad_id).any() or (self.leaf_ids[filled] == self.pad_id).any():
            raise ValueError(f"{where}: leaves must fill slots 0..leaf_length−1 exactly")
        idx = np.flatnonzero(has)
        if (idx + self.head_length[idx] > n - 1).any():
            raise ValueError(f"{where}: a head span runs past the last token")


class LayoutArrays(NamedTuple):
    input_ids: np.ndarray        # [L] int64
    attention_mask: np.ndarray   # [L] bool
    root_index: np.ndarray       # [L] int64
    leaf_slot: np.ndarray        # [L] int64
    leaf_position: np.ndarray    # [R, K] int64 position of leaf (i, k), −1 if unfilled


def layout_arrays(g: LeafyChainGraph, layout: str) -> LayoutArrays:
    """Per-position arrays of one graph in ``layout`` (see module docstring)."""
    R, K, n = g.R, g.K, g.num_roots
    filled = np.arange(K)[None, :] < g.leaf_length[:, None]            # [R, K]
    ri, ki = np.nonzero(filled)                                         # root-major, slot-minor
    if layout == "dense":
        L = R + R * K
        leaf_pos = R + K * ri + ki
    elif layout == "packed":
        L = n + len(ri)
        leaf_pos = n + np.arange(len(ri))
    else:
        raise ConfigError(f"graph.layout: unknown layout {layout!r}; choose from {list(LAYOUTS)}")
    input_ids = np.full(L, g.pad_id, dtype=np.int64)
    mask = np.zeros(L, dtype=bool)
    root_index = np.zeros(L, dtype=np.int64)
    leaf_slot = np.full(L, -1, dtype=np.int64)
    input_ids[:n] = g.root_ids[:n]
    mask[:n] = True
    root_index[:n] = np.arange(n)
    input_ids[leaf_pos] = g.leaf_ids[ri, ki]
    mask[leaf_pos] = True
    root_index[leaf_pos] = ri
    leaf_slot[leaf_pos] = ki
    position = np.full((R, K), -1, dtype=np.int64)
    position[ri, ki] = leaf_pos
    return LayoutArrays(input_ids, mask, root_index, leaf_slot, position)


def distance_matrix(g: LeafyChainGraph, layout: str = "dense") -> Tensor:
    """[L, L] shortest-path distances of one graph in ``layout`` (padding rows/columns included;
    only real positions are meaningful)."""
    a = layout_arrays(g, layout)
    return graph_distance(torch.from_numpy(a.root_index), torch.from_numpy(a.leaf_slot))
