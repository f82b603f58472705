"""The linker's input tables: cross-reference tables (other ids → MeSH) and names tables (more names
of seed-KG nodes), TSV with a header, gzipped or not (:mod:`graphmert.ner.linking`)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from graphmert.kg.tsv import unlimited_csv_fields
from graphmert.ner.vocabularies.errors import VocabularyError

_C = TypeVar("_C")
_MAPPING_COLUMNS = ("mapping", "method")
_TARGET_COLUMNS = ("mesh_id", "xref_mesh")
_NAME_ID_COLUMNS = {"id": "", "geneId": "NCBIGene:"}    # id column → prefix of a bare id
_NAME_COLUMNS = ("name", "geneName", "synonyms")


def _open_table(path: Path, what: str):
    if not path.is_file():
        raise VocabularyError(f"{path}: {what} not found")
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8", newline="") if gz else \
        open(path, encoding="utf-8", newline="")


def _read_tsv(path: Path, what: str, columns: Callable[[list[str]], _C]
              ) -> Iterator[tuple[_C, list[str]]]:
    """``(columns(header), row)`` for every row of the TSV table (a ``what``) at ``path``, which has
    a header; ``columns`` picks the columns from the header or raises :class:`VocabularyError`; blank
    lines are skipped."""
    with _open_table(path, what) as f, unlimited_csv_fields():
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = [h.strip() for h in next(rows)]
        except StopIteration:
            raise VocabularyError(f"{path}: line 1: empty file, expected a header") from None
        except UnicodeDecodeError as e:
            raise VocabularyError(f"{path}: not UTF-8 text ({e})") from None
        picked = columns(header)
        try:
            for row in rows:
                if len(row) != len(header):
                    if any(x.strip() for x in row):
                        raise VocabularyError(f"{path}: line {rows.line_num}: expected {len(header)} "
                                          f"tab-separated fields, found {len(row)}")
                    continue
                yield picked, row
        except UnicodeDecodeError as e:
            raise VocabularyError(f"{path}: line {rows.line_num + 1}: not UTF-8 text ({e})") from None


def _read_xref_table(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(source id, target ids)`` rows of one table (fields of any length); propagated mappings
    are skipped."""
    def columns(header: list[str]) -> tuple[int, int, int | None]:
        target = next((header.index(c) for c in _TARGET_COLUMNS if c in header), None)
        if target is None or len(header) < 2:
            raise VocabularyError(f"{path}: line 1: expected a source id column and one of "
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
            raise VocabularyError(f"{path}: line 1: expected an id column ({' or '.join(_NAME_ID_COLUMNS)}) "
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
    return _merged(row for p in paths for row in _read_name_table(Path(p)))


def read_xref_tables(paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """Source id → mapped ids (file order, first table first) from TSV tables with a header.

    A table has a source id column (``id`` if present, else the first column) and a target column
    ``mesh_id`` (``doid_to_mesh.tsv``, ``drugbank_to_mesh.tsv``, ``umls_to_mesh_disgenet.tsv``) or
    ``xref_mesh`` (the seed KG's ``nodes.tsv.gz``); ``|`` separates several targets. Rows whose
    ``mapping`` / ``method`` column starts with "propagated" (a descendant's xref, not an
    equivalence) are skipped. Gzipped tables are read transparently.
    """
    return _merged(row for p in paths for row in _read_xref_table(Path(p)))


def _merged(rows: Iterable[tuple[str, list[str]]]) -> dict[str, list[str]]:
    """Key → its values over every row of that key, in order, each once."""
    out: dict[str, list[str]] = {}
    for key, values in rows:
        known = out.setdefault(key, [])
        known.extend(v for v in values if v not in known)
    return out
