"""RDF export of extracted triples: one statement list per triple, written three ways.

Model (docs/EXPORT.md has the diagram). For a merged :class:`~graphmert.extract.triples.Triple`
``(h, r, t)`` produced by run ``R``::

    h  P(r)  t .                                         the triple, asserted directly
    A  a biolink:Association ;                           its association node (reification)
       biolink:subject h ; biolink:predicate P(r) ; biolink:object t ;
       gm:relation "r" ;                                 the model's relation name
       biolink:has_confidence_score "c"^^xsd:double ;
       biolink:evidence_count "n"^^xsd:integer ;
       biolink:supporting_text "sentence" ;              one per distinct sentence (capped)
       biolink:publications <document IRI> ;             one per supporting document
       biolink:knowledge_level "prediction" ;            every GraphMERT edge (KNOWLEDGE_LEVEL)
       biolink:agent_type "text_mining_agent" ;
       biolink:primary_knowledge_source "infores:…" ;    export.knowledge_source
       biolink:qualified_predicate biolink:causes ;      export.predicate_qualifiers of r, if any:
       biolink:object_aspect_qualifier "…" ;             e.g. upregulates → causes increased
       biolink:object_direction_qualifier "…" ;          activity_or_abundance
       gm:tailSource "mention" ;                         how the tail was found (stated or predicted)
       prov:wasGeneratedBy R .                           (and R/update-N when an update added evidence)
    R  a prov:Activity ; gm:checkpoint "…" ; gm:configHash "…" ; gm:softwareVersion "…" ;
       prov:startedAtTime "…"^^xsd:dateTime .            (when known)
    h  a <Biolink category> ; rdfs:label "name" ; dcterms:identifier "CURIE" ;   (same for t)
       biolink:xref "CURIE" .                            one per other id of h (RunInfo.xrefs)

``P`` is ``export.predicate_map`` (Biolink). All IRIs come from
:class:`~graphmert.export.terms.ExportTerms`; literal text goes through
:func:`~graphmert.export.terms.clean_text`, so any input gives parseable output.

Writers:

* :func:`write_rdf` — Turtle, JSON-LD (with an inline ``@context``) or TriG (one named graph per run),
  streamed through pyoxigraph's serializers in the order of the triples given: memory holds the
  entity and run descriptions already written (one key each, so that each is written once), never
  the triples. The export stage writes these formats in parts instead
  (:mod:`graphmert.export.parts`, from :func:`statement_groups`), into files that hold the same
  statements.
* :func:`write_ntriples` — N-Triples or N-Quads streamed shard by shard: memory is bounded by one shard
  (entity and run descriptions are written once per shard; repeats across shards are the same RDF
  statements, so shard outputs simply concatenate).
* :func:`build_graph` — every statement in an in-memory rdflib graph: the reference the tests compare
  the writers with.

Statements are plain tuples ``(subject IRI, predicate IRI, object)`` whose object is an IRI ``str`` or a
:class:`Lit`; :class:`NTriplesEncoder`, :class:`OxigraphEncoder` and :func:`to_rdflib` turn them into
N-Triples text, pyoxigraph terms or rdflib terms, so every writer emits exactly the same statements.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, NamedTuple, Sequence, Union

import pyoxigraph as ox
from rdflib import Literal, URIRef
from rdflib.namespace import DCTERMS, PROV, RDF, RDFS, XSD

from graphmert import __version__
from graphmert.export.terms import (BIOLINK, GRAPHMERT, QUALIFIERS, ExportTerms, clean_text, encode_local,
                                    is_safe_iri)
from graphmert.extract.triples import KNOWLEDGE_LEVEL, Triple, triple_key
from graphmert.io import atomic_path

__all__ = ["Lit", "RunInfo", "Statement", "triple_statements", "supporting_texts", "documents",
           "to_rdflib", "nt_line", "NTriplesEncoder", "OxigraphEncoder", "build_graph", "write_rdf",
           "ntriples_lines", "write_ntriples", "RDF_FORMATS", "STREAM_FORMATS", "jsonld_context",
           "turtle_prefixes", "statement_groups", "unseen_descriptions"]

RDF_FORMATS = {"ttl": ox.RdfFormat.TURTLE, "jsonld": ox.RdfFormat.JSON_LD,   # streamed by pyoxigraph
               "trig": ox.RdfFormat.TRIG}
STREAM_FORMATS = {"nt": False, "nq": True}                            # format → with graph names

_RDF_TYPE, _LABEL, _IDENT = str(RDF.type), str(RDFS.label), str(DCTERMS.identifier)
_XSD_DOUBLE, _XSD_INT, _XSD_DT = str(XSD.double), str(XSD.integer), str(XSD.dateTime)
# the terms as plain strings, looked up once (attribute access on a DefinedNamespace is slow)
_ASSOCIATION, _SUBJECT, _PREDICATE, _OBJECT = (str(BIOLINK.Association), str(BIOLINK.subject),
                                               str(BIOLINK.predicate), str(BIOLINK.object))
_CONFIDENCE, _EVIDENCE_COUNT, _TEXT, _PUBLICATIONS = (
    str(BIOLINK.has_confidence_score), str(BIOLINK.evidence_count), str(BIOLINK.supporting_text),
    str(BIOLINK.publications))
_KNOWLEDGE_LEVEL, _AGENT_TYPE, _KNOWLEDGE_SOURCE = (
    str(BIOLINK.knowledge_level), str(BIOLINK.agent_type), str(BIOLINK.primary_knowledge_source))
_QUALIFIER_IRIS = {slot: str(getattr(BIOLINK, slot)) for slot in QUALIFIERS}
_TAIL_SOURCE = str(GRAPHMERT.tailSource)
_RELATION, _CHECKPOINT, _CONFIG_HASH, _VERSION = (str(GRAPHMERT.relation), str(GRAPHMERT.checkpoint),
                                                  str(GRAPHMERT.configHash),
                                                  str(GRAPHMERT.softwareVersion))
_GENERATED_BY, _ACTIVITY, _STARTED = (str(PROV.wasGeneratedBy), str(PROV.Activity),
                                      str(PROV.startedAtTime))
_INFORMED_BY = str(PROV.wasInformedBy)
_XREF = str(BIOLINK.xref)


class Lit(NamedTuple):
    """A literal: lexical form and datatype IRI (None: a plain string)."""

    value: str
    datatype: str | None = None


Statement = tuple[str, str, Union[str, Lit]]


@dataclass(frozen=True)
class RunInfo:
    """What the run activity records besides the triples' own run and checkpoint ids."""

    config_hash: str = ""
    software_version: str = __version__
    started_at: str | None = None      # ISO 8601 date-time, e.g. "2026-01-31T12:00:00Z"
    # entity id → the other ids of that entity (a linked mention's cross-references: the DOID of a
    # MeSH disease), written as biolink:xref / KGX ``xref``
    xrefs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _double(x: float) -> Lit:
    if math.isnan(x):
        lex = "NaN"
    elif math.isinf(x):
        lex = "INF" if x > 0 else "-INF"
    else:
        lex = repr(float(x))
    return Lit(lex, _XSD_DOUBLE)


def supporting_texts(t: Triple, cap: int) -> list[str]:
    """The first ``cap`` distinct evidence sentences (cleaned), in evidence order."""
    out: list[str] = []
    for e in t.evidence:
        s = clean_text(e.sentence).strip()
        if s and s not in out:
            out.append(s)
            if len(out) == cap:
                break
    return out


def documents(t: Triple) -> list[str]:
    """Sorted distinct supporting document ids (the triple's list and its evidence)."""
    return sorted({d for d in t.documents} | {e.doc_id for e in t.evidence})


def triple_statements(t: Triple, terms: ExportTerms, run: RunInfo,
                      seen: set[str] | None = None) -> tuple[str, list[Statement]]:
    """The statements of one triple, and its run key (names its run activity and named graph):
    :func:`statement_groups`' own statements, then its descriptions.

    ``seen`` (optional) holds keys of the entity and run descriptions already emitted; an identical
    description is not emitted again (the set is updated). A name, category or checkpoint that
    differs is emitted, without the statements of that entity or run already emitted (its type,
    identifier, ...), so deduplication never drops a statement and never repeats one.
    """
    run_key, own, described = statement_groups(t, terms, run)
    return run_key, own + unseen_descriptions(described, seen)


def statement_groups(t: Triple, terms: ExportTerms, run: RunInfo
                     ) -> tuple[str, list[Statement], list[tuple[str, list[Statement]]]]:
    """``(run key, own, descriptions)`` of one triple.

    ``own`` are the statements no other triple makes: the assertion ``h P(r) t``, its association
    node and the association's ``prov:wasGeneratedBy`` links. ``descriptions`` are the ``(key,
    statements)`` groups every triple naming the same things repeats: each ``graphmert update``
    activity of its evidence, the head, the tail (type, label, identifier, cross-references) and the
    run activity; :func:`unseen_descriptions` keeps each once.
    """
    run_key = terms.run_key(t.run_id, t.checkpoint_id, run.config_hash)
    head, _ = terms.entity(t.head_id, t.head_name)
    tail, _ = terms.entity(t.tail_id, t.tail_name)
    pred = str(terms.predicate(t.relation))
    hk, _, tk = triple_key(t)
    assoc = terms.association(run_key, hk, t.relation, tk)
    activity = terms.run(run_key)
    own: list[Statement] = [
        (head, pred, tail),
        (assoc, _RDF_TYPE, _ASSOCIATION),
        (assoc, _SUBJECT, head),
        (assoc, _PREDICATE, pred),
        (assoc, _OBJECT, tail),
        (assoc, _RELATION, Lit(clean_text(t.relation))),
        (assoc, _CONFIDENCE, _double(t.confidence)),
        (assoc, _EVIDENCE_COUNT, Lit(str(int(t.evidence_count)), _XSD_INT)),
    ]
    own += association_statements(t, assoc, terms)
    own.append((assoc, _GENERATED_BY, activity))
    links, described = update_statements(t, assoc, activity)
    own += links
    for iri, eid, name, cat in ((head, t.head_id, t.head_name, t.head_category),
                                (tail, t.tail_id, t.tail_name, t.tail_category)):
        label = clean_text(name).strip()
        cat_iri = str(terms.category(cat))
        group = [(iri, _RDF_TYPE, cat_iri)]
        if label:
            group.append((iri, _LABEL, Lit(label)))
        if eid:
            group.append((iri, _IDENT, Lit(clean_text(eid))))
            group += [(iri, _XREF, Lit(clean_text(x))) for x in run.xrefs.get(eid, ())]
        described.append(("\x1f".join((iri, cat_iri, label, eid)), group))
    group = [(activity, _RDF_TYPE, _ACTIVITY),
             (activity, _CHECKPOINT, Lit(clean_text(t.checkpoint_id))),
             (activity, _CONFIG_HASH, Lit(clean_text(run.config_hash))),
             (activity, _VERSION, Lit(clean_text(run.software_version)))]
    if run.started_at:
        group.append((activity, _STARTED, Lit(clean_text(run.started_at), _XSD_DT)))
    described.append(("\x1f".join((activity, t.checkpoint_id)), group))
    return run_key, own, described


def unseen_descriptions(groups: list[tuple[str, list[Statement]]],
                        seen: set[str] | None) -> list[Statement]:
    """The statements of description ``groups`` (:func:`statement_groups`) not yet in ``seen``: a
    group whose key was seen is skipped whole, a new group loses only the statements already
    emitted (an entity named two ways is typed and identified once). ``seen`` is updated; None keeps
    every statement."""
    if seen is None:
        return [st for _, group in groups for st in group]
    out: list[Statement] = []
    for key, group in groups:
        if key not in seen:
            seen.add(key)
            out += _unseen(group, seen)
    return out


def _unseen(statements: list[Statement], seen: set[str]) -> list[Statement]:
    """The statements not in ``seen`` (an entity named two ways is still typed and identified once, a
    run with two checkpoints described once), added to it."""
    out = []
    for st in statements:
        o = st[2]
        key = "\x1f".join((st[0], st[1], f"\x1e{o.value}\x1e{o.datatype}" if isinstance(o, Lit) else o))
        if key not in seen:
            seen.add(key)
            out.append(st)
    return out


def association_statements(t: Triple, assoc: str, terms: ExportTerms) -> list[Statement]:
    """The evidence and Translator provenance of an association: supporting text, publications,
    knowledge level, agent type, primary knowledge source, the relation's qualifiers (Biolink slot
    IRIs; ``qualified_predicate``'s value an IRI, the enum values literals) and ``gm:tailSource``."""
    out: list[Statement] = [(assoc, _TEXT, Lit(s))
                            for s in supporting_texts(t, terms.cfg.max_supporting_text)]
    out += [(assoc, _PUBLICATIONS, terms.document(d)[0]) for d in documents(t)]
    out += [(assoc, _KNOWLEDGE_LEVEL, Lit(KNOWLEDGE_LEVEL)),
            (assoc, _AGENT_TYPE, Lit("text_mining_agent")),
            (assoc, _KNOWLEDGE_SOURCE, Lit(terms.cfg.knowledge_source))]
    for slot, value in terms.qualifiers(t.relation):
        obj = str(BIOLINK._NS) + value.partition(":")[2] if slot == "qualified_predicate" else Lit(value)
        out.append((assoc, _QUALIFIER_IRIS[slot], obj))
    if t.tail_source:
        out.append((assoc, _TAIL_SOURCE, Lit(clean_text(t.tail_source))))
    return out


def update_statements(t: Triple, assoc: str, activity: str
                      ) -> tuple[list[Statement], list[tuple[str, list[Statement]]]]:
    """``assoc prov:wasGeneratedBy U`` for every ``graphmert update`` whose documents support the
    triple (its evidence's ``activity``), next to the run activity ``R``; and each ``U``
    (``R/update-N``)'s description group, keyed by its IRI: ``U a prov:Activity ; prov:wasInformedBy
    R`` (it used the run's model)."""
    links: list[Statement] = []
    described: list[tuple[str, list[Statement]]] = []
    for name in sorted({e.activity for e in t.evidence} - {""}):
        update = f"{activity}/{encode_local(name)}"
        links.append((assoc, _GENERATED_BY, update))
        described.append((update, [(update, _RDF_TYPE, _ACTIVITY), (update, _INFORMED_BY, activity)]))
    return links, described


# --------------------------------------------------------------------------------------------------
# Terms
# --------------------------------------------------------------------------------------------------


def to_rdflib(st: Statement):
    """A statement as an rdflib (URIRef, URIRef, URIRef | Literal) triple."""
    s, p, o = st
    obj = Literal(o.value, datatype=URIRef(o.datatype) if o.datatype else None) \
        if isinstance(o, Lit) else URIRef(o)
    return URIRef(s), URIRef(p), obj


_NT_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


class _IriCache:
    """IRIs checked (:func:`is_safe_iri`) and their encodings (:meth:`_encode`) cached, up to
    ``cache_size`` distinct IRIs; then the cache starts over."""

    def __init__(self, cache_size: int = 65536) -> None:
        self.cache: dict = {}
        self.cache_size = cache_size

    def _encode(self, iri: str):
        raise NotImplementedError

    def iri(self, iri: str):
        enc = self.cache.get(iri)
        if enc is None:
            if not is_safe_iri(iri):   # every IRI comes from ExportTerms; this is the last defence
                raise ValueError(f"refusing to write an unsafe IRI: {iri!r}")
            if len(self.cache) >= self.cache_size:
                self.cache.clear()
            enc = self.cache[iri] = self._encode(iri)
        return enc


class NTriplesEncoder(_IriCache):
    """Statements → N-Triples / N-Quads lines."""

    def _encode(self, iri: str) -> str:
        return f"<{iri}>"

    def __call__(self, st: Statement, graph: str | None = None) -> str:
        s, p, o = st
        if isinstance(o, Lit):
            obj = '"' + o.value.translate(_NT_ESCAPES) + '"'
            if o.datatype:
                obj += "^^" + self.iri(o.datatype)
        else:
            obj = self.iri(o)
        g = " " + self.iri(graph) if graph else ""
        return f"{self.iri(s)} {self.iri(p)} {obj}{g} .\n"


def nt_line(st: Statement, graph: str | None = None) -> str:
    """One N-Triples line (N-Quads with ``graph``), UTF-8 text, ending in a newline."""
    return NTriplesEncoder(cache_size=8)(st, graph)


class OxigraphEncoder(_IriCache):
    """Statements → pyoxigraph ``Triple``s (``Quad``s with a graph IRI), for its serializers."""

    def _encode(self, iri: str) -> ox.NamedNode:
        return ox.NamedNode(iri)

    def __call__(self, st: Statement, graph: str | None = None) -> ox.Triple | ox.Quad:
        s, p, o = st
        if isinstance(o, Lit):
            obj = ox.Literal(o.value, datatype=self.iri(o.datatype)) if o.datatype else ox.Literal(o.value)
        else:
            obj = self.iri(o)
        if graph:
            return ox.Quad(self.iri(s), self.iri(p), obj, self.iri(graph))
        return ox.Triple(self.iri(s), self.iri(p), obj)


# --------------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------------


def _bind(g, terms: ExportTerms) -> None:
    for prefix, base in terms.bindings().items():
        g.bind(prefix, base, override=True, replace=True)


def build_graph(triples: Iterable[Triple], terms: ExportTerms, run: RunInfo, named_graphs: bool = False):
    """An rdflib ``Graph`` of all statements (``Dataset`` with one named graph per run when
    ``named_graphs``). Triples are added in :func:`triple_key` order, so serialisations are stable."""
    from rdflib import Dataset, Graph

    ordered = sorted(triples, key=lambda t: (t.run_id,) + triple_key(t))
    g = Dataset(default_union=False) if named_graphs else Graph(bind_namespaces="none")
    graphs: dict[str, object] = {}
    seen: set[str] = set()
    for t in ordered:
        run_key, statements = triple_statements(t, terms, run, seen)
        target = g
        if named_graphs:
            target = graphs.get(run_key)
            if target is None:
                target = graphs[run_key] = g.graph(URIRef(terms.graph(run_key)))
        for st in statements:
            target.add(to_rdflib(st))
    _bind(g, terms)
    return g


def jsonld_context(terms: ExportTerms) -> dict[str, str]:
    """The JSON-LD ``@context`` written into ``kg.jsonld``: the prefixes of :meth:`bindings`."""
    return dict(sorted(terms.bindings().items()))


def write_rdf(triples: Iterable[Triple], path: str | Path, fmt: str, terms: ExportTerms,
              run: RunInfo, ids: Iterable[str] | None = None) -> int:
    """Stream ``ttl``, ``jsonld`` or ``trig`` atomically, in the order of ``triples`` (the same input
    gives the same bytes); returns the number of statements written.

    Entity and run descriptions are written once each (``seen`` of :func:`triple_statements`, kept
    for the whole file), so the file holds the statements of :func:`build_graph`. The header declares
    the prefixes of the entities (:meth:`ExportTerms.bindings`), which must be known before the first
    statement: ``ids`` are every head and tail id of ``triples``, read ahead (the export stage reads
    the two id columns of its shards); None reads ``triples`` twice, so it must then be a sequence.
    Turtle and TriG write IRIs under ``export.namespace`` in full (:func:`turtle_prefixes`).
    JSON-LD is pyoxigraph's expanded form as the ``@graph`` of an object whose ``@context`` declares
    the prefixes (:func:`jsonld_context`).
    """
    if fmt not in RDF_FORMATS:
        raise ValueError(f"write_rdf: format {fmt!r} is not one of {sorted(RDF_FORMATS)}")
    if ids is None:
        if not isinstance(triples, Sequence):
            raise TypeError("write_rdf: give the triples' ids, or the triples as a sequence (read twice)")
        ids = (i for t in triples for i in (t.head_id, t.tail_id))
    for entity_id in ids:
        if entity_id:
            terms.entity(entity_id, "")         # records the prefixes the file will use
    written = [0]
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if fmt == "jsonld":
            f.write(b'{"@context": ' + json.dumps(jsonld_context(terms), indent=1).encode() + b',\n"@graph": ')
        ox.serialize(_ox_statements(triples, terms, run, fmt == "trig", written), f, RDF_FORMATS[fmt],
                     prefixes=None if fmt == "jsonld" else turtle_prefixes(terms))
        if fmt == "jsonld":
            f.write(b"}\n")
    return written[0]


def turtle_prefixes(terms: ExportTerms) -> dict[str, str]:
    """The prefixes of a Turtle / TriG header: :meth:`ExportTerms.bindings` but the run's own
    namespace, whose paths (``association/…``) would need a backslash before each ``/``. (pyoxigraph
    orders the header itself, the same way in every process: the golden test pins it.)"""
    return {p: base for p, base in sorted(terms.bindings().items()) if base != terms.namespace}


def _ox_statements(triples: Iterable[Triple], terms: ExportTerms, run: RunInfo, quads: bool,
                   written: list[int]) -> Iterator[ox.Triple | ox.Quad]:
    """The pyoxigraph statements of ``triples`` (quads in each run's named graph with ``quads``),
    each description once; ``written[0]`` counts them."""
    encode, seen = OxigraphEncoder(), set()
    for t in triples:
        run_key, statements = triple_statements(t, terms, run, seen)
        graph = terms.graph(run_key) if quads else None
        written[0] += len(statements)
        for st in statements:
            yield encode(st, graph)


def ntriples_lines(t: Triple, terms: ExportTerms, run: RunInfo, quads: bool, encode: NTriplesEncoder,
                   seen: set[str]) -> Iterator[str]:
    """The N-Triples (N-Quads with ``quads``) lines of one triple; ``seen`` as in
    :func:`triple_statements` (one set per shard)."""
    run_key, statements = triple_statements(t, terms, run, seen)
    graph = terms.graph(run_key) if quads else None
    return (encode(st, graph) for st in statements)


def write_ntriples(shards: Iterable[Iterable[Triple]], path: str | Path, terms: ExportTerms,
                   run: RunInfo, quads: bool = False) -> int:
    """Stream N-Triples (N-Quads with ``quads``: each run its own named graph) atomically, one shard
    of triples at a time; returns the number of lines written."""
    n = 0
    encode = NTriplesEncoder()
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for shard in shards:
            seen: set[str] = set()
            lines: list[str] = []
            for t in shard:
                lines.extend(ntriples_lines(t, terms, run, quads, encode, seen))
                if len(lines) >= 8192:
                    f.writelines(lines)
                    n += len(lines)
                    lines.clear()
            f.writelines(lines)
            n += len(lines)
    return n
