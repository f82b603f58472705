"""Export in parts: each shard of triples becomes one part file, written on its own (one Dask task
per shard in the pipeline); the parts are then joined, in shard order, into the final files.

Joining gives exactly the bytes of the streaming writers over the same shards
(:func:`~graphmert.export.rdf.write_ntriples`, :func:`~graphmert.export.kgx.write_kgx`; tests pin
it): N-Triples / N-Quads describe each entity and run once per shard, KGX edges keep triple order,
and KGX nodes (the first record seen per id, sorted by id) are merged when joining.

A part file holds its sections one after another, in :data:`SECTIONS` order::

    kg.nt  |  kg.nq  |  kg_edges.tsv rows  |  kg_edges.jsonl  |  node records (JSON lines)

and :func:`write_part` returns each section's byte and line count, which :func:`join_parts` reads it
by. A part also counts the fallbacks of its triples: ``unmapped_relations`` (relation → triples
exported with ``export.default_predicate``) and ``unknown_categories`` (category → head or tail
entities typed ``biolink:NamedThing`` because the category is not recognised); these add up across
parts.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterable, Sequence

from graphmert.config import ExportConfig
from graphmert.export.kgx import (EDGE_COLUMNS, KGX_FILES, json_line, kgx_edge, kgx_nodes, tsv_row,
                                  write_kgx_nodes)
from graphmert.export.rdf import STREAM_FORMATS, NTriplesEncoder, RunInfo, ntriples_lines
from graphmert.export.terms import ExportTerms
from graphmert.extract.triples import Triple
from graphmert.io import atomic_path

__all__ = ["PART_FORMATS", "SECTIONS", "write_part", "join_parts"]

PART_FORMATS = ("nt", "nq", "kgx")            # the formats written in parts (streamed, per shard)
NODES = "nodes"                               # the section of node records, merged when joining
SECTIONS = ("kg.nt", "kg.nq", KGX_FILES["edges_tsv"], KGX_FILES["edges_jsonl"], NODES)


def _sections(formats: Iterable[str]) -> list[str]:
    want = set()
    for fmt in formats:
        if fmt in STREAM_FORMATS:
            want.add(f"kg.{fmt}")
        elif fmt == "kgx":
            want |= {KGX_FILES["edges_tsv"], KGX_FILES["edges_jsonl"], NODES}
    return [s for s in SECTIONS if s in want]


def write_part(triples: Iterable[Triple], path: str | Path, formats: Sequence[str], cfg: ExportConfig,
               run: RunInfo) -> dict[str, Any]:
    """Write one shard's sections of the ``formats`` that are written in parts (others are ignored)
    to ``path``; returns ``{"triples", "sections": {name: [bytes, lines]}, "unmapped_relations",
    "unknown_categories"}`` (JSON-ready)."""
    path = Path(path)
    names = _sections(formats)
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
        for f in files.values():
            f.close()
        sections = {}
        with open(path, "wb") as out:
            for i, s in enumerate(names):
                with open(scratch / str(i), "rb") as src:
                    shutil.copyfileobj(src, out)
                sections[s] = [(scratch / str(i)).stat().st_size, lines[s]]
    return {"triples": n, "sections": sections, "unmapped_relations": dict(sorted(unmapped.items())),
            "unknown_categories": dict(sorted(unknown.items()))}


def join_parts(parts: Sequence[tuple[str | Path, dict[str, Any]]], folder: str | Path,
               formats: Sequence[str]) -> dict[str, int]:
    """Join parts — ``(path, what write_part returned)`` in shard order — into the final files of
    ``formats`` in ``folder`` (each written atomically). Returns lines per N-Triples / N-Quads file
    (``"nt"``, ``"nq"``) and ``kgx_nodes`` / ``kgx_edges``."""
    folder = Path(folder)
    names = [s for s in _sections(formats) if s != NODES]
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
        for p, info in parts:
            with open(p, "rb") as src:
                for s in SECTIONS:
                    if s not in info["sections"]:
                        continue
                    size, n = info["sections"][s]
                    if s in outs:
                        _copy_exactly(src, outs[s], size, p, s)
                    elif s == NODES:
                        data = src.read(size)
                        if len(data) != size:
                            raise ValueError(f"{p}: export part is truncated in section {s!r}")
                        for line in data.decode("utf-8").splitlines():
                            rec = json.loads(line)
                            nodes.setdefault(rec["id"], rec)
                    else:
                        src.seek(size, 1)
                    if s != NODES:
                        counts[s] = counts.get(s, 0) + n
        for s in outs.values():
            s.close()
    out = {fmt: counts.get(f"kg.{fmt}", 0) for fmt in STREAM_FORMATS if f"kg.{fmt}" in names}
    if "kgx" in formats:
        out["kgx_nodes"] = write_kgx_nodes(nodes, folder)
        out["kgx_edges"] = counts.get(KGX_FILES["edges_tsv"], 0)
    return out


def _copy_exactly(src, dst, size: int, path, section: str) -> None:
    left = size
    while left:
        buf = src.read(min(left, 1 << 20))
        if not buf:
            raise ValueError(f"{path}: export part is truncated in section {section!r}")
        dst.write(buf)
        left -= len(buf)
