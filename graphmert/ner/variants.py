"""Sequence variants in raw text, by rule, with tmVar-style normalised ids (issue #19).

BioRED annotates sequence variants (15% of its dev relations have one) and normalises them the way
tmVar does: a dbSNP id where tmVar could map the variant, else a key of its parts::

    rs1800795                                   ← "rs1800795"
    c|SUB|C|643|T      (level|type|ref|position|alt)   ← "643C>T", "c.643C>T", "C643T"
    p|SUB|R|215|W                               ← "R215W", "p.R215W", "Arg215Trp", "p.Arg215Trp"
    c|SUB|T|+3100|G                             ← "+3100 T/G", "IVS3+1G>A" (position IVS3+1)
    c|DEL|657|5        (level|DEL|position|what)       ← "657del5", "c.657delA" (what = A), "del642T"
    c|DEL||32                                   ← "Delta32", "Δ32"
    c|INS|5382|C                                ← "5382insC"
    p|FS|R|58||                                 ← "R58fs", "Arg58fs"
    p|SUB|Q|192|R                               ← "192Q/R"

The spaCy recognizer does not learn variants (no corpus but BioRED annotates them), so
:func:`find_variants` finds them with the regular expressions below and gives each its key; the
ids are those :func:`graphmert.corpus.document.normalize_id` makes of BioRED's (``dbSNP:rs…``,
``tmVar:…``). A variant that tmVar maps to dbSNP from a written-out form ("R124C" → rs121909210)
gets its key, not the rs id: that mapping needs dbSNP, which the project does not have. Only a
variant the text brackets with its rs id ("rs4539 (A2718G)") takes it (:func:`rs_aliases`), and
``add_variants(keys=False)`` (``extract.variant_keys: false``) leaves the others without an id.

Written here because the field's tool, tmVar, is a Java program outside PyPI, and the Python HGVS
parsers (``hgvs``) read well-formed HGVS strings, not variants as abstracts write them. The patterns
and their exclusions were chosen on BioRED *train* (``experiments/variants.py``), never on dev.

One-letter protein forms ("T2D", "S100B", "H2O") collide with names; a one-letter form counts only
with a position of at least :data:`MIN_ONE_LETTER_POSITION` or a ``p.`` prefix, and
:func:`add_variants` never adds a variant over a mention the document already has ("S100B" that the
recognizer found as a gene stays a gene).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable

from graphmert.corpus.document import Document, Mention, normalize_id

__all__ = ["Variant", "find_variants", "add_variants", "rs_aliases", "residue_chemicals", "MIN_ONE_LETTER_POSITION",
           "VARIANT_TYPE"]

VARIANT_TYPE = "SequenceVariant"        # the mention type (mention_category: biolink:SequenceVariant)
MIN_ONE_LETTER_POSITION = 10

_AA3 = {"Ala": "A", "Arg": "R", "Asn": "N", "Asp": "D", "Cys": "C", "Gln": "Q", "Glu": "E", "Gly": "G",
        "His": "H", "Ile": "I", "Leu": "L", "Lys": "K", "Met": "M", "Phe": "F", "Pro": "P", "Ser": "S",
        "Thr": "T", "Trp": "W", "Tyr": "Y", "Val": "V", "Ter": "X", "Stop": "X"}
_AA1 = "ACDEFGHIKLMNPQRSTVWY"
_THREE = "|".join(_AA3)
_START = r"(?<![\w.>/-])"          # a variant starts a token (not inside a word, id or range)
_END = r"(?![\w>])"

_POS = r"(IVS\d+\s?[+-]\s?\d+|[+-]?\d+(?:[+-]\d+)?)"      # "643", "-174", "855+1", "IVS3+1"
_RS = re.compile(rf"{_START}rs(\d{{3,}}){_END}")
_DNA_SUB = re.compile(rf"{_START}(?:([cgmr])\.)?{_POS}\s?([ACGT])\s?(?:>|->|-->|→)\s?([ACGT]){_END}")
_DNA_SLASH = re.compile(rf"{_START}(?:([cgmr])\.)?{_POS}\s?([ACGT])\s?/\s?([ACGT]){_END}")
_DNA_SUB_SHORT = re.compile(rf"{_START}([ACGT])(-?\d+)([ACGT]){_END}")
_PROT_THREE = re.compile(rf"{_START}(?:p\.)?({_THREE})(\d+)({_THREE}|X|\*|fs){_END}")
_PROT_ONE = re.compile(rf"{_START}(p\.)?([{_AA1}])(\d+)([{_AA1}X*]|fs){_END}")
_PROT_SLASH = re.compile(rf"{_START}(\d+)([{_AA1}])/([{_AA1}]){_END}")
_DEL = re.compile(rf"{_START}(?:([cg])\.)?(-?\d+(?:_-?\d+)?)\s?del([ACGT]+|\d+)?{_END}")
_DEL_BEFORE = re.compile(rf"{_START}del(\d+)([ACGT]+){_END}")                 # "del642T"
_DELTA = re.compile(rf"{_START}(?:Δ|[Dd]elta)\s?(\d+){_END}")                  # "CCR5 Delta32"
_INS = re.compile(rf"{_START}(?:([cg])\.)?(-?\d+(?:_-?\d+)?)ins([ACGT]+){_END}")


@dataclass(frozen=True)
class Variant:
    start: int          # character offsets into the text
    end: int
    text: str
    key: str            # "rs1800795" or a tmVar key such as "p|SUB|R|215|W" (module docstring)


def _protein(ref: str, pos: str, alt: str) -> str:
    if alt == "fs":
        return f"p|FS|{ref}|{pos}||"
    return f"p|SUB|{ref}|{pos}|{'X' if alt in ('*', 'X') else alt}"


def _position(raw: str) -> str:
    return re.sub(r"\s", "", raw)


def _keys(text: str) -> Iterable[tuple[int, int, str]]:
    """(start, end, key) of every pattern match; overlaps are resolved by :func:`find_variants`."""
    for m in _RS.finditer(text):
        yield m.start(), m.end(), f"rs{m[1]}"
    for rx in (_DNA_SUB, _DNA_SLASH):
        for m in rx.finditer(text):
            level = m[1] if m[1] in ("g", "m", "r") else "c"
            yield m.start(), m.end(), f"{level}|SUB|{m[3]}|{_position(m[2])}|{m[4]}"
    for m in _PROT_THREE.finditer(text):
        alt = "fs" if m[3] == "fs" else _AA3.get(m[3], "X")
        yield m.start(), m.end(), _protein(_AA3[m[1]], m[2], alt)
    for m in _DEL.finditer(text):
        yield m.start(), m.end(), f"{m[1] or 'c'}|DEL|{m[2]}|{m[3] or ''}"
    for m in _DEL_BEFORE.finditer(text):
        yield m.start(), m.end(), f"c|DEL|{m[1]}|{m[2]}"
    for m in _DELTA.finditer(text):
        yield m.start(), m.end(), f"c|DEL||{m[1]}"
    for m in _INS.finditer(text):
        yield m.start(), m.end(), f"{m[1] or 'c'}|INS|{m[2]}|{m[3]}"
    for m in _PROT_SLASH.finditer(text):             # "192Q/R"; nucleotide pairs are DNA alleles
        if not (m[2] in "ACGT" and m[3] in "ACGT"):
            yield m.start(), m.end(), f"p|SUB|{m[2]}|{m[1]}|{m[3]}"
    for m in _DNA_SUB_SHORT.finditer(text):          # "C262T": both ends nucleotides → DNA
        if int(m[2]) >= MIN_ONE_LETTER_POSITION or m[2].startswith("-"):
            yield m.start(), m.end(), f"c|SUB|{m[1]}|{m[2]}|{m[3]}"
    for m in _PROT_ONE.finditer(text):
        if m[1] or int(m[3]) >= MIN_ONE_LETTER_POSITION:
            yield m.start(), m.end(), _protein(m[2], m[3], m[4])


def find_variants(text: str) -> list[Variant]:
    """The variants of ``text`` in order, without overlaps (the longest match wins; of two matches of
    one span, the pattern tried first)."""
    found: dict[tuple[int, int], str] = {}
    for start, end, key in _keys(text):
        found.setdefault((start, end), key)
    kept: list[Variant] = []
    for (start, end), key in sorted(found.items(), key=lambda kv: (-(kv[0][1] - kv[0][0]), kv[0][0])):
        if not any(v.start < end and start < v.end for v in kept):
            kept.append(Variant(start=start, end=end, text=text[start:end], key=key))
    return sorted(kept, key=lambda v: v.start)


_BRACKETED = re.compile(r"\s*[(\[]\s*")      # between a variant and the one it brackets
_CLOSE = re.compile(r"\s*[)\]]")


def rs_aliases(text: str, variants: list[Variant]) -> dict[str, str]:
    """Key → dbSNP key for each written-out variant that ``text`` pairs with an rs id in brackets,
    either way round: "rs4539 (A2718G)", "A2718G (rs4539)". The abstract says the two are one
    variant, and BioRED gives every mention of it the rs id; elsewhere the project cannot map a
    written-out variant to dbSNP (module docstring). A key paired with two rs ids keeps its own."""
    pairs: dict[str, set[str]] = {}
    for a, b in zip(variants, variants[1:]):
        if not _BRACKETED.fullmatch(text[a.end:b.start]) or not _CLOSE.match(text, b.end):
            continue
        rs, other = (a, b) if a.key.startswith("rs") else (b, a)
        if rs.key.startswith("rs") and not other.key.startswith("rs"):
            pairs.setdefault(other.key, set()).add(rs.key)
    return {key: next(iter(rs)) for key, rs in pairs.items() if len(rs) == 1}


def add_variants(doc: Document, keys: bool = True) -> Document:
    """A copy of ``doc`` with a :data:`VARIANT_TYPE` mention, id ``normalize_id(key)``
    (``dbSNP:rs…`` or ``tmVar:…``), for every variant of its text that overlaps none of its mentions;
    a written-out variant the text pairs with an rs id takes it (:func:`rs_aliases`). Without
    ``keys`` a variant left with a tmVar key is a mention without an id: its key is made from its
    text, not looked up, and names one variant of every gene (``extract.variant_keys``). The
    mentions stay in order of their start."""
    variants = find_variants(doc.text)
    aliases = rs_aliases(doc.text, variants)
    added = []
    for v in variants:
        if any(m.start < v.end and v.start < m.end for m in doc.mentions):
            continue
        key = aliases.get(v.key, v.key)
        ids = [normalize_id(key, VARIANT_TYPE)] if keys or key.startswith("rs") else []
        added.append(Mention(start=v.start, end=v.end, text=v.text, type=VARIANT_TYPE, ids=ids))
    if not added:
        return doc
    return replace(doc, mentions=sorted([*doc.mentions, *added], key=lambda m: (m.start, m.end)))


# An amino acid named as a residue of a protein change is no chemical: "tyrosine to histidine",
# "asparagine 86", "lysine at residue 223", "glycine (Gly) to glutamine". BioRED train writes an amino
# acid so 53 times and annotates none as a chemical (52 lie inside a variant's span); BC5CDR train and
# dev once, a chemical there ("glutamate 7 receptor") (docs/experiments/entity-rules.md)
_AMINO_ACIDS = (r"(?:alanine|arginine|asparagine|aspartate|aspartic acid|cysteine|glutamine|glutamate|"
                r"glutamic acid|glycine|histidine|isoleucine|leucine|lysine|methionine|phenylalanine|proline|"
                r"serine|threonine|tryptophan|tyrosine|valine)")
_AMINO_ACID = re.compile(rf"{_AMINO_ACIDS}s?", re.I)
_THREE_LETTER = r"(?:\(\w{3}\)\s*)?"                                      # "glycine (Gly)"
_CHANGE = r"-?\s*(?:to|by|for|->|-->|→)\s+(?:an?\s+)?"                     # "to", "by a", "-->"
_DOSE = r"\s*(?:[mµμun]?[gMlL]\b|%|m?mol|min|h\b|hrs?\b|days?|weeks?|months?|years?|times)"   # "10 mM", "20 min"
_RESIDUE_AFTER = re.compile(rf"\s*{_THREE_LETTER}(?:{_CHANGE}{_AMINO_ACIDS}\b|(?:at\s+)?(?:residue|codon|"
                            rf"position|amino acid)s?\s+\d|-?\d+\b(?!{_DOSE}))", re.I)
_RESIDUE_BEFORE = re.compile(rf"\b{_AMINO_ACIDS}\s*(?:\d+\s*)?{_THREE_LETTER}{_CHANGE}$", re.I)


def residue_chemicals(doc: Document, chemical: str = "Chemical") -> Document:
    """A copy of ``doc`` without the ``chemical`` mentions that are an amino acid written as a
    residue of a protein change (the comment above :data:`_AMINO_ACID`: "tyrosine to histidine" loses
    both, "asparagine 86" its one); ``doc`` itself when none is. Written here beside the variant
    patterns, which read the same protein changes."""
    kept = [m for m in doc.mentions if not (m.type == chemical and _AMINO_ACID.fullmatch(m.text) and (
        _RESIDUE_AFTER.match(doc.text, m.end) or _RESIDUE_BEFORE.search(doc.text, max(0, m.start - 40), m.start)))]
    if len(kept) == len(doc.mentions):
        return doc
    return replace(doc, mentions=kept)
