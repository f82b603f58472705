"""Hand-built leafy chain graphs with entity tables (the candidate-tail contract), shared by the
graph, model and train tests. (A uniquely named module in tests/, importable from every folder.)

graph_a: [CLS] 10 … 17 [SEP] (R = 12, K = 3); entity 0 ("A0", type 1) at roots 1–2 and 6, entity 1
         (type 2) at 4, entity 3 (type 3) also at 4 (a mention with two ids), entity 2 (type 2) at 8.
         Groups: root 1 (head 0, head length 2, relation 0, tail entity 1 = token 13), root 6 (head 0,
         relation 1, no tail). Document counts [5, 1, 2, 1].
graph_b: a paper-style graph (one injection at root 1, tail [30]), no entity table.
graph_c: [CLS] 40 … 46 [SEP]; entity 0 (type 2) at root 2, entity 1 (type 4) at roots 5–6 and 1; no
         document counts (the chunk's own are used). Groups: root 2 (head 0, relation 2, tail
         entity 1 = tokens 44 45), root 4 (relation 0, no head entity, no candidate row, tail [46]).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from graphmert.graph.layout import EntityTable, LeafyChainGraph

PAD, UNK, CLS, SEP, MASK = range(5)
R, K = 12, 3


def table(ids, types, mentions, head, tail, candidates, counts=(), R: int = R) -> EntityTable:
    """An EntityTable from lists; ``head``/``tail``: {root: entity}."""
    h, t = np.full(R, -1, dtype=np.int64), np.full(R, -1, dtype=np.int64)
    for root, e in head.items():
        h[root] = e
    for root, e in tail.items():
        t[root] = e
    return EntityTable(list(ids), np.asarray(types, dtype=np.int64),
                       np.asarray(mentions, dtype=np.int64).reshape(-1, 3), h, t,
                       np.asarray(candidates, dtype=np.int64).reshape(-1, 3),
                       np.asarray(counts, dtype=np.int64))


def graph_a() -> LeafyChainGraph:
    g = LeafyChainGraph.from_roots("a#0", "a", [CLS, *range(10, 18), SEP], [-1, *range(8), -1], R, K, PAD)
    g.entities = table(["A0", "A1", "A2", "A3"], [1, 2, 2, 3],
                       [(1, 3, 0), (4, 5, 1), (4, 5, 3), (6, 7, 0), (8, 9, 2)],
                       head={1: 0, 6: 0}, tail={1: 1},
                       candidates=[(1, 1, 1), (1, 2, 0), (1, 3, 0), (6, 1, 0), (6, 2, 0)],
                       counts=[5, 1, 2, 1])
    g.inject(1, [13], 0, 2)
    g.inject(6, [], 1, 1, allow_empty=True)
    g.validate()
    return g


def graph_b() -> LeafyChainGraph:
    g = LeafyChainGraph.from_roots("b#0", "b", [CLS, 20, 21, 22, SEP], [-1, 0, 1, 2, -1], R, K, PAD)
    g.inject(1, [30], 0, 1)
    return g


def graph_c() -> LeafyChainGraph:
    g = LeafyChainGraph.from_roots("c#0", "c", [CLS, *range(40, 47), SEP], [-1, *range(7), -1], R, K, PAD)
    g.entities = table(["C0", "C1"], [2, 4], [(2, 3, 0), (5, 7, 1), (1, 2, 1)],
                       head={2: 0}, tail={2: 1}, candidates=[(2, 1, 1)])
    g.inject(2, [44, 45], 2, 1)
    g.inject(4, [46], 0, 1)
    g.validate()
    return g


def as_queries(g: LeafyChainGraph, roots) -> LeafyChainGraph:
    """``g`` as the "fixed" masking shows it: each group in ``roots`` as K [MASK] leaves."""
    leaf_ids, leaf_length = g.leaf_ids.copy(), g.leaf_length.copy()
    leaf_ids[list(roots)] = MASK
    leaf_length[list(roots)] = K
    return dataclasses.replace(g, leaf_ids=leaf_ids, leaf_length=leaf_length)
