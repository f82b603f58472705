"""Export in parts: each shard of triples becomes one part file, written on its own (one Dask task
per shard in the pipeline); the parts are then joined, in shard order, into the final files.

Joining gives exactly the bytes of the streaming writers over the same shards
(:func:`~graphmert.export.rdf.write_ntriples`, :func:`~graphmert.export.kgx.write_kgx`; tests pin
it): N-Triples / N-Quads describe each entity and run once per shard, KGX edges keep triple order,
and KGX nodes (the first record seen per id, sorted by id) are merged when joining.

Turtle, TriG and JSON-LD are joined into the graph of
:func:`~graphmert.export.rdf.write_rdf` over the same triples, each description once per file as
there (tests pin it), though not in its byte order. A part serialises only its triples' own
statements (:func:`~graphmert.export.rdf.statement_groups`: the assertions and their associations)
with pyoxigraph, under the prefixes the driver gives every part, and lists its descriptions
(entities, runs, updates; once per part) as N-Quads. Joining writes the header once, each part's
body, and then every description the parts list, once each (the first part's graph), serialised in
the driver: its work grows with the distinct entities, not with the triples. Written by hand
because pyoxigraph serialises one stream; these formats allow a prefix declaration anywhere and a
named graph's block more than once, so the parts' bodies concatenate.

A part file holds its sections one after another, in :data:`SECTIONS` order::

    kg.nt | kg.nq | kg_edges.tsv rows | kg_edges.jsonl | node records (JSON lines)
          | kg.ttl body | kg.trig body | kg.jsonld body | descriptions (N-Quads)

and :func:`write_part` returns each section's byte and line (statement) count, and for a Turtle or
TriG body the bytes of its prefix header, which :func:`join_parts` reads it by. A part also counts
the fallbacks of its triples: ``unmapped_relations`` (relation → triples exported with
``export.default_predicate``) and ``unknown_categories`` (category → head or tail entities typed
``biolink:NamedThing`` because the category is not recognised); these add up across parts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Mapping, Sequence

import pyoxigraph as ox

from graphmert.config import ExportConfig
from graphmert.export.kgx import (EDGE_COLUMNS, KGX_FILES, json_line, kgx_edge, kgx_nodes, tsv_row,
                                  write_kgx_nodes)
from graphmert.export.rdf import (RDF_FORMATS, STREAM_FORMATS, NTriplesEncoder, OxigraphEncoder, RunInfo,
                                  ntriples_lines, statement_groups, unseen_descriptions)
from graphmert.export.terms import ExportTerms
from graphmert.extract.triples import Triple
from graphmert.io import atomic_path

__all__ = ["PART_FORMATS", "SECTIONS", "write_part", "join_parts"]

PART_FORMATS = ("nt", "nq", "kgx", "ttl", "trig", "jsonld")   # every format is written in parts
NODES = "nodes"                               # the section of node records, merged when joining
DESCRIPTIONS = "descriptions"                 # the RDF bodies' descriptions (N-Quads), merged when joining
RDF_SECTIONS = tuple(f"kg.{fmt}" for fmt in RDF_FORMATS)
Grouped = tuple[str, list, list]              # rdf.statement_groups: (run key, own, description groups)
SECTIONS = ("kg.nt", "kg.nq", KGX_FILES["edges_tsv"], KGX_FILES["edges_jsonl"], NODES, *RDF_SECTIONS,
            DESCRIPTIONS)


def _sections(formats: Iterable[str]) -> list[str]:
    want = set()
    for fmt in formats:
        if fmt in STREAM_FORMATS:
            want.add(f"kg.{fmt}")
        elif fmt == "kgx":
            want |= {KGX_FILES["edges_tsv"], KGX_FILES["edges_jsonl"], NODES}
        elif fmt in RDF_FORMATS:
            want |= {f"kg.{fmt}", DESCRIPTIONS}
    return [s for s in SECTIONS if s in want]


def write_part(triples: Iterable[Triple], path: str | Path, formats: Sequence[str], cfg: ExportConfig,
               run: RunInfo, prefixes: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write one shard's sections of ``formats`` to ``path``; returns ``{"triples", "sections":
    {name: [bytes, lines] or, for a Turtle / TriG body, [bytes, statements, header bytes]},
    "unmapped_relations", "unknown_categories"}`` (JSON-ready). ``prefixes`` are the Turtle / TriG
    header's (the same for every part of a file: the driver's, from every entity id of the run)."""
    path = Path(path)
    names = _sections(formats)
    rdf = [s for s in names if s in RDF_SECTIONS]
    grouped: list[Grouped] = []               # one shard's statement groups, read by every RDF body
    terms = ExportTerms(cfg)
    encode = NTriplesEncoder()
    seen: dict[str, set[str]] = {s: set() for s in names if s.startswith("kg.n")}
    nodes: dict[str, dict[str, Any]] = {}
    lines = Counter()
    unmapped: Counter = Counter()
    unknown: Counter = Counter()
    n = 0
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=path.parent, prefix=".part-")))
        files = {s: stack.enter_context(open(scratch / str(i), "w", encoding="utf-8", newline="\n"))
                 for i, s in enumerate(names)}
        for t in triples:
            n += 1
            if rdf:
                grouped.append(statement_groups(t, terms, run))
            if t.relation not in terms.predicates:
                unmapped[t.relation] += 1
            for cat in (t.head_category, t.tail_category):
                if cat and terms.is_unknown_category(cat):
                    unknown[cat] += 1
            for s, done in seen.items():
                out = list(ntriples_lines(t, terms, run, STREAM_FORMATS[s[3:]], encode, done))
                files[s].writelines(out)
                lines[s] += len(out)
            if NODES in files:
                rec = kgx_edge(t, terms, run)
                files[KGX_FILES["edges_tsv"]].write(tsv_row(rec, EDGE_COLUMNS))
                files[KGX_FILES["edges_jsonl"]].write(json_line(rec))
                lines[KGX_FILES["edges_tsv"]] += 1
                lines[KGX_FILES["edges_jsonl"]] += 1
                for node in kgx_nodes(t, terms, run):
                    nodes.setdefault(node["id"], node)
        if NODES in files:
            files[NODES].writelines(json_line(node) for node in nodes.values())
            lines[NODES] = len(nodes)
        headers = {}
        if rdf:
            lines[DESCRIPTIONS] = _write_descriptions(grouped, files[DESCRIPTIONS], terms)
        for f in files.values():
            f.close()
        for s in rdf:
            lines[s], headers[s] = _write_body(grouped, scratch / str(names.index(s)), s[3:], terms,
                                               prefixes or {})
        sections = {}
        with open(path, "wb") as out:
            for i, s in enumerate(names):
                with open(scratch / str(i), "rb") as src:
                    shutil.copyfileobj(src, out)
                sections[s] = [(scratch / str(i)).stat().st_size, lines[s]] + \
                    ([headers[s]] if s in headers else [])
    return {"triples": n, "sections": sections, "unmapped_relations": dict(sorted(unmapped.items())),
            "unknown_categories": dict(sorted(unknown.items()))}


def _write_body(grouped: list[Grouped], path: Path, fmt: str, terms: ExportTerms,
                prefixes: Mapping[str, str]) -> tuple[int, int]:
    """The part's Turtle / TriG / JSON-LD body at ``path``: its triples' own statements (TriG: in
    their run's graph), serialised by pyoxigraph; returns (statements, bytes of the prefix header)."""
    encode, written = OxigraphEncoder(), [0]

    def statements():
        for run_key, own, _ in grouped:
            graph = terms.graph(run_key) if fmt == "trig" else None
            written[0] += len(own)
            for st in own:
                yield encode(st, graph)

    with open(path, "wb") as f:
        ox.serialize(statements(), f, RDF_FORMATS[fmt], prefixes=None if fmt == "jsonld" else dict(prefixes))
    return written[0], _header_bytes(path) if fmt != "jsonld" else 0


def _header_bytes(path: Path) -> int:
    """Bytes of the prefix declarations a Turtle / TriG serialisation starts with."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.startswith((b"@prefix ", b"PREFIX ")):
                break
            n += len(line)
    return n


def _write_descriptions(grouped: list[Grouped], out, terms: ExportTerms) -> int:
    """The descriptions of the part's triples, once each, as N-Quads lines in their run's graph
    (the join keeps each statement once per file, under the first part's graph); returns lines."""
    encode, seen, n = NTriplesEncoder(), set(), 0
    for run_key, _, groups in grouped:
        graph = terms.graph(run_key)
        lines = [encode(st, graph) for st in unseen_descriptions(groups, seen)]
        out.writelines(lines)
        n += len(lines)
    return n


def join_parts(parts: Sequence[tuple[str | Path, dict[str, Any]]], folder: str | Path,
               formats: Sequence[str], prefixes: Mapping[str, str] | None = None,
               context: Mapping[str, str] | None = None) -> dict[str, int]:
    """Join parts — ``(path, what write_part returned)`` in shard order — into the final files of
    ``formats`` in ``folder`` (each written atomically). Returns lines per N-Triples / N-Quads file
    (``"nt"``, ``"nq"``), statements per Turtle / TriG / JSON-LD file (``"ttl"``, ...; each
    description once) and ``kgx_nodes`` / ``kgx_edges``. ``prefixes`` (Turtle, TriG) and
    ``context`` (the JSON-LD ``@context``) are those the parts were written with."""
    folder = Path(folder)
    names = [s for s in _sections(formats) if s not in (NODES, DESCRIPTIONS)]
    for p, info in parts:
        missing = [s for s in _sections(formats) if s not in info["sections"]]
        if missing:
            raise ValueError(f"{p}: export part has no section {missing[0]!r}; it was written for other "
                             "formats")
    counts: dict[str, int] = {}
    nodes: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        outs = {s: stack.enter_context(open(stack.enter_context(atomic_path(folder / s)), "wb"))
                for s in names}
        if KGX_FILES["edges_tsv"] in outs:
            outs[KGX_FILES["edges_tsv"]].write(("\t".join(EDGE_COLUMNS) + "\n").encode())
        bodies = {s: _RdfBody(outs[s], s[3:], context) for s in names if s in RDF_SECTIONS}
        described = None
        if bodies:
            described = _Descriptions(Path(stack.enter_context(
                tempfile.TemporaryDirectory(dir=folder, prefix=".descriptions-"))))
            stack.callback(described.file.close)
        for p, info in parts:
            with open(p, "rb") as src:
                for s in SECTIONS:
                    if s not in info["sections"]:
                        continue
                    size, n, *header = info["sections"][s]
                    if s in bodies:
                        bodies[s].add(src, size, header[0] if header else 0, p)
                    elif s in outs:
                        _copy_exactly(src, outs[s], size, p, s)
                    elif s == NODES:
                        for line in _read_exactly(src, size, p, s).decode("utf-8").splitlines():
                            rec = json.loads(line)
                            nodes.setdefault(rec["id"], rec)
                    elif s == DESCRIPTIONS and described is not None:
                        described.add(_read_exactly(src, size, p, s))
                    else:
                        src.seek(size, 1)
                    if s not in (NODES, DESCRIPTIONS):
                        counts[s] = counts.get(s, 0) + n
        for s, body in bodies.items():
            counts[s] += described.serialise(body, prefixes or {})
            body.close()
        for s in outs.values():
            s.close()
    out = {fmt: counts.get(f"kg.{fmt}", 0) for fmt in (*STREAM_FORMATS, *RDF_FORMATS)
           if f"kg.{fmt}" in names}
    if "kgx" in formats:
        out["kgx_nodes"] = write_kgx_nodes(nodes, folder)
        out["kgx_edges"] = counts.get(KGX_FILES["edges_tsv"], 0)
    return out


class _RdfBody:
    """A Turtle / TriG / JSON-LD file joined from serialisations: the first one's prefix header
    once (a later header that differs is kept: Turtle allows it anywhere), a JSON-LD ``@graph``
    array from the arrays' items."""

    def __init__(self, out: BinaryIO, fmt: str, context: Mapping[str, str] | None) -> None:
        self.out, self.fmt = out, fmt
        self.header: bytes | None = None      # Turtle / TriG: the prefix header written first
        self.items = 0                        # JSON-LD: items written to the @graph array
        if fmt == "jsonld":
            out.write(b'{"@context": ' + json.dumps(dict(context or {}), indent=1).encode() +
                      b',\n"@graph": [')

    def add(self, src: BinaryIO, size: int, header: int, path) -> None:
        """Append ``size`` bytes of ``src`` (a serialisation whose prefix header is ``header`` bytes)."""
        name = f"kg.{self.fmt}"
        if self.fmt == "jsonld":
            if size < 2 or _read_exactly(src, 1, path, name) != b"[":
                raise ValueError(f"{path}: export part's {name} section is not a JSON array")
            if size > 2:
                self.out.write(b",\n" if self.items else b"\n")
                self.items += 1
                _copy_exactly(src, self.out, size - 2, path, name)
            if _read_exactly(src, 1, path, name) != b"]":
                raise ValueError(f"{path}: export part's {name} section is not a JSON array")
            return
        head = _read_exactly(src, header, path, name)
        if head and head != self.header:
            self.out.write(head)
            self.header = self.header or head
        _copy_exactly(src, self.out, size - header, path, name)

    def close(self) -> None:
        if self.fmt == "jsonld":
            self.out.write(b"]}\n")


class _Descriptions:
    """The parts' descriptions, each statement once per file (the first part's graph; keyed without
    it, as :func:`~graphmert.export.rdf.write_rdf` keeps one set for every graph), kept as N-Quads
    in ``folder`` beside 16-byte digests of those seen, so memory grows with the distinct
    descriptions' digests, not their text."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "descriptions.nq"
        self.file = open(self.path, "wb")
        self.seen: set[bytes] = set()
        self.lines = 0

    def add(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True):
            key = hashlib.blake2b(line[:-3].rsplit(b" <", 1)[0], digest_size=16).digest()
            if key not in self.seen:          # the graph IRI is the line's last term (safe IRIs: no space)
                self.seen.add(key)
                self.file.write(line)
                self.lines += 1

    def serialise(self, body: _RdfBody, prefixes: Mapping[str, str]) -> int:
        """Append every description to ``body`` (TriG: in its graph); returns the statements."""
        self.file.flush()
        quads = ox.parse(path=str(self.path), format=ox.RdfFormat.N_QUADS)
        items = quads if body.fmt == "trig" else (ox.Triple(q.subject, q.predicate, q.object) for q in quads)
        tmp = self.path.with_suffix(f".{body.fmt}")
        with open(tmp, "wb") as f:
            ox.serialize(items, f, RDF_FORMATS[body.fmt],
                         prefixes=None if body.fmt == "jsonld" else dict(prefixes))
        with open(tmp, "rb") as src:
            body.add(src, tmp.stat().st_size, 0 if body.fmt == "jsonld" else _header_bytes(tmp), tmp)
        tmp.unlink()
        return self.lines


def _read_exactly(src: BinaryIO, size: int, path, section: str) -> bytes:
    data = src.read(size)
    if len(data) != size:
        raise ValueError(f"{path}: export part is truncated in section {section!r}")
    return data


def _copy_exactly(src, dst, size: int, path, section: str) -> None:
    left = size
    while left:
        buf = src.read(min(left, 1 << 20))
        if not buf:
            raise ValueError(f"{path}: export part is truncated in section {section!r}")
        dst.write(buf)
        left -= len(buf)
