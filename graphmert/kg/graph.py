"""The seed knowledge graph: typed nodes, typed triples, and the relation vocabulary.

A :class:`SeedKG` is what every reader (:mod:`graphmert.kg.loaders`) produces:

* ``nodes``  — id (CURIE) → :class:`Node` (name, category, synonyms). Names become the tail strings
  that are tokenised into leaves, and the lexicon that links text to nodes.
* ``edges``  — distinct (subject, predicate, object) triples (:class:`Edge`), in input order, each with
  its provenance columns (``primary_knowledge_source``, ``publications``, …). Triple ``j`` is
  ``edges[j]``; the index is the triple's id everywhere downstream.
* ``relations`` — the relation vocabulary: sorted predicate names, relation id = position. Sorting
  makes ids stable across runs and independent of row order; the map is saved as
  ``relation_map.json`` (:func:`save_relation_map`).

Loading errors are :class:`KGError` and name the file, the line and the problem.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from graphmert.errors import GraphmertError
from graphmert.io import atomic_write_json, read_json

__all__ = ["KGError", "Node", "Edge", "SeedKG", "save_relation_map", "load_relation_map"]


class KGError(GraphmertError, ValueError):
    """Bad seed-KG input (missing columns, unknown node ids, empty KG, tokenizer mismatch)."""


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    category: str = ""
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edge:
    subject: str
    predicate: str
    object: str
    provenance: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)


@dataclass(frozen=True)
class AnnotatedDocument:
    """The relations one document of a relation corpus states, and the relation types its corpus
    annotates exhaustively: a pair of its entities without a relation of one of ``types`` is a
    known negative (``kg.injection = cooccurrence``, :mod:`graphmert.kg.distant`)."""

    types: frozenset[str]
    triples: frozenset[tuple[str, str, str]]      # (subject, relation, object), both directions


class SeedKG:
    """Nodes + distinct triples + sorted relation vocabulary, with a subject index.

    Args:
        nodes: the nodes; a repeated id is merged (first name and category win, synonyms united).
        edges: the triples; a repeated (s, p, o) keeps its first row (counted in ``stats``).
        sources: the files the KG was read from (for error messages and manifests).
        skipped: counts of bad records skipped by the reader, by reason.
        annotated: document id → :class:`AnnotatedDocument`, for the documents of relation corpora
            (``kg.relation_files``).
    """

    def __init__(self, nodes: Iterable[Node], edges: Iterable[Edge], sources: Iterable[str] = (),
                 skipped: dict[str, int] | None = None,
                 annotated: dict[str, AnnotatedDocument] | None = None) -> None:
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            old = self.nodes.get(n.id)
            if old is None:
                self.nodes[n.id] = n
            else:
                syn = tuple(s for s in dict.fromkeys(old.synonyms + (n.name,) + n.synonyms)
                            if s != old.name)
                self.nodes[n.id] = Node(old.id, old.name, old.category or n.category, syn)
        seen: set[tuple[str, str, str]] = set()
        self.edges: list[Edge] = []
        self.duplicate_edges = 0
        for e in edges:
            if e.key in seen:
                self.duplicate_edges += 1
                continue
            seen.add(e.key)
            self.edges.append(e)
        self.sources = list(sources)
        self.skipped = dict(skipped or {})
        self.annotated: dict[str, AnnotatedDocument] = dict(annotated or {})
        self.relations: list[str] = sorted({e.predicate for e in self.edges})
        self.relation_map: dict[str, int] = {r: i for i, r in enumerate(self.relations)}
        self._by_subject: dict[str, list[int]] = {}
        for j, e in enumerate(self.edges):
            self._by_subject.setdefault(e.subject, []).append(j)

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self.edges)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def edges_from(self, subject: str) -> list[int]:
        """Triple ids whose subject is ``subject`` (empty list if none)."""
        return self._by_subject.get(subject, [])

    def relation_id(self, name: str) -> int:
        try:
            return self.relation_map[name]
        except KeyError:
            raise KGError(f"unknown relation {name!r}; the seed KG has {self.relations}") from None

    def name(self, node_id: str) -> str:
        return self.nodes[node_id].name

    def category(self, node_id: str) -> str:
        return self.nodes[node_id].category

    def relation_counts(self) -> dict[str, int]:
        c = Counter(e.predicate for e in self.edges)
        return {r: c[r] for r in self.relations}

    def stats(self) -> dict:
        """JSON-serialisable counts for manifests."""
        return {
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "relations": len(self.relations),
            "duplicate_edges": self.duplicate_edges,
            "edges_per_relation": self.relation_counts(),
            "nodes_per_category": dict(sorted(Counter(n.category for n in self.nodes.values()).items())),
            "skipped": dict(self.skipped),
            "sources": list(self.sources),
            "annotated_documents": len(self.annotated),
        }

    def check_not_empty(self) -> "SeedKG":
        where = ", ".join(self.sources) or "<in memory>"
        if not self.nodes:
            raise KGError(f"{where}: the seed KG has no nodes")
        if not self.edges:
            raise KGError(f"{where}: the seed KG has no edges")
        return self


def save_relation_map(kg_or_relations: SeedKG | list[str], path: str | Path) -> Path:
    """Write ``{"relation name": id, ...}`` (ids = sorted order) atomically."""
    rels = kg_or_relations.relations if isinstance(kg_or_relations, SeedKG) else sorted(kg_or_relations)
    return atomic_write_json(path, {r: i for i, r in enumerate(rels)})


def load_relation_map(path: str | Path) -> dict[str, int]:
    """Read ``relation_map.json``; check that ids are 0..n−1 in sorted-name order."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise KGError(f"{path}: expected a JSON object of relation name → id")
    expected = {r: i for i, r in enumerate(sorted(data))}
    if data != expected:
        raise KGError(f"{path}: relation ids must be 0..{len(data) - 1} in sorted name order")
    return data
