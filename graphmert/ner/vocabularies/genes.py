"""Reference gene vocabularies: NCBI Gene names per species and ortholog groups, read from the
``ner.vocabularies`` sources of kinds ``gene_info``, ``gene_table``, ``homologene`` and
``rgd_orthologs`` (:class:`~graphmert.config.ner.VocabularySource`), and the look-up of a gene
mention in its species' names, as GNormPlus / GNorm2 do (:mod:`graphmert.ner.linking`, "Reference
genes").

Every name of a gene is indexed under its :func:`~graphmert.ner.vocabularies.surface.surface_key` and
under its :func:`folded_key` (Greek letter names shortened, roman numerals as digits: "TGF-beta 1",
"TGFB1" and "Tgfb-1" agree), each with a *rank*: 0 the official symbol, 1 a synonym, 2 the full
name or description, 3 another designation; a gene that is not protein-coding adds
:data:`NON_CODING_PENALTY`. A key's candidates are kept best first: rank, then whether the
gene's full name abbreviates to the key (:func:`initials`: "SP-D" is surfactant protein D's before
homeobox D13's synonym "SPD"), then the smaller NCBI number (the longer-known gene).

:meth:`GeneVocabulary.lookup` answers a key for a species: the best candidate of that species;
else the ortholog in that species (HomoloGene groups, RGD's rat–human–mouse table, joined into one
group per gene) of the best candidate of another species that has one ("survivin" is a mouse
designation only; the human gene is BIRC5); else nothing.

Written here, not taken from a library: GNormPlus and GNorm2 are Java/Python services with models
and dictionaries of their own to download, which this project may not do at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from graphmert.ner.vocabularies.errors import VocabularyError
from graphmert.ner.vocabularies.surface import normalize_surface
from graphmert.ner.vocabularies.tables import _open_table

GENE = "NCBIGene:"
TAXON = "NCBITaxon:"
NON_CODING_PENALTY = 4       # added to the rank of a gene whose type is not protein-coding
SYMBOL, SYNONYM, FULL_NAME, DESIGNATION = 0, 1, 2, 3
_GENE_INFO_COLUMNS = 16
_SHORT_GREEK = {"alpha": "a", "beta": "b", "gamma": "g", "delta": "d", "epsilon": "e", "kappa": "k",
                "zeta": "z", "theta": "q", "lambda": "l", "sigma": "s", "omega": "w"}
_GREEK_END = re.compile("(" + "|".join(_SHORT_GREEK) + ")$")
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6", "vii": "7", "viii": "8",
          "ix": "9", "x": "10"}
_FOLD_TOKEN = re.compile(r"[^\W\d_]+|\d+|\S")


def folded_key(form: str) -> str:
    """The key of a :func:`normalize_surface` form with each Greek letter name that ends a letter
    run shortened to its letter and each roman numeral I–X that is a word of its own written as a
    number, the runs joined without spaces: the second-tier key, tried when the exact key misses
    ("IL-1 beta" → "il1b", "TNFalpha" → "tnfa", "type II" → "type2"). Letter runs that merely
    contain a Greek name ("diabetes") keep it."""
    out = []
    for word in form.split():
        if word in _ROMAN:
            out.append(_ROMAN[word])
            continue
        out.extend(_GREEK_END.sub(lambda m: _SHORT_GREEK[m.group(1)], tok) for tok in _FOLD_TOKEN.findall(word))
    return "".join(out)


@dataclass
class GeneVocabulary:
    """Names → genes per species, and ortholog groups (see the module docstring).

    ``keys`` and ``folded`` map a key to its candidates, best first, as ``"taxon gene rank"`` entries
    joined by ``;`` (bare numbers: one string per key keeps half a million keys small); ``groups``
    maps a gene to its ortholog group's members, ``"taxon gene"`` entries joined by ``;``."""

    keys: dict[str, str] = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)

    # ---------------------------------------------------------------- look-ups
    @staticmethod
    def _candidates(entry: str) -> Iterator[tuple[str, str, int]]:
        for part in entry.split(";"):
            taxon, gene, rank = part.split(" ")
            yield TAXON + taxon, GENE + gene, int(rank)

    def taxon(self, gene: str) -> str | None:
        """A reference gene's species (an ``NCBITaxon:`` id), or None for a gene no source names."""
        entry = self.groups.get(gene)
        if entry is not None:
            number = gene[len(GENE):]
            for part in entry.split(";"):
                taxon, g = part.split(" ")
                if g == number:
                    return TAXON + taxon
        return self._taxa.get(gene)

    def ortholog(self, gene: str, species: str) -> str | None:
        """The gene of ``species`` in ``gene``'s ortholog group (the smallest number), or None."""
        entry = self.groups.get(gene)
        if entry is None:
            return None
        want = species[len(TAXON):]
        found = [int(g) for t, g in (p.split(" ") for p in entry.split(";")) if t == want]
        return GENE + str(min(found)) if found else None

    def lookup(self, key: str, species: str, folded: bool = False) -> tuple[str, int] | None:
        """(gene, rank) for ``key`` (a surface key, or with ``folded`` a :func:`folded_key`) as a
        gene of ``species``: the best candidate of that species, else the ortholog in it of the best
        candidate of another species that has one, else None."""
        entries = [self.folded.get(key), self.keys.get(key)] if folded else [self.keys.get(key)]
        entry = ";".join(e for e in entries if e)
        if not entry:
            return None
        candidates = sorted(self._candidates(entry), key=lambda c: c[2]) if folded else \
            list(self._candidates(entry))
        for taxon, gene, rank in candidates:
            if taxon == species:
                return gene, rank
        for taxon, gene, rank in candidates:
            other = self.ortholog(gene, species)
            if other is not None:
                return other, rank
        return None

    def __post_init__(self) -> None:
        self._taxa: dict[str, str] = {}
        for entry in self.keys.values():
            for taxon, gene, _ in self._candidates(entry):
                self._taxa.setdefault(gene, taxon)
        self.taxa: frozenset[str] = frozenset(self._taxa.values())    # the species the sources name genes of

    def names_gene(self, key: str) -> bool:
        """Whether ``key`` (a surface key) is a symbol, synonym or full name (rank at most
        :data:`FULL_NAME`) of a protein-coding gene of some species."""
        entry = self.keys.get(key)
        return entry is not None and any(rank <= FULL_NAME for _, _, rank in self._candidates(entry))

    def genes(self) -> frozenset[str]:
        """Every gene a look-up can answer: those the names sources name, and their orthologs."""
        return frozenset([*self._taxa, *self.groups])

    def stats(self) -> dict:
        return {"reference_gene_keys": len(self.keys), "reference_gene_folded_keys": len(self.folded),
                "reference_genes": len(self._taxa), "reference_genes_with_orthologs": len(self.groups)}

    def to_json(self) -> dict:
        return {"keys": self.keys, "folded": self.folded, "groups": self.groups}

    @classmethod
    def from_json(cls, data: dict) -> "GeneVocabulary":
        parts = [data[k] for k in ("keys", "folded", "groups")]
        if not all(isinstance(p, dict) for p in parts):
            raise TypeError("reference_genes: keys, folded and groups must be mappings")
        return cls(*parts)


# -------------------------------------------------------------------- reading the sources
_Gene = tuple[str, str, list[tuple[str, int]], bool]        # (taxon number, gene number, names, coding)


def _rows(path: Path, what: str, columns: int, header: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, columns) of every data row of a tab-separated ``what`` file whose first line
    starts with ``header``; lines starting with "#" after it and blank lines are skipped. A row
    without ``columns`` columns is an error naming the file and the line."""
    with _open_table(path, what) as f:
        first = f.readline()
        if not first.startswith(header):
            raise VocabularyError(f"{path}: line 1: expected a {what} header starting with {header!r}, "
                              f"got {first[:60]!r}")
        for n, line in enumerate(f, start=2):
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != columns:
                raise VocabularyError(f"{path}: line {n}: expected {columns} tab-separated columns in a "
                                  f"{what}, got {len(cols)}")
            yield n, cols


def _number(value: str, path: Path, n: int, what: str) -> str:
    if not value.isdigit():
        raise VocabularyError(f"{path}: line {n}: {what} {value!r} is not a number")
    return value


def _split(value: str, sep: str = "|") -> list[str]:
    return [v for v in value.split(sep) if v and v != "-"]


def read_gene_info(path: str | Path) -> Iterator[_Gene]:
    """The genes of an NCBI ``gene_info`` file: symbol (and the nomenclature authority's), synonyms,
    full name and description, other designations, each with its rank."""
    path = Path(path)
    for n, c in _rows(path, "gene_info file", _GENE_INFO_COLUMNS, "#tax_id"):
        taxon, gene = _number(c[0], path, n, "tax_id"), _number(c[1], path, n, "GeneID")
        names = [(c[2], SYMBOL), (c[10], SYMBOL), *((s, SYNONYM) for s in _split(c[4])),
                 (c[11], FULL_NAME), (c[8], FULL_NAME), *((s, DESIGNATION) for s in _split(c[13]))]
        yield taxon, gene, [(t, r) for t, r in names if t and t != "-"], c[9] == "protein-coding"


def read_gene_table(path: str | Path, taxon: str) -> Iterator[_Gene]:
    """The genes of a table with ``GeneID``, ``Symbol`` and ``Synonyms`` columns (the shared rat
    table), all of ``taxon``; protein-coding is not known, so every gene counts as coding."""
    path = Path(path)
    with _open_table(path, "gene table") as f:
        header = f.readline().rstrip("\r\n").lstrip("#").split("\t")
    want = ("GeneID", "Symbol", "Synonyms")
    missing = [w for w in want if w not in header]
    if missing:
        raise VocabularyError(f"{path}: line 1: a gene table needs the columns {list(want)}; missing {missing}")
    i, s, y = (header.index(w) for w in want)
    number = taxon[len(TAXON):]
    for n, c in _rows(path, "gene table", len(header), "#" if header else ""):
        gene = _number(c[i], path, n, "GeneID")
        yield number, gene, [(c[s], SYMBOL), *((x, SYNONYM) for x in _split(c[y]))], True


def read_homologene(path: str | Path) -> Iterator[list[tuple[str, str]]]:
    """HomoloGene's groups: the (taxon number, gene number) members of each group id, in file order
    (the file lists a group's rows together)."""
    path = Path(path)
    group, members = None, []
    for n, c in _rows(path, "homologene table", 4, "#HID"):
        hid = _number(c[0], path, n, "HID")
        if hid != group and members:
            yield members
            members = []
        group = hid
        members.append((_number(c[1], path, n, "tax_id"), _number(c[2], path, n, "GeneID")))
    if members:
        yield members


def read_rgd_orthologs(path: str | Path) -> Iterator[list[tuple[str, str]]]:
    """RGD's ortholog file: per row, the rat gene and its human and mouse orthologs (NCBI ids,
    ``|``-separated where several), as (taxon number, gene number) members."""
    path = Path(path)
    with _open_table(path, "RGD ortholog file") as f:
        lines = (line for line in f if not line.startswith("#"))
        header = next(lines, "").rstrip("\r\n").split("\t")
    columns = {"RAT_GENE_NCBI_GENE_ID": "10116", "HUMAN_ORTHOLOG_NCBI_GENE_ID": "9606",
               "MOUSE_ORTHOLOG_NCBI_GENE_ID": "10090"}
    missing = [k for k in columns if k not in header]
    if missing:
        raise VocabularyError(f"{path}: an RGD ortholog file needs the columns {missing}")
    at = {header.index(k): t for k, t in columns.items()}
    for n, c in _rows(path, "RGD ortholog file", len(header), "#"):
        if c == header:                  # the header follows the comment lines
            continue
        yield [(t, _number(g, path, n, "NCBI gene id")) for i, t in at.items() for g in _split(c[i])]


_PER_TAXON = 5          # candidates a key keeps per species (best first): "p", "a" name hundreds of genes


_INITIALS_WORD = re.compile(r"[A-Za-z0-9]+")


def initials(full_name: str) -> str:
    """The key a full name abbreviates to: each word's first letter, a word with a digit or of one
    letter whole ("surfactant protein D" → "spd", "surfactant protein A1" → "spa1")."""
    words = _INITIALS_WORD.findall(full_name)
    return "".join(w.lower() if len(w) == 1 or any(c.isdigit() for c in w) else w[0].lower() for w in words)


def _index(genes: Iterable[_Gene]) -> tuple[dict[str, str], dict[str, str]]:
    """``keys`` and ``folded`` of a :class:`GeneVocabulary` from the genes' names. Candidates of
    one rank are ordered by whether the gene's full name abbreviates to the key ("SP-D" is SFTPD's,
    surfactant protein D, before HOXD13's synonym "SPD"), then by the smaller NCBI number."""
    best: dict[str, dict[tuple[str, str], int]] = {}          # key → (taxon, gene) → best rank
    fold: dict[str, dict[tuple[str, str], int]] = {}
    abbreviates: set[tuple[str, str, str]] = set()            # (key, taxon, gene): its full name's initials
    for taxon, gene, names, coding in genes:
        penalty = 0 if coding else NON_CODING_PENALTY
        abbreviates.update((initials(t), taxon, gene) for t, r in names if r == FULL_NAME)
        for text, rank in names:
            form = normalize_surface(text)
            key = form.replace(" ", "")
            if not key:
                continue
            slot = best.setdefault(key, {})
            slot[(taxon, gene)] = min(rank + penalty, slot.get((taxon, gene), 99))
            folded = folded_key(form)
            if folded != key:
                slot = fold.setdefault(folded, {})
                slot[(taxon, gene)] = min(rank + penalty, slot.get((taxon, gene), 99))

    def encode(table: dict[str, dict[tuple[str, str], int]]) -> dict[str, str]:
        out = {}
        for key, cands in table.items():
            ordered = sorted(cands.items(), key=lambda kv: (kv[1], (key, *kv[0]) not in abbreviates,
                                                            int(kv[0][1])))
            kept, per = [], {}
            for (taxon, gene), rank in ordered:
                per[taxon] = per.get(taxon, 0) + 1
                if per[taxon] <= _PER_TAXON:
                    kept.append(f"{taxon} {gene} {rank}")
            out[key] = ";".join(kept)
        return out

    return encode(best), encode(fold)


def _ortholog_groups(groups: Iterable[list[tuple[str, str]]], taxa: set[str]) -> dict[str, str]:
    """Gene id → its group's members (``"taxon gene"`` entries joined by ``;``), for the genes of
    ``taxa`` (taxon numbers), groups that share a gene joined (union–find): HomoloGene's and RGD's
    groups of the same gene become one."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(x: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for members in groups:
        kept = [m for m in members if m[0] in taxa]
        for a, b in zip(kept, kept[1:]):
            parent[root(a)] = root(b)
    by_root: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for m in parent:
        by_root.setdefault(root(m), []).append(m)
    out = {}
    for members in by_root.values():
        if len({t for t, _ in members}) > 1:
            entry = ";".join(f"{t} {g}" for t, g in sorted(members, key=lambda m: (int(m[0]), int(m[1]))))
            out.update({GENE + g: entry for _, g in members})
    return out


GENE_KINDS = ("gene_info", "gene_table", "homologene", "rgd_orthologs")


def build_gene_vocabulary(sources: Sequence) -> GeneVocabulary | None:
    """The :class:`GeneVocabulary` of the gene kinds among ``sources``
    (:class:`~graphmert.config.ner.VocabularySource`), or None without a names source. Ortholog
    groups keep the species that the names sources cover."""
    names = [s for s in sources if s.kind in ("gene_info", "gene_table")]
    if not names:
        return None
    taxa: set[str] = set()

    def genes() -> Iterator[_Gene]:
        for s in names:
            for gene in read_gene_info(s.path) if s.kind == "gene_info" else read_gene_table(s.path, s.taxon):
                taxa.add(gene[0])
                yield gene

    keys, folded = _index(genes())
    groups = [m for s in sources if s.kind in ("homologene", "rgd_orthologs")
              for m in (read_homologene(s.path) if s.kind == "homologene" else read_rgd_orthologs(s.path))]
    return GeneVocabulary(keys, folded, _ortholog_groups(groups, taxa))


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
    by its :func:`folded_key`."""
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
    numbers = [int(_ROMAN.get(p.lower(), p)) if not p.isdigit() else int(p) for p in parts]
    if len(parts) == 2 and "-" in rest and 0 < numbers[1] - numbers[0] <= 6:
        numbers = list(range(numbers[0], numbers[1] + 1))
    return [f"{prefix}{n}" for n in numbers]
