"""Entity linking: a recognised mention's text and Biolink category → normalised ids (issue #19).

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
4. **fuzzy** — only when all of the above fail, and for keys of 4+ characters: character 3-gram
   TF-IDF (``char_wb``) cosine nearest neighbour among the names of the same category, accepted at
   ``score >= fuzzy_threshold``. A neighbour must keep the query's numbers, single letters, Greek
   letter names and roman numerals (:func:`_markers`: "bmp 5" never becomes "bmp 4"); the best of
   the 10 nearest that does is taken. The default threshold was chosen on held-out BioRED-train
   documents (``benchmarks/linking.py``).

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

**Orthologs.** Gene ids are species-specific, and a form may be annotated only in other species'
papers ("tumor necrosis factor-alpha" in rat papers, where a mouse paper needs mouse Tnf). The
linker learns which genes of two species are the same gene from the names they share
(:func:`_gene_orthologs`): a surface key whose winning id in one species' votes (or in the seed KG's
names) differs from its winning id in another's pairs the two ids. In a document of a known species,
a gene look-up whose id belongs to another species (a gene's taxon: the species of the training
documents that annotate it) takes that id's ortholog in the document's species instead. Without an
ortholog, a dictionary answer stays (the training documents annotated that form so), unless
:attr:`EntityLinker.strict_species` is set (``extract.strict_gene_species``): then, like a KG name,
it is passed over for the next look-up step, and the mention may stay unlinked, a text node. On
recognised raw text a foreign-species dictionary answer is more often wrong than right (the
held-out raw slice: 28 wrong and 8 right gene entities; docs/NER.md).

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

from __future__ import annotations

import copy
import csv
import gzip
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from graphmert.config import NAME_CATEGORIES, NERConfig
from graphmert.corpus.document import Abbreviation, Document
from graphmert.errors import GraphmertError
from graphmert.io import atomic_path, check_format
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import mention_category
from graphmert.kg.tsv import unlimited_csv_fields
from graphmert.ner.abbreviations import abbreviation_pairs, short_form_variants

__all__ = [
    "LinkerError",
    "LinkResult",
    "EntityLinker",
    "NAMESPACES",
    "KG_CATEGORY_ALIASES",
    "SPECIES_CATEGORIES",
    "FORMAT_VERSION",
    "DEFAULT_FUZZY_THRESHOLD",
    "normalize_surface",
    "surface_key",
    "read_xref_tables",
    "NAME_CATEGORIES",
    "word_runs",
    "run_key",
]

FORMAT = "graphmert.entity_linker"
FORMAT_VERSION = 3                 # 2: kg_others; 3: name_counts

# ner.fuzzy_threshold's default, chosen by benchmarks/linking.py on the held-out 20% of BioRED-train
# documents (document-level normalisation F1, gold spans); BioRED dev was not used.
DEFAULT_FUZZY_THRESHOLD = NERConfig.fuzzy_threshold

NAMESPACES: dict[str, str] = {
    "biolink:Gene": "NCBIGene:",
    "biolink:Disease": "MESH:",
    "biolink:ChemicalEntity": "MESH:",
    "biolink:OrganismTaxon": "NCBITaxon:",
    "biolink:CellLine": "Cellosaurus:",
}
KG_CATEGORY_ALIASES: dict[str, str] = {"biolink:PhenotypicFeature": "biolink:Disease"}
# categories whose ids are species-specific: the dictionary also keeps votes per document species
SPECIES_CATEGORIES = frozenset({"biolink:Gene"})
NAME_MAX_WORDS = 6            # the longest word run tried as a seed-KG name
_GENE = "biolink:Gene"
_TAXON = "biolink:OrganismTaxon"
_KG_SOURCE = "kg"             # the seed KG's names, as a source of gene orthologs (_gene_orthologs)

_FUZZY_MIN_CHARS = 4          # shorter keys (gene symbols, acronyms) are never matched fuzzily
_FUZZY_CACHE_SIZE = 100_000
_C = TypeVar("_C")
_FUZZY_TOP_K = 10
_WORD = re.compile(r"[^\W\d_]+")
_MAPPING_COLUMNS = ("mapping", "method")
_TARGET_COLUMNS = ("mesh_id", "xref_mesh")
_NAME_ID_COLUMNS = {"id": "", "geneId": "NCBIGene:"}    # id column → prefix of a bare id
_NAME_COLUMNS = ("name", "geneName", "synonyms")
_RUN_WORD = re.compile(r"[A-Za-z0-9]+")
_RUN_JOIN = re.compile(r"[ -]|, ")


class LinkerError(GraphmertError, ValueError):
    """A bad entity-linker file or cross-reference table; the message names the file."""


@dataclass(frozen=True)
class LinkResult:
    ids: tuple[str, ...]     # the entities named (primary namespace first; usually one); () unlinked
    score: float             # 1.0 for exact/dictionary hits, cosine for fuzzy, 0.0 unlinked
    how: str                 # "dictionary" | "kg" | "abbreviation" | "fuzzy" | "none"
    xrefs: tuple[str, ...] = ()  # other ids of ids[0] (cross-reference tables), not entities


UNLINKED = LinkResult((), 0.0, "none")


# --------------------------------------------------------------------------------------------------
# Surface normalisation
# --------------------------------------------------------------------------------------------------

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi",
    "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau", "υ": "upsilon",
    "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}
_MARKS = str.maketrans("", "", "®™©")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'", "′": "'"})
_POSSESSIVE = re.compile(r"'s\b")
_SEPARATORS = re.compile(r"[\s\-‐‑‒–—―−/_]+")
_EDGE = " .,;:!?\"'*"
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))


def _encloses(s: str, o: str, c: str) -> bool:
    """Whether the first character ``o`` of ``s`` is closed by its last character ``c``."""
    depth = 0
    for i, ch in enumerate(s):
        depth += (ch == o) - (ch == c)
        if depth == 0 and i < len(s) - 1:
            return False
    return depth == 0


def _trim(s: str) -> str:
    """Strip surrounding punctuation, enclosing brackets and unbalanced edge brackets, repeatedly."""
    prev = None
    while s != prev:
        prev = s
        s = s.strip(_EDGE)
        for o, c in _BRACKETS:
            if s.startswith(o) and s.endswith(c) and _encloses(s, o, c):
                s = s[1:-1]
            elif s.startswith(o) and s.count(o) > s.count(c):
                s = s[1:]
            elif s.endswith(c) and s.count(c) > s.count(o):
                s = s[:-1]
    return s


def normalize_surface(text: str) -> str:
    """The look-up form of a surface string (see the module docstring); words joined by one space."""
    s = unicodedata.normalize("NFKC", text.translate(_MARKS)).casefold()
    s = "".join(_GREEK.get(c, c) for c in s).translate(_QUOTES)
    s = _POSSESSIVE.sub("", s).replace("'", "")
    return " ".join(_trim(_SEPARATORS.sub(" ", s)).split())


def surface_key(text: str) -> str:
    """:func:`normalize_surface` without spaces: the key of every exact table."""
    return normalize_surface(text).replace(" ", "")


def _singular_keys(text: str, key: str) -> list[str]:
    """Keys of the singular of a plural form: only for text ending in a lower-case "s" (acronyms such
    as "ALS" are not plurals) and keys of four or more characters, not ending in "ss"."""
    if not text.rstrip(_EDGE + ")]}").endswith("s") or len(key) < 4 or key.endswith("ss"):
        return []
    out = [key[:-3] + "y"] if key.endswith("ies") else []
    out.append(key[:-1])
    if key.endswith("es"):
        out.append(key[:-2])
    return out


_GREEK_NAMES = "|".join(sorted(set(_GREEK.values()), key=len, reverse=True))
_MARKER = re.compile(r"\d+|(?<![a-z])(?:[a-z]|" + _GREEK_NAMES + r"|i{1,3}|iv|vi{0,3})(?![a-z])")


def _markers(form: str) -> list[str]:
    """The tokens a fuzzy match must not change: numbers, single letters, Greek letter names and
    roman numerals ("type 1" ≠ "type 2", "IL-6" ≠ "IL-8", "hepatitis b" ≠ "hepatitis c"), sorted."""
    return sorted(_MARKER.findall(form))


def _uninverted(name: str) -> str | None:
    """MeSH's inverted names read back: "Leukemia, Myeloid, Acute" → "Acute Myeloid Leukemia"."""
    parts = [p.strip() for p in name.split(", ")]
    if len(parts) < 2 or not all(parts):
        return None
    return " ".join(reversed(parts))


# --------------------------------------------------------------------------------------------------
# Cross-reference tables
# --------------------------------------------------------------------------------------------------


def _open_table(path: Path, what: str):
    if not path.is_file():
        raise LinkerError(f"{path}: {what} not found")
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8", newline="") if gz else \
        open(path, encoding="utf-8", newline="")


def _read_tsv(path: Path, what: str, columns: Callable[[list[str]], _C]
              ) -> Iterator[tuple[_C, list[str]]]:
    """``(columns(header), row)`` for every row of the TSV table (a ``what``) at ``path``, which has
    a header; ``columns`` picks the columns from the header or raises :class:`LinkerError`; blank
    lines are skipped."""
    with _open_table(path, what) as f, unlimited_csv_fields():
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = [h.strip() for h in next(rows)]
        except StopIteration:
            raise LinkerError(f"{path}: line 1: empty file, expected a header") from None
        except UnicodeDecodeError as e:
            raise LinkerError(f"{path}: not UTF-8 text ({e})") from None
        picked = columns(header)
        try:
            for row in rows:
                if len(row) != len(header):
                    if any(x.strip() for x in row):
                        raise LinkerError(f"{path}: line {rows.line_num}: expected {len(header)} "
                                          f"tab-separated fields, found {len(row)}")
                    continue
                yield picked, row
        except UnicodeDecodeError as e:
            raise LinkerError(f"{path}: line {rows.line_num + 1}: not UTF-8 text ({e})") from None


def _read_xref_table(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(source id, target ids)`` rows of one table (fields of any length); propagated mappings
    are skipped."""
    def columns(header: list[str]) -> tuple[int, int, int | None]:
        target = next((header.index(c) for c in _TARGET_COLUMNS if c in header), None)
        if target is None or len(header) < 2:
            raise LinkerError(f"{path}: line 1: expected a source id column and one of "
                              f"{list(_TARGET_COLUMNS)}; the header has {header}")
        mapping = next((header.index(c) for c in _MAPPING_COLUMNS if c in header), None)
        return header.index("id") if "id" in header else 0, target, mapping

    for (source, target, mapping), row in _read_tsv(path, "cross-reference table", columns):
        if mapping is not None and row[mapping].strip().startswith("propagated"):
            continue
        targets = [t.strip() for t in row[target].split("|") if t.strip()]
        if row[source].strip() and targets:
            yield row[source].strip(), targets


def _read_name_table(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(id, names)`` rows of one names table (:func:`read_name_tables`)."""
    def columns(header: list[str]) -> tuple[int, str, int]:
        ident = next((c for c in _NAME_ID_COLUMNS if c in header), None)
        name = next((header.index(c) for c in _NAME_COLUMNS if c in header), None)
        if ident is None or name is None:
            raise LinkerError(f"{path}: line 1: expected an id column ({' or '.join(_NAME_ID_COLUMNS)}) "
                              f"and a name column ({' or '.join(_NAME_COLUMNS)}); the header has {header}")
        return header.index(ident), _NAME_ID_COLUMNS[ident], name

    for (ident, prefix, name), row in _read_tsv(path, "names table", columns):
        node = row[ident].strip()
        names = [n.strip() for n in row[name].split("|") if n.strip()]
        if node and names:
            yield (node if ":" in node else prefix + node), names


def read_name_tables(paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """Node id → more names of it (first seen first), from TSV tables with a header.

    A table has an id column, ``id`` (CURIEs), or ``geneId`` (bare NCBI Gene numbers, as in the
    shared seed KG's ``upstream/disgenet_v3.0_curated_gene_disease_associations.txt.gz``), and a
    name column, ``name``, ``geneName`` or ``synonyms`` (``|`` separates several names). The
    linker treats the names of seed-KG nodes as their synonyms. Gzipped tables are read
    transparently.
    """
    out: dict[str, list[str]] = {}
    for p in paths:
        for node, names in _read_name_table(Path(p)):
            known = out.setdefault(node, [])
            known.extend(n for n in names if n not in known)
    return out


def read_xref_tables(paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """Source id → mapped ids (file order, first table first) from TSV tables with a header.

    A table has a source id column (``id`` if present, else the first column) and a target column
    ``mesh_id`` (``doid_to_mesh.tsv``, ``drugbank_to_mesh.tsv``, ``umls_to_mesh_disgenet.tsv``) or
    ``xref_mesh`` (the seed KG's ``nodes.tsv.gz``); ``|`` separates several targets. Rows whose
    ``mapping`` / ``method`` column starts with "propagated" (a descendant's xref, not an
    equivalence) are skipped. Gzipped tables are read transparently.
    """
    out: dict[str, list[str]] = {}
    for p in paths:
        for src, targets in _read_xref_table(Path(p)):
            known = out.setdefault(src, [])
            known.extend(t for t in targets if t not in known)
    return out


# --------------------------------------------------------------------------------------------------
# Building the tables
# --------------------------------------------------------------------------------------------------

Votes = dict[str, dict[str, Counter]]          # category → key → Counter(ids tuple)


def _namespaced(ids: Sequence[str], namespace: str) -> tuple[str, ...] | None:
    """Ids in the namespace first (their order kept), then the others; None without one inside."""
    inside = [i for i in ids if i.startswith(namespace)]
    if not inside:
        return None
    return tuple(dict.fromkeys(inside + [i for i in ids if not i.startswith(namespace)]))


def _winner(counts: Counter) -> Any:
    """The most frequent entry (ties: the smallest)."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _dominant_species(ids: Iterable[str]) -> str | None:
    """The most frequent taxon id (ties: the smallest), or None."""
    counts = Counter(i for i in ids if i.startswith(NAMESPACES[_TAXON]))
    return _winner(counts) if counts else None


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


def word_runs(text: str, max_words: int = NAME_MAX_WORDS, join: re.Pattern = _RUN_JOIN
              ) -> list[tuple[int, int]]:
    """(start, end) of every run of 1..``max_words`` ASCII words (letters and digits) of ``text``
    joined by what ``join`` matches (by default a space, a hyphen or ", "): the spans tried as
    seed-KG names (:mod:`graphmert.ner.gazetteer`)."""
    words = list(_RUN_WORD.finditer(text))
    out = []
    for i in range(len(words)):
        for j in range(i, min(i + max_words, len(words))):
            if j > i and not join.fullmatch(text[words[j - 1].end():words[j].start()]):
                break
            out.append((words[i].start(), words[j].end()))
    return out


def run_key(run: str) -> str:
    """:func:`surface_key` of a :func:`word_runs` run, computed directly: for ASCII letters and
    digits joined by " ", "-" or ", " the key is the lower-cased run without spaces and hyphens, so
    the Unicode normalisation of :func:`surface_key` is skipped for the millions of runs the linker
    keys in its training documents (:func:`_name_counts`)."""
    return run.lower().replace(" ", "").replace("-", "")


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


def _node_primary(node_id: str, namespace: str, xrefs: dict[str, list[str]]) -> str | None:
    if node_id.startswith(namespace):
        return node_id
    return next((t for t in xrefs.get(node_id, ()) if t.startswith(namespace)), None)


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
        cat = KG_CATEGORY_ALIASES.get(node.category, node.category)
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


def _gene_orthologs(species: dict[str, Votes], kg: dict[str, dict[str, str]]
                    ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(gene id → its taxon, gene id → taxon → that taxon's gene of the same name), learnt from the
    surface forms (module docstring, "Orthologs").

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


def _reverse_xrefs(xrefs: dict[str, list[str]], kg: SeedKG | None) -> dict[str, list[str]]:
    """Mapped id → the source ids mapped to it (the xrefs a result lists after its primary id).

    With a KG, only source ids that are KG nodes are kept, and only when the mapped id is not a node
    of another category (DisGeNET maps a few disease CUIs named like a chemical, e.g. "INSULIN", to
    the chemical's descriptor; mapped CUIs are no KG nodes)."""
    def category(i: str) -> str | None:
        node = kg.nodes.get(i) if kg is not None else None
        return None if node is None else KG_CATEGORY_ALIASES.get(node.category, node.category)

    out: dict[str, list[str]] = {}
    for src, targets in xrefs.items():
        if kg is not None and src not in kg.nodes:
            continue
        for t in targets:
            if category(t) in (None, category(src)):
                out.setdefault(t, []).append(src)
    return {t: sorted(s) for t, s in sorted(out.items())}


# --------------------------------------------------------------------------------------------------
# Fuzzy index
# --------------------------------------------------------------------------------------------------


class _FuzzyIndex:
    """Character 3-gram TF-IDF over one category's names; fitted on the first query."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._vectorizer = None
        self._matrix = None

    def _fit(self) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=False,
                                           dtype=np.float32)
        self._matrix = self._vectorizer.fit_transform(self.names).tocsr()

    def best(self, query: str) -> tuple[int, float]:
        """Index of the nearest name with the same :func:`_markers` as ``query`` among the
        ``_FUZZY_TOP_K`` most similar, and its cosine similarity; (-1, 0.0) if there is none."""
        if not self.names:
            return -1, 0.0
        if self._vectorizer is None:
            self._fit()
        q = self._vectorizer.transform([query])
        if q.nnz == 0:
            return -1, 0.0
        scores = (self._matrix @ q.T).toarray().ravel()
        k = min(_FUZZY_TOP_K, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        want = _markers(query)
        for i in sorted(top.tolist(), key=lambda j: (-scores[j], j)):
            if scores[i] > 0 and _markers(self.names[i]) == want:
                return i, float(scores[i])
        return -1, 0.0


# --------------------------------------------------------------------------------------------------
# The linker
# --------------------------------------------------------------------------------------------------


@dataclass
class _Tables:
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


class EntityLinker:
    """Links mention texts of a category to normalised ids (see the module docstring).

    Build it with :meth:`build`, or :meth:`load` a saved one. ``fuzzy_threshold`` may be changed on
    an instance (a value above 1 turns the fuzzy step off).
    """

    def __init__(self, tables: _Tables, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD) -> None:
        self._tables = tables
        self.fuzzy_threshold = float(fuzzy_threshold)
        dictionary = _vote_winners(tables.dictionary)
        dictionary_plural = _vote_winners(tables.dictionary_plural)
        self._species = {sp: _vote_winners(v) for sp, v in tables.species.items()}
        kg = {c: {k: (v,) for k, v in t.items()} for c, t in tables.kg.items()}
        kg_plural = {c: {k: (v,) for k, v in t.items()} for c, t in tables.kg_plural.items()}
        # (table, how, look up the plural-stripped keys of the query instead of the key itself,
        #  the other ids of a key after its winner)
        others = tables.kg_others
        self._steps = ((dictionary, "dictionary", False, {}), (kg, "kg", False, others),
                       (dictionary_plural, "dictionary", False, {}), (dictionary, "dictionary", True, {}),
                       (kg_plural, "kg", False, {}), (kg, "kg", True, others))
        self._fuzzy = {c: _FuzzyIndex(n) for c, n in tables.names.items()}
        self._fuzzy_cache: dict[tuple[str, str], tuple[int, float]] = {}
        self._gene_taxa, self._orthologs = _gene_orthologs(tables.species, tables.kg)
        self._kg_genes = frozenset([*tables.kg.get(_GENE, {}).values(),
                                    *(i for ids in others.get(_GENE, {}).values() for i in ids)])
        #: the taxon of the seed KG's genes, or None: genes of other species' documents skip the KG
        self.kg_species: str | None = None
        #: whether a dictionary gene of another species than the document's, with no ortholog of its
        #: species, is passed over like a KG gene (True) or kept (False: the training documents say so)
        self.strict_species: bool = False

    @classmethod
    def build(cls, documents: Iterable[Document], kg: SeedKG | None,
              xref_tables: Sequence[str | Path] = (), *,
              name_tables: Sequence[str | Path] = (),
              fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
              exclude: Collection[str] = ()) -> "EntityLinker":
        """Learn the dictionary from gold-annotated ``documents`` (those whose id is in ``exclude``
        are skipped), index the names of ``kg`` (optional) and those ``name_tables`` give its
        nodes (:func:`read_name_tables`), map non-namespace KG ids through ``xref_tables``
        (:func:`read_xref_tables`), and count how often the documents annotate the KG's disease
        and chemical names where they occur (:meth:`kg_name`)."""
        xrefs = read_xref_tables(xref_tables)
        more_names = read_name_tables(name_tables)
        documents, exclude = list(documents), frozenset(exclude)
        learnt = _learn_dictionary(documents, exclude)
        kg_exact, kg_plural, kg_others, kg_names, unmapped = (({}, {}, {}, {}, {}) if kg is None
                                                              else _kg_tables(kg, xrefs, more_names))
        names = learnt.names
        for cat, n in kg_names.items():
            names.setdefault(cat, set()).update(n)
        named = 0 if kg is None else sum(1 for i in more_names if i in kg.nodes)
        info = {**learnt.seen, "kg_nodes_unmapped": unmapped,
                "xref_tables": [str(p) for p in xref_tables],
                "name_tables": [str(p) for p in name_tables],
                "name_table_ids": {"kg_nodes": named, "not_in_kg": len(more_names) - named}}
        tables = _Tables(learnt.votes, learnt.plural, learnt.species, kg_exact, kg_others, kg_plural,
                         _reverse_xrefs(xrefs, kg), {c: sorted(n - {""}) for c, n in sorted(names.items())},
                         info, _name_counts(documents, exclude, kg_exact))
        return cls(tables, fuzzy_threshold)

    # ------------------------------------------------------------------ look-ups
    def _matches(self, category: str, key: str, text: str, species: str | None
                 ) -> Iterator[tuple[tuple[str, ...], str]]:
        """(ids, how) of every look-up step that knows ``key`` (or its singulars), in step order; a
        KG key that several nodes name yields its winner, then each other id."""
        singulars = _singular_keys(text, key)
        steps = self._steps
        if species in self._species and category in SPECIES_CATEGORIES:
            own = self._species[species]
            steps = ((own, "dictionary", False, {}), (own, "dictionary", True, {}), *steps)
        for table, how, strip_plural, others in steps:
            keys, more = table.get(category, {}), others.get(category, {})
            for k in (singulars if strip_plural else (key,)):
                if k in keys:
                    yield keys[k], how
                    yield from (((i,), how) for i in more.get(k, ()))

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

    def gene_taxon(self, gene: str) -> str | None:
        """A gene id's taxon: the species of the training documents that annotate it, else, for a
        seed-KG gene, :attr:`kg_species`; None when neither is known."""
        return self._gene_taxa.get(gene) or (self.kg_species if gene in self._kg_genes else None)

    def _in_species(self, ids: tuple[str, ...], species: str, keep: bool) -> tuple[str, ...] | None:
        """``ids`` of a gene as a gene of ``species``: unchanged when the primary id's taxon is that
        species or unknown, else the ortholog of ``species`` (:func:`_gene_orthologs`), else
        unchanged with ``keep`` (a dictionary answer, unless :attr:`strict_species`) and None without
        (a KG name)."""
        taxon = self.gene_taxon(ids[0])
        if taxon is None or taxon == species:
            return ids
        own = self._orthologs.get(ids[0], {})
        target = own.get(species) or (own.get(_KG_SOURCE) if species == self.kg_species else None)
        return (target,) if target else (ids if keep else None)

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
        if found is not None:
            return self._result(found[0], 1.0, found[1])
        if len(key) < _FUZZY_MIN_CHARS or self.fuzzy_threshold > 1.0:
            return UNLINKED
        i, score = self._nearest(category, normalize_surface(text))
        if i < 0 or score < self.fuzzy_threshold:
            return UNLINKED
        name = self._tables.names[category][i]
        found = self._exact(category, surface_key(name), name, species)
        if found is None:               # a gene of another species, with no ortholog of the document's
            return UNLINKED
        return self._result(found[0], round(score, 6), "fuzzy")

    def known_ids(self) -> frozenset[str]:
        """Every id a look-up can answer: those of the dictionary (all species, plural forms too) and
        the seed KG's namespace ids. Fuzzy, ortholog and abbreviation links answer with these too, so
        a gold id outside them is one no mention can be linked to (``benchmarks/raw_pairs.py``)."""
        t = self._tables
        out = {i for votes in (t.dictionary, t.dictionary_plural, *t.species.values())
               for keys in votes.values() for counts in keys.values() for ids in counts for i in ids}
        out.update(i for keys in (*t.kg.values(), *t.kg_plural.values()) for i in keys.values())
        return frozenset(out)

    def dictionary_categories(self, key: str) -> frozenset[str]:
        """The categories the training documents annotate ``key`` (a :func:`surface_key`) as."""
        return frozenset(c for c, keys in self._tables.dictionary.items() if key in keys)

    def kg_gene_symbol(self, key: str) -> bool:
        """Whether ``key`` (a :func:`surface_key`) names a seed-KG gene and no training document
        annotates it as another category (:func:`graphmert.ner.gazetteer.symbol_mentions`)."""
        return key in self._tables.kg.get(_GENE, {}) and self.dictionary_categories(key) <= {_GENE}

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
    def document_species(self, doc: Document) -> str | None:
        """The dominant taxon id of ``doc``'s species mentions (their ids, or else their links); for
        a document without species mentions (a recognizer that finds none), of the words and word
        pairs of its text that are species forms of the dictionary ("patients", "mice", "rats")."""
        taxa = [(m.ids or self.link(m.text, _TAXON).ids or ("",))[0]
                for m in doc.mentions if mention_category(m.type) == _TAXON]
        if not taxa:
            table = self._steps[0][0].get(_TAXON, {})
            words = _WORD.findall(doc.text)
            grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
            taxa = [table[k][0] for k in map(surface_key, grams) if k in table]
        return _dominant_species(taxa)

    def _long_form(self, doc: Document, a: Abbreviation, category: str,
                   results: list[LinkResult | None], species: str | None) -> LinkResult | None:
        """The link of an abbreviation's long form: the mention of ``category`` covering it (most
        overlap, at least half the mention inside), else its text linked in ``category``."""
        best, best_overlap = None, 0
        for i, m in enumerate(doc.mentions):
            overlap = min(m.end, a.long_end) - max(m.start, a.long_start)
            if (mention_category(m.type) == category and overlap > best_overlap
                    and 2 * overlap >= m.end - m.start):
                best, best_overlap = i, overlap
        if best is not None:
            m = doc.mentions[best]
            if m.ids:
                return LinkResult(tuple(m.ids), 1.0, "abbreviation", tuple(m.xrefs))
            if results[best] is not None and results[best].ids:
                return results[best]
        hit = self.link(doc.text[a.long_start:a.long_end], category, species)
        return hit if hit.ids else None

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
        species = self.document_species(doc)
        results = [None if m.ids else self.link(m.text, m.type, species) for m in doc.mentions]
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
        return results

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
                "name_counts": t.name_counts}
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


def _tables_from_json(data: dict) -> _Tables:
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
                    for c, keys in data["name_counts"].items()})
