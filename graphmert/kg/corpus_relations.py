"""Seed triples from annotated corpora: the document-level relations of PubTator / BioC files.

``kg.relation_files`` (e.g. BioRED ``Train.PubTator``) adds, for every relation line
``(type, ID1, ID2)`` of a document, the triples ``(ID1, type, ID2)`` and ``(ID2, type, ID1)`` —
BioRED relations are unordered pairs, and either entity can be the head a leaf hangs on. The
relation name is the corpus's type (``Association``, ``Positive_Correlation``, …).

Nodes come from the mentions: an id's name is its most frequent surface form over all files (ties:
the alphabetically first), its category the Biolink category of its most frequent mention type
(:func:`~graphmert.kg.schema.mention_category`). The triples are merged into the seed KG by
:func:`merge_kgs`. Where an id is already a seed-KG node, the corpus surface form becomes its name
and the seed-KG name a synonym: these ids are exactly the ones whose tails the model will be asked
to find in text ("type 2 diabetes", not "Diabetes Mellitus, Type 2"), and extraction scores the
document's own surface forms. The seed-KG category is kept.

A relation whose id no mention of its document carries cannot be named; it is skipped and counted
(``relation_id_without_mention``), as are files without any relation (an error: such a file is
almost certainly the wrong input).

Annotated documents. Every document of a relation file is recorded with the relations it states and
the relation types its file annotates (:class:`~graphmert.kg.graph.AnnotatedDocument`): such a
corpus annotates each of its types exhaustively, so an entity pair of the document without a
relation of a type is a known negative for that type.

Held-out documents. ``held_out`` names documents (by id, e.g. PMID) whose relations must not become
seed triples: the documents extraction runs on and the gold it is scored against. A relation corpus
often shares abstracts with the evaluation set (several BC5CDR abstracts are BioRED dev documents),
and a user who extracts from a corpus must never be scored on seed triples taken from that same
corpus. Their relations are skipped and the documents counted (``relation_documents_held_out``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from typing import Collection, Sequence

from graphmert.corpus.readers import CorpusError, read_corpus
from graphmert.kg.graph import AnnotatedDocument, Edge, KGError, Node, SeedKG
from graphmert.kg.schema import mention_category

__all__ = ["read_relation_files", "merge_kgs"]


def read_relation_files(paths: Sequence[str], format: str = "auto", skip_bad_records: bool = False,
                        held_out: Collection[str] = ()) -> SeedKG:
    """Nodes and both-direction triples of the document-level relations in ``paths``, leaving out
    the relations of the ``held_out`` documents (module docstring). Each file is read on its own:
    relation corpora share abstracts (BC5CDR and BioRED), and such a document's relations are the
    union of its files'."""
    held_out = frozenset(held_out)
    names: dict[str, Counter] = defaultdict(Counter)
    types: dict[str, Counter] = defaultdict(Counter)
    edges: list[Edge] = []
    skipped: Counter = Counter()
    annotated: dict[str, tuple[set, set]] = {}
    for path in paths:
        kept = _read_file(path, format, skip_bad_records, held_out, names, types, edges, skipped, annotated)
        if not kept:
            raise KGError(f"{path}: kg.relation_files input has no usable document-level relation "
                          f"(relation lines 'PMID<TAB>Type<TAB>ID1<TAB>ID2' in PubTator, or BioC "
                          f"relations); skipped so far: {dict(skipped)}")
    used = {x for e in edges for x in (e.subject, e.object)}
    nodes = []
    for i in sorted(used):
        top = max(names[i].items(), key=lambda kv: (kv[1], _neg(kv[0])))[0]
        cat = mention_category(max(types[i].items(), key=lambda kv: (kv[1], _neg(kv[0])))[0])
        nodes.append(Node(i, top, cat, tuple(sorted(n for n in names[i] if n != top))))
    docs = {d: AnnotatedDocument(frozenset(t), frozenset(r)) for d, (t, r) in sorted(annotated.items())}
    return SeedKG(nodes, edges, sources=[str(p) for p in paths], skipped=dict(skipped), annotated=docs)


def _read_file(path: str, format: str, skip_bad_records: bool, held_out: frozenset[str],
               names: dict, types: dict, edges: list[Edge], skipped: Counter,
               annotated: dict[str, tuple[set, set]]) -> int:
    """Add one relation file's names, mention types, triples and annotated documents; return how
    many documents it has with a relation (held-out ones included: the file is the right input)."""
    kept = 0
    file_types: set[str] = set()
    docs: list[str] = []
    try:
        for doc in read_corpus([path], format=format, skip_bad_records=skip_bad_records):
            kept += bool(doc.relations)
            if doc.id in held_out:
                skipped["relation_documents_held_out"] += 1
                continue
            in_doc: set[str] = set()
            for m in doc.mentions:
                for i in m.ids:
                    names[i][m.text] += 1
                    types[i][m.type] += 1
                    in_doc.add(i)
            triples = annotated.setdefault(doc.id, (set(), set()))[1]
            docs.append(doc.id)
            for r in doc.relations:
                file_types.add(r.type)
                if r.head not in in_doc or r.tail not in in_doc:
                    skipped["relation_id_without_mention"] += 1
                    continue
                if r.head == r.tail:
                    skipped["relation_self_pair"] += 1
                    continue
                prov = {"primary_knowledge_source": doc.source, "publications": doc.id}
                edges.append(Edge(r.head, r.type, r.tail, prov))
                edges.append(Edge(r.tail, r.type, r.head, prov))
                triples.update({(r.head, r.type, r.tail), (r.tail, r.type, r.head)})
    except CorpusError as e:
        raise KGError(f"kg.relation_files: {e}") from None
    for d in docs:                        # the file annotates every one of its relation types
        annotated[d][0].update(file_types)
    return kept


def _neg(s: str) -> tuple:
    """Sort key under which the alphabetically first string is the largest (for ``max`` tie-breaks)."""
    return tuple(-ord(c) for c in s)


def merge_kgs(base: SeedKG, extra: SeedKG) -> SeedKG:
    """``base`` plus ``extra``'s triples (base rows first) and nodes; a node in both takes
    ``extra``'s name, ``base``'s category, and both sets of names as synonyms."""
    skipped = dict(Counter(base.skipped) + Counter(extra.skipped))
    nodes = dict(base.nodes)
    for nid, n in extra.nodes.items():
        old = nodes.get(nid)
        if old is None:
            nodes[nid] = n
        else:
            syn = tuple(x for x in dict.fromkeys((old.name, *old.synonyms, *n.synonyms)) if x != n.name)
            nodes[nid] = Node(nid, n.name, old.category or n.category, syn)
    return SeedKG(nodes.values(), base.edges + extra.edges, sources=base.sources + extra.sources,
                  skipped=skipped, annotated={**base.annotated, **extra.annotated})


def rename_relations(kg: SeedKG, mapping: dict[str, str]) -> SeedKG:
    """``kg`` with each relation of ``mapping`` renamed to its value (``kg.relation_map``), in its
    triples and in its annotated documents' triples and exhaustively annotated types, so that a
    corpus's known negatives follow its relations; triples that become equal are kept once. A
    relation of ``mapping`` that ``kg`` does not have (a typo) is a :class:`KGError`."""
    if not mapping:
        return kg
    known = set(kg.relations).union(*(a.types for a in kg.annotated.values()))
    unknown = sorted(set(mapping) - known)
    if unknown:
        raise KGError(f"kg.relation_map: {unknown} name no relation of the seed KG "
                      f"(its relations: {sorted(known)})")
    edges = [replace(e, predicate=mapping.get(e.predicate, e.predicate)) for e in kg.edges]
    annotated = {doc: AnnotatedDocument(types=frozenset(mapping.get(t, t) for t in a.types),
                                        triples=frozenset((s, mapping.get(p, p), o) for s, p, o in a.triples))
                 for doc, a in kg.annotated.items()}
    return SeedKG(kg.nodes.values(), edges, sources=kg.sources, skipped=kg.skipped, annotated=annotated)
