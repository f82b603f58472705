"""Species: a document's dominant species, and gene orthologs learnt from the names that genes of two
species share (:mod:`graphmert.ner.linking`, "Orthologs")."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from graphmert.ner.linking.common import _GENE, _TAXON, NAMESPACES, Votes, _winner
from graphmert.ner.vocabularies.surface import surface_key

HUMAN, MOUSE, RAT = "NCBITaxon:9606", "NCBITaxon:10090", "NCBITaxon:10116"
# a Cre driver or a floxed allele ("Alb-Cre;gankyrin(f/f)", "Shh(CreERT2)"): each of the 5
# BioRED-train abstracts that write one annotates mostly mouse genes (experiments/linking.py --species-cues)
_CRE_ALLELES = re.compile(r"\bCre(?:ERT2?)?\b|\bflox(?:ed)?\b|(?<![\w/])(?:fl/fl|f/f)(?![\w/])")
# laboratory strains name their species where an abstract names no animal ("C57BL/6 bone marrow"),
# and so do xenografts (human) and the Cre-lox alleles of mouse genetics
_STRAINS = ((re.compile(r"\b(?:C57BL|BALB/c|DBA/[12]|129/Sv|FVB/N|C3H/He)"), MOUSE),
            (re.compile(r"\b(?:Sprague[- ]Dawley|Wistar|Long[- ]Evans|Fischer 344|SHR)\b"), RAT),
            # a xenograft is a human tumour grown in a rodent: in "nude mice bearing KU7 cells as
            # xenografts" the genes are human (BioRED train: each of its 4 xenograft abstracts
            # annotates mostly human genes)
            (re.compile(r"\bxenograft", re.I), HUMAN),
            (_CRE_ALLELES, MOUSE))
# the host a human tumour or human cells grow in: "nude mice", "BALB/c nude mice", "NOD/SCID mice",
# "athymic rats". Its animal is no cue for the genes: the 6 BioRED-train abstracts that name such a
# host and a human or rodent gene annotate human genes (15 to 43 mentions each; 3 mouse ones in all:
# experiments/linking.py --species-cues)
_HOSTS = re.compile(r"\b(?:(?:BALB/c|NOD)[ /-])?(?:nude|athymic|SCID|NSG|immuno(?:deficient|compromised))"
                    r"[ /-](?:[\w/]+ )?(?:mice|mouse|rats?)\b", re.I)
# gene symbols written as mouse and rat nomenclature writes them: "Socs2", "Pim1", "Cdc25a"
_RODENT_SYMBOL = re.compile(r"[A-Z][a-z]{1,5}\d+[a-z]?")
_HUMAN_SYMBOL = re.compile(r"[A-Z]{2,6}\d+[A-Z]?")
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(\[])")
_KG_SOURCE = "kg"             # the seed KG's names, as a source of gene orthologs (_gene_orthologs)


def _dominant_species(ids: Iterable[str]) -> str | None:
    """The most frequent taxon id (ties: the smallest), or None."""
    counts = Counter(i for i in ids if i.startswith(NAMESPACES[_TAXON]))
    return _winner(counts) if counts else None


def _gene_orthologs(species: dict[str, Votes], kg: dict[str, dict[str, str]]
                    ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(gene id → its taxon, gene id → taxon → that taxon's gene of the same name), learnt from the
    surface forms (:mod:`graphmert.ner.linking`, "Orthologs").

    A gene id's taxon is the species of the training documents that annotate it most. Two genes are
    taken for the same gene in two species when a surface key's winning id in one species' votes (or
    in the seed KG's names: source :data:`_KG_SOURCE`) and its winning id in the other's differ;
    each key is one vote, and a gene's ortholog in a taxon is its most voted id whose own taxon that
    is (the KG's genes are targets of the source :data:`_KG_SOURCE`).

    Written here because the shared data carries no orthology table (NCBI's gene_orthologs is not
    among it), and the training documents name the same genes in human, mouse and rat papers."""
    taxon_votes: dict[str, Counter] = {}
    by_key: dict[str, dict[str, str]] = {}                   # key → source → its winning gene id
    for sp, votes in species.items():
        for key, counts in votes.get(_GENE, {}).items():
            for ids, n in counts.items():
                taxon_votes.setdefault(ids[0], Counter())[sp] += n
            by_key.setdefault(key, {})[sp] = _winner(counts)[0]
    for key, primary in kg.get(_GENE, {}).items():
        by_key.setdefault(key, {})[_KG_SOURCE] = primary
    taxa = {gene: _winner(c) for gene, c in taxon_votes.items()}
    support: dict[str, dict[str, Counter]] = {}              # gene → target source → Counter(genes)
    for winners in by_key.values():
        for a in set(winners.values()):
            for source, b in winners.items():
                if b != a and (source == _KG_SOURCE or taxa.get(b) == source):
                    support.setdefault(a, {}).setdefault(source, Counter())[b] += 1
    return taxa, {a: {t: _winner(c) for t, c in by_t.items()} for a, by_t in support.items()}


def species_marks(text: str, forms: dict[str, tuple[str, ...]]) -> list[tuple[int, str]]:
    """(offset, taxon id) of each word and word pair of ``text`` that is a species form of ``forms``
    (surface key → ids: "patients", "mice", "rats") and of each laboratory strain name."""
    words = list(_WORD.finditer(text))
    grams = [(w.start(), w.group()) for w in words]
    grams += [(a.start(), text[a.start():b.end()]) for a, b in zip(words, words[1:])]
    marks = [(at, forms[k][0]) for at, k in ((at, surface_key(g)) for at, g in grams) if k in forms]
    marks += [(m.start(), taxon) for pattern, taxon in _STRAINS for m in pattern.finditer(text)]
    return sorted(marks)


def host_marks(text: str, marks: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """``marks`` (offset, taxon) with each xenograft host of ``text`` ("nude mice", "NOD/SCID mice")
    a human cue in place of the cues inside its words: the animal holds the human cells whose genes
    the abstract names (:data:`_HOSTS`)."""
    hosts = [(m.start(), m.end()) for m in _HOSTS.finditer(text)]
    if not hosts:
        return sorted(marks)
    kept = [(at, t) for at, t in marks if not any(a <= at < b for a, b in hosts)]
    return sorted(kept + [(a, HUMAN) for a, _ in hosts])


def abbreviation_marks(text: str, abbreviations: Iterable[tuple[int, int, int, int]],
                       marks: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """(offset, taxon) at every occurrence of each short form whose long form holds a species cue of
    ``marks``: "human retinal microvascular ECs (hRMVECs)", "mouse embryonic fibroblasts (MEFs)". The
    cells the abbreviation names keep their species wherever the abstract writes it ("In hRMVECs
    transfected with NOX4 siRNA": the human gene, in a rat abstract). ``abbreviations`` are (short
    start, short end, long start, long end); a short form ending in "s" is also found without it
    ("hRMVEC proliferation"). A long form with cues of two species gives none."""
    out = []
    for short_start, short_end, long_start, long_end in abbreviations:
        taxa = {t for at, t in marks if long_start <= at < long_end and t}
        short = text[short_start:short_end]
        if len(taxa) != 1 or len(short) < 2:
            continue
        stem = short[:-1] if short.endswith("s") and len(short) > 2 else short
        pattern = re.compile(rf"(?<![\w-]){re.escape(stem)}s?(?![\w-])")
        out += [(m.start(), next(iter(taxa))) for m in pattern.finditer(text)
                if m.start() != short_start and not long_start <= m.start() < long_end]
    return out


def symbol_case_species(gene_texts: Sequence[str]) -> str | None:
    """Mouse when more of ``gene_texts`` are written as rodent symbols ("Socs2") than as human ones
    ("SOCS2"), else None: the case convention is the last cue of an abstract that names no species
    (mouse, not rat: BioRED annotates more mouse genes)."""
    rodent = sum(bool(_RODENT_SYMBOL.fullmatch(t)) for t in gene_texts)
    human = sum(bool(_HUMAN_SYMBOL.fullmatch(t)) for t in gene_texts)
    return MOUSE if rodent > human else None


def sentence_spans(text: str, sentences: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``sentences`` (a document's, from the corpus stage), or, without them, spans split after
    ".", "!" or "?" followed by a space and a capital or a bracket."""
    if sentences:
        return list(sentences)
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    starts = [0, *ends]
    return list(zip(starts, [*ends, len(text)]))


def mention_species(spans: Sequence[tuple[int, int]], marks: Sequence[tuple[int, str]],
                    sentences: Sequence[tuple[int, int]], default: str | None) -> list[str | None]:
    """The species of each mention span: that of the species mark nearest to it in its sentence,
    else ``default`` (the document's)."""
    out = []
    for start, end in spans:
        sentence = next(((a, b) for a, b in sentences if a <= start < b), None)
        near = [(min(abs(at - start), abs(at - end)), at, taxon) for at, taxon in marks
                if sentence is not None and sentence[0] <= at < sentence[1]]
        out.append(min(near)[2] if near else default)
    return out
