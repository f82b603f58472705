"""Entity linking: a recognised mention's text and Biolink category → normalised ids (issue #19).

The package, one module per concern (the names below are exported here, the public surface):

* :mod:`~graphmert.ner.linking.common` — categories and their id namespaces, a look-up's
  :class:`LinkResult`, :class:`LinkerError`, and the vote counting every table shares;
* :mod:`~graphmert.ner.linking.vocabulary` — the tables a linker looks up, learnt from gold
  documents and the seed KG, and read back from a saved linker;
* :mod:`~graphmert.ner.linking.species` — the species of documents and mentions, and gene orthologs
  learnt from the training documents;
* :mod:`~graphmert.ner.linking.fuzzy` — the character 3-gram TF-IDF index of the fuzzy step;
* :mod:`~graphmert.ner.linking.linker` — :class:`EntityLinker`: look-ups, documents, persistence.

What it reads lives in :mod:`graphmert.ner.vocabularies`, which the recognizer's dictionary flags
read too: :func:`normalize_surface`, :func:`surface_key` and the word runs tried as seed-KG names
(``surface``), the cross-reference and names tables (``tables``), the reference term tables
(``terms``: MeSH descriptors) and gene vocabularies (``genes``: NCBI Gene per species, HomoloGene
and RGD orthologs) with their look-up.

One namespace per category (:data:`NAMESPACES`): MeSH for diseases and chemicals, NCBI Gene for
genes (and NCBI Taxonomy / Cellosaurus for species and cell lines, learnt from annotations only).
A :class:`LinkResult` lists the entities a mention names (``ids``, usually one; a training mention
such as "CHL1 and 2" names several) and, apart, the cross-references of the first (``xrefs``: the
DOID of a disease linked to MeSH). A cross-reference is another name of the same entity, never an
entity of its own: :meth:`EntityLinker.link_document` keeps it in ``Mention.xrefs``.

Look-ups, in order, on the *key* of the mention text (:func:`surface_key`):

1. **dictionary** — surface forms of gold-annotated training mentions, per category; each key keeps
   the counts of the id lists it was annotated with and the most frequent wins (ties: the smallest
   id list). Gene ids are species-specific, so gene votes are also kept per training document's
   species (the dominant ``NCBITaxon:`` id of its species mentions); given a species (in documents,
   that of the document's species mentions, or of the species words of its text when it has no
   such mentions: :meth:`EntityLinker.document_species`), its votes are consulted first;
2. **kg** — seed-KG node names and synonyms of the category (``biolink:PhenotypicFeature`` counts as
   disease), and the names that names tables give the nodes (:func:`read_name_tables`: the seed KG
   names genes by symbol, DisGeNET's table by full name), plus inverted names read back
   ("Diabetes Mellitus, Type 2" → "type 2 diabetes mellitus"). Node ids outside the namespace
   (``DOID:``, ``DRUGBANK:``, ``UMLS:``) are mapped through the cross-reference tables
   (:func:`read_xref_tables`); nodes with no mapping are left out. A key several nodes name answers
   with the best-ranked one and keeps the others after it: a gene look-up whose answer is of another
   species than the document's goes on to them (the rat Il7 and the human IL7 are both "IL7");
3. the same two tables again, for plural forms: a mention written with a final lower-case "s"
   ("tumors", "CDKs") is looked up as its singular, and a plural name also answers for its singular;
4. **terms** — only when all of the above fail: the reference term tables
   (:func:`~graphmert.ner.vocabularies.terms.read_terms`; ``build(vocabularies=...)``, the ``terms``
   sources of ``ner.vocabularies``) of the categories their source names, the key and then the
   singulars of a plural query. MeSH 2024 descriptors: every descriptor for both diseases and
   chemicals (the file has no tree numbers), less those the KG nodes and training annotations give
   only the other category ("DDD" is a chemical's entry term, never the disease). Restricting a
   category to the descriptors they give it (:attr:`EntityLinker.known_terms_only`,
   ``extract.known_terms_only``) lowers gold-span accuracy (descriptors newer than the KG) but lifts
   recognised raw text, where such answers mostly link spans that are no entity ("testis").
   A key several descriptors name answers with the best-ranked one (preferred name, entry term,
   permuted form, singular of a plural; then the smallest id) and keeps the others after it;
5. **fuzzy** — only when all of the above fail, and for keys of 4+ characters: character 3-gram
   TF-IDF (``char_wb``) cosine nearest neighbour among the names of the same category (the
   dictionary's and the seed KG's, not the term tables': those lowered held-out F1), accepted at
   ``score >= fuzzy_threshold``. A neighbour must keep the query's numbers, single letters, Greek
   letter names and roman numerals, bare or with a letter
   (:func:`~graphmert.ner.vocabularies.surface._markers`: "bmp 5" never becomes "bmp 4", nor
   "glycoprotein Ib" "glycoprotein"); the best of the 10 nearest that does is taken. The default
   threshold was chosen on held-out BioRED-train documents (``experiments/linking.py``).

:func:`normalize_surface` is the one normalisation: NFKC + casefold, Greek letters spelled out
(α → alpha), possessive "'s" and apostrophes dropped, hyphen / slash / underscore / whitespace runs
→ one space, surrounding punctuation and unbalanced or enclosing brackets stripped. The key is that
form without spaces, so "IL-6", "IL 6" and "IL6" agree.

:meth:`EntityLinker.link_document` adds **abbreviations** (``Document.abbreviations``, scispaCy's
detector): a mention whose text is a short form takes the link of its long form in the same
document (the mention covering the long form, or else the long-form text linked in the mention's
category), and so does every other mention with that text, overriding the context-free look-up
(a fuzzy long-form link only replaces a short form that has no exact link of its own). The other
way round, a long-form mention that nothing links takes its short form's exact link: the seed KG
names genes by their symbols, so "complement factor H (CFH)" is linked through "CFH".
Mentions that cannot be linked keep ``ids=[]``; none is dropped.

**Reference genes.** With ``ner.vocabularies`` naming NCBI Gene files (:mod:`.genes`), a gene
mention is linked as GNormPlus links it: its species is the species named nearest to it in its
sentence, else the document's (its species mentions or words, laboratory strains, else mouse when
its genes are written as rodent symbols, "Socs2"), else :attr:`EntityLinker.default_species`; the
reference look-up of that species comes right after the training documents of the same species, and
a name known only in another species takes its ortholog (HomoloGene, RGD). When no exact step knows
a gene mention, its variants are tried (:func:`.genes.folded_key`, :func:`.gene_forms.gene_variants`:
Greek letters spelt or not, bracketed parts, "gene"/"protein" suffixes, species prefixes, ranges
such as "Smad2/3"), before the fuzzy step. These answer with ``how="reference"``.

**Orthologs.** Gene ids are species-specific, and a form may be annotated only in other species'
papers ("tumor necrosis factor-alpha" in rat papers, where a mouse paper needs mouse Tnf). The
linker learns which genes of two species are the same gene from the names they share
(:func:`~graphmert.ner.linking.species._gene_orthologs`): a surface key whose winning id in one
species' votes (or in the seed KG's names) differs from its winning id in another's pairs the two
ids. In a document of a known species, a gene look-up whose id belongs to another species (a gene's
taxon: the species of the training documents that annotate it) takes that id's ortholog in the
document's species instead. Without an ortholog, a dictionary answer stays (the training documents
annotated that form so), unless :attr:`EntityLinker.strict_species` is set
(``extract.strict_gene_species``): then, like a KG name, it is passed over for the next look-up
step, and the mention may stay unlinked, a text node. On recognised raw text a foreign-species
dictionary answer is more often wrong than right (the held-out raw slice: 28 wrong and 8 right gene
entities; docs/NER.md).

**The seed KG's species.** A seed KG names the genes of one species (Hetionet: human). With
:attr:`EntityLinker.kg_species` set (``extract.kg_gene_species``), a KG gene is of that species, and
a gene mention in a document whose species is another is never linked to a KG gene, directly or by
the fuzzy look-up: a mouse "Tnf" is not the human TNF node. A KG name may still link it to the
gene's ortholog of the document's species; otherwise only the dictionary can link it, or it stays
unlinked, a text node.

**Name counts.** The seed KG's disease and chemical names include common words ("water",
"disease"), so the linker also counts, for each of those names, how often the training documents
that annotate its category contain it and how often a gold mention of the category spans it
exactly (:meth:`EntityLinker.kg_name`): ``extract.name_mentions`` makes a name a mention only where
the training documents annotate it often enough, or never meet it
(:func:`graphmert.ner.gazetteer.name_mentions`).

A built linker is saved as one gzipped JSON file (:meth:`EntityLinker.save`, format version
:data:`FORMAT_VERSION`); the TF-IDF index is fitted lazily on the first fuzzy look-up of a category.
"""

from graphmert.config import NAME_CATEGORIES
from graphmert.ner.linking.common import (
    KG_CATEGORY_ALIASES, NAMESPACES, SPECIES_CATEGORIES, UNLINKED, LinkerError, LinkResult,
)
from graphmert.ner.linking.linker import DEFAULT_FUZZY_THRESHOLD, FORMAT_VERSION, EntityLinker
from graphmert.ner.vocabularies.surface import (NAME_MAX_WORDS, normalize_surface, run_key, surface_key,
                                                word_runs)
from graphmert.ner.vocabularies.tables import read_name_tables, read_xref_tables

__all__ = [
    "LinkerError",
    "LinkResult",
    "UNLINKED",
    "EntityLinker",
    "NAMESPACES",
    "KG_CATEGORY_ALIASES",
    "SPECIES_CATEGORIES",
    "FORMAT_VERSION",
    "DEFAULT_FUZZY_THRESHOLD",
    "normalize_surface",
    "surface_key",
    "read_xref_tables",
    "read_name_tables",
    "NAME_CATEGORIES",
    "NAME_MAX_WORDS",
    "word_runs",
    "run_key",
]
