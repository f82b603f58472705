"""RDF seed KGs (Turtle, N-Triples, RDF/XML, JSON-LD; optionally gzipped) via rdflib.

Mapping (all files of ``kg.nodes`` + ``kg.edges`` are parsed into one graph, so labels and edges may
live in different files):

* a node is every IRI with a name: ``skos:prefLabel``, else ``rdfs:label`` (the smallest one when
  several); the other labels and every ``skos:altLabel`` are synonyms;
* its category is a ``biolink:category`` object, else an ``rdf:type`` object (other than the OWL/RDFS
  meta classes), compacted to a CURIE; the smallest when several;
* every other triple whose subject and object are IRIs is an edge; its predicate, compacted to a
  CURIE, is the relation name. Literal-valued triples and blank nodes are ignored.

IRIs are compacted to CURIEs with a prefix map: ``kg.prefix_map`` first, then the built-in map below,
then the prefixes the file itself binds; the longest matching IRI base wins. IRIs no prefix covers stay
as full IRIs. Triples are sorted, so triple ids do not depend on the parser's iteration order.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterable

from graphmert.kg.graph import Edge, KGError, Node, SeedKG
from graphmert.kg.records import BadRecords, keep_known_edges
from graphmert.vocab import BUILTIN_PREFIXES  # the built-in map, shared with the exporter

__all__ = ["BUILTIN_PREFIXES", "CurieCompactor", "read_rdf", "rdf_format"]

_RDF = BUILTIN_PREFIXES["rdf"]
_RDFS = BUILTIN_PREFIXES["rdfs"]
_SKOS = BUILTIN_PREFIXES["skos"]
_OWL = BUILTIN_PREFIXES["owl"]
_BIOLINK = BUILTIN_PREFIXES["biolink"]
_TYPE, _LABEL, _PREF, _ALT = _RDF + "type", _RDFS + "label", _SKOS + "prefLabel", _SKOS + "altLabel"
_CATEGORY = _BIOLINK + "category"
_META_CLASSES = {_OWL + "Class", _OWL + "NamedIndividual", _OWL + "Thing", _RDFS + "Class",
                 _RDFS + "Resource", _OWL + "ObjectProperty", _RDF + "Property"}
_NOT_EDGES = {_TYPE, _LABEL, _PREF, _ALT, _CATEGORY, _BIOLINK + "name", _BIOLINK + "synonym"}

_FORMATS = {".ttl": "turtle", ".turtle": "turtle", ".nt": "nt", ".ntriples": "nt", ".n3": "n3",
            ".rdf": "xml", ".owl": "xml", ".xml": "xml", ".jsonld": "json-ld", ".json": "json-ld",
            ".nq": "nquads", ".trig": "trig"}


def rdf_format(path: str | Path) -> str | None:
    """rdflib parser name for a file suffix (``.gz`` looked through), or None if not RDF."""
    p = Path(path)
    suffix = Path(p.stem).suffix if p.suffix == ".gz" else p.suffix
    return _FORMATS.get(suffix.lower())


class CurieCompactor:
    """IRI → CURIE by the longest matching base. Precedence for one base: config > built-in > file."""

    def __init__(self, config: dict[str, str] | None = None, file: dict[str, str] | None = None) -> None:
        by_base: dict[str, str] = {}
        for source in (file or {}, BUILTIN_PREFIXES, config or {}):
            for prefix, base in source.items():
                if prefix and base:
                    by_base[str(base)] = prefix
        self._bases = sorted(by_base.items(), key=lambda kv: (-len(kv[0]), kv[0]))

    def __call__(self, iri: str) -> str:
        for base, prefix in self._bases:
            if iri.startswith(base) and len(iri) > len(base):
                return f"{prefix}:{iri[len(base):]}"
        return iri


def _parse(paths: list[Path]):
    import rdflib

    g = rdflib.Graph(bind_namespaces="none")
    for p in paths:
        fmt = rdf_format(p)
        if fmt is None:
            raise KGError(f"{p}: not an RDF file suffix; expected one of {sorted(_FORMATS)} (optionally .gz)")
        if not p.is_file():
            raise KGError(f"{p}: seed-KG file not found")
        try:
            data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            g.parse(data=data, format=fmt, publicID=p.resolve().as_uri())
        except KGError:
            raise
        except Exception as e:  # rdflib raises many parser-specific exception types
            raise KGError(f"{p}: cannot parse as {fmt}: {e}") from None
    return g


def read_rdf(paths: Iterable[str | Path], prefix_map: dict[str, str] | None = None,
             skip_bad_records: bool = False) -> SeedKG:
    """Read RDF files into a :class:`SeedKG` (checked to be non-empty)."""
    import rdflib

    paths = list(dict.fromkeys(Path(p) for p in paths))
    if not paths:
        raise KGError("rdf: no files given (kg.nodes / kg.edges)")
    g = _parse(paths)
    compact = CurieCompactor(prefix_map, {p: str(ns) for p, ns in g.namespaces()})
    where = ", ".join(str(p) for p in paths)

    labels: dict[str, dict[str, list[str]]] = {}
    categories: dict[str, dict[str, list[str]]] = {}
    raw_edges: list[tuple[str, str, str]] = []
    for s, p, o in g:
        if not isinstance(s, rdflib.URIRef):
            continue
        s_, p_ = str(s), str(p)
        if p_ in (_LABEL, _PREF, _ALT):
            if isinstance(o, rdflib.Literal) and str(o).strip():
                labels.setdefault(s_, {}).setdefault(p_, []).append(str(o).strip())
        elif p_ in (_CATEGORY, _TYPE):
            if isinstance(o, rdflib.URIRef) and str(o) not in _META_CLASSES:
                categories.setdefault(s_, {}).setdefault(p_, []).append(compact(str(o)))
        elif p_ not in _NOT_EDGES and isinstance(o, rdflib.URIRef):
            raw_edges.append((s_, p_, str(o)))

    nodes: dict[str, Node] = {}
    for iri in sorted(labels):
        lab = labels[iri]
        names = sorted(set(lab.get(_PREF, []))) or sorted(set(lab.get(_LABEL, [])))
        if not names:
            continue  # only altLabels: no name
        name = names[0]
        others = sorted(set(lab.get(_PREF, []) + lab.get(_LABEL, []) + lab.get(_ALT, [])) - {name})
        cats = categories.get(iri, {})
        cat = (sorted(cats.get(_CATEGORY, [])) or sorted(cats.get(_TYPE, [])) or [""])[0]
        cid = compact(iri)
        nodes[cid] = Node(cid, name, cat, tuple(others))

    bad = BadRecords(skip_bad_records)
    located = ((f"{where}: triple <{s}> <{p}> <{o}>", Edge(compact(s), compact(p), compact(o)))
               for s, p, o in sorted(raw_edges))
    edges = list(keep_known_edges(nodes, located, bad))
    return SeedKG(nodes.values(), edges, [str(p) for p in paths], bad.as_dict()).check_not_empty()
