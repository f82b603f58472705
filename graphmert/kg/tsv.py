"""KGX-style TSV seed KGs: node and edge tables with a header (plain or gzipped).

Columns are found by header name, in any order:

* nodes: ``id`` and ``name`` (required), ``category`` (optional; a KGX multi-valued ``a|b`` keeps the
  first), ``synonyms`` (optional, ``|``-separated). Other columns are ignored.
* edges: ``subject``, ``predicate``, ``object`` (required); every other non-empty column
  (``primary_knowledge_source``, ``publications``, ``source``, ``pmids``, …) is kept as provenance.

Fields are tab-separated with no quoting (a ``"`` is an ordinary character). Line numbers in errors
count the header as line 1.
"""

from __future__ import annotations

import csv
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from graphmert.kg.graph import Edge, KGError, Node, SeedKG
from graphmert.kg.records import BadRecords, keep_known_edges, open_text

__all__ = ["read_table", "read_node_table", "read_edge_table", "read_kgx_tsv", "unlimited_csv_fields",
           "NODE_COLUMNS", "EDGE_COLUMNS"]

NODE_COLUMNS = ("id", "name")
EDGE_COLUMNS = ("subject", "predicate", "object")

_ANY_FIELD_SIZE = min(sys.maxsize, 2**31 - 1)
_lift_lock = threading.Lock()
_lift = {"users": 0, "saved": 0}      # readers inside unlimited_csv_fields, the limit to restore


@contextmanager
def unlimited_csv_fields() -> Iterator[None]:
    """Lift the :mod:`csv` module's field-size limit (process-wide, 128 KiB by default; a KG row may
    carry a longer synonym or provenance list) while the block runs, and restore it after. Nested,
    interleaved (two table generators) and concurrent (threads) uses share one lift, which the last
    one to leave undoes."""
    with _lift_lock:
        if _lift["users"] == 0:
            _lift["saved"] = csv.field_size_limit(_ANY_FIELD_SIZE)
        _lift["users"] += 1
    try:
        yield
    finally:
        with _lift_lock:
            _lift["users"] -= 1
            if _lift["users"] == 0:
                csv.field_size_limit(_lift["saved"])


def read_table(path: str | Path, required: tuple[str, ...],
               bad: BadRecords) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line number, {column: value})`` for each data row of a TSV file with a header.

    A header without one of ``required`` raises :class:`KGError`; a row with the wrong number of
    fields is a bad record. Blank lines are skipped. A field may be of any length
    (:func:`unlimited_csv_fields`, while the table is read).
    """
    with open_text(path) as f, unlimited_csv_fields():
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise KGError(f"{path}: line 1: empty file, expected a header with columns "
                          f"{list(required)}") from None
        except UnicodeDecodeError as e:
            raise KGError(f"{path}: not UTF-8 text ({e})") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise KGError(f"{path}: line 1: missing column(s) {missing}; the header has {header}")
        n = len(header)
        try:
            for row in reader:
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != n:
                    bad.report(f"{path}: line {line}", "wrong_field_count",
                               f"expected {n} tab-separated fields, found {len(row)}")
                    continue
                yield line, dict(zip(header, (v.strip() for v in row)))
        except UnicodeDecodeError as e:
            raise KGError(f"{path}: line {reader.line_num + 1}: not UTF-8 text ({e})") from None


def read_node_table(path: str | Path, bad: BadRecords) -> Iterator[Node]:
    for line, row in read_table(path, NODE_COLUMNS, bad):
        if not row["id"]:
            bad.report(f"{path}: line {line}", "node_without_id", "empty node id")
            continue
        if not row["name"]:
            bad.report(f"{path}: line {line}", "node_without_name", f"node {row['id']!r} has an empty name")
            continue
        category = row.get("category", "").split("|")[0].strip()
        synonyms = tuple(s.strip() for s in row.get("synonyms", "").split("|") if s.strip())
        yield Node(row["id"], row["name"], category, tuple(s for s in synonyms if s != row["name"]))


def read_edge_table(path: str | Path, bad: BadRecords) -> Iterator[tuple[str, Edge]]:
    """Yield ``("file: line N", Edge)`` so unknown node ids can be reported where they occur."""
    for line, row in read_table(path, EDGE_COLUMNS, bad):
        s, p, o = row["subject"], row["predicate"], row["object"]
        if not (s and p and o):
            bad.report(f"{path}: line {line}", "edge_incomplete",
                       f"empty subject, predicate or object in ({s!r}, {p!r}, {o!r})")
            continue
        prov = {k: v for k, v in row.items() if k not in EDGE_COLUMNS and v}
        yield f"{path}: line {line}", Edge(s, p, o, prov)


def read_kgx_tsv(nodes: Iterable[str | Path], edges: Iterable[str | Path],
                 skip_bad_records: bool = False) -> SeedKG:
    """Read KGX-style node and edge tables into a :class:`SeedKG` (checked to be non-empty)."""
    nodes, edges = [Path(p) for p in nodes], [Path(p) for p in edges]
    if not nodes or not edges:
        raise KGError("kg_tsv: need at least one node table (kg.nodes) and one edge table (kg.edges); "
                      f"got nodes={[str(p) for p in nodes]} edges={[str(p) for p in edges]}")
    bad = BadRecords(skip_bad_records)
    node_map = {}
    for p in nodes:
        for n in read_node_table(p, bad):
            node_map.setdefault(n.id, []).append(n)
    kg_nodes = [n for group in node_map.values() for n in group]
    known = {i: group[0] for i, group in node_map.items()}
    located = (le for p in edges for le in read_edge_table(p, bad))
    kg_edges = list(keep_known_edges(known, located, bad))
    kg = SeedKG(kg_nodes, kg_edges, [str(p) for p in nodes + edges], bad.as_dict())
    return kg.check_not_empty()
