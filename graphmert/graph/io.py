"""Leafy chain graphs as Parquet shards, written atomically.

One row per graph, stored compactly (only real roots, only filled leaves):

=================  ===========================  =================================================
``chunk_id``       string
``doc_id``         string
``num_roots_max``  int32                        R (root slots)
``num_leaves``     int32                        K (leaf slots per root)
``pad_id``         int32
``root_ids``       list<int32> [n]              real roots ``[CLS] … [SEP]``
``word_ids``       list<int32> [n]
``leaf_ids``       list<list<int32>> [n][t_i]   filled leaves of each root
``relation_ids``   list<int32> [n]              −1 = none
``head_length``    list<int32> [n]
``injections``     list<struct>                 root, head_length, subject, predicate, object, score
``documents``      list<string>                 every document the roots hold text of
``entity_ids``     list<string> [E]             the chunk's entities (:class:`EntityTable`; empty
``entity_types``   list<int32> [E]              lists when the graph has no entity table, as
``entity_mentions`` list<list<int32>> [M][3]    under the paper's injection)
``group_head``     list<int32> [n]              head entity of the group at each root, −1
``group_tail``     list<int32> [n]              injected tail entity of the group, −1
``group_candidates`` list<list<int32>> [C][3]   (root, entity, is_tail)
``entity_counts``  list<int32> [E] or []        document-level mention count of each entity
``root_sentences`` list<int32> [n] or []        the sentence number of each root (EntityTable.sentences)
=================  ===========================  =================================================

A graph has an entity table exactly when ``group_head`` is non-empty.

Shards written before ``documents`` existed still read, with ``[doc_id]``, except for ``concatenate``
chunks (``concat#…``), whose other documents are unknown: reading those fails and asks for a rebuild.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from graphmert.graph.layout import EntityTable, Injection, LeafyChainGraph
from graphmert.io import as_paths, read_parquet, write_parquet, write_shards

__all__ = ["SCHEMA", "write_graphs", "read_graphs", "write_graph_shards", "graphs_equal"]

_INJ = pa.struct([("root", pa.int32()), ("head_length", pa.int32()), ("subject", pa.string()),
                  ("predicate", pa.string()), ("object", pa.string()), ("score", pa.float64())])
SCHEMA = pa.schema([
    ("chunk_id", pa.string()),
    ("doc_id", pa.string()),
    ("num_roots_max", pa.int32()),
    ("num_leaves", pa.int32()),
    ("pad_id", pa.int32()),
    ("root_ids", pa.list_(pa.int32())),
    ("word_ids", pa.list_(pa.int32())),
    ("leaf_ids", pa.list_(pa.list_(pa.int32()))),
    ("relation_ids", pa.list_(pa.int32())),
    ("head_length", pa.list_(pa.int32())),
    ("injections", pa.list_(_INJ)),
    ("documents", pa.list_(pa.string())),
    ("entity_ids", pa.list_(pa.string())),
    ("entity_types", pa.list_(pa.int32())),
    ("entity_mentions", pa.list_(pa.list_(pa.int32(), 3))),
    ("group_head", pa.list_(pa.int32())),
    ("group_tail", pa.list_(pa.int32())),
    ("group_candidates", pa.list_(pa.list_(pa.int32(), 3))),
    ("entity_counts", pa.list_(pa.int32())),
    ("root_sentences", pa.list_(pa.int32())),
])
_ENTITY_COLUMNS = ("entity_ids", "entity_types", "entity_mentions", "group_head", "group_tail",
                   "group_candidates", "entity_counts", "root_sentences")
_OPTIONAL = {"documents", *_ENTITY_COLUMNS}


def _row(g: LeafyChainGraph) -> dict:
    n = g.num_roots
    return {
        "chunk_id": g.chunk_id, "doc_id": g.doc_id, "num_roots_max": g.R, "num_leaves": g.K,
        "pad_id": g.pad_id,
        "root_ids": g.root_ids[:n].tolist(), "word_ids": g.word_ids[:n].tolist(),
        "leaf_ids": [g.leaf_ids[i, :g.leaf_length[i]].tolist() for i in range(n)],
        "relation_ids": g.relation_ids[:n].tolist(), "head_length": g.head_length[:n].tolist(),
        "injections": [asdict(i) for i in g.injections],
        "documents": list(g.documents or [g.doc_id]),
        **_entity_row(g),
    }


def _entity_row(g: LeafyChainGraph) -> dict:
    e, n = g.entities, g.num_roots
    if e is None:
        return {k: [] for k in _ENTITY_COLUMNS}
    return {"entity_ids": list(e.ids), "entity_types": e.types.tolist(),
            "entity_mentions": e.mentions.tolist(), "group_head": e.head[:n].tolist(),
            "group_tail": e.tail[:n].tolist(), "group_candidates": e.candidates.tolist(),
            "entity_counts": e.counts.tolist(), "root_sentences": e.sentences[:n].tolist()}


def _entities(row: dict, R: int) -> EntityTable | None:
    if not row.get("group_head"):
        return None
    e = EntityTable.empty(R)
    n = len(row["group_head"])
    e.ids = list(row["entity_ids"])
    e.types = np.asarray(row["entity_types"], dtype=np.int64)
    e.mentions = np.asarray(row["entity_mentions"], dtype=np.int64).reshape(-1, 3)
    e.head[:n] = row["group_head"]
    e.tail[:n] = row["group_tail"]
    e.candidates = np.asarray(row["group_candidates"], dtype=np.int64).reshape(-1, 3)
    e.counts = np.asarray(row.get("entity_counts") or [], dtype=np.int64)
    e.sentences = np.asarray(row.get("root_sentences") or [], dtype=np.int64)
    return e


def _graph(row: dict) -> LeafyChainGraph:
    R, K, pad = row["num_roots_max"], row["num_leaves"], row["pad_id"]
    g = LeafyChainGraph.from_roots(row["chunk_id"], row["doc_id"], row["root_ids"], row["word_ids"],
                                   R, K, pad, documents=row.get("documents"))
    n = g.num_roots
    for i, leaves in enumerate(row["leaf_ids"]):
        g.leaf_ids[i, :len(leaves)] = leaves
        g.leaf_length[i] = len(leaves)
    g.relation_ids[:n] = row["relation_ids"]
    g.head_length[:n] = row["head_length"]
    g.injections = [Injection(**i) for i in row["injections"]]
    g.entities = _entities(row, R)
    return g


def write_graphs(graphs: Iterable[LeafyChainGraph], path: str | Path) -> int:
    """Write one Parquet shard atomically. Returns the number of graphs written."""
    return write_parquet([_row(g) for g in graphs], SCHEMA, path)


def write_graph_shards(graphs: Iterable[LeafyChainGraph], folder: str | Path, shard_size: int,
                       prefix: str = "graphs") -> list[Path]:
    """Write ``folder/{prefix}-00000.parquet``, … with ``shard_size`` graphs each; return the paths."""
    return write_shards(graphs, folder, prefix, shard_size, write_graphs)


def read_graphs(paths: str | Path | Iterable[str | Path]) -> Iterator[LeafyChainGraph]:
    """Graphs of one or more shards, in order. Columns added since the first shards were written
    (``_OPTIONAL``) read as None in older shards."""
    for p in as_paths(paths):
        for row in read_parquet(p, SCHEMA, what="graph", optional=_OPTIONAL):
            if row["documents"] is None and row["chunk_id"].startswith("concat#"):
                raise ValueError(f"{p}: graph {row['chunk_id']} is a concatenated chunk from a shard "
                                 "written before graphs listed all their documents; rebuild the "
                                 "graphs (graphmert build-graphs --force)")
            yield _graph(row)


def graphs_equal(a: LeafyChainGraph, b: LeafyChainGraph) -> bool:
    """Field-by-field equality (arrays compared element-wise)."""
    return (a.chunk_id == b.chunk_id and a.doc_id == b.doc_id
            and (a.documents or [a.doc_id]) == (b.documents or [b.doc_id]) and a.num_roots == b.num_roots
            and a.pad_id == b.pad_id and a.injections == b.injections
            and all(np.array_equal(getattr(a, k), getattr(b, k)) for k in
                    ("root_ids", "word_ids", "leaf_ids", "leaf_length", "relation_ids", "head_length"))
            and _entity_row(a) == _entity_row(b))
