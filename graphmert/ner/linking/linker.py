"""The entity linker: look-ups of a mention text in the vocabulary tables, the fuzzy fallback, gene
species and orthologs, documents (species, abbreviations), and one gzipped JSON file
(:mod:`graphmert.ner.linking`)."""

from __future__ import annotations

import copy
import gzip
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Collection, Iterable, Iterator, Sequence

from graphmert.config import NAME_CATEGORIES, ExtractConfig, NERConfig
from graphmert.corpus.document import Abbreviation, Document
from graphmert.io import atomic_path, check_format
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import mention_category
from graphmert.ner.abbreviations import (
    abbreviation_pairs, initials_of, is_short_form, short_form_variants, spelled_by,
)
from graphmert.ner.linking.common import (
    _DISEASE, _GENE, _TAXON, NAMESPACES, SPECIES_CATEGORIES, UNLINKED, LinkerError, LinkResult, Votes,
)
from graphmert.ner.vocabularies.gene_forms import gene_variants
from graphmert.ner.vocabularies.genes import GeneVocabulary, build_gene_vocabulary, folded_key
from graphmert.ner.linking.fuzzy import _FUZZY_CACHE_SIZE, _FUZZY_MIN_CHARS, _FuzzyIndex
from graphmert.ner.linking.species import (
    MOUSE, RAT, _KG_SOURCE, _dominant_species, _gene_orthologs, abbreviation_marks, mention_species,
    sentence_spans, host_marks, species_marks, symbol_case_species,
)
from graphmert.ner.vocabularies.surface import (_singular_keys, american_spelling, coordinated_forms,
                                                names_several, normalize_surface, surface_key,
                                                with_generic_head, without_modifiers)
from graphmert.ner.vocabularies.tables import read_name_tables, read_xref_tables
from graphmert.ner.vocabularies.terms import term_steps, term_tables, terms_to_json
from graphmert.ner.linking.vocabulary import (
    _kg_tables, _learn_dictionary, _name_counts, _reverse_xrefs, _Tables, _tables_from_json, _vote_winners,
    kg_category, vocabulary_xrefs,
)

# the categories whose composite mentions are cut into their names (EntityLinker._composite_links)
_COMPOSITE_CATEGORIES = frozenset({_DISEASE, "biolink:ChemicalEntity"})

FORMAT = "graphmert.entity_linker"
# 2: kg_others; 3: name_counts; 4: terms; 5: reference_genes; 6: the KG gene names' counts too
FORMAT_VERSION = 6

# ner.fuzzy_threshold's default, chosen by experiments/linking.py on the held-out 20% of BioRED-train
# documents (document-level normalisation F1, gold spans); BioRED dev was not used.
DEFAULT_FUZZY_THRESHOLD = NERConfig.fuzzy_threshold

# extract.default_gene_species's default: a gene mention's species where nothing names one
DEFAULT_GENE_SPECIES = ExtractConfig.default_gene_species


def _term_steps_by_setting(steps: tuple, tables: _Tables) -> dict[bool, tuple]:
    """:attr:`EntityLinker.known_terms_only` → ``steps`` and then the term tables' two steps
    (:func:`term_steps`), less each category's :func:`_foreign_term_ids` under that setting: a
    reference term answers only what the dictionary and the KG names, plural variants included, do
    not know. On held-out BioRED train, any place after the dictionary measured the same; before it,
    disease accuracy 0.792 → 0.769, chemical 0.848 → 0.840 (the annotators' own choices among MeSH's
    near-synonyms are lost); a fuzzy index over the terms' names lowered document F1
    (experiments/linking.py)."""
    if not tables.terms:
        return {False: steps, True: steps}
    known = _known_term_ids(tables)
    return {only: (*steps, *term_steps(tables.terms, _foreign_term_ids(tables, known, only)))
            for only in (False, True)}


def _known_term_ids(tables: _Tables) -> dict[str, set[str]]:
    """Category of a term table → the ids the seed KG's names or the training documents give it."""
    known: dict[str, set[str]] = {c: set() for c in tables.terms}
    for cat, keys in tables.kg.items():
        if cat in known:
            known[cat].update(keys.values())
            known[cat].update(i for ids in tables.kg_others.get(cat, {}).values() for i in ids)
    for cat, keys in tables.dictionary.items():
        if cat in known:
            known[cat].update(i for votes in keys.values() for ids in votes for i in ids)
    return known


def _foreign_term_ids(tables: _Tables, known: dict[str, set[str]], known_only: bool = False
                      ) -> dict[str, frozenset[str]]:
    """Category of a term table → the ids its look-ups never answer: those that the seed KG's names
    or the training documents give another term category and never this one (``known``:
    :func:`_known_term_ids`). MeSH's file has no tree numbers, so each descriptor serves diseases
    and chemicals alike; one known only as a chemical ("DDD", dichlorodiphenyldichloroethane;
    "desmin") then never answers a disease mention. A descriptor neither knows (anatomy, processes,
    descriptors newer than the KG) still answers both, unless ``known_only``
    (:attr:`EntityLinker.known_terms_only`): then every id not known in the category is left out
    (docs/experiments/gene-linking.md, "Plural keys and descriptors of another category")."""
    if known_only:
        every = {i for t in tables.terms.values() for ids in t.values() for i in ids}
        return {cat: frozenset(every - own) for cat, own in known.items()}
    return {cat: frozenset(set().union(*(ids for c, ids in known.items() if c != cat)) - own)
            for cat, own in known.items()}


def _as_named(ids: tuple[str, ...], text: str) -> tuple[str, ...]:
    """A look-up's ids for a mention of ``text``: all of them when the text names several
    (:func:`~graphmert.ner.vocabularies.surface.names_several`), else the first: a training document's
    several ids for a family name ("caspase") are its own reading, not this mention's (raw
    BioRED-train slice: none of the 8 further ids of 7 such answers was a gold id of its document;
    docs/experiments/gene-linking.md)."""
    return ids if len(ids) < 2 or names_several(text) else ids[:1]


class EntityLinker:
    """Links mention texts of a category to normalised ids (see :mod:`graphmert.ner.linking`).

    Build it with :meth:`build`, or :meth:`load` a saved one. ``fuzzy_threshold`` may be changed on
    an instance (a value above 1 turns the fuzzy step off).
    """

    def __init__(self, tables: _Tables, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD) -> None:
        self._tables = tables
        self.fuzzy_threshold = float(fuzzy_threshold)
        self._dictionary = dictionary = _vote_winners(tables.dictionary)
        dictionary_plural = _vote_winners(tables.dictionary_plural)
        self._species = {sp: _vote_winners(v) for sp, v in tables.species.items()}
        kg = {c: {k: (v,) for k, v in t.items()} for c, t in tables.kg.items()}
        kg_plural = {c: {k: (v,) for k, v in t.items()} for c, t in tables.kg_plural.items()}
        # (table, how, look up the plural-stripped keys of the query instead of the key itself,
        #  the other ids of a key after its winner)
        others = tables.kg_others
        steps = ((dictionary, "dictionary", False, {}), (kg, "kg", False, others),
                 (dictionary_plural, "dictionary", False, {}), (dictionary, "dictionary", True, {}),
                 (kg_plural, "kg", False, {}), (kg, "kg", True, others))
        self._steps_by_terms = _term_steps_by_setting(steps, tables)
        self._fuzzy = {c: _FuzzyIndex(n) for c, n in tables.names.items()}
        self._fuzzy_cache: dict[tuple[str, str], tuple[int, float]] = {}
        self._gene_taxa, self._orthologs = _gene_orthologs(tables.species, tables.kg)
        self._kg_genes = frozenset([*tables.kg.get(_GENE, {}).values(),
                                    *(i for ids in others.get(_GENE, {}).values() for i in ids)])
        self._genes = GeneVocabulary.from_json(tables.reference_genes) if tables.reference_genes else None
        #: the taxon of the seed KG's genes, or None: genes of other species' documents skip the KG
        self.kg_species: str | None = None
        #: whether a dictionary gene of another species than the document's, with no ortholog of its
        #: species, is passed over like a KG gene (True) or kept (False: the training documents say so)
        self.strict_species: bool = False
        #: the species of a gene mention in a document whose species is not known (reference look-ups)
        self.default_species: str = DEFAULT_GENE_SPECIES
        #: where the reference look-up comes among the exact steps (an index into them)
        self.reference_at: int = 0
        #: a gene mention's species is the species named nearest to it in its sentence, if any
        self.sentence_species: bool = True
        #: an unlinked mention spelling the initials of a linked one of its category takes its link
        self.initials: bool = True
        #: a text no exact step knows is looked up again in American spelling ("hypoglycaemia")
        self.american: bool = True
        #: a reference term answers only with an id the seed KG or the training documents give the
        #: mention's category (:func:`_foreign_term_ids`), not any descriptor of MeSH's (raw text)
        self.known_terms_only: bool = False
        #: a short form whose long form names a species ("human … ECs (hRMVECs)") names it wherever it
        #: occurs (:func:`~graphmert.ner.linking.species.abbreviation_marks`)
        self.abbreviation_species: bool = True

    @classmethod
    def build(cls, documents: Iterable[Document], kg: SeedKG | None,
              xref_tables: Sequence[str | Path] = (), *,
              name_tables: Sequence[str | Path] = (),
              fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
              exclude: Collection[str] = (), vocabularies: Sequence = ()) -> "EntityLinker":
        """Learn the dictionary from gold-annotated ``documents`` (those whose id is in ``exclude``
        are skipped), index the names of ``kg`` (optional) and those ``name_tables`` give its
        nodes (:func:`read_name_tables`), map non-namespace KG ids through ``xref_tables``
        (:func:`read_xref_tables`), count how often the documents annotate the KG's disease
        and chemical names where they occur (:meth:`kg_name`), and read ``vocabularies``
        (:class:`~graphmert.config.ner.VocabularySource`): the ``terms`` sources into term tables
        (:func:`~graphmert.ner.vocabularies.terms.read_terms`), the gene kinds into the reference gene
        names and orthologs (:mod:`~graphmert.ner.vocabularies.genes`)."""
        xrefs = read_xref_tables(xref_tables)
        more_names = read_name_tables(name_tables)
        terms = term_tables(vocabularies, list(NAMESPACES))
        by_terms = {} if kg is None else vocabulary_xrefs(kg, xrefs, terms)
        xrefs = {**xrefs, **by_terms}
        documents, exclude = list(documents), frozenset(exclude)
        learnt = _learn_dictionary(documents, exclude)
        kg_exact, kg_plural, kg_others, kg_names, unmapped = (({}, {}, {}, {}, {}) if kg is None
                                                              else _kg_tables(kg, xrefs, more_names))
        names = learnt.names
        for cat, n in kg_names.items():
            names.setdefault(cat, set()).update(n)
        named = 0 if kg is None else sum(1 for i in more_names if i in kg.nodes)
        info = {**learnt.seen, "kg_nodes_unmapped": unmapped,
                "kg_nodes_mapped_by_terms": dict(Counter(kg_category(kg.nodes[i]) for i in by_terms)),
                "xref_tables": [str(p) for p in xref_tables],
                "name_tables": [str(p) for p in name_tables],
                "name_table_ids": {"kg_nodes": named, "not_in_kg": len(more_names) - named},
                "term_vocabularies": [str(v.path) for v in vocabularies if v.kind == "terms"]}
        tables = _Tables(learnt.votes, learnt.plural, learnt.species, kg_exact, kg_others, kg_plural,
                         _reverse_xrefs(xrefs, kg), {c: sorted(n - {""}) for c, n in sorted(names.items())},
                         info, _name_counts(documents, exclude, kg_exact), terms)
        genes = build_gene_vocabulary(vocabularies)
        if genes is not None:
            tables.reference_genes = genes.to_json()
            info.update(genes.stats(), gene_vocabularies=[f"{v.kind}:{v.path}" for v in vocabularies
                                                          if v.kind != "terms"])
        return cls(tables, fuzzy_threshold)

    # ------------------------------------------------------------------ look-ups
    def _matches(self, category: str, key: str, text: str, species: str | None
                 ) -> Iterator[tuple[tuple[str, ...], str]]:
        """(ids, how) of every look-up step that knows ``key`` (or its singulars), in step order; a
        KG key that several nodes name yields its winner, then each other id. For genes, the
        reference vocabulary's answer for the mention's species comes after the training documents
        of that species (:meth:`_reference`)."""
        singulars = _singular_keys(text, key)
        steps = self._steps_by_terms[self.known_terms_only]
        if category in SPECIES_CATEGORIES and self._genes is not None:
            steps = (*steps[:self.reference_at], None, *steps[self.reference_at:])
        if species in self._species and category in SPECIES_CATEGORIES:
            own = self._species[species]
            steps = ((own, "dictionary", False, {}), (own, "dictionary", True, {}), *steps)
        for step in steps:
            if step is None:
                hit = self._reference((key, *singulars), species)
                if hit is not None:
                    yield hit
                continue
            table, how, strip_plural, others = step
            keys, more = table.get(category, {}), others.get(category, {})
            for k in (singulars if strip_plural else (key,)):
                if k in keys:
                    yield keys[k], how
                    yield from (((i,), how) for i in more.get(k, ()))

    def _reference(self, keys: Sequence[str], species: str | None, folded: bool = False
                   ) -> tuple[tuple[str, ...], str] | None:
        """The reference gene vocabulary's gene for the first of ``keys`` it knows, as a gene of
        ``species`` (or of :attr:`default_species`): (ids, "reference"), or None."""
        for k in keys:
            hit = self._genes.lookup(k, species or self.default_species, folded=folded)
            if hit is not None:
                return (hit[0],), "reference"
        return None

    def _exact(self, category: str, key: str, text: str, species: str | None = None
               ) -> tuple[tuple[str, ...], str] | None:
        """The first of :meth:`_matches` that names a gene of ``species`` (:meth:`_in_species`;
        other categories: the first), or None."""
        for ids, how in self._matches(category, key, text, species):
            if category in SPECIES_CATEGORIES and species:
                ids = self._in_species(ids, species, keep=how != "kg" and not self.strict_species)
            if ids:
                return ids, how
        return None

    @property
    def has_reference_genes(self) -> bool:
        """Whether the linker was built with reference gene vocabularies (``ner.vocabularies``)."""
        return self._genes is not None

    def gene_taxon(self, gene: str) -> str | None:
        """A gene id's taxon: the reference vocabulary's, else the species of the training documents
        that annotate it, else, for a seed-KG gene, :attr:`kg_species`; None when none is known."""
        known = self._genes.taxon(gene) if self._genes is not None else None
        return known or self._gene_taxa.get(gene) or (self.kg_species if gene in self._kg_genes else None)

    def _gene_variant(self, text: str, species: str | None) -> tuple[str, ...]:
        """The genes of the first variant of a gene mention's text that a look-up knows: its
        :func:`~graphmert.ner.vocabularies.genes.folded_key` in the reference vocabulary, then each of
        :func:`~graphmert.ner.vocabularies.gene_forms.gene_variants` (every exact step, then the folded
        reference key; a range gives each member's gene); () when none is known."""
        folded = self._reference((folded_key(normalize_surface(text)),), species, folded=True)
        if folded is not None:
            return folded[0]
        for forms in gene_variants(text):
            ids: list[str] = []
            for form in forms:
                key = surface_key(form)
                hit = (self._exact(_GENE, key, form, species) if key else None) or \
                    self._reference((folded_key(normalize_surface(form)),), species, folded=True)
                if hit is not None:
                    ids.extend(i for i in hit[0][:1] if i not in ids)
            if ids:
                return tuple(ids)
        return ()

    def _in_species(self, ids: tuple[str, ...], species: str, keep: bool) -> tuple[str, ...] | None:
        """``ids`` of a gene mention as genes of ``species``, each mapped by :meth:`_gene_in_species`
        (a composite such as "ERK1/2" keeps every member); None when the primary id has no answer
        (a KG name of another species), and a member without one is dropped."""
        primary = self._gene_in_species(ids[0], species, keep)
        if primary is None:
            return None
        rest = (self._gene_in_species(i, species, keep) for i in ids[1:])
        return tuple(dict.fromkeys([primary, *(i for i in rest if i is not None)]))

    def _gene_in_species(self, gene: str, species: str, keep: bool) -> str | None:
        """``gene`` as a gene of ``species``: unchanged when its taxon is that species or unknown,
        else the ortholog of ``species`` (the reference vocabulary's, else :func:`_gene_orthologs`),
        else unchanged with ``keep`` (a dictionary answer, unless :attr:`strict_species`) and None
        without (a KG name)."""
        taxon = self.gene_taxon(gene)
        if taxon is None or taxon == species:
            return gene
        reference = self._genes.ortholog(gene, species) if self._genes is not None else None
        if reference is not None:
            return reference
        own = self._orthologs.get(gene, {})
        target = own.get(species) or (own.get(_KG_SOURCE) if species == self.kg_species else None)
        return target or (gene if keep else None)

    def _result(self, ids: tuple[str, ...], score: float, how: str) -> LinkResult:
        """A link to ``ids``, with the cross-references of ``ids[0]`` that are not among them."""
        xrefs = tuple(x for x in dict.fromkeys(self._tables.xrefs.get(ids[0], ())) if x not in ids)
        return LinkResult(ids, score, how, xrefs)

    def _nearest(self, category: str, form: str) -> tuple[int, float]:
        cache_key = (category, form)
        hit = self._fuzzy_cache.get(cache_key)
        if hit is None:
            if len(self._fuzzy_cache) >= _FUZZY_CACHE_SIZE:
                self._fuzzy_cache.clear()
            hit = self._fuzzy[category].best(form) if category in self._fuzzy else (-1, 0.0)
            self._fuzzy_cache[cache_key] = hit
        return hit

    def link(self, text: str, category: str, species: str | None = None) -> LinkResult:
        """The ids of ``text`` as a mention of ``category`` (a Biolink category, or a source mention
        type such as "Chemical", mapped by :func:`~graphmert.kg.schema.mention_category`).

        ``species`` (an ``NCBITaxon:`` id, e.g. the document's dominant species) puts the votes of
        training documents of that species first, for the categories in :data:`SPECIES_CATEGORIES`.
        """
        category = mention_category(category)
        key = surface_key(text)
        if category not in NAMESPACES or not key:
            return UNLINKED
        found = self._exact(category, key, text, species)
        if found is None and self.american and (american := american_spelling(text)) is not None:
            found = self._exact(category, surface_key(american), american, species)
        if found is not None:
            return self._result(_as_named(found[0], text), 1.0, found[1])
        if category in SPECIES_CATEGORIES and self._genes is not None:
            ids = self._gene_variant(text, species)
            if ids:
                return self._result(ids, 1.0, "reference")
        if len(key) < _FUZZY_MIN_CHARS or self.fuzzy_threshold > 1.0:
            return UNLINKED
        i, score = self._nearest(category, normalize_surface(text))
        if i < 0 or score < self.fuzzy_threshold:
            return UNLINKED
        name = self._tables.names[category][i]
        found = self._exact(category, surface_key(name), name, species)
        if found is None:               # a gene of another species, with no ortholog of the document's
            return UNLINKED
        return self._result(_as_named(found[0], text), round(score, 6), "fuzzy")

    def known_ids(self) -> frozenset[str]:
        """Every id a look-up can answer: those of the dictionary (all species, plural forms too), the
        seed KG's namespace ids, the reference term tables' and genes'. Fuzzy, ortholog and
        abbreviation links answer with these too, so a gold id outside them is one no mention can be
        linked to (``experiments/raw_pairs.py``)."""
        t = self._tables
        out = {i for votes in (t.dictionary, t.dictionary_plural, *t.species.values())
               for keys in votes.values() for counts in keys.values() for ids in counts for i in ids}
        out.update(i for keys in (*t.kg.values(), *t.kg_plural.values()) for i in keys.values())
        out.update(i for keys in t.terms.values() for ids in keys.values() for i in ids)
        out.update(self._genes.genes() if self._genes is not None else ())
        return frozenset(out)

    def dictionary_categories(self, key: str) -> frozenset[str]:
        """The categories the training documents annotate ``key`` (a :func:`surface_key`) as."""
        return frozenset(c for c, keys in self._tables.dictionary.items() if key in keys)

    def names_exactly(self, text: str, category: str) -> bool:
        """Whether the training documents or the seed KG name ``text`` as ``category`` (a Biolink
        category or a mention type): its :func:`surface_key` or a singular of it among the forms the
        training documents annotate (any species) or the KG's names, and no training document
        annotates it as another category. The reference vocabularies and term tables, which also
        name what is no mention of the category (MeSH's "Cause of Death", "Calcium Channels"), and
        the fuzzy look-up do not count (:func:`graphmert.ner.gazetteer.name_extension`)."""
        category = mention_category(category)
        key = surface_key(text)
        if not key or not self.dictionary_categories(key) <= {category}:
            return False
        return any(how in ("dictionary", "kg") for _, how in self._matches(category, key, text, None))

    def kg_gene_symbol(self, key: str) -> bool:
        """Whether ``key`` (a :func:`surface_key`) names a seed-KG gene and no training document
        annotates it as another category (:func:`graphmert.ner.gazetteer.symbol_mentions`)."""
        return key in self._tables.kg.get(_GENE, {}) and self.dictionary_categories(key) <= {_GENE}

    def reference_gene_name(self, key: str) -> bool:
        """Whether ``key`` (a :func:`surface_key`) names a protein-coding gene of the reference
        vocabularies (:meth:`~graphmert.ner.vocabularies.genes.GeneVocabulary.names_gene`) and no training
        document annotates it as a chemical ("hippocalcin" yes; "insulin" no: BC5CDR's chemical)."""
        return (self._genes is not None and self._genes.names_gene(key)
                and "biolink:ChemicalEntity" not in self.dictionary_categories(key))

    def kg_name(self, key: str, category: str, ratio: float) -> bool:
        """Whether ``key`` (a :func:`surface_key`) is a seed-KG name of ``category`` (one of
        :data:`NAME_CATEGORIES`) that no training document annotates as another category, and that
        the training documents annotating ``category`` annotate at least ``ratio`` of the times it
        occurs in them, or never contain (:func:`graphmert.ner.gazetteer.name_mentions`)."""
        if category not in NAME_CATEGORIES:
            raise LinkerError(f"{category}: the linker counts seed-KG names of {list(NAME_CATEGORIES)} only")
        if key not in self._tables.kg.get(category, {}) or not self.dictionary_categories(key) <= {category}:
            return False
        annotated, occurs = self._tables.name_counts.get(category, {}).get(key, (0, 0))
        return annotated >= ratio * occurs

    # ------------------------------------------------------------------ documents
    def _species_marks(self, doc: Document) -> list[tuple[int, str]]:
        """(offset, taxon) of ``doc``'s species cues: its species mentions (their ids, or else their
        links), or for a document without any (a recognizer that finds none) the species forms of
        the dictionary in its text ("patients", "mice"), and laboratory strains either way; a
        xenograft host ("nude mice") is a human cue (:func:`~graphmert.ner.linking.species.host_marks`).
        With reference gene vocabularies, only the species they name genes of are cues: the human
        genes of an abstract on HIV are human genes, and no table here names HIV's."""
        marks = [(m.start, (m.ids or self.link(m.text, _TAXON).ids or ("",))[0])
                 for m in doc.mentions if mention_category(m.type) == _TAXON]
        forms = {} if marks else self._dictionary.get(_TAXON, {})
        marks = host_marks(doc.text, marks + species_marks(doc.text, forms))
        return marks if self._genes is None else [(at, t) for at, t in marks if t in self._genes.taxa]

    def document_species(self, doc: Document) -> str | None:
        """The dominant taxon of ``doc``'s species cues (:meth:`_species_marks`); without any, mouse
        when its gene mentions are mostly written as rodent symbols (:func:`symbol_case_species`).
        A tie goes to a rodent among the tied when the gene mentions are so written (mouse before
        rat), else to :attr:`default_species` when it is among them: "rats" and "patients" once each
        over "Socs2" and "Pim1" is a rodent abstract (BioRED train: the 2 abstracts where the case
        breaks a tie annotate 14 mouse genes against 12 human, and 13 against 1)."""
        return self._document_species(doc, self._species_marks(doc))

    def _document_species(self, doc: Document, marks: list[tuple[int, str]]) -> str | None:
        counts = Counter(t for _, t in marks if t.startswith(NAMESPACES[_TAXON]))
        case = lambda: symbol_case_species(  # noqa: E731  (read only without cues or on a tie)
            [m.text for m in doc.mentions if mention_category(m.type) == _GENE])
        if not counts:
            return case()
        top = max(counts.values())
        tied = sorted(t for t, n in counts.items() if n == top)
        rodents = [t for t in tied if t in (MOUSE, RAT)] if len(tied) > 1 and case() else []
        if rodents:
            return rodents[0]
        return self.default_species if self.default_species in tied else _dominant_species(tied)

    def mention_species(self, doc: Document) -> list[str | None]:
        """The species of each mention of ``doc``: the species cue nearest to it in its sentence
        (:func:`~graphmert.ner.linking.species.mention_species`), else :meth:`document_species`."""
        return self._species_of(doc)[0]

    def _species_of(self, doc: Document) -> tuple[list[str | None], str | None]:
        """(:meth:`mention_species`, :meth:`document_species`) from one reading of the cues."""
        marks = self._species_marks(doc)
        default = self._document_species(doc, marks)
        if not self.sentence_species:
            return [default] * len(doc.mentions), default
        if self.abbreviation_species and doc.abbreviations:
            spans = [(a.short_start, a.short_end, a.long_start, a.long_end) for a in doc.abbreviations]
            marks = sorted(marks + abbreviation_marks(doc.text, spans, marks))
        return mention_species([(m.start, m.end) for m in doc.mentions], marks,
                               sentence_spans(doc.text, doc.sentences), default), default

    def _long_form(self, doc: Document, a: Abbreviation, category: str,
                   results: list[LinkResult | None], species: str | None) -> LinkResult | None:
        """The link of an abbreviation's long form: the mention of ``category`` covering it (most
        overlap, at least half of the mention inside), else its text linked in ``category``. A
        mention covering less than half of the long form must end where it ends, as the head of a
        noun phrase does ("retinopathy" in "oxygen-induced retinopathy (OIR)"): a detector's long
        form may swallow a neighbour ("PrlR" defined as "Prl) or its receptor"), and the name at its
        start is not the abbreviation's entity (held-out BioRED train, gold spans: gene accuracy
        0.733 -> 0.740, disease and chemical unchanged). Such a partial mention lends the link a
        look-up gave it only when the whole long form has no exact one: in "liver kinase B1 (LKB1)"
        the recognizer tagged "B1", a synonym of MS4A1, and the whole long form names STK11. A
        mention's own ids (a gold annotation) are always lent."""
        best, best_overlap = None, 0
        long_length = a.long_end - a.long_start
        for i, m in enumerate(doc.mentions):
            overlap = min(m.end, a.long_end) - max(m.start, a.long_start)
            if (mention_category(m.type) == category and overlap > best_overlap
                    and 2 * overlap >= m.end - m.start
                    and (2 * overlap >= long_length or m.end >= a.long_end)):
                best, best_overlap = i, overlap
        if best is not None and doc.mentions[best].ids:
            m = doc.mentions[best]
            return LinkResult(tuple(m.ids), 1.0, "abbreviation", tuple(m.xrefs))
        own = results[best] if best is not None and results[best] is not None and results[best].ids else None
        if own is not None and 2 * best_overlap >= long_length:
            return own
        whole = self.link(doc.text[a.long_start:a.long_end], category, species)
        if own is not None and whole.score < 1.0:       # a partial head, and no exact link of the whole
            return own
        return whole if whole.ids else None

    def _abbreviation_links(self, doc: Document, results: list[LinkResult | None],
                            species: str | None) -> dict[tuple[str, str], LinkResult]:
        """(short-form text, category) → the link of its long form, for the unlinked mentions."""
        out: dict[tuple[str, str], LinkResult] = {}
        for a in doc.abbreviations:
            for short in short_form_variants(doc.text[a.short_start:a.short_end]):
                cats = {mention_category(m.type) for m in doc.mentions if m.text == short and not m.ids}
                for cat in sorted(cats & NAMESPACES.keys()):
                    if (short, cat) not in out:
                        hit = self._long_form(doc, a, cat, results, species)
                        if hit is not None:
                            out[(short, cat)] = replace(hit, how="abbreviation")
        return out

    def _short_form_links(self, doc: Document, results: list[LinkResult | None],
                          species: str | None) -> dict[tuple[str, str], LinkResult]:
        """(long-form text, category) → the exact link of its short form, for the long-form
        mentions (covering at least half of the long form, and at least half inside it) that
        their own look-up left unlinked: "complement factor H (CFH)" is CFH's gene."""
        out: dict[tuple[str, str], LinkResult] = {}
        for short, start, end in abbreviation_pairs(doc):
            for i, m in enumerate(doc.mentions):
                cat = mention_category(m.type)
                overlap = min(m.end, end) - max(m.start, start)
                if (results[i] is None or results[i].ids or cat not in NAMESPACES or (m.text, cat) in out
                        or 2 * overlap < max(end - start, m.end - m.start)):
                    continue
                hit = self.link(short, cat, species)
                if hit.ids and hit.score >= 1.0:
                    out[(m.text, cat)] = replace(hit, how="abbreviation")
        return out

    def link_mentions(self, doc: Document) -> list[LinkResult | None]:
        """One result per mention of ``doc`` (``None`` for a mention that already has ids), linked
        with the document's species (:meth:`document_species`), abbreviation short forms through
        their long forms, and long forms nothing else links through their short forms."""
        each, species = self._species_of(doc)
        results = [None if m.ids else self.link(m.text, m.type, sp) for m, sp in zip(doc.mentions, each)]
        links = self._abbreviation_links(doc, results, species) if doc.abbreviations else {}
        for i, m in enumerate(doc.mentions):
            hit = links.get((m.text, mention_category(m.type)))
            # a fuzzy long-form link does not replace an exact link of the short form itself
            if hit is not None and not m.ids and (hit.score >= 1.0 or not results[i].ids):
                results[i] = hit
        if doc.abbreviations:
            longs = self._short_form_links(doc, results, species)
            for i, m in enumerate(doc.mentions):
                hit = longs.get((m.text, mention_category(m.type)))
                if hit is not None and results[i] is not None and not results[i].ids:
                    results[i] = hit
        if self.initials:
            self._initials_links(doc, results)
        if self._modifier_links(doc, results, each) and doc.abbreviations:
            # a long form linked only now lends its link to its short form ("SEPN-RM")
            links = self._abbreviation_links(doc, results, species)
            for i, m in enumerate(doc.mentions):
                hit = links.get((m.text, mention_category(m.type)))
                if hit is not None and results[i] is not None and not results[i].ids:
                    results[i] = hit
        self._composite_links(doc, results, each)
        return results

    def _composite_links(self, doc: Document, results: list[LinkResult | None],
                         species: list[str | None]) -> None:
        """A disease or chemical mention that no step links exactly and that coordinates several names
        (:func:`~graphmert.ner.vocabularies.surface.coordinated_forms`: "ventricular tachycardia and
        fibrillation", "colorectal and lung cancers") takes, in place, the ids of its conjuncts that
        :meth:`link` knows exactly, in text order: BioRED annotates a composite mention with every
        name's id, and extraction pairs each. The training documents' own composites ("breast and
        ovarian cancer") are dictionary keys and linked before."""
        for i, m in enumerate(doc.mentions):
            r, category = results[i], mention_category(m.type)
            if r is None or (r.ids and r.how != "fuzzy") or category not in _COMPOSITE_CATEGORIES:
                continue
            ids: list[str] = []
            for tries in coordinated_forms(m.text):
                hit = next((h for h in (self.link(t, category, species[i]) for t in tries)
                            if h.ids and h.score >= 1.0), None)
                if hit is not None and hit.ids[0] not in ids:
                    ids.append(hit.ids[0])
            if ids:
                results[i] = self._result(tuple(ids), 1.0, "composite")

    def _modifier_links(self, doc: Document, results: list[LinkResult | None],
                        species: list[str | None]) -> int:
        """A disease mention that nothing links, or only a fuzzy look-up, and that starts with
        qualifying words ("chronic ITP", "multiple fibroadenomas":
        :func:`~graphmert.ner.vocabularies.surface.without_modifiers`) or ends in a generic head
        ("kidney lesions", "prostate tumors": :func:`~graphmert.ner.vocabularies.surface.with_generic_head`)
        takes, in place, the link of the rest (:func:`_rests`): from a linked disease mention of the
        document that the rest names or can abbreviate (:func:`~graphmert.ner.abbreviations.spelled_by`:
        "ITP" and "chronic immune thrombocytopenia", whose own qualifiers are dropped too), else from
        :meth:`link` (an exact link only, in place of a fuzzy one). The document's names come first,
        and a rest that looks like a short form is looked up last, after the full names it may
        abbreviate have been linked ("ITP" is also inosine triphosphate). Returns how many mentions
        it linked. Held-out BioRED train, gold spans: disease accuracy 0.806 -> 0.819 (leading
        qualifiers) -> 0.845 (hyphenated qualifiers, the short forms of the long forms linked here,
        generic heads, "benign"/"malignant", an exact rest over a fuzzy whole)."""
        linked = [(j, m.text, r) for j, (m, r) in enumerate(zip(doc.mentions, results))
                  if mention_category(m.type) == _DISEASE and r is not None and r.ids]
        rests = {i: _rests(m.text) for i, m in enumerate(doc.mentions)
                 if mention_category(m.type) == _DISEASE and results[i] is not None
                 and (not results[i].ids or results[i].how == "fuzzy")}
        done: set[int] = set()
        # the document's names alone, then look-ups of the names, then of the short forms (each once)
        for look_up in (None, False, True):
            for i, rest in ((i, rest) for i, each in rests.items() for rest in each):
                if i in done:
                    continue
                hit = next((r for j, text, r in linked if j != i and (surface_key(text) == surface_key(rest)
                            or spelled_by(rest, without_modifiers(text) or text))), None)
                if hit is None and look_up is not None and is_short_form(rest) == look_up:
                    hit = self.link(rest, _DISEASE, species[i])
                if hit is not None and hit.ids and (not results[i].ids or hit.how != "fuzzy"):
                    results[i] = hit
                    done.add(i)
                    linked.append((i, doc.mentions[i].text, hit))
        return len(done)

    def _initials_links(self, doc: Document, results: list[LinkResult | None]) -> None:
        """An unlinked mention whose text spells the initials of a linked mention of its category in
        the document (:func:`~graphmert.ner.abbreviations.initials_of`: "POAG" and "primary
        open-angle glaucoma") takes that mention's link, in place: the abbreviations the detector
        paired with another span ("MR" in "X-linked mental retardation (XLMR)") or missed."""
        linked = [(m.text, mention_category(m.type), LinkResult(tuple(m.ids), 1.0, "abbreviation", tuple(m.xrefs))
                   if m.ids else r) for m, r in zip(doc.mentions, results) if m.ids or (r is not None and r.ids)]
        for i, m in enumerate(doc.mentions):
            if results[i] is None or results[i].ids:
                continue
            cat = mention_category(m.type)
            hit = next((r for text, c, r in linked if c == cat and initials_of(m.text, text)), None)
            if hit is not None:
                results[i] = replace(hit, how="abbreviation")

    def link_document(self, doc: Document) -> Document:
        """A copy of ``doc`` whose mentions without ids have them filled (``[]`` when unlinked), and
        their ``xrefs``: a cross-reference names the same entity, so it must not become an entity
        of its own (extraction pairs every id of ``ids``)."""
        out = copy.deepcopy(doc)
        for m, r in zip(out.mentions, self.link_mentions(doc)):
            if r is not None:
                m.ids, m.xrefs = list(r.ids), list(r.xrefs)
        return out

    # ------------------------------------------------------------------ persistence
    def stats(self) -> dict:
        t = self._tables
        return {
            "dictionary_forms": {c: len(k) for c, k in sorted(t.dictionary.items())},
            "dictionary_plural_forms": {c: len(k) for c, k in sorted(t.dictionary_plural.items())},
            "species_dictionary_forms": {sp: sum(map(len, v.values()))
                                         for sp, v in sorted(t.species.items())},
            "kg_forms": {c: len(k) for c, k in sorted(t.kg.items())},
            "kg_plural_forms": {c: len(k) for c, k in sorted(t.kg_plural.items())},
            "kg_forms_of_several_ids": {c: len(k) for c, k in sorted(t.kg_others.items())},
            "fuzzy_names": {c: len(n) for c, n in sorted(t.names.items())},
            "xref_targets": len(t.xrefs),
            "genes_with_orthologs": len(self._orthologs),
            "kg_names_in_training": {c: len(k) for c, k in sorted(t.name_counts.items())},
            "term_forms": {c: len(k) for c, k in sorted(t.terms.items())},
            "fuzzy_threshold": self.fuzzy_threshold,
            **t.info,
        }

    def save(self, path: str | Path) -> Path:
        """Write the linker to one gzipped JSON file, atomically."""
        t = self._tables

        def votes(v: Votes) -> dict:
            return {c: {k: [[list(ids), n] for ids, n in sorted(cnt.items())]
                        for k, cnt in sorted(keys.items())} for c, keys in sorted(v.items())}

        data = {"format": FORMAT, "version": FORMAT_VERSION, "fuzzy_threshold": self.fuzzy_threshold,
                "info": t.info, "dictionary": votes(t.dictionary),
                "dictionary_plural": votes(t.dictionary_plural),
                "species": {sp: votes(v) for sp, v in sorted(t.species.items())},
                "kg": t.kg, "kg_others": t.kg_others, "kg_plural": t.kg_plural, "xrefs": t.xrefs, "names": t.names,
                "name_counts": t.name_counts, "terms": terms_to_json(t.terms),
                "reference_genes": t.reference_genes}
        raw = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
                gz.write(raw)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> "EntityLinker":
        """Read a file written by :meth:`save`; :class:`LinkerError` names the file and the problem."""
        path = Path(path)
        if not path.is_file():
            raise LinkerError(f"{path}: entity-linker file not found")
        try:
            with gzip.open(path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
        except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise LinkerError(f"{path}: not a readable entity-linker file ({e})") from None
        check_format(data, path, format=FORMAT, version=FORMAT_VERSION, what="an entity-linker file",
                     error=LinkerError, version_key="version", advice="; rebuild the linker")
        try:
            return cls(_tables_from_json(data), float(data["fuzzy_threshold"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise LinkerError(f"{path}: corrupt entity-linker file ({type(e).__name__}: {e})") from None


def _rests(text: str) -> list[str]:
    """What a disease mention nothing links is tried as, in order: without its qualifiers
    (:func:`~graphmert.ner.vocabularies.surface.without_modifiers`), with a generic head as its group's
    word (:func:`~graphmert.ner.vocabularies.surface.with_generic_head`), then both."""
    plain = without_modifiers(text)
    tries = [plain, with_generic_head(text), with_generic_head(plain) if plain else None]
    return list(dict.fromkeys(t for t in tries if t))
