"""Reference term tables: the names a ``terms`` vocabulary (``ner.vocabularies``, kind ``terms``: MeSH
descriptors) gives its ids, keyed for look-up (:mod:`graphmert.ner.linking`, the **terms** step).

Why: the seed KG names only the diseases and chemicals it holds, under few names, and the training
dictionary only the forms its documents annotate; MeSH's descriptors give every descriptor its
preferred name and all its entry terms ("Tumors", "Cancer" and "Malignancy" for Neoplasms), which
is what a mention the other tables miss is often written as.

A ``terms`` file is tab-separated, gzipped or not, with no header: ``id<TAB>name<TAB>terms``, the
terms ``|``-separated (the third field may be empty); a bare id takes the source's ``prefix``
(``MESH:``), an id with a colon is kept as it is. Blank lines are skipped; any other line without
exactly three fields, or with an empty id or name, raises :class:`VocabularyError` naming the file and
the line number.

Each name and entry term is keyed by :func:`surface_key` (case, Greek letters, hyphens and spaces
folded: "TNF-α" = "tnf alpha"), with two variants: the permuted form of an inverted MeSH name or
term ("Leukemia, Myeloid, Acute" → "acute myeloid leukemia", :func:`_uninverted`) and the singular
of a plural form ("Slaughterhouses" → "slaughterhouse", :func:`_singular_keys`; the linker also
strips a plural query). An inverted entry term ("Neoplasms, Prostatic") is keyed by its permuted
form only: abstracts do not write MeSH's index order, and those keys would be a third of the table
(MeSH 2024: 180,551 keys instead of 273,794, and no held-out BioRED-train result changed; the
preferred name is kept as written). A key lists every id that names it, best first, by rank:
preferred name 0, entry term 1, permuted form 2, singular of a plural 3, then the smallest id. The
same table serves every category of the source (one dict object, saved once).
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Mapping
from typing import Iterator, Sequence

from graphmert.ner.vocabularies.errors import VocabularyError
from graphmert.ner.vocabularies.surface import _singular_keys, _uninverted, surface_key
from graphmert.ner.vocabularies.tables import _open_table

TERMS = "terms"
_NAME, _ENTRY, _PERMUTED, _SINGULAR = range(4)      # ranks of a key's ids (lower is better)
TermKeys = dict[str, list[str]]                      # surface key → ids, best first


def _term_rows(path: Path, prefix: str) -> Iterator[tuple[str, str, list[str]]]:
    """``(id, name, entry terms)`` of every row of the terms file at ``path``."""
    with _open_table(path, "terms vocabulary") as f:
        n = 0
        try:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                fields = line.split("\t")
                if len(fields) != 3:
                    raise VocabularyError(f"{path}: line {n}: expected 3 tab-separated fields "
                                      f"(id, name, entry terms), found {len(fields)}")
                ident, name = fields[0].strip(), fields[1].strip()
                if not ident or not name:
                    raise VocabularyError(f"{path}: line {n}: empty {'id' if not ident else 'name'}")
                terms = [t.strip() for t in fields[2].split("|") if t.strip()]
                yield (ident if ":" in ident else prefix + ident), name, terms
        except UnicodeDecodeError as e:
            raise VocabularyError(f"{path}: line {n + 1}: not UTF-8 text ({e})") from None


def _forms(name: str, terms: Sequence[str]) -> Iterator[tuple[str, int]]:
    """(text, rank) of a row's name and its permuted form, and of its entry terms, an inverted one
    ("Leukemia, Acute Myeloid") by its permuted form only."""
    yield name, _NAME
    for text in [name, *terms]:
        permuted = _uninverted(text)
        if permuted:
            yield permuted, _PERMUTED
        elif text is not name:
            yield text, _ENTRY


def read_terms(path: str | Path, prefix: str = "MESH:") -> TermKeys:
    """Surface key → ids (best first: see the module docstring) of the terms file at ``path``."""
    ranked: dict[str, dict[str, int]] = {}

    def add(key: str, ident: str, rank: int) -> None:
        slot = ranked.setdefault(key, {})
        if rank < slot.get(ident, _SINGULAR + 1):
            slot[ident] = rank

    for ident, name, terms in _term_rows(Path(path), prefix):
        for text, rank in _forms(name, terms):
            key = surface_key(text)
            if not key:
                continue
            add(key, ident, rank)
            for sk in _singular_keys(text, key):
                add(sk, ident, _SINGULAR)
    return {k: [i for i, _ in sorted(ids.items(), key=lambda kv: (kv[1], kv[0]))]
            for k, ids in sorted(ranked.items())}


def term_tables(sources: Sequence, categories: Sequence[str]) -> dict[str, TermKeys]:
    """Category → key → ids of the ``terms`` sources among ``sources`` (``VocabularySource``; other
    kinds are another reader's and skipped), for their categories among ``categories``. A category
    of several sources takes the ids of each key in source order; categories with the same sources
    share one table."""
    read = [(read_terms(s.path, s.prefix), [c for c in s.categories if c in categories])
            for s in sources if s.kind == TERMS]
    out: dict[str, TermKeys] = {}
    merged: dict[tuple[int, ...], TermKeys] = {}
    for cat in categories:
        which = tuple(i for i, (_, cats) in enumerate(read) if cat in cats)
        if not which:
            continue
        if which not in merged and len(which) == 1:
            merged[which] = read[which[0]][0]
        elif which not in merged:
            table: TermKeys = {}
            for i in which:
                for k, ids in read[i][0].items():
                    known = table.setdefault(k, [])
                    known.extend(x for x in ids if x not in known)
            merged[which] = table
        out[cat] = merged[which]
    return out


def terms_to_json(tables: dict[str, TermKeys]) -> list[dict]:
    """The tables as saved: one ``{"categories", "keys"}`` entry per distinct table, so a table two
    categories share is written once."""
    groups: dict[int, dict] = {}
    for cat, keys in sorted(tables.items()):
        groups.setdefault(id(keys), {"categories": [], "keys": keys})["categories"].append(cat)
    return list(groups.values())


def terms_from_json(data: list[dict]) -> dict[str, TermKeys]:
    """:func:`terms_to_json` read back (categories of one entry share its table)."""
    out: dict[str, TermKeys] = {}
    for entry in data:
        keys = {str(k): [str(i) for i in ids] for k, ids in entry["keys"].items()}
        out.update({str(c): keys for c in entry["categories"]})
    return out


class _Ranked(Mapping):
    """A term table as a look-up step sees it: key → ``(best id,)`` (``others=False``), or key → the
    other ids after it (``others=True``); every id of a key is an entity of its own, not one of
    several a mention names at once. The ids of ``foreign`` are left out, as if the table did not
    list them (filtered on look-up, so the categories still share one table)."""

    def __init__(self, keys: TermKeys, others: bool = False, foreign: frozenset[str] = frozenset()) -> None:
        self._keys, self._others, self._foreign = keys, others, foreign

    def _ids(self, key: str) -> list[str]:
        ids = self._keys[key]
        return [i for i in ids if i not in self._foreign] if self._foreign else ids

    def __getitem__(self, key: str) -> tuple[str, ...]:
        ids = self._ids(key)
        if not ids:
            raise KeyError(key)
        return tuple(ids[1:]) if self._others else (ids[0],)

    def __contains__(self, key: object) -> bool:
        return key in self._keys and bool(self._ids(key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys) if not self._foreign else (k for k in self._keys if k in self)

    def __len__(self) -> int:
        return len(self._keys) if not self._foreign else sum(1 for _ in self)


def term_steps(tables: dict[str, TermKeys], foreign: Mapping[str, frozenset[str]] | None = None
               ) -> tuple[tuple, tuple]:
    """The two look-up steps of the term tables, as :class:`EntityLinker` lists its steps: the key
    itself, and the singulars of a plural query ("tumours" → "tumour"). ``foreign``: category → ids
    its look-ups never answer (a key left with none of its ids is not known to that category)."""
    foreign = foreign or {}
    firsts = {c: _Ranked(k, foreign=foreign.get(c, frozenset())) for c, k in tables.items()}
    others = {c: _Ranked(k, others=True, foreign=foreign.get(c, frozenset())) for c, k in tables.items()}
    return (firsts, TERMS, False, others), (firsts, TERMS, True, others)
