"""The further forms of a gene mention that the reference look-up tries when no exact key of
:mod:`graphmert.ner.vocabularies.genes` knows it, as the writers of abstracts vary names (GNormPlus's
variants): bracketed parts and indices, "gene"/"protein" suffixes, Greek letters after numbers or
written as Latin ones, receptors named by their ligand's symbol, species prefixes, ranges such as
"Smad2/3", and microRNA names (:func:`gene_variants`, read by
:class:`~graphmert.ner.linking.EntityLinker`).

Apart from the vocabularies' reading and index because only the linker asks these forms: the
recognizer's dictionary flags read the index alone (:mod:`graphmert.ner.dictionary`), so a new
variant changes the ``link`` and ``extract`` stages' code and not the ``ner`` stage's, which would
otherwise train its recognizer again (:mod:`pipelines.fingerprint`).
"""

from __future__ import annotations

import re

from graphmert.ner.vocabularies.genes import ROMAN

__all__ = ["gene_variants"]

_PARENTHESES = re.compile(r"\s*\([^()]*\)")
# a short form in brackets that the rest of the name continues ("leukocyte antigen (HLA)-DRB1",
# "Surfactant protein (SP)-A"): the short form and what follows it name the gene
_BRACKETED_SHORT = re.compile(r".*?\(([A-Za-z][A-Za-z0-9]{0,7})\)(\s*-?\s*\S.*)")
# an index in brackets ("beta(1)-integrin", "M(3)", "alpha(2B)"): NCBI Gene writes it unbracketed
_BRACKETED_INDEX = re.compile(r"\((\d{1,2}[A-Za-z]?|[A-Z])\)")
_TRAILING = re.compile(r"(?:\s+|-)(?:genes?|proteins?|mrnas?|transcripts?|products?|isoforms?|subunits?)$", re.I)
_NUMBER_GREEK = re.compile(r"(\d)[\s-]*(?:alpha|beta|gamma|delta|α|β|γ|δ)$", re.I)
# a receptor named by its ligand's symbol ("CCK1 receptor", "GnRH-receptor"): NCBI Gene names it with
# an "R" ("CCK1R", "GnRHR", "EPOR"); a ligand written as a word ("insulin receptor") makes no symbol
_RECEPTOR = re.compile(r"(?<=[A-Z0-9])(?:\s+|-)receptors?$")
# a Greek letter written as its Latin one after a symbol ("AMPKa", "IKKb", "PPARg")
_LATIN_GREEK = re.compile(r"(?<=[A-Z]{2})[abgd]$")
_GREEK_OF = {"a": "alpha", "b": "beta", "g": "gamma", "d": "delta"}
# gene_variants' rewriting steps, in order: each applies to every form the steps before it made
_FORM_STEPS = ((_BRACKETED_SHORT, r"\1\2"), (_BRACKETED_INDEX, r"\1"), (_PARENTHESES, ""), (_TRAILING, ""),
               (_NUMBER_GREEK, r"\1"), (_RECEPTOR, "R"), (_LATIN_GREEK, lambda m: _GREEK_OF[m[0]]))
_RANGE = re.compile(r"(.*?[A-Za-z])[\s-]?(\d{1,2}|[IVX]{1,4})((?:\s*[/,-]\s*(?:\d{1,2}|[IVX]{1,4}))+)")
_RANGE_PART = re.compile(r"\d{1,2}|[IVX]{1,4}")
_SPECIES_PREFIX = re.compile(r"[hmr](?=[A-Z][A-Z0-9-]{1,})")
# a microRNA as abstracts write it ("miR-138", "hsa-miR-483-3p", "microRNA-21", "miRNA21", "let-7b"):
# NCBI Gene names its gene MIR138 (human) / Mir138 (mouse), a family's loci MIR138-1, MIR138-2, and
# let-7b MIRLET7B; the arm ("-3p", "-5p", "*") is a product of the same gene
_MIRNA = re.compile(r"(?:[a-z]{3}-)?(?:micro-?RNA|miRNA|miR|mir)[\s-]?(\d+[a-z]?)(?:-(\d))?(?:-[35]p|\*)?", re.I)
_LET7 = re.compile(r"(?:[a-z]{3}-)?(?:micro-?RNA-?|miRNA-?|miR-?)?let-?7([a-k])(?:-(\d))?(?:-[35]p|\*)?", re.I)
_MIRNA_LOCI = 3             # a family's loci tried: MIR138-1 .. MIR138-3


def gene_variants(text: str) -> list[list[str]]:
    """The further forms of a gene mention tried, in order, when no exact key is known, as the
    writers of abstracts vary names (GNormPlus's variants), each a list of texts (several for a
    range): a bracketed short form with what follows it ("leukocyte antigen (HLA)-DRB1" →
    "HLA-DRB1"), with a bracketed index unbracketed ("beta(1)-integrin" → "beta1-integrin"), without
    bracketed parts ("nuclear factor (NF)-kappaB"), without a trailing "gene", "protein" or "mRNA",
    without a Greek letter after a number ("NRG-1 beta" → "NRG-1"), a symbol's receptor as the
    symbol and "R" ("CCK1 receptor" → "CCK1R"), a Latin letter after a symbol as the Greek one
    ("AMPKa" → "AMPKalpha"), without a species prefix ("hTERT" → "TERT"), and a range as its members
    ("Smad2/3" → "Smad2", "Smad3"; "PAK1-3" → "PAK1", "PAK2", "PAK3"). Each form is also looked up
    by its :func:`~graphmert.ner.vocabularies.genes.folded_key`."""
    out: list[list[str]] = []
    forms = [text]
    for pattern, repl in _FORM_STEPS:
        forms = list(dict.fromkeys([*forms, *(pattern.sub(repl, f).strip() for f in forms)]))
    forms += [_SPECIES_PREFIX.sub("", f, count=1) for f in forms if _SPECIES_PREFIX.match(f)]
    for f in dict.fromkeys(forms):
        if f and f != text:
            out.append([f])
        m = _RANGE.fullmatch(f)
        if m:
            out.append(_range_members(m.group(1), m.group(2), m.group(3)))
    return out + _mirna_forms(text)


def _mirna_forms(text: str) -> list[list[str]]:
    """A microRNA mention's NCBI Gene symbols (:data:`_MIRNA`): "miR-483-3p" → [MIR483], then its
    family's loci [MIR483-1, MIR483-2, MIR483-3]; "miR-138-2" → [MIR138-2]; "let-7b" → [MIRLET7B],
    then [MIRLET7B1, ...]; [] for any other text."""
    m, letter = _MIRNA.fullmatch(text), False
    if m is None:
        m, letter = _LET7.fullmatch(text), True
    if m is None:
        return []
    symbol = f"MIRLET7{m[1].upper()}" if letter else f"MIR{m[1].upper()}"
    sep = "" if letter else "-"
    if m[2]:
        return [[f"{symbol}{sep}{m[2]}"]]
    loci = [f"{symbol}{sep}{i}" for i in range(1, _MIRNA_LOCI + 1)]
    return [loci] if symbol == text else [[symbol], loci]


def _range_members(prefix: str, first: str, rest: str) -> list[str]:
    """"Smad", "1", "/5/8" → Smad1, Smad5, Smad8; "PAK", "1", "-3" → PAK1, PAK2, PAK3."""
    parts = [first, *_RANGE_PART.findall(rest)]
    numbers = [int(ROMAN.get(p.lower(), p)) if not p.isdigit() else int(p) for p in parts]
    if len(parts) == 2 and "-" in rest and 0 < numbers[1] - numbers[0] <= 6:
        numbers = list(range(numbers[0], numbers[1] + 1))
    return [f"{prefix}{n}" for n in numbers]
