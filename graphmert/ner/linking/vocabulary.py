"""The linker's vocabulary: the tables a look-up consults, learnt from gold-annotated documents (the
dictionary's votes) and the seed KG (names → primary ids, through the cross-reference tables), with
the counts of the KG's disease and chemical names in the training documents; and the same tables
read back from a saved linker (:mod:`graphmert.ner.linking`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Sequence

from graphmert.config import NAME_CATEGORIES
from graphmert.corpus.document import Document
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import mention_category
from graphmert.ner.linking.common import (
    _TAXON, KG_CATEGORY_ALIASES, NAMESPACES, SPECIES_CATEGORIES, Votes, _winner,
)
from graphmert.ner.linking.species import _dominant_species
from graphmert.ner.vocabularies.surface import (
    _singular_keys, _uninverted, normalize_surface, run_key, surface_key, word_runs,
)
from graphmert.ner.vocabularies.terms import TermKeys, terms_from_json


@dataclass
class _Tables:
    """Everything a linker looks up, as :meth:`~graphmert.ner.linking.linker.EntityLinker.save` writes it
    (:func:`_tables_from_json` reads it back)."""

    dictionary: Votes                                   # category → key → Counter(ids tuple)
    dictionary_plural: Votes
    species: dict[str, Votes]                            # taxon id → votes of SPECIES_CATEGORIES
    kg: dict[str, dict[str, str]]                        # category → key → primary id
    kg_others: dict[str, dict[str, list[str]]]           # category → key → the other ids, in order
    kg_plural: dict[str, dict[str, str]]
    xrefs: dict[str, list[str]]                          # primary id → other ids
    names: dict[str, list[str]]                          # category → sorted normalised names
    info: dict[str, Any] = field(default_factory=dict)   # build counts (stats)
    # NAME_CATEGORIES → KG name key → [annotated, occurs] in the training documents (_name_counts)
    name_counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # category → key → ids, best first, of the reference term tables (terms.py; categories of one
    # source share one dict)
    terms: dict[str, TermKeys] = field(default_factory=dict)
    # the reference gene vocabulary (GeneVocabulary.to_json), {} without one
    reference_genes: dict[str, dict[str, str]] = field(default_factory=dict)


def _namespaced(ids: Sequence[str], namespace: str) -> tuple[str, ...] | None:
    """Ids in the namespace first (their order kept), then the others; None without one inside."""
    inside = [i for i in ids if i.startswith(namespace)]
    if not inside:
        return None
    return tuple(dict.fromkeys(inside + [i for i in ids if not i.startswith(namespace)]))


@dataclass
class _Learnt:
    """What the dictionary learns from gold documents."""

    votes: Votes = field(default_factory=dict)           # exact keys
    plural: Votes = field(default_factory=dict)          # singulars of plural forms
    species: dict[str, Votes] = field(default_factory=dict)  # taxon id → votes (species categories)
    names: dict[str, set[str]] = field(default_factory=dict)
    seen: Counter = field(default_factory=Counter)

    def add(self, text: str, category: str, ids: tuple[str, ...], species: str | None) -> None:
        key = surface_key(text)
        if not key:
            return
        self.seen["mentions"] += 1
        self.votes.setdefault(category, {}).setdefault(key, Counter())[ids] += 1
        self.names.setdefault(category, set()).add(normalize_surface(text))
        for sk in _singular_keys(text, key):
            self.plural.setdefault(category, {}).setdefault(sk, Counter())[ids] += 1
        if species is not None and category in SPECIES_CATEGORIES:
            table = self.species.setdefault(species, {}).setdefault(category, {})
            table.setdefault(key, Counter())[ids] += 1


def _learn_dictionary(documents: Iterable[Document], exclude: Collection[str]) -> _Learnt:
    """Votes of the gold mentions of ``documents`` (except those in ``exclude``); a document's
    species is the dominant taxon id of its own species mentions."""
    out = _Learnt()
    for doc in documents:
        if doc.id in exclude:
            out.seen["documents_excluded"] += 1
            continue
        out.seen["documents"] += 1
        species = _dominant_species(m.ids[0] for m in doc.mentions
                                    if m.ids and mention_category(m.type) == _TAXON)
        for m in doc.mentions:
            cat = mention_category(m.type)
            ids = _namespaced(m.ids, NAMESPACES[cat]) if cat in NAMESPACES else None
            if ids is not None:
                out.add(m.text, cat, ids, species)
    for cat, table in out.plural.items():
        for sk in [k for k in table if k in out.votes.get(cat, {})]:
            del table[sk]
    return out


def _name_counts(documents: Iterable[Document], exclude: Collection[str],
                 kg: dict[str, dict[str, str]]) -> dict[str, dict[str, list[int]]]:
    """For :data:`NAME_CATEGORIES`: category → KG name key → [annotated, occurs], its word runs
    (:func:`word_runs`) in the training documents that annotate the category (except ``exclude``)
    and, of those, the runs a gold mention of the category spans exactly."""
    out: dict[str, dict[str, list[int]]] = {c: {} for c in NAME_CATEGORIES}
    for doc in documents:
        if doc.id in exclude:
            continue
        spans = {(m.start, m.end): mention_category(m.type) for m in doc.mentions}
        cats = [c for c in NAME_CATEGORIES if c in set(spans.values())]
        for s, e in word_runs(doc.text) if cats else ():
            key = run_key(doc.text[s:e])
            for c in cats:
                if key in kg.get(c, {}):
                    counts = out[c].setdefault(key, [0, 0])
                    counts[0] += spans.get((s, e)) == c
                    counts[1] += 1
    return out


def kg_category(node) -> str:
    """The linker's category of a seed-KG node (its own, or the one :data:`KG_CATEGORY_ALIASES` files
    it under: a phenotype is a disease)."""
    return KG_CATEGORY_ALIASES.get(node.category, node.category)


def _node_primary(node_id: str, namespace: str, xrefs: dict[str, list[str]]) -> str | None:
    if node_id.startswith(namespace):
        return node_id
    return next((t for t in xrefs.get(node_id, ()) if t.startswith(namespace)), None)


def vocabulary_xrefs(kg: SeedKG, xrefs: dict[str, list[str]], terms: dict[str, TermKeys]
                     ) -> dict[str, list[str]]:
    """Node id → [the one id a reference term table gives its name], for every seed-KG node of a
    category with a term table (``ner.vocabularies``, kind ``terms``) that neither its own id nor an
    xref table maps into the category's namespace, and whose :func:`surface_key` names exactly one
    id of that table (a preferred name, an entry term or their variants). Hetionet's compounds were
    mapped to MeSH by name against MeSH 2015's descriptor names (``drugbank_to_mesh.tsv``); MeSH
    2024's names and entry terms map 290 more ("Imatinib" → Imatinib Mesylate), and 145 DisGeNET
    disease concepts, whose names would otherwise be no KG name for linking or
    ``extract.name_mentions``. A name two ids share maps nowhere: the table cannot say which."""
    out: dict[str, list[str]] = {}
    for node in sorted(kg.nodes.values(), key=lambda n: n.id):
        cat = kg_category(node)
        if cat not in terms or cat not in NAMESPACES or _node_primary(node.id, NAMESPACES[cat], xrefs):
            continue
        ids = [i for i in terms[cat].get(surface_key(node.name), ()) if i.startswith(NAMESPACES[cat])]
        if len(ids) == 1:
            out[node.id] = ids
    return out


def _kg_tables(kg: SeedKG, xrefs: dict[str, list[str]], more_names: dict[str, list[str]]
               ) -> tuple[dict, dict, dict, dict[str, set[str]], dict[str, int]]:
    """KG names → primary id (exact and plural-variant tables), the other ids of exact keys that
    several nodes name, names, unmapped-node counts.

    ``more_names`` (node id → names, :func:`read_name_tables`) are synonyms of the nodes they name.
    A key named by several nodes goes to the best rank (name 0, synonym 1, uninverted name 2,
    plural variant 3), then the smallest id; the others follow it in that order, for a gene look-up
    whose winner is of another species than the document's (a seed KG built with corpus relations
    names the rat Il7 "IL-7", as Hetionet names the human IL7)."""
    ranked: dict[str, dict[str, dict[str, int]]] = {}
    plural: dict[str, dict[str, dict[str, int]]] = {}
    names: dict[str, set[str]] = {}
    unmapped = Counter()

    def add(table: dict, cat: str, key: str, primary: str, rank: int) -> None:
        slot = table.setdefault(cat, {}).setdefault(key, {})
        slot[primary] = min(rank, slot.get(primary, rank))

    for node in sorted(kg.nodes.values(), key=lambda n: n.id):
        cat = kg_category(node)
        if cat not in NAMESPACES:
            continue
        primary = _node_primary(node.id, NAMESPACES[cat], xrefs)
        if primary is None:
            unmapped[cat] += 1
            continue
        synonyms = (*node.synonyms, *more_names.get(node.id, ()))
        for form, rank in [(node.name, 0), *((s, 1) for s in synonyms)]:
            forms = [(form, rank)] + [(u, 2) for u in [_uninverted(form)] if u]
            for text, r in forms:
                key = surface_key(text)
                if not key:
                    continue
                add(ranked, cat, key, primary, r)
                names.setdefault(cat, set()).add(normalize_surface(text))
                for sk in _singular_keys(text, key):
                    add(plural, cat, sk, primary, 3)

    def winners(table: dict) -> dict[str, dict[str, str]]:
        return {cat: {k: min(c.items(), key=lambda kv: (kv[1], kv[0]))[0] for k, c in keys.items()}
                for cat, keys in table.items()}

    exact = winners(ranked)
    variants = {cat: {k: v for k, v in t.items() if k not in exact.get(cat, {})}
                for cat, t in winners(plural).items()}
    others = {cat: {k: [i for i, _ in sorted(c.items(), key=lambda kv: (kv[1], kv[0]))[1:]]
                    for k, c in keys.items() if len(c) > 1} for cat, keys in ranked.items()}
    return exact, variants, {c: t for c, t in others.items() if t}, names, dict(unmapped)


def _vote_winners(votes: Votes) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per key, the most frequent ids (ties: the smallest ids tuple)."""
    return {cat: {k: _winner(c) for k, c in keys.items()} for cat, keys in votes.items()}


def _reverse_xrefs(xrefs: dict[str, list[str]], kg: SeedKG | None) -> dict[str, list[str]]:
    """Mapped id → the source ids mapped to it (the xrefs a result lists after its primary id).

    With a KG, only source ids that are KG nodes are kept, and only when the mapped id is not a node
    of another category (DisGeNET maps a few disease CUIs named like a chemical, e.g. "INSULIN", to
    the chemical's descriptor; mapped CUIs are no KG nodes)."""
    def category(i: str) -> str | None:
        node = kg.nodes.get(i) if kg is not None else None
        return None if node is None else kg_category(node)

    out: dict[str, list[str]] = {}
    for src, targets in xrefs.items():
        if kg is not None and src not in kg.nodes:
            continue
        for t in targets:
            if category(t) in (None, category(src)):
                out.setdefault(t, []).append(src)
    return {t: sorted(s) for t, s in sorted(out.items())}


def _tables_from_json(data: dict) -> _Tables:
    """The tables of a saved linker's JSON (:meth:`~graphmert.ner.linking.linker.EntityLinker.save`);
    a missing key or a value of the wrong shape raises KeyError, TypeError or ValueError, which
    :meth:`~graphmert.ner.linking.linker.EntityLinker.load` reports as a corrupt file."""
    def votes(v: dict) -> Votes:
        return {c: {k: Counter({tuple(ids): int(n) for ids, n in rows}) for k, rows in keys.items()}
                for c, keys in v.items()}

    def str_map(v: dict) -> dict[str, dict[str, str]]:
        return {c: {str(k): str(i) for k, i in keys.items()} for c, keys in v.items()}

    return _Tables(votes(data["dictionary"]), votes(data["dictionary_plural"]),
                   {sp: votes(v) for sp, v in data["species"].items()}, str_map(data["kg"]),
                   {c: {str(k): [str(i) for i in ids] for k, ids in keys.items()}
                    for c, keys in data["kg_others"].items()},
                   str_map(data["kg_plural"]), {k: [str(x) for x in v] for k, v in data["xrefs"].items()},
                   {c: [str(n) for n in names] for c, names in data["names"].items()}, dict(data["info"]),
                   {c: {str(k): [int(a), int(o)] for k, (a, o) in keys.items()}
                    for c, keys in data["name_counts"].items()},
                   terms_from_json(data["terms"]),
                   {part: dict(table) for part, table in data["reference_genes"].items()})
