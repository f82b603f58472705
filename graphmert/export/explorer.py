"""The explorer's index: a run's merged triples arranged for browsing (``graphmert serve``).

:class:`ExplorerIndex` is built once from the triples of ``RUN/extract/triples.jsonl`` and answers
what the explorer page asks, without HTTP (the server is :mod:`pipelines.serve`):

* :meth:`~ExplorerIndex.search` — entities whose name, id or CURIE contains the query (case-
  insensitive): an exact CURIE / id first, then an exact name, then names or CURIEs that start with
  the query, then any other match; within each tier the best connected (degree) first;
* :meth:`~ExplorerIndex.edges` — an entity's triples in both directions, each with its relation,
  Biolink predicate, confidence, evidence count, supporting documents, the neighbour entity (the
  other end, so the page can link to it) and its evidence sentences with the head and tail spans as
  offsets within the sentence (:func:`~graphmert.extract.triples.sentence_spans`), filtered by relation and minimum confidence;
* :func:`write_view_tsv` — a view as a TSV table (:data:`VIEW_COLUMNS`), written with the same cell
  rules as the KGX export's TSV files (:func:`graphmert.export.kgx.tsv_row`).

Entities are keyed as :func:`graphmert.extract.triples.triple_key` keys them (the id, else
``name:<normalised name>``) and named by the export :class:`~graphmert.export.terms.ExportTerms`, so
the explorer shows the CURIEs and predicates the RDF and KGX files hold.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, TextIO

from graphmert.config import ExportConfig
from graphmert.errors import GraphmertError
from graphmert.export.kgx import tsv_row
from graphmert.export.rdf import documents
from graphmert.export.terms import ExportTerms, clean_text
from graphmert.extract.triples import Triple, is_stated, sentence_spans, triple_key

__all__ = ["Entity", "EvidenceView", "Edge", "ExplorerIndex", "ExplorerError", "VIEW_COLUMNS",
           "write_view_tsv", "view_rows"]

#: columns of a downloaded view (:func:`write_view_tsv`)
VIEW_COLUMNS = ("subject", "subject_name", "predicate", "relation", "object", "object_name",
                "confidence", "evidence_count", "publications")


class ExplorerError(GraphmertError, ValueError):
    """A request the index cannot answer as asked (an unknown relation, a confidence out of range);
    the message says what to change."""


@dataclass(frozen=True, kw_only=True)
class Entity:
    """One node: its :func:`triple_key` key, export CURIE and IRI, display name, Biolink category
    CURIE and degree (the number of triples it takes part in, either end)."""

    key: str
    curie: str
    iri: str
    name: str
    category: str
    degree: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "curie": self.curie, "iri": self.iri, "name": self.name,
                "category": self.category, "degree": self.degree}


@dataclass(frozen=True, kw_only=True)
class EvidenceView:
    """One evidence sentence with the head and tail as ``(start, end)`` character offsets within
    ``sentence`` (None when the span is absent, outside the sentence, or overlaps the head)."""

    doc_id: str
    publication: str
    sentence: str
    head: tuple[int, int] | None
    tail: tuple[int, int] | None
    confidence: float

    def segments(self) -> list[dict[str, Any]]:
        """The sentence cut at the spans: ``{"text", "mark"}`` pieces in order, ``mark`` being
        ``"head"``, ``"tail"`` or None. A client builds the highlighted sentence from them without
        computing offsets itself (JavaScript strings count UTF-16 units, not characters)."""
        spans = sorted((s[0], s[1], m) for m, s in (("head", self.head), ("tail", self.tail)) if s)
        out, pos = [], 0
        for a, b, mark in spans:
            if a > pos:
                out.append({"text": self.sentence[pos:a], "mark": None})
            out.append({"text": self.sentence[a:b], "mark": mark})
            pos = b
        if pos < len(self.sentence) or not out:
            out.append({"text": self.sentence[pos:], "mark": None})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "publication": self.publication, "sentence": self.sentence,
                "head": list(self.head) if self.head else None,
                "tail": list(self.tail) if self.tail else None,
                "confidence": self.confidence, "segments": self.segments()}


@dataclass(frozen=True, kw_only=True)
class Edge:
    """One triple as seen from ``focus`` (None: no focus, e.g. a whole-graph view). ``direction``
    is ``"out"`` when the focus is the subject (also for a self-loop), ``"in"`` when it is the
    object; ``neighbour`` is the other end. ``evidence`` holds at most the requested number of
    sentences, best confidence first; ``evidence_count`` counts them all."""

    subject: Entity
    object: Entity
    relation: str
    predicate: str
    confidence: float
    confidence_mean: float
    evidence_count: int
    documents: list[str]
    publications: list[str]
    stated: bool
    evidence: list[EvidenceView] = field(default_factory=list)
    focus: str | None = None

    @property
    def direction(self) -> str:
        return "in" if self.focus is not None and self.focus != self.subject.key else "out"

    @property
    def neighbour(self) -> Entity:
        return self.subject if self.direction == "in" else self.object

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject.to_dict(), "object": self.object.to_dict(),
                "relation": self.relation, "predicate": self.predicate,
                "confidence": self.confidence, "confidence_mean": self.confidence_mean,
                "evidence_count": self.evidence_count, "documents": self.documents,
                "publications": self.publications, "stated": self.stated,
                "direction": self.direction, "neighbour": self.neighbour.to_dict(),
                "evidence": [e.to_dict() for e in self.evidence]}


def _display(text: str) -> str:
    return " ".join(clean_text(text).split())


def _confidence(value: float) -> float:
    c = float(value)
    return c if math.isfinite(c) else 0.0


class ExplorerIndex:
    """Entities and triples of one run, indexed for search and neighbourhood views (module
    docstring). Build it with :meth:`from_triples`; it is read-only afterwards, so one index can
    serve concurrent requests."""

    def __init__(self, triples: list[Triple], entities: dict[str, Entity],
                 incident: dict[str, list[int]], terms: ExportTerms) -> None:
        self.triples = triples
        self.entities = entities
        self._incident = incident
        self._vocab = terms
        self._by_curie = {e.curie.lower(): e.key for e in entities.values()}
        self._relations = Counter(t.relation for t in triples)
        self._predicates = {r: terms.predicate_curie(r) for r in self._relations}

    @classmethod
    def from_triples(cls, triples: Iterable[Triple], cfg: ExportConfig | None = None) -> "ExplorerIndex":
        """Index merged triples (as :func:`graphmert.extract.triples.merge_triples` writes them).
        ``cfg``: the run's export config, so CURIEs and predicates match its export."""
        terms = ExportTerms(cfg or ExportConfig())
        kept: list[Triple] = list(triples)
        names: dict[str, tuple[str, str, str]] = {}
        incident: dict[str, list[int]] = {}
        for i, t in enumerate(kept):
            hk, _, tk = triple_key(t)
            names.setdefault(hk, (t.head_id, t.head_name, t.head_category))
            names.setdefault(tk, (t.tail_id, t.tail_name, t.tail_category))
            for k in dict.fromkeys((hk, tk)):           # a self-loop counts once
                incident.setdefault(k, []).append(i)
        entities = {}
        for key, (eid, name, cat) in names.items():
            iri, curie = terms.entity(eid, name)
            entities[key] = Entity(key=key, curie=curie, iri=iri, name=_display(name) or curie,
                                   category=terms.category_curie(cat), degree=len(incident[key]))
        return cls(kept, entities, incident, terms)

    # -- entities --------------------------------------------------------------------------------

    def entity(self, ref: str) -> Entity | None:
        """The entity whose CURIE (case-insensitive) or key is ``ref``, else None."""
        ref = ref.strip()
        key = ref if ref in self.entities else self._by_curie.get(ref.lower())
        return self.entities.get(key) if key is not None else None

    def search(self, query: str, limit: int = 20) -> list[Entity]:
        """Entities matching ``query`` (module docstring for the order); an empty query lists the
        best connected entities."""
        q = " ".join(query.lower().split())
        ranked = []
        for e in self.entities.values():
            name, curie, key = e.name.lower(), e.curie.lower(), e.key.lower()
            if not q:
                tier = 3
            elif q in (curie, key):
                tier = 0
            elif q == name:
                tier = 1
            elif name.startswith(q) or curie.startswith(q):
                tier = 2
            elif q in name or q in curie or q in key:
                tier = 3
            else:
                continue
            ranked.append((tier, -e.degree, name, e.curie, e))
        ranked.sort(key=lambda r: r[:4])
        return [r[4] for r in ranked[:max(0, limit)]]

    # -- relations and triples -----------------------------------------------------------------

    def relations(self) -> list[dict[str, Any]]:
        """Every relation with its Biolink predicate and triple count, most frequent first."""
        return [{"relation": r, "predicate": self._predicates[r], "triples": n}
                for r, n in sorted(self._relations.items(), key=lambda x: (-x[1], x[0]))]

    def check_filters(self, relations: Iterable[str] | None, min_confidence: float) -> set[str] | None:
        """Validated filters: the relation set (None = all) and a minimum confidence in [0, 1]."""
        if not (isinstance(min_confidence, (int, float)) and 0.0 <= min_confidence <= 1.0):
            raise ExplorerError(f"min_confidence: {min_confidence!r} is not a number from 0 to 1")
        if relations is None:
            return None
        wanted = {r for r in relations if r}
        unknown = sorted(wanted - set(self._relations))
        if unknown:
            raise ExplorerError(f"relation: {unknown[0]!r} is not a relation of this run; known: "
                                f"{sorted(self._relations)}")
        return wanted or None

    def edges(self, focus: str | None = None, relations: Iterable[str] | None = None,
              min_confidence: float = 0.0, max_evidence: int = 5) -> list[Edge]:
        """The triples of entity ``focus`` (a key or CURIE; None: all triples) whose relation is in
        ``relations`` (None: any) and confidence at least ``min_confidence``; best confidence first,
        then relation and neighbour name. Raises :class:`ExplorerError` for an unknown entity or
        relation or a confidence outside [0, 1]."""
        wanted = self.check_filters(relations, min_confidence)
        if focus is None:
            key, rows = None, range(len(self.triples))
        else:
            ent = self.entity(focus)
            if ent is None:
                raise ExplorerError(f"no entity {focus!r} in this run; search for it by name")
            key, rows = ent.key, self._incident[ent.key]
        out = []
        for i in rows:
            t = self.triples[i]
            if (wanted is None or t.relation in wanted) and _confidence(t.confidence) >= min_confidence:
                out.append(self._edge(t, key, max_evidence))
        out.sort(key=lambda e: (-e.confidence, e.relation, e.neighbour.name.lower(), e.neighbour.curie))
        return out

    def _edge(self, t: Triple, focus: str | None, max_evidence: int) -> Edge:
        hk, _, tk = triple_key(t)
        docs = documents(t)
        return Edge(subject=self.entities[hk], object=self.entities[tk], relation=t.relation,
                    predicate=self._predicates[t.relation], confidence=_confidence(t.confidence),
                    confidence_mean=_confidence(t.confidence_mean),
                    evidence_count=int(t.evidence_count), documents=docs,
                    publications=[self._vocab.document(d)[1] for d in docs],
                    stated=is_stated(t.tail_source), evidence=self._evidence(t, max_evidence),
                    focus=focus)

    def _evidence(self, t: Triple, limit: int) -> list[EvidenceView]:
        """Up to ``limit`` distinct evidence sentences, best confidence first (ties: document
        order); the same sentence and spans seen twice (overlapping chunks) is shown once."""
        out: list[EvidenceView] = []
        seen = set()
        for e in sorted(t.evidence, key=lambda e: -_confidence(e.confidence)):
            if len(out) >= limit:
                break
            head, tail = sentence_spans(e)
            sig = (e.doc_id, e.sentence_start, e.sentence, head, tail)
            if sig in seen:
                continue
            seen.add(sig)
            out.append(EvidenceView(doc_id=e.doc_id, publication=self._vocab.document(e.doc_id)[1],
                                    sentence=e.sentence, head=head, tail=tail,
                                    confidence=_confidence(e.confidence)))
        return out


def view_rows(edges: Iterable[Edge]) -> list[dict[str, Any]]:
    """The :data:`VIEW_COLUMNS` record of each edge (subject → object as stated, whatever the
    focus; publications as in the KGX export: ``PMID:…`` or document IRIs)."""
    return [{"subject": e.subject.curie, "subject_name": e.subject.name, "predicate": e.predicate,
             "relation": e.relation, "object": e.object.curie, "object_name": e.object.name,
             "confidence": e.confidence, "evidence_count": e.evidence_count,
             "publications": e.publications} for e in edges]


def write_view_tsv(edges: Iterable[Edge], out: TextIO) -> int:
    """Write a header and one row per edge (:func:`view_rows`) to ``out``: tab-separated, tabs and
    line breaks inside a cell become spaces, lists are joined with ``|``, as the KGX TSV files.
    Returns the number of rows."""
    out.write("\t".join(VIEW_COLUMNS) + "\n")
    rows = view_rows(edges)
    for r in rows:
        out.write(tsv_row(r, VIEW_COLUMNS))
    return len(rows)
