"""RDF seed KGs (Turtle, N-Triples, RDF/XML, JSON-LD; optionally gzipped) via rdflib.

Mapping (all files of ``kg.nodes`` + ``kg.edges`` are parsed into one graph, so labels and edges may
live in different files):

* a node is every IRI with a name: ``skos:prefLabel``, else ``rdfs:label`` (the smallest one when
  several); the other labels and every ``skos:altLabel`` are synonyms;
* its category is a ``biolink:category`` object, else an ``rdf:type`` object (other than the OWL/RDFS
  meta classes), compacted to a CURIE; the smallest when several;
* every other triple whose subject and object are IRIs is an edge; its predicate, compacted to a
  CURIE, is the relation name. Literal-valued triples and blank nodes are ignored, and so are the
  statements *about* a ``biolink:Association`` or a ``prov:Activity`` (GraphMERT's own export
  describes every triple by such an association node and its run: they are provenance, not edges —
  so ``'kg.nodes=[RUN/export/kg.ttl]'`` reads an exported graph back as a seed KG).

IRIs are compacted to CURIEs with the one shared prefix map (:func:`graphmert.prefixes.prefix_converter`):
``kg.prefix_map`` first, then the built-in map (the exporter's), then the prefixes the file itself
binds; the longest matching IRI base wins, and the local part is percent-decoded (undoing the
exporter's encoding). IRIs no prefix covers stay as full IRIs. Triples are sorted, so triple ids do
not depend on the parser's iteration order.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterable

from graphmert.kg.graph import Edge, KGError, Node, SeedKG
from graphmert.kg.records import BadRecords, keep_known_edges
from graphmert.prefixes import BUILTIN_PREFIXES, compact_iri, prefix_converter

__all__ = ["CurieCompactor", "read_rdf", "rdf_format"]

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
# subjects of these types are descriptions (the export's association nodes and runs), not entities
_DESCRIPTIONS = {_BIOLINK + "Association", BUILTIN_PREFIXES["prov"] + "Activity"}

_FORMATS = {".ttl": "turtle", ".turtle": "turtle", ".nt": "nt", ".ntriples": "nt", ".n3": "n3",
            ".rdf": "xml", ".owl": "xml", ".xml": "xml", ".jsonld": "json-ld", ".json": "json-ld",
            ".nq": "nquads", ".trig": "trig"}


def rdf_format(path: str | Path) -> str | None:
    """rdflib parser name for a file suffix (``.gz`` looked through), or None if not RDF."""
    p = Path(path)
    suffix = Path(p.stem).suffix if p.suffix == ".gz" else p.suffix
    return _FORMATS.get(suffix.lower())


class CurieCompactor:
    """IRI → CURIE by the longest matching base. Precedence: config > built-in > file (see
    :func:`graphmert.prefixes.prefix_converter`); results are cached, as IRIs repeat across triples."""

    def __init__(self, config: dict[str, str] | None = None, file: dict[str, str] | None = None) -> None:
        self._converter = prefix_converter(config, file)
        self._cache: dict[str, str] = {}

    def __call__(self, iri: str) -> str:
        hit = self._cache.get(iri)
        if hit is None:
            hit = self._cache[iri] = compact_iri(self._converter, iri)
        return hit


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
    described = {str(s) for t in _DESCRIPTIONS for s in g.subjects(rdflib.RDF.type, rdflib.URIRef(t))}
    for s, p, o in g:
        if not isinstance(s, rdflib.URIRef) or str(s) in described:
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
