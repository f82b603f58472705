"""Reference gene vocabularies: NCBI Gene names per species and ortholog groups, read from the
``ner.vocabularies`` sources of kinds ``gene_info``, ``gene_table``, ``homologene`` and
``rgd_orthologs`` (:class:`~graphmert.config.ner.VocabularySource`), and the look-up of a gene
mention in its species' names, as GNormPlus / GNorm2 do (:mod:`graphmert.ner.linking`, "Reference
genes"; the further forms of a mention it tries are in :mod:`graphmert.ner.vocabularies.gene_forms`).

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
ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6", "vii": "7", "viii": "8",
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
        if word in ROMAN:
            out.append(ROMAN[word])
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
