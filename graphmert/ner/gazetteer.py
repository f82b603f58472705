"""Seed-KG names found in raw text where the recognizer found nothing: gene symbols, and disease and
chemical names the training documents annotate (issue #19).

The recognizer learns genes from 400 BioRED abstracts, so a symbol it never saw ("GADD45A",
"CX3CR1", "CYP11B1") is often missed in every one of its occurrences, though the seed KG names it
exactly. A gene symbol with a digit and an upper-case letter ("CYP2C19", "IL-6") is rarely anything
else, so :func:`symbol_mentions` makes every occurrence of such a KG symbol a gene mention:

* a candidate is a run of one to :data:`MAX_WORDS` words joined by single spaces or hyphens, of at
  least :data:`MIN_CHARS` characters, with a digit and an upper-case letter, that no function word
  begins or ends (look-up keys ignore spaces: "as NS" has the key of ASNS);
* its look-up key (:func:`graphmert.ner.linking.surface_key`: case, hyphens and spaces aside) must
  be a KG gene name and no form that the training documents annotate as another category
  (:meth:`~graphmert.ner.linking.EntityLinker.kg_gene_symbol`). The mouse "Cyp2c19" is found
  through the human CYP2C19: it is a gene too, and ``extract.kg_gene_species`` keeps the linker
  from giving it the human gene's id in a mouse paper;
* the longest candidates are taken first, and none overlaps a mention the document already has.

The mentions carry no ids; the linker links them as it links recognised ones. The seed KG's disease
and chemical names include common words ("disease", "antibodies", "acids"), and its gene symbols
without a digit include "SET" and "MET", which no digit-and-capital rule keeps out, so
:func:`name_mentions` keeps them by what the training documents do with them instead
(``extract.name_mentions``; gene names the same way: "EPOR" and "mTOR", which the recognizer misses):

* a candidate is a run of one to :data:`~graphmert.ner.linking.NAME_MAX_WORDS` words joined by a
  space, a hyphen or ", " (:func:`~graphmert.ner.linking.word_runs`) whose key is at least
  :data:`MIN_NAME_CHARS` characters long and that no function word begins or ends;
* it must be a KG name of the category that no training document annotates as another category,
  and the training documents that annotate the category must annotate it at least ``ratio``
  (``extract.name_ratio``) of the times it occurs in them, or never contain it
  (:meth:`~graphmert.ner.linking.EntityLinker.kg_name`): "water" occurs in BC5CDR abstracts far
  more often than it is annotated, "imatinib" in none of them;
* the longest candidates are taken first, and none overlaps a mention the document already has.
"""

from __future__ import annotations

import re
from dataclasses import replace

from graphmert.corpus.document import Document, Mention
from graphmert.ner.linking import EntityLinker, run_key, surface_key, word_runs

__all__ = ["symbol_mentions", "name_mentions", "gene_name_labels", "protein_heads", "route_trim", "ROUTE_WORDS",
           "greek_suffix", "name_extension", "gene_extension", "EXTENSION_WORDS", "MIN_CHARS", "MAX_WORDS",
           "MIN_NAME_CHARS"]

MIN_CHARS = 3                   # "C3" and "F2" are positions and coagulation factors alike
MIN_NAME_CHARS = 4              # shorter keys ("ca", "ad", "epo") are left to the recognizer (genes: with
                                # 3, held-out recognition +0.004 but normalisation -0.001)
MAX_WORDS = 3
_JOIN = re.compile(r"[ -]")     # symbol words join by a space or a hyphen only


# A word run is a name only if no function word begins or ends it: look-up keys ignore spaces, so
# "as NS" has the key of the gene symbol ASNS, "of C4" of OFC4 (a synonym of MACF1) and "RA in" of
# "rain"; a word written all in capitals ("vitamin A", "NO") is a letter or a symbol, not a function word
_WORD = re.compile(r"\w(?:[\w'’]*\w)?")    # a word; "Parkinson's" is one
_EDGE_WORDS = frozenset({"a", "an", "the", "in", "of", "and", "or", "to", "with", "for", "by", "on", "at",
                         "as", "from", "is", "was", "were", "are", "be", "that", "this", "these", "those",
                         "its", "their", "his", "her", "our", "we", "not", "no", "than", "after", "before",
                         "during", "into", "via", "per", "but", "which", "who", "all", "both", "each"})


def _edge_free(text: str) -> bool:
    """Whether ``text`` has a word and neither begins nor ends with a function word (one of
    :data:`_EDGE_WORDS`, not written all in capitals)."""
    words = _WORD.findall(text)
    return bool(words) and not any(w.lower() in _EDGE_WORDS and not w.isupper() for w in (words[0], words[-1]))


def _symbol_like(text: str) -> bool:
    return len(text) >= MIN_CHARS and any(c.isdigit() for c in text) and any(c.isupper() for c in text)


def _candidates(text: str, linker: EntityLinker) -> list[tuple[int, int]]:
    """(start, end) of every word run of ``text`` that is a symbol-like KG gene name."""
    return [(start, end) for start, end in word_runs(text, MAX_WORDS, _JOIN)
            if _symbol_like(text[start:end]) and _edge_free(text[start:end])
            and linker.kg_gene_symbol(surface_key(text[start:end]))]


def _with_mentions(doc: Document, found: list[tuple[int, int, str]]) -> Document:
    """A copy of ``doc`` with a mention of each (start, end, label) of ``found``, longest first, that
    overlaps none of its mentions nor one added before; ``doc`` itself when none is added."""
    taken: list[tuple[int, int]] = [(m.start, m.end) for m in doc.mentions]
    added = []
    for start, end, label in sorted(found, key=lambda f: (f[0] - f[1], f[0])):
        if all(end <= a or start >= b for a, b in taken):
            taken.append((start, end))
            added.append(Mention(start=start, end=end, text=doc.text[start:end], type=label))
    if not added:
        return doc
    return replace(doc, mentions=sorted([*doc.mentions, *added], key=lambda m: (m.start, m.end)))


def symbol_mentions(doc: Document, linker: EntityLinker, label: str = "Gene") -> Document:
    """A copy of ``doc`` with a ``label`` mention on every symbol-like seed-KG gene name of its text
    that overlaps none of its mentions (module docstring); ``doc`` itself when there is none."""
    return _with_mentions(doc, [(s, e, label) for s, e in _candidates(doc.text, linker)])


def name_mentions(doc: Document, linker: EntityLinker, labels: dict[str, str], ratio: float) -> Document:
    """A copy of ``doc`` with a mention on every seed-KG name of a category of ``labels`` (category →
    the mention label; categories of :data:`~graphmert.ner.linking.NAME_CATEGORIES`) that the
    training documents annotate at least ``ratio`` of the times they contain it, or never contain,
    and that overlaps none of its mentions (module docstring); ``doc`` itself when there is none."""
    found = []
    for start, end in word_runs(doc.text):
        key = run_key(doc.text[start:end])
        if len(key) >= MIN_NAME_CHARS and _edge_free(doc.text[start:end]):
            found += [(start, end, label) for cat, label in labels.items() if linker.kg_name(key, cat, ratio)]
    return _with_mentions(doc, found)


def gene_name_labels(doc: Document, linker: EntityLinker, chemical: str = "Chemical", gene: str = "Gene"
                     ) -> Document:
    """A copy of ``doc`` whose ``chemical`` mentions without ids that name a protein-coding gene of
    the linker's reference vocabularies, and that no training document annotates as a chemical
    (:meth:`~graphmert.ner.linking.EntityLinker.reference_gene_name`), or that the training
    documents or the seed KG name as a gene and no training document as anything else
    (:meth:`~graphmert.ner.linking.EntityLinker.names_exactly`), are ``gene`` mentions: the
    recognizer tags proteins it never saw as chemicals ("hippocalcin", "osteocalcin", "CCK"), and
    the seed KG's chemical names include MeSH's protein descriptors ("calnexin"), which BioRED
    annotates as genes; ``doc`` itself when none is."""
    relabelled = [replace(m, type=gene) if m.type == chemical and not m.ids
                  and (linker.reference_gene_name(surface_key(m.text)) or linker.names_exactly(m.text, gene))
                  else m for m in doc.mentions]
    if relabelled == doc.mentions:
        return doc
    return replace(doc, mentions=relabelled)


# the last word of a protein's name: an enzyme ("amylase", "kinases"), a protein, receptor, channel or
# factor. BioRED annotates proteins as genes; MeSH files them among chemicals (D08, D12), so a
# recognizer that tags one as a chemical links it to a MeSH chemical no gold has
_PROTEIN_HEAD = re.compile(r"[a-z]{3,}ases?|proteins?|receptors?|channels?|factors?", re.I)
_NOT_ENZYMES = frozenset({"disease", "diseases", "release", "releases", "increase", "increases", "decrease",
                          "decreases", "phase", "phases", "purchase", "database", "databases"})


def protein_heads(doc: Document, linker: EntityLinker, chemical: str = "Chemical", gene: str = "Gene"
                  ) -> Document:
    """A copy of ``doc`` whose ``chemical`` mentions without ids whose last word names a kind of
    protein (:data:`_PROTEIN_HEAD`: "amylase", "calcium channels", "sulfonylurea receptor") and that
    no training document annotates as a chemical are ``gene`` mentions (the training documents keep
    their enzymes annotated as chemicals: "L-asparaginase", "creatine kinase"); ``doc`` itself when
    none is."""
    def protein(m: Mention) -> bool:
        last = re.split(r"[\s/-]+", m.text.strip())[-1]
        return (m.type == chemical and not m.ids and bool(_PROTEIN_HEAD.fullmatch(last))
                and last.lower() not in _NOT_ENZYMES
                and "biolink:ChemicalEntity" not in linker.dictionary_categories(surface_key(m.text)))

    relabelled = [replace(m, type=gene) if protein(m) else m for m in doc.mentions]
    return doc if relabelled == doc.mentions else replace(doc, mentions=relabelled)


# how a chemical was given: annotators leave these out of the chemical's span ("oral galactose" is
# annotated "galactose"; in the shared corpus's 2,164 annotated abstracts the words occur 535 times
# and start 30 chemical mentions, all BC5CDR's and 28 of them "oral contraceptive(s)/contraception")
ROUTE_WORDS = frozenset({"oral", "intravenous", "intraperitoneal", "intramuscular", "intrathecal", "intranasal",
                         "subcutaneous", "topical", "systemic", "inhaled", "dietary", "exogenous", "endogenous"})


def route_trim(doc: Document, linker: EntityLinker, chemical: str = "Chemical") -> Document:
    """A copy of ``doc`` whose ``chemical`` mentions without ids that start with a word of
    :data:`ROUTE_WORDS` ("oral galactose") start after it ("galactose"), unless the training
    documents annotate the whole text as a chemical ("oral contraceptives":
    :meth:`~graphmert.ner.linking.EntityLinker.dictionary_categories`); ``doc`` itself when none
    is trimmed. Written here because the rule reads the linker's training dictionary."""
    out = []
    for m in doc.mentions:
        first, _, rest = m.text.partition(" ")
        rest = rest.lstrip()
        if (m.type == chemical and not m.ids and rest and first.lower() in ROUTE_WORDS
                and "biolink:ChemicalEntity" not in linker.dictionary_categories(surface_key(m.text))):
            m = replace(m, start=m.end - len(rest), text=rest)
        out.append(m)
    if out == doc.mentions:
        return doc
    return replace(doc, mentions=out)


# a Greek letter written as a word of its own after a gene name names an isoform or subunit, and
# annotators take it into the gene's span ("NRG-1 beta", "GR alpha", "GSK-3 beta": 26 BioRED-train
# gene mentions end so, and 1 stops before such a word)
_GREEK_SUFFIX = re.compile(r" (?:alpha|beta|gamma|delta|epsilon|kappa|[αβγδεκ])\d?(?![\w-])", re.IGNORECASE)


def greek_suffix(doc: Document, gene: str = "Gene") -> Document:
    """A copy of ``doc`` whose ``gene`` mentions directly followed by a Greek letter as a word (" beta",
    " alpha1") end after it ("NRG-1" → "NRG-1 beta"), unless another mention starts there; ``doc``
    itself when none is extended. Written here beside the other span rules after recognition."""
    starts = {m.start for m in doc.mentions}
    out = []
    for m in doc.mentions:
        hit = _GREEK_SUFFIX.match(doc.text, m.end) if m.type == gene else None
        if hit is not None and not any(m.end < s < hit.end() for s in starts):
            m = replace(m, end=hit.end(), text=doc.text[m.start:hit.end()])
        out.append(m)
    if out == doc.mentions:
        return doc
    return replace(doc, mentions=out)


# A recognised mention is often the head of a longer name that annotators take whole: "retinopathy"
# in "retinopathy of prematurity", "glaucoma" in "primary open angle glaucoma", "oxygen" in
# "reactive oxygen species" (held-out BioRED train: 131 of the 433 gold mentions that strict spans
# miss overlap a found mention of their category, most of them diseases found too short;
# experiments/raw_entities.py --errors, its table of kinds)
EXTENSION_WORDS = 3             # the most words a mention is extended by on each side
_SPAN = 40 * EXTENSION_WORDS                  # how far around a mention its words are looked for


def _joined_words(text: str, start: int, end: int) -> tuple[list[int], list[int]]:
    """(the starts of the words joined to ``start`` on its left by a space or a hyphen each, nearest
    first; the ends of those joined to ``end`` on its right): at most :data:`EXTENSION_WORDS` each,
    a run stopping at any other separator."""
    lo = max(0, start - _SPAN)
    words = [w for w in _WORD.finditer(text, lo, start) if w.start() > lo or lo == 0 or not text[lo - 1].isalnum()]
    lefts, pos = [], start
    for w in reversed(words):
        if len(lefts) == EXTENSION_WORDS or not _JOIN.fullmatch(text[w.end():pos]):
            break
        lefts.append(pos := w.start())
    rights, pos = [], end
    for w in _WORD.finditer(text, end, end + _SPAN):
        if len(rights) == EXTENSION_WORDS or not _JOIN.fullmatch(text[pos:w.start()]):
            break
        rights.append(pos := w.end())
    return lefts, rights


def _longest_name(text: str, start: int, end: int, category: str, linker: EntityLinker,
                  others: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The longest span of ``text`` that holds [start, end), reaches at most
    :data:`EXTENSION_WORDS` joined words beyond it on each side, overlaps none of ``others``, and
    that the training documents or the seed KG name as ``category``
    (:meth:`~graphmert.ner.linking.EntityLinker.names_exactly`); None when there is none."""
    lefts, rights = _joined_words(text, start, end)
    spans = [(s, e) for s in (start, *lefts) for e in (end, *rights) if (s, e) != (start, end)]
    for s, e in sorted(spans, key=lambda se: (se[0] - se[1], se[0])):         # longest first
        if (all(e <= a or s >= b for a, b in others) and _edge_free(text[s:e])
                and linker.names_exactly(text[s:e], category)):
            return s, e
    return None


def name_extension(doc: Document, linker: EntityLinker, labels: frozenset[str]) -> Document:
    """A copy of ``doc`` whose mentions without ids of a label in ``labels`` take the span of the
    longest name around them that the training documents or the seed KG give their category
    (:func:`_longest_name`: "retinopathy" → "retinopathy of prematurity"), in text order, none
    growing over another mention; ``doc`` itself when none grows. The reference vocabularies do not
    count: they name genes by common words and MeSH names what is no disease ("causes of death"),
    and with them the held-out disease spans got worse (docs/experiments/entity-rules.md)."""
    return _grown(doc, linker, {label: label for label in labels})


def gene_extension(doc: Document, linker: EntityLinker, chemical: str = "Chemical", gene: str = "Gene"
                   ) -> Document:
    """A copy of ``doc`` whose ``chemical`` mentions without ids that lie inside a longer name the
    training documents or the seed KG give genes (:func:`_longest_name` with ``gene``'s category)
    are ``gene`` mentions over that name: the recognizer tags the substrate or ligand that opens an
    enzyme's or receptor's name ("dopamine" of "dopamine beta-hydroxylase", "rapamycin" of
    "mammalian target of rapamycin", "cAMP" of "cAMP response element-binding protein"), and
    BioRED annotates the whole as the gene; ``doc`` itself when none grows. In text order, none
    growing over another mention."""
    return _grown(doc, linker, {chemical: gene})


def _grown(doc: Document, linker: EntityLinker, into: dict[str, str]) -> Document:
    """``doc`` with each mention without ids whose label is a key of ``into`` grown to the longest
    name of ``into[label]``'s category around it (:func:`_longest_name`), taking that label; in text
    order, none growing over another mention; ``doc`` itself when none grows."""
    taken = [(m.start, m.end) for m in doc.mentions]
    out = []
    for i, m in enumerate(doc.mentions):
        span = None
        if m.type in into and not m.ids:
            span = _longest_name(doc.text, m.start, m.end, into[m.type], linker, taken[:i] + taken[i + 1:])
        if span is not None:
            taken[i] = span
            m = replace(m, start=span[0], end=span[1], text=doc.text[span[0]:span[1]], type=into[m.type])
        out.append(m)
    if out == doc.mentions:
        return doc
    return replace(doc, mentions=sorted(out, key=lambda m: (m.start, m.end)))
