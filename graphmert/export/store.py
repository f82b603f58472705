"""An embedded SPARQL 1.1 store for an export: the RDF files loaded into an on-disk Oxigraph database.

Why Oxigraph (``pyoxigraph``): rdflib answers SPARQL from an in-memory Python graph, which must be
parsed again by every process (minutes and gigabytes past a few hundred thousand triples, see
``benchmarks/query.py`` and docs/EXPORT.md, "SPARQL store"), while Oxigraph is a real database
(Rust, RocksDB files, indexed on every triple order): it is bulk-loaded once and opened in a moment
by any later reader.

The store of a run lives at ``RUN/export/store`` (:data:`STORE_DIR`):

* :func:`build_store` bulk-loads N-Triples / N-Quads / Turtle / TriG files into a new store,
  atomically (built in a temporary sibling folder, then renamed over the old store: a reader sees the
  old store or the new one, and a failed build leaves nothing behind);
* :func:`open_store` opens it **read-only** — no reader ever writes a file there, so the export
  stage's output hash stays valid and any number of readers can share it;
* :func:`run_query` runs one SPARQL query (SELECT, ASK, CONSTRUCT or DESCRIBE; SPARQL Update is
  refused) and returns a :class:`QueryResult` of plain strings;
* :func:`format_result` prints a result as a table, CSV, TSV or JSON (:data:`RESULT_FORMATS`).

Queries see the *union* of all graphs as their default graph, so the same query works on a store
loaded from N-Triples (everything in the default graph) and from N-Quads (one named graph per run;
``GRAPH ?g { ... }`` then names the run's graph).

Terms become strings as follows: an IRI is the IRI itself (never compacted to a CURIE), a literal
its lexical value (``"0.91"^^xsd:double`` → ``0.91``; language and datatype are kept only in the
JSON output), a blank node ``_:id``, an unbound variable ``None`` (an empty cell).
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

import pyoxigraph as ox

from graphmert.errors import GraphmertError
from graphmert.io import atomic_dir, atomic_write_json, check_file_sizes, check_format, file_sizes, read_json

__all__ = ["STORE_DIR", "RESULT_FORMATS", "SOURCE_FORMATS", "QueryResult", "StoreError", "QueryError",
           "build_store", "open_store", "is_store", "is_update", "run_query", "format_result"]

STORE_DIR = "store"
RESULT_FORMATS = ("table", "csv", "tsv", "json")
#: file suffix → the RDF syntax :func:`build_store` reads it as
SOURCE_FORMATS = {".nt": ox.RdfFormat.N_TRIPLES, ".nq": ox.RdfFormat.N_QUADS,
                  ".ttl": ox.RdfFormat.TURTLE, ".trig": ox.RdfFormat.TRIG}
#: line-based sources (one statement a line) are bulk-loaded in pieces of about this many bytes:
#: Oxigraph's bulk loader sizes its buffers to what one call gives it (up to about 2 GB a thread),
#: so one call on a whole 430 MB N-Triples file peaks at 1,960 MB, and 32 MB pieces at 319 MB
LOAD_PIECE_BYTES = 32 << 20
_LINE_FORMATS = frozenset({ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS})
_HINT = "run `graphmert load --run-dir RUN` or add 'store' to export.formats"
#: the store folder's own record of its database files and their sizes (:func:`build_store`), so a
#: truncated file is named on opening instead of read as a smaller, or empty, store
FILES_RECORD = "graphmert-store.json"
_FILES_FORMAT = "graphmert-store-files"
_RUNTIME = ("LOG", "LOCK", FILES_RECORD)        # RocksDB's text log and lock file change on opening
_UPDATE = re.compile(r"^\s*(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b", re.I)
_PROLOGUE = re.compile(r"^\s*(?:#[^\n]*\n|\s+|BASE\s*<[^>]*>|PREFIX\s+[^\s:]*:\s*<[^>]*>)*", re.I)


class StoreError(GraphmertError, OSError):
    """A store cannot be built (a missing or malformed source file) or opened (not a store)."""


class QueryError(GraphmertError, ValueError):
    """A SPARQL query that cannot run: malformed (the message quotes the parser, with the position),
    an update, or failing while it is evaluated."""


@dataclass(kw_only=True)
class QueryResult:
    """One query's answer. ``kind`` is ``"select"``, ``"ask"`` or ``"construct"`` (CONSTRUCT and
    DESCRIBE: rows of subject, predicate, object); ``rows`` hold plain strings (module docstring) or
    None for unbound; ``boolean`` is the ASK answer (None otherwise). ``terms`` keeps the
    pyoxigraph terms behind ``rows`` for the JSON output."""

    kind: str
    columns: list[str]
    rows: list[list[str | None]]
    boolean: bool | None = None
    terms: list[list[Any]] = field(default_factory=list, repr=False, compare=False)


# -- building and opening --------------------------------------------------------------------------


def _syntax_of(src: Path) -> ox.RdfFormat:
    fmt = SOURCE_FORMATS.get(src.suffix.lower())
    if fmt is None:
        raise StoreError(f"{src}: cannot load a {src.suffix or 'suffix-less'} file into the store; "
                         f"give one of {sorted(SOURCE_FORMATS)}")
    if not src.is_file():
        raise StoreError(f"{src}: no such file to load into the store")
    return fmt


def _load_error(src: Path, e: Exception, lines_before: int = 0) -> StoreError:
    """The parser's complaint about ``src`` as a StoreError naming the file and line (the parser's
    line within a piece that starts after ``lines_before`` lines of the file)."""
    line = getattr(e, "lineno", None)
    line = line + lines_before if line else None
    msg = e.msg if isinstance(e, SyntaxError) and e.msg else str(e)
    if lines_before:                       # the parser counts the piece's lines
        msg = re.sub(r"\bline (\d+)", lambda m: f"line {int(m.group(1)) + lines_before}", msg)
    where = f"{src}, line {line}" if line else str(src)
    return StoreError(f"{where}: not valid {src.suffix[1:]} ({msg}); nothing was loaded")


def _line_pieces(f: BinaryIO, piece_bytes: int) -> Iterator[tuple[int, int, bytes]]:
    """``(lines before it, its byte offset, piece)`` of an open line-based file, in pieces of about
    ``piece_bytes`` that end at a line end (a line longer than that is a piece of its own)."""
    lines_before, offset = 0, f.tell()
    while piece := f.read(piece_bytes):
        if not piece.endswith(b"\n"):
            piece += f.readline()
        yield lines_before, offset, piece
        lines_before, offset = lines_before + piece.count(b"\n"), offset + len(piece)


def _bulk_load(store: ox.Store, src: Path, fmt: ox.RdfFormat, piece_bytes: int) -> None:
    """Bulk-load one source file. N-Triples and N-Quads go in pieces (:data:`LOAD_PIECE_BYTES`,
    which bounds the loader's memory) until a piece holds ``_:`` (a blank node, or those bytes in a
    literal): a blank-node label names one node within one parser call only, so from that piece on
    the loader reads the rest of the file itself, in one call (no earlier piece has a blank node).
    Turtle and TriG, whose statements span lines, load in one call. The exports write no blank node."""
    lines_before = 0
    try:
        if fmt not in _LINE_FORMATS:
            store.bulk_load(path=str(src), format=fmt)
            return
        with open(src, "rb") as f:
            for lines_before, offset, piece in _line_pieces(f, piece_bytes):
                if b"_:" in piece:                    # the rest of the file, read by the loader
                    f.seek(offset)
                    store.bulk_load(input=f, format=fmt)
                    return
                store.bulk_load(input=piece, format=fmt)
    except SyntaxError as e:
        raise _load_error(src, e, lines_before) from None
    except (ValueError, OSError) as e:
        raise StoreError(f"{src}: cannot load it into the store ({e})") from None


def build_store(sources: Path | str | Sequence[Path | str], path: Path | str,
                piece_bytes: int = LOAD_PIECE_BYTES) -> dict[str, Any]:
    """Bulk-load ``sources`` (one file or several: ``.nt``, ``.nq``, ``.ttl``, ``.trig``) into a new
    Oxigraph store at ``path``, replacing any store there, atomically (module docstring). N-Triples
    and N-Quads go in pieces of about ``piece_bytes``, which bounds the loader's memory.

    Returns ``{"triples": statements in the store (quads, repeats counted once), "seconds": load
    time, "sources": [file names]}``. A missing, unknown or malformed source raises
    :class:`StoreError` naming the file (and the line, for a syntax error).
    """
    srcs = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(s) for s in sources]
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes must be at least 1 byte, not {piece_bytes}")
    if not srcs:
        raise StoreError(f"{path}: no source files to load into the store")
    formats = [_syntax_of(s) for s in srcs]
    t0 = time.perf_counter()
    with atomic_dir(path) as tmp:
        store = ox.Store(str(tmp))
        try:
            for src, fmt in zip(srcs, formats):
                _bulk_load(store, src, fmt, piece_bytes)
            store.flush()
            n = len(store)
        finally:
            del store                          # close the database before the folder is renamed
        atomic_write_json(tmp / FILES_RECORD, {"format": _FILES_FORMAT, "version": 1,
                                               "files": file_sizes(tmp, skip=_runtime_file)})
    return {"triples": n, "seconds": round(time.perf_counter() - t0, 3),
            "sources": [s.name for s in srcs]}


def is_store(path: Path | str) -> bool:
    """Whether ``path`` looks like an Oxigraph (RocksDB) store folder."""
    return (Path(path) / "CURRENT").is_file()


def _runtime_file(name: str) -> bool:
    """Files of a store folder that are not its data: RocksDB's log (``LOG``, ``LOG.old.*``), its
    lock, and :data:`FILES_RECORD` itself."""
    return name in _RUNTIME or name.startswith("LOG.old")


def open_store(path: Path | str) -> ox.Store:
    """Open the store at ``path`` read-only (nothing is written there, however it is queried).

    A store built by :func:`build_store` has its database files' sizes in :data:`FILES_RECORD`: a
    file missing or of another size (truncated, half-copied) is a :class:`StoreError` naming it,
    before RocksDB reads it; so is any corruption RocksDB itself finds."""
    path = Path(path)
    if not path.is_dir():
        raise StoreError(f"{path}: no SPARQL store here; {_HINT}")
    if not is_store(path):
        raise StoreError(f"{path}: not an Oxigraph store (no CURRENT file); {_HINT}")
    record = path / FILES_RECORD
    if record.is_file():
        try:
            data = check_format(read_json(record), record, format=_FILES_FORMAT, version=1,
                                what="a store's file record", error=StoreError, version_key="version")
        except ValueError as e:
            raise StoreError(f"{record}: unreadable ({e}); rebuild the store: {_HINT}") from None
        check_file_sizes(path, data.get("files") or {}, what="the store", error=StoreError,
                         advice=f"; rebuild the store: {_HINT}")
    try:
        return ox.Store.read_only(str(path))
    except (OSError, RuntimeError) as e:         # RocksDB's "Corruption: ..." is a RuntimeError
        msg = " ".join(str(e).split())
        raise StoreError(f"{path}: cannot open the SPARQL store ({msg}); rebuild it: {_HINT}") from None


# -- querying --------------------------------------------------------------------------------------


def _text(term: Any) -> str | None:
    if term is None:
        return None
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    if isinstance(term, (ox.NamedNode, ox.Literal)):
        return term.value
    return str(term)                            # an RDF-star quoted triple, in N-Triples syntax


def is_update(text: str) -> bool:
    """Whether ``text`` is a SPARQL Update request (INSERT, DELETE, LOAD, CLEAR, ... after the
    prologue)."""
    return _UPDATE.match(text[_PROLOGUE.match(text).end():]) is not None


def _syntax_message(text: str, msg: str) -> str:
    """The parser's message on one line, cut at 240 characters (its lists of expected characters
    can be long), with the offending line of the query quoted."""
    msg = " ".join(msg.split())
    if len(msg) > 240:
        msg = msg[:239] + "…"
    m = re.match(r"error at (\d+):(\d+)", msg)
    lines = text.splitlines()
    if m and 1 <= int(m.group(1)) <= len(lines):
        msg += f"; line {m.group(1)}: {lines[int(m.group(1)) - 1].strip()[:120]!r}"
    return f"malformed SPARQL query: {msg}"


def run_query(store: ox.Store, text: str) -> QueryResult:
    """Run one SPARQL query on ``store`` (the union of its graphs is the default graph)."""
    try:
        answer = store.query(text, use_default_graph_as_union=True)
    except SyntaxError as e:
        if is_update(text):
            raise QueryError("SPARQL Update (INSERT, DELETE, LOAD, CLEAR, ...) is refused: the store is "
                             "read-only; only SELECT, ASK, CONSTRUCT and DESCRIBE queries run") from None
        raise QueryError(_syntax_message(text, str(e))) from None
    except (OSError, RuntimeError, ValueError) as e:
        raise QueryError(f"the query failed: {e}") from None
    try:
        if isinstance(answer, ox.QueryBoolean):
            return QueryResult(kind="ask", columns=["boolean"], rows=[[str(bool(answer)).lower()]],
                               boolean=bool(answer))
        if isinstance(answer, ox.QuerySolutions):
            columns = [v.value for v in answer.variables]
            terms = [[sol[c] for c in columns] for sol in answer]
            kind = "select"
        else:
            columns = ["subject", "predicate", "object"]
            terms = [[t.subject, t.predicate, t.object] for t in answer]
            kind = "construct"
    except (OSError, RuntimeError, ValueError, SyntaxError) as e:   # raised while evaluating
        raise QueryError(f"the query failed while running: {e}") from None
    return QueryResult(kind=kind, columns=columns, rows=[[_text(t) for t in r] for r in terms],
                       terms=terms)


# -- printing --------------------------------------------------------------------------------------


def format_result(result: QueryResult, fmt: str = "table") -> str:
    """``result`` as text in ``fmt`` (:data:`RESULT_FORMATS`):

    ``table``  aligned columns under a header, then ``(N rows)``; cells are cut at 80 characters and
               their line breaks shown as spaces (ASK: ``true`` / ``false``)
    ``csv``    SPARQL 1.1 Query Results CSV: a header of variable names, plain values, CRLF lines
    ``tsv``    plain values (not the SPARQL TSV term syntax) separated by tabs under the same header;
               a value with a tab, line break or ``"`` is quoted as in CSV (``csv`` module, tab)
    ``json``   SPARQL 1.1 Query Results JSON (``head.vars`` + ``results.bindings`` with ``type``,
               ``value``, ``datatype``, ``xml:lang``; ASK: ``boolean``); CONSTRUCT / DESCRIBE use
               the same shape with the variables subject, predicate, object
    """
    if fmt not in RESULT_FORMATS:
        raise QueryError(f"unknown result format {fmt!r}; choose from {list(RESULT_FORMATS)}")
    if fmt == "json":
        return _json(result)
    if fmt == "table":
        return _table(result)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="," if fmt == "csv" else "\t",
                        lineterminator="\r\n" if fmt == "csv" else "\n")
    writer.writerow(result.columns)
    writer.writerows([["" if v is None else v for v in row] for row in result.rows])
    return buf.getvalue()


def _cell(v: str | None, width: int = 80) -> str:
    if v is None:
        return ""
    s = re.sub(r"[\t\r\n]+", " ", v)
    return s if len(s) <= width else s[:width - 1] + "…"


def _table(result: QueryResult) -> str:
    if result.kind == "ask":
        return str(bool(result.boolean)).lower() + "\n"
    cells = [[_cell(v) for v in row] for row in result.rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(result.columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(result.columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    n = len(cells)
    lines.append(f"({n} row{'' if n == 1 else 's'})")
    return "\n".join(lines) + "\n"


def _binding(term: Any, text: str) -> dict[str, str]:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": text}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out = {"type": "literal", "value": text}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            out["datatype"] = term.datatype.value
        return out
    if isinstance(term, ox.Triple):
        return {"type": "triple", "value": text}
    return {"type": "literal", "value": text}         # a result built by hand, without terms


def _json(result: QueryResult) -> str:
    if result.kind == "ask":
        return json.dumps({"head": {}, "boolean": bool(result.boolean)}) + "\n"
    terms = result.terms or [[None] * len(r) for r in result.rows]
    bindings = [{c: _binding(t, v) for c, t, v in zip(result.columns, trow, row) if v is not None}
                for trow, row in zip(terms, result.rows)]
    return json.dumps({"head": {"vars": result.columns}, "results": {"bindings": bindings}},
                      ensure_ascii=False) + "\n"
