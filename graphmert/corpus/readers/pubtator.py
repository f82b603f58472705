"""PubTator format (BioRED, BC5CDR, NCBI disease, PubTator Central exports).

Documents are separated by blank lines::

    PMID|t|title
    PMID|a|abstract
    PMID<TAB>start<TAB>end<TAB>mention text<TAB>type<TAB>id[,id...][<TAB>individual mentions]
    PMID<TAB>RelationType<TAB>ID1<TAB>ID2[<TAB>Novel|No]

Offsets index into ``title + " " + abstract``. A mention line has 6 tab fields, or 7 for BC5CDR's
composite mentions (the 7th lists the individual mention strings and is not kept). A relation line
has 4 fields (BC5CDR ``CID``) or 5 (BioRED, with its novelty flag); its second field is not an
integer, which is what tells it from a mention line. Ids are normalised with ``normalize_ids`` —
BioRED's ``,`` separated multi-ids and BC5CDR's ``|`` separated MeSH ids become lists, tmVar variant
keys (which contain ``|``) stay whole, ``-1`` means unlinked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from graphmert.corpus.document import Document, Mention, Relation, normalize_ids
from graphmert.corpus.readers.base import (
    READERS, IdMap, Location, ReadContext, ReadRecord, join_title_abstract, open_text,
)

__all__ = ["read_pubtator", "PUBTATOR_HEADER"]

PUBTATOR_HEADER = re.compile(r"^([^|\t]+)\|([A-Za-z])\|(.*)$")   # "PMID|t|text"
_INT = re.compile(r"^-?\d+$")


@dataclass
class _Pending:
    """A document being assembled from consecutive lines."""

    id: str
    line: int
    title: str | None = None
    abstract: str | None = None
    mentions: list[Mention] = field(default_factory=list)
    mention_where: list[Location] = field(default_factory=list)
    raw_ids: list[tuple[str, str]] = field(default_factory=list)        # (raw id, type) per mention
    relations: list[tuple[Location, list[str]]] = field(default_factory=list)
    broken: bool = False    # a line of it could not be decoded (already reported): drop it whole


def _finish(doc: _Pending, path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    if doc.broken:
        return
    title, abstract = doc.title or "", doc.abstract or ""
    ids = IdMap()
    for m, (raw, etype) in zip(doc.mentions, doc.raw_ids):
        ids.add(raw, etype, m.ids)
    relations = []
    for where, f in doc.relations:
        head, tail = ids.resolve(f[2]), ids.resolve(f[3])
        if head is None or tail is None:
            ctx.bad(where, f"relation {f[1]!r} refers to an unlinked id "
                           f"({f[2] if head is None else f[3]!r})")
            continue
        relations.append(Relation(type=f[1], head=head, tail=tail, novel=f[4] if len(f) == 5 else None))
    document = Document(id=doc.id, text=join_title_abstract(title, abstract), title=title,
                        mentions=doc.mentions, relations=relations, source=str(path))
    yield ReadRecord(document, Location(str(path), doc.line, record=f"document {doc.id}"),
                     doc.mention_where)


@READERS.register("pubtator")
def read_pubtator(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """Documents of a PubTator file, streamed (one document in memory at a time)."""
    doc: _Pending | None = None
    with open_text(path, ctx) as f:
        for n, line in f:
            if line is None:                        # undecodable, reported and skipped
                if doc is not None:
                    doc.broken = True
                continue
            line = line.rstrip("\r\n")
            if not line.strip():
                if doc is not None:
                    yield from _finish(doc, path, ctx)
                    doc = None
                continue
            where = Location(str(path), n)

            header = PUBTATOR_HEADER.match(line)
            if header:
                pmid, tag, text = header.groups()
                if tag not in ("t", "a"):
                    ctx.bad(where, f"unknown section '{pmid}|{tag}|'; expected '|t|' (title) or '|a|' "
                                   f"(abstract)")
                    continue
                if doc is not None and (doc.id != pmid or getattr(doc, _SECTION[tag]) is not None):
                    if doc.id == pmid:
                        ctx.bad(where, f"document {pmid} has a second {_SECTION[tag]} line")
                        continue
                    yield from _finish(doc, path, ctx)   # next document without a blank line
                    doc = None
                if doc is None:
                    doc = _Pending(pmid, n)
                setattr(doc, _SECTION[tag], text)
                continue

            fields = line.split("\t")
            if len(fields) < 4:
                ctx.bad(where, "not a title/abstract line ('PMID|t|...') nor a mention or relation "
                               f"line (tab-separated, 4 to 7 fields): {line[:80]!r}")
                continue
            if doc is None or fields[0] != doc.id:
                inside = f"inside document {doc.id}" if doc is not None else "before any '|t|' line"
                ctx.bad(where, f"annotation line for document {fields[0]!r} {inside}")
                continue
            if _INT.match(fields[1]):
                _mention(doc, fields, where, ctx)
            elif len(fields) in (4, 5):
                doc.relations.append((where, fields))
            else:
                ctx.bad(where, f"relation line has {len(fields)} tab-separated fields; expected 4 "
                               f"(PMID, type, id1, id2) or 5 (..., Novel|No)")
        if doc is not None and not f.truncated:
            yield from _finish(doc, path, ctx)


_SECTION = {"t": "title", "a": "abstract"}


def _mention(doc: _Pending, fields: list[str], where: Location, ctx: ReadContext) -> None:
    if len(fields) not in (6, 7):
        ctx.bad(where, f"mention line has {len(fields)} tab-separated fields; expected 6 (PMID, start, "
                       f"end, text, type, id) or 7 (+ individual mentions)")
        return
    if not _INT.match(fields[2]):
        ctx.bad(where, f"mention end offset {fields[2]!r} is not an integer")
        return
    etype, raw = fields[4], fields[5]
    doc.mentions.append(Mention(start=int(fields[1]), end=int(fields[2]), text=fields[3], type=etype,
                                ids=normalize_ids(raw, etype)))
    doc.mention_where.append(where.with_record(f"document {doc.id}"))
    doc.raw_ids.append((raw, etype))
