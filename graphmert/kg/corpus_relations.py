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
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

from graphmert.corpus.readers import CorpusError, read_corpus
from graphmert.kg.graph import Edge, KGError, Node, SeedKG
from graphmert.kg.schema import mention_category

__all__ = ["read_relation_files", "merge_kgs"]


def read_relation_files(paths: Sequence[str], format: str = "auto", skip_bad_records: bool = False) -> SeedKG:
    """Nodes and both-direction triples of the document-level relations in ``paths``."""
    names: dict[str, Counter] = defaultdict(Counter)
    types: dict[str, Counter] = defaultdict(Counter)
    edges: list[Edge] = []
    skipped: Counter = Counter()
    per_file: Counter = Counter()
    try:
        reader = read_corpus(list(paths), format=format, skip_bad_records=skip_bad_records)
        for doc in reader:
            in_doc: set[str] = set()
            for m in doc.mentions:
                for i in m.ids:
                    names[i][m.text] += 1
                    types[i][m.type] += 1
                    in_doc.add(i)
            for r in doc.relations:
                if r.head not in in_doc or r.tail not in in_doc:
                    skipped["relation_id_without_mention"] += 1
                    continue
                if r.head == r.tail:
                    skipped["relation_self_pair"] += 1
                    continue
                prov = {"primary_knowledge_source": doc.source, "publications": doc.id}
                edges.append(Edge(r.head, r.type, r.tail, prov))
                edges.append(Edge(r.tail, r.type, r.head, prov))
                per_file[doc.source] += 1
    except CorpusError as e:
        raise KGError(f"kg.relation_files: {e}") from None
    for p in paths:
        if not any(str(p) == s or s.endswith(str(p)) for s in per_file):
            raise KGError(f"{p}: kg.relation_files input has no usable document-level relation "
                          f"(relation lines 'PMID<TAB>Type<TAB>ID1<TAB>ID2' in PubTator, or BioC "
                          f"relations); skipped so far: {dict(skipped)}")
    used = {x for e in edges for x in (e.subject, e.object)}
    nodes = []
    for i in sorted(used):
        top = max(names[i].items(), key=lambda kv: (kv[1], _neg(kv[0])))[0]
        cat = mention_category(max(types[i].items(), key=lambda kv: (kv[1], _neg(kv[0])))[0])
        nodes.append(Node(i, top, cat, tuple(sorted(n for n in names[i] if n != top))))
    return SeedKG(nodes, edges, sources=[str(p) for p in paths], skipped=dict(skipped))


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
                  skipped=skipped)
