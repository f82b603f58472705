"""BioC, in its XML and JSON encodings (``.gz`` allowed).

A BioC document is a list of passages, each with an ``offset`` into the document; annotations carry
``identifier`` and ``type`` infons and one or more locations (document offsets); relations carry
infons ``type``, ``entity1``, ``entity2`` and (BioRED) ``novel``. The document text is rebuilt so that
every passage starts at its offset — passages in offset order, gaps filled with spaces — which for a
title passage at 0 and an abstract at ``len(title) + 1`` is exactly the PubTator ``title + " " +
abstract``, so offsets from either format agree.

Both encodings are streamed: XML with ``iterparse`` (one ``<document>`` in memory at a time), JSON by
decoding the ``documents`` array one element at a time from a sliding text buffer. Both are first
turned into the BioC JSON shape (dicts with ``passages``, ``annotations``, ``locations``, ``infons``),
and one function builds the :class:`Document` from that.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterator

from graphmert.corpus.document import Document, Mention, Relation, normalize_ids
from graphmert.corpus.readers.base import (
    READERS, IdMap, Location, ReadContext, ReadRecord, RecordProblem, iter_xml_children, local_name,
    open_text, read_mentions,
)

__all__ = ["read_bioc_xml", "read_bioc_json", "bioc_document"]

_ID_KEYS = ("identifier", "Identifier", "MESH", "MeSH", "NCBI Gene", "ID")
_TITLE_TYPES = {"title", "front"}


class _JsonSyntax(Exception):
    """Invalid JSON at a location; decoding cannot go on after it."""

    def __init__(self, location: Location, problem: str) -> None:
        super().__init__(problem)
        self.location, self.problem = location, problem


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise RecordProblem(f"{what} {value!r} is not an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RecordProblem(f"{what} {value!r} is not an integer") from None


def _infons(obj: dict) -> dict[str, Any]:
    infons = obj.get("infons") or {}
    if not isinstance(infons, dict):
        raise RecordProblem(f"'infons' must be an object, got {type(infons).__name__}")
    return infons


def _is_title(passage: dict) -> bool:
    infons = _infons(passage)
    kind = str(infons.get("type", "")).lower()
    return kind in _TITLE_TYPES or str(infons.get("section_type", "")).lower() == "title"


def bioc_document(obj: Any, path: Path, ctx: ReadContext, where: Location) -> ReadRecord | None:
    """A BioC document (JSON shape) → :class:`ReadRecord`; ``None`` if it is bad and skipped."""
    try:
        if not isinstance(obj, dict):
            raise RecordProblem(f"expected a BioC document object, got {type(obj).__name__}")
        if obj.get("id") in (None, ""):
            raise RecordProblem("document has no 'id'")
        doc_id = str(obj["id"])
        where = where.with_record(f"document {doc_id}" + (f" ({where.record})" if where.record else ""))
        passages = obj.get("passages")
        if not isinstance(passages, list) or not passages:
            raise RecordProblem("document has no passages")
        try:
            return _build(obj, doc_id, passages, path, ctx, where)
        except (AttributeError, TypeError) as e:    # an object where a list is due, or vice versa
            raise RecordProblem(f"malformed BioC document structure ({e})") from None
    except RecordProblem as e:
        ctx.bad(where, str(e))
        return None


def _build(obj: dict, doc_id: str, passages: list, path: Path, ctx: ReadContext,
           where: Location) -> ReadRecord | None:
    segments: list[tuple[int, str]] = []            # (offset, text) of passages / their sentences
    annotations: list[dict] = []
    relations: list[dict] = list(obj.get("relations") or [])
    title = ""
    has_title_infon = any(_is_title(p) for p in passages if isinstance(p, dict))
    for k, p in enumerate(passages):
        if not isinstance(p, dict):
            raise RecordProblem(f"passage {k + 1} is not an object")
        offset = _int(p.get("offset", 0), f"passage {k + 1} offset")
        text = p.get("text") or ""
        if text:
            segments.append((offset, text))
        for s in p.get("sentences") or []:
            if s.get("text"):
                segments.append((_int(s.get("offset", 0), f"sentence offset in passage {k + 1}"),
                                 s["text"]))
            annotations.extend(s.get("annotations") or [])
        annotations.extend(p.get("annotations") or [])
        relations.extend(p.get("relations") or [])
        if _is_title(p) or (not has_title_infon and k == 0 and len(passages) > 1 and offset == 0):
            title = title or text

    pieces: list[str] = []
    length = 0
    for offset, text in sorted(segments, key=lambda s: s[0]):
        if offset < length:
            raise RecordProblem(f"passage at offset {offset} overlaps the text before it (already "
                                f"{length} characters long)")
        pieces.append(" " * (offset - length))
        pieces.append(text)
        length = offset + len(text)
    full = "".join(pieces)

    by_ann: dict[str, str] = {}                     # annotation id → raw entity id (relation nodes)

    def parse(a: dict) -> tuple[Mention, list[tuple[str, list[str]]]]:
        m, raw = _mention(a, full)
        if a.get("id") is not None:
            by_ann[str(a["id"])] = raw
        return m, [(raw, m.ids)]

    mentions, mention_where, ids = read_mentions(
        ((where.with_record(f"{where.record}, annotation {a.get('id', '?')}"), a) for a in annotations),
        parse, ctx)

    out_rel: list[Relation] = []
    for r in relations:
        rel_where = where.with_record(f"{where.record}, relation {r.get('id', '?')}")
        try:
            out_rel.append(_relation(r, ids, by_ann))
        except RecordProblem as e:
            ctx.bad(rel_where, str(e))

    document = Document(id=doc_id, text=full, title=title, mentions=mentions, relations=out_rel,
                        source=str(path), metadata=dict(_infons(obj)))
    return ReadRecord(document, where, mention_where)


def _mention(a: dict, text: str) -> tuple[Mention, str]:
    infons = _infons(a)
    locations = a.get("locations") or []
    if not locations:
        raise RecordProblem("annotation has no location")
    spans = [(_int(loc.get("offset"), "location offset"), _int(loc.get("length"), "location length"))
             for loc in locations]
    start = min(o for o, _ in spans)
    end = max(o + n for o, n in spans)
    raw = next((str(infons[k]) for k in _ID_KEYS if infons.get(k) not in (None, "")), "")
    etype = str(infons.get("type", ""))
    mtext = a.get("text")
    if mtext is None:
        mtext = text[start:end]
    return Mention(start=start, end=end, text=str(mtext), type=etype, ids=normalize_ids(raw, etype)), raw


def _relation(r: dict, ids: IdMap, by_ann: dict[str, str]) -> Relation:
    infons = {str(k).lower(): v for k, v in _infons(r).items()}
    rtype = str(infons.get("type") or infons.get("relation") or "")
    if not rtype:
        raise RecordProblem("relation has no 'type' infon")
    head = infons.get("entity1") or infons.get("chemical")
    tail = infons.get("entity2") or infons.get("disease")
    if head is None or tail is None:
        refs = [by_ann.get(str(n.get("refid"))) for n in r.get("nodes") or []]
        refs = [x for x in refs if x]
        if len(refs) < 2:
            raise RecordProblem("relation names no entities (no entity1/entity2 infons or annotation "
                                "nodes)")
        head, tail = refs[0], refs[1]
    h, t = ids.resolve(str(head)), ids.resolve(str(tail))
    if h is None or t is None:
        raise RecordProblem(f"relation {rtype!r} refers to an unlinked id "
                            f"({head if h is None else tail!r})")
    novel = infons.get("novel")
    return Relation(type=rtype, head=h, tail=t, novel=None if novel is None else str(novel))


# --------------------------------------------------------------------------------------------------
# XML
# --------------------------------------------------------------------------------------------------


def _xml_infons(el: ET.Element) -> dict[str, str]:
    return {i.get("key", ""): i.text or "" for i in el.findall("infon")}


def _xml_annotation(el: ET.Element) -> dict:
    return {"id": el.get("id"), "infons": _xml_infons(el), "text": el.findtext("text"),
            "locations": [{"offset": loc.get("offset"), "length": loc.get("length")}
                          for loc in el.findall("location")]}


def _xml_relation(el: ET.Element) -> dict:
    return {"id": el.get("id"), "infons": _xml_infons(el),
            "nodes": [{"refid": n.get("refid"), "role": n.get("role")} for n in el.findall("node")]}


def _xml_passage(el: ET.Element) -> dict:
    return {"infons": _xml_infons(el), "offset": el.findtext("offset", "0"), "text": el.findtext("text"),
            "sentences": [{"offset": s.findtext("offset", "0"), "text": s.findtext("text"),
                           "annotations": [_xml_annotation(a) for a in s.findall("annotation")]}
                          for s in el.findall("sentence")],
            "annotations": [_xml_annotation(a) for a in el.findall("annotation")],
            "relations": [_xml_relation(r) for r in el.findall("relation")]}


def _xml_document(el: ET.Element) -> dict:
    return {"id": (el.findtext("id") or "").strip(), "infons": _xml_infons(el),
            "passages": [_xml_passage(p) for p in el.findall("passage")],
            "relations": [_xml_relation(r) for r in el.findall("relation")]}


@READERS.register("bioc_xml")
def read_bioc_xml(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """Documents of a BioC XML collection, one ``<document>`` in memory at a time."""
    n = 0
    for el in iter_xml_children(path, ctx):
        if local_name(el.tag) != "document":
            continue
        n += 1
        rec = bioc_document(_xml_document(el), path, ctx, Location(str(path), record=f"record {n}"))
        if rec is not None:
            yield rec


# --------------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------------

_WS = re.compile(r"[ \t\r\n]*")
_DOC_ARRAYS = ("documents", "PubTator3")


class _JsonScanner:
    """Decode a JSON text value by value from a sliding buffer of chunks (``raw_decode``)."""

    def __init__(self, path: Path, ctx: ReadContext, chunks: Iterator[str]) -> None:
        self.path, self.ctx, self._chunks = path, ctx, chunks
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False
        self._dec = json.JSONDecoder()

    def _more(self) -> bool:
        chunk = next(self._chunks, None)
        if chunk is None:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _advance(self, to: int) -> None:
        self.line += self.buf.count("\n", self.pos, to)
        self.pos = to

    def error(self, problem: str, at: int | None = None) -> _JsonSyntax:
        at = self.pos if at is None else at
        line = self.line + self.buf.count("\n", self.pos, at)
        nl = self.buf.rfind("\n", 0, at)
        column = at - nl if nl >= 0 or self.line == 1 else None
        return _JsonSyntax(Location(str(self.path), line, column), f"invalid JSON: {problem}")

    def peek(self) -> str:
        """The next non-blank character ("" at the end), without consuming it."""
        while True:
            self._advance(_WS.match(self.buf, self.pos).end())
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise self.error(f"expected {' or '.join(repr(x) for x in chars)}, found "
                             f"{repr(c) if c else 'end of file'}")
        self._advance(self.pos + 1)
        return c

    def value(self) -> Any:
        self.peek()                         # raw_decode wants the value to start at pos
        while True:
            try:
                obj, end = self._dec.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if not self.eof and self._more():
                    continue
                raise self.error(e.msg, e.pos) from None
            if end == len(self.buf) and not isinstance(obj, (dict, list, str)) and self._more():
                continue                    # a number or literal may go on in the next chunk
            self._advance(end)
            return obj

    def array(self) -> Iterator[tuple[int, Any]]:
        self.expect("[")
        if self.peek() == "]":
            self._advance(self.pos + 1)
            return
        while True:
            self.peek()
            line = self.line
            yield line, self.value()
            if self.expect(",]") == "]":
                return


def _json_documents(sc: _JsonScanner) -> Iterator[tuple[int, Any]]:
    """(line, document object) for a BioC collection, a list of documents, or one document."""
    first = sc.peek()
    if first == "[":
        yield from sc.array()
    elif first == "{":
        start = sc.line
        sc.expect("{")
        rest: dict[str, Any] = {}
        streamed = False
        if sc.peek() == "}":
            sc.expect("}")
        else:
            while True:
                key = sc.value()
                if not isinstance(key, str):
                    raise sc.error("expected a string key")
                sc.expect(":")
                if key in _DOC_ARRAYS and sc.peek() == "[":
                    streamed = True
                    yield from sc.array()
                else:
                    rest[key] = sc.value()
                if sc.expect(",}") == "}":
                    break
        if not streamed and "passages" in rest:
            yield start, rest
    else:
        raise sc.error("expected a BioC collection object or a list of documents, found "
                       + (repr(first) if first else "end of file"))
    if sc.peek():
        raise sc.error("unexpected content after the end of the JSON value")


@READERS.register("bioc_json")
def read_bioc_json(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """Documents of a BioC JSON collection, decoded one document at a time."""
    with open_text(path, ctx) as f:
        sc = _JsonScanner(path, ctx, f.chunks())
        try:
            for line, obj in _json_documents(sc):
                rec = bioc_document(obj, path, ctx, Location(str(path), line))
                if rec is not None:
                    yield rec
        except _JsonSyntax as e:                # the rest of the file cannot be trusted
            if not f.stopped_early:             # else the cause is already reported
                ctx.bad(e.location, e.problem)
