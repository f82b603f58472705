"""Leafy chain graphs: the per-chunk structure and its layouts, closed-form distances, the builder
(chunks + seed KG → graphs), collation into :class:`GraphBatch`, PyG conversion and Parquet shards."""

from graphmert.graph.batch import GraphBatch, graph_distance
from graphmert.graph.builder import InjectionError, build_graphs
from graphmert.graph.collate import Collator, collate_graphs, uncollate
from graphmert.graph.io import read_graphs, write_graph_shards, write_graphs
from graphmert.graph.layout import Injection, LeafyChainGraph, distance_matrix, layout_arrays

__all__ = [
    "GraphBatch", "graph_distance", "InjectionError", "build_graphs", "Collator", "collate_graphs",
    "uncollate", "read_graphs", "write_graph_shards", "write_graphs", "Injection", "LeafyChainGraph",
    "distance_matrix", "layout_arrays",
]
