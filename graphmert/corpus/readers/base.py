"""What every corpus reader shares: errors with locations, bad-record policy, guarded file input.

A reader is a function ``read(path, ctx) -> Iterator[ReadRecord]`` registered by name in
:data:`READERS` (config key ``corpus.format``). It parses one input (a file, or for ``text`` a folder)
and yields one :class:`ReadRecord` per document: the :class:`~graphmert.corpus.document.Document`
plus where it (and each of its mentions) came from. Validation common to all formats (offsets, duplicate
ids, empty inputs) happens once, in :func:`graphmert.corpus.readers.read_corpus`.

Every problem is reported as ``ctx.bad(location, reason)``: a :class:`CorpusError` naming the file, the
line or record, and the problem — or, with ``skip_bad_records``, a logged and counted skip after which
the reader continues with the next record.

Input is opened through :func:`open_text` / :func:`open_binary`, which read ``.gz`` transparently and
turn a truncated or corrupt gzip stream, or bytes that are not UTF-8, into such errors.
"""

from __future__ import annotations

import codecs
import gzip
import logging
import re
import zlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from graphmert.corpus.document import Document, Mention, normalize_id, split_ids
from graphmert.errors import GraphmertError
from graphmert.registry import Registry

__all__ = [
    "CorpusError",
    "Location",
    "SkippedRecord",
    "ReadContext",
    "ReadRecord",
    "Reader",
    "READERS",
    "IdMap",
    "RecordProblem",
    "read_mentions",
    "join_title_abstract",
    "open_binary",
    "open_text",
    "BinarySource",
    "TextFile",
    "iter_xml_children",
    "xml_root_tag",
    "local_name",
    "logger",
]

logger = logging.getLogger("graphmert.corpus")


# --------------------------------------------------------------------------------------------------
# Locations and errors
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """Where something is in an input: the file, and a 1-based line (and column) and/or a record."""

    path: str
    line: int | None = None
    column: int | None = None
    record: str | None = None       # e.g. "document 12345", "document 12345, annotation 7", "byte 99"

    def __str__(self) -> str:
        parts = []
        if self.line is not None:
            parts.append(f"line {self.line}" + (f", column {self.column}" if self.column else ""))
        if self.record:
            parts.append(self.record)
        return f"{self.path}: {', '.join(parts)}" if parts else self.path

    def with_record(self, record: str) -> "Location":
        return Location(self.path, self.line, self.column, record)


class CorpusError(GraphmertError, ValueError):
    """Bad corpus input. The message is ``"<file>: line N[, record]: <problem>"``."""

    def __init__(self, location: Location | str, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{location}: {problem}")


@dataclass(frozen=True)
class SkippedRecord:
    location: str       # as in the error message: file, line / record
    reason: str
    path: str           # the file it is in


class ReadContext:
    """Per-input bad-record policy: raise :class:`CorpusError`, or (``skip_bad_records``) log + count."""

    def __init__(self, path: str | Path, skip_bad_records: bool = False) -> None:
        self.path = str(path)
        self.skip_bad_records = skip_bad_records
        self.skipped: list[SkippedRecord] = []

    def loc(self, line: int | None = None, record: str | None = None,
            column: int | None = None, path: str | Path | None = None) -> Location:
        return Location(self.path if path is None else str(path), line, column, record)

    def bad(self, location: Location | str, reason: str) -> None:
        """Report a bad record: raise, or when skipping, log it, count it and return."""
        if not self.skip_bad_records:
            raise CorpusError(location, reason)
        path = location.path if isinstance(location, Location) else self.path
        self.skipped.append(SkippedRecord(str(location), reason, path))
        logger.warning("skipping bad record: %s: %s", location, reason)


@dataclass
class ReadRecord:
    """One document as a reader produced it, with the locations errors about it should name."""

    document: Document
    where: Location
    mention_where: list[Location] = field(default_factory=list)   # parallel to document.mentions

    def mention_location(self, i: int) -> Location:
        if i < len(self.mention_where):
            return self.mention_where[i]
        return self.where.with_record(f"document {self.document.id}, mention {i + 1}")


Reader = Callable[[Path, ReadContext], Iterator[ReadRecord]]
READERS: Registry[Reader] = Registry("reader", key="corpus.format")


# --------------------------------------------------------------------------------------------------
# Shared conventions
# --------------------------------------------------------------------------------------------------


def join_title_abstract(title: str, abstract: str) -> str:
    """The PubTator convention: ``title + " " + abstract`` when both exist, else whichever exists."""
    if title and abstract:
        return f"{title} {abstract}"
    return title or abstract


class IdMap:
    """Raw source id → normalised CURIE, learnt from a document's mentions, for its relations.

    Relations name entities by raw ids (``3630``, ``D003924``, ``D017180|D014693``); the entity type that
    decides ``3630`` → ``NCBIGene:3630`` is only on the mentions. Each mention's whole raw id and each
    of its pieces are recorded; an id no mention carries falls back to ``normalize_id(raw)``.
    """

    def __init__(self) -> None:
        self._map: dict[str, str] = {}

    def add(self, raw: str, entity_type: str, ids: list[str]) -> None:
        """Record a mention's raw id field and the normalised ids it gave (``normalize_ids``)."""
        raw = raw.strip()
        if ids and raw not in self._map:
            self._map[raw] = "|".join(ids)
        if len(ids) < 2:                    # a single id: the whole raw string is its only piece
            return
        for piece in split_ids(raw):
            cid = normalize_id(piece, entity_type)
            if cid is not None:
                self._map.setdefault(piece, cid)

    def resolve(self, raw: str) -> str | None:
        raw = raw.strip()
        return self._map.get(raw) or normalize_id(raw)


class RecordProblem(Exception):
    """A problem with one part of a record (a field, an entity, a relation). The parsers of a format
    raise it; the reader reports it through ``ctx.bad`` at that part's location."""


# parse(entity record) -> (mention, [(raw id field, its normalised ids), …]); raises RecordProblem
MentionParser = Callable[[Any], "tuple[Mention, list[tuple[str, list[str]]]]"]


def read_mentions(parts: Iterable[tuple[Location, Any]], parse: MentionParser,
                  ctx: ReadContext) -> tuple[list[Mention], list[Location], IdMap]:
    """A document's mentions from its entity records, each with its location, and the :class:`IdMap`
    its relations resolve raw ids with.

    ``parts`` pairs each record with the location errors about it name. A record ``parse`` rejects
    (:class:`RecordProblem`) is reported there and left out; reading goes on, as for a bad record.
    """
    mentions: list[Mention] = []
    mention_where: list[Location] = []
    ids = IdMap()
    for where, part in parts:
        try:
            mention, raws = parse(part)
        except RecordProblem as e:
            ctx.bad(where, str(e))
            continue
        mentions.append(mention)
        mention_where.append(where)
        for raw, normalized in raws:
            ids.add(raw, mention.type, normalized)
    return mentions, mention_where, ids


# --------------------------------------------------------------------------------------------------
# Guarded input: .gz, truncation, non-UTF-8
# --------------------------------------------------------------------------------------------------


def _is_gzip(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


class BinarySource:
    """A binary file (gunzipped on the fly for ``.gz``) whose corruption errors name file and byte.

    On a truncated/corrupt gzip stream: with ``ctx`` skipping, the rest of the file is counted as one
    skipped record, :attr:`truncated` is set and reading ends (returns ``b""``); otherwise
    :class:`CorpusError`.
    """

    def __init__(self, path: str | Path, ctx: ReadContext | None = None) -> None:
        path = Path(path)
        self.path = str(path)
        self.ctx = ctx
        self.pos = 0                # bytes (of decompressed data) delivered so far
        self.lineno: int | None = None  # the line being read, when a line reader keeps count
        self.truncated = False
        self._raw = open(path, "rb")
        self._gz = _is_gzip(path)
        self._f = gzip.GzipFile(fileobj=self._raw, mode="rb") if self._gz else self._raw

    def _guard(self, fn: Callable, *args) -> bytes:
        if self.truncated:
            return b""
        try:
            data = fn(*args)
        except (EOFError, OSError, zlib.error) as e:
            if not self._gz:
                raise
            where = Location(self.path, self.lineno, record=f"byte {self.pos} of the decompressed data")
            reason = f"truncated or corrupt gzip data ({e}); the rest of the file cannot be read"
            (self.ctx or ReadContext(self.path)).bad(where, reason)
            self.truncated = True
            return b""
        self.pos += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        return self._guard(self._f.read, n)

    def readline(self) -> bytes:
        return self._guard(self._f.readline)

    def close(self) -> None:
        if self._f is not self._raw:
            self._f.close()
        self._raw.close()

    def __enter__(self) -> "BinarySource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TextFile:
    """UTF-8 text of a (possibly gzipped) file, as numbered lines or as chunks.

    Iterating yields ``(line_number, line)``; a line that is not valid UTF-8 is reported through the
    context (error naming line, column and byte) and, when skipping, yielded as ``(n, None)`` so the
    reader can drop what it belongs to. A leading byte-order mark is removed.
    """

    def __init__(self, path: str | Path, ctx: ReadContext | None = None) -> None:
        self.path = str(path)
        self.ctx = ctx or ReadContext(path)
        self.bin = BinarySource(path, self.ctx)
        self.lineno = 0
        self.undecodable = False    # chunks() met bytes that are not UTF-8 (reported) and stopped

    @property
    def truncated(self) -> bool:
        return self.bin.truncated

    @property
    def stopped_early(self) -> bool:
        """Reading ended before the end of the file because of a reported (skipped) error."""
        return self.bin.truncated or self.undecodable

    def __iter__(self) -> Iterator[tuple[int, str | None]]:
        readline = self.bin.readline
        self.bin.lineno = 1
        while raw := readline():
            self.lineno += 1
            self.bin.lineno = self.lineno + 1
            start = self.bin.pos - len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                self.ctx.bad(Location(self.path, self.lineno, e.start + 1),
                             f"invalid UTF-8 byte 0x{raw[e.start]:02x} (byte {start + e.start} "
                             f"of the file{' after decompression' if self.bin._gz else ''})")
                yield self.lineno, None
                continue
            if self.lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield self.lineno, line

    def chunks(self, size: int = 1 << 20) -> Iterator[str]:
        """Decoded text in pieces of about ``size`` bytes. Undecodable bytes end the text (after the
        error is reported), since what follows cannot be trusted."""
        dec = codecs.getincrementaldecoder("utf-8")()
        lines = 0
        first = True
        while True:
            data = self.bin.read(size)
            if self.bin.truncated:          # reported already; a cut-off character is no news
                return
            pending = len(dec.getstate()[0])
            try:
                text = dec.decode(data, final=not data)
            except UnicodeDecodeError as e:
                good = e.object[:e.start].decode("utf-8", errors="replace")
                line = lines + good.count("\n") + 1
                byte = self.bin.pos - len(data) - pending + e.start
                self.undecodable = True
                self.ctx.bad(Location(self.path, line, len(good) - good.rfind("\n")),
                             f"invalid UTF-8 byte 0x{e.object[e.start]:02x} (byte {byte})")
                return
            if first and text.startswith("\ufeff"):
                text = text[1:]
            first = first and not text
            lines += text.count("\n")
            if text:
                yield text
            if not data:
                return

    def read_all(self) -> str | None:
        """The whole text, or ``None`` if it could not be decoded and the context skips."""
        out: list[str] = []
        n_skipped = len(self.ctx.skipped)
        for _, line in self:
            if line is not None:
                out.append(line)
        return None if len(self.ctx.skipped) > n_skipped else "".join(out)

    def close(self) -> None:
        self.bin.close()

    def __enter__(self) -> "TextFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_binary(path: str | Path, ctx: ReadContext | None = None) -> BinarySource:
    """Open a file for binary reading, gunzipping ``.gz``; corruption → :class:`CorpusError`."""
    return BinarySource(path, ctx)


def open_text(path: str | Path, ctx: ReadContext | None = None) -> TextFile:
    """Open a UTF-8 text file (``.gz`` allowed); bad gzip / bad UTF-8 → :class:`CorpusError`."""
    return TextFile(path, ctx)


# --------------------------------------------------------------------------------------------------
# XML
# --------------------------------------------------------------------------------------------------

_PARSE_POSITION = re.compile(r":\s*line \d+, column \d+$")


def local_name(tag: str) -> str:
    """``{namespace}name`` → ``name``."""
    return tag.rsplit("}", 1)[-1]


def iter_xml_children(path: str | Path, ctx: ReadContext) -> Iterator[ET.Element]:
    """Each direct child of the root element once it is complete (streamed with ``iterparse``;
    finished children are cleared, so memory stays at one child). Invalid XML is reported with the
    parser's line and column; parsing cannot resume after it, so the file ends there."""
    with open_binary(path, ctx) as src:
        depth = 0
        root: ET.Element | None = None
        try:
            for event, elem in ET.iterparse(src, events=("start", "end")):
                if event == "start":
                    depth += 1
                    if root is None:
                        root = elem
                    continue
                depth -= 1
                if depth == 1:
                    yield elem
                    root.clear()            # type: ignore[union-attr]
        except ET.ParseError as e:
            if src.truncated:               # already reported as a truncated gzip stream
                return
            line, column = e.position
            msg = _PARSE_POSITION.sub("", str(e))
            ctx.bad(Location(str(path), line, column + 1), f"invalid XML: {msg}")


def xml_root_tag(path: str | Path) -> str | None:
    """The local name of the root element (read from the first bytes only), or ``None``."""
    parser = ET.XMLPullParser(events=("start",))
    with open_binary(path) as src:
        for _ in range(1024):               # the root starts within the first 4 MiB
            data = src.read(1 << 12)        # small reads: a damaged .gz fails later, when read
            if not data:
                break
            try:
                parser.feed(data)
            except ET.ParseError:
                return None
            for _, elem in parser.read_events():
                return local_name(elem.tag)
    return None
