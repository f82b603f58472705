"""Corpus readers: PubTator, BioC (XML/JSON), PubMed XML, JSON Lines and plain text → Documents.

    reader = read_corpus(["Train.PubTator", "abstracts.jsonl.gz"])
    for doc in reader:                 # streamed, one document at a time
        ...
    reader.stats.documents, reader.stats.skipped, reader.stats.files["Train.PubTator"].mentions

:func:`read_corpus` chooses each input's reader (:func:`detect_format`, or ``format`` by name from
:data:`READERS`) and applies, in one place, the checks every format shares:

- every mention satisfies ``0 <= start < end <= len(text)``;
- document ids are unique across all inputs (the error names both places);
- a document's text is at most :data:`MAX_TEXT_CHARS` characters (spaCy's limit: sentence splitting
  and the recognizer parse each document whole);
- every input holds at least one document;
- a mention whose ``text`` differs from ``text[start:end]`` is counted (``offset_mismatches``) and
  logged, not rejected (real corpora contain a few).

A failed check is a :class:`CorpusError` naming file, line/record and problem; with
``skip_bad_records`` the offending mention / document / input is logged, counted in
``stats.skipped`` and left out, and reading goes on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from graphmert.config import CorpusConfig
from graphmert.corpus.document import Document
from graphmert.corpus.readers.base import (
    READERS, CorpusError, Location, ReadContext, ReadRecord, SkippedRecord, logger, open_text,
    xml_root_tag,
)
from graphmert.corpus.readers import bioc, jsonl, pubmed, pubtator, text  # noqa: F401  (register)
from graphmert.corpus.readers.pubtator import PUBTATOR_HEADER

__all__ = [
    "CorpusError",
    "CorpusReader",
    "DocumentCounts",
    "MAX_TEXT_CHARS",
    "FileStats",
    "Location",
    "READERS",
    "ReadContext",
    "ReadRecord",
    "ReadStats",
    "SkippedRecord",
    "detect_format",
    "read_corpus",
]

_MAX_MISMATCH_LOGS = 10
#: the longest document text read (characters): spaCy's ``nlp.max_length``, beyond which sentence
#: splitting (:mod:`graphmert.corpus.nlp`) and the recognizer refuse a text (error E088); a PubMed
#: abstract is a few thousand characters, so a longer "abstract" is a damaged or merged record
MAX_TEXT_CHARS = 1_000_000


# --------------------------------------------------------------------------------------------------
# Format detection
# --------------------------------------------------------------------------------------------------

_XML_ROOTS = {"collection": "bioc_xml", "PubmedArticleSet": "pubmed_xml",
              "MedlineCitationSet": "pubmed_xml"}


def detect_format(path: str | Path) -> str:
    """The reader name for ``path``, by its name, sniffing content only where the name is ambiguous.

    folder → ``text``; ``*.pubtator*`` (any case) → ``pubtator``; ``.json`` / ``.bioc.json`` →
    ``bioc_json``; ``.jsonl`` → ``jsonl``; ``.xml`` → by root element (``collection`` → ``bioc_xml``,
    ``PubmedArticleSet`` / ``MedlineCitationSet`` → ``pubmed_xml``); ``.txt`` → ``pubtator`` if its
    first non-blank line looks like ``ID|t|``, else ``text``. ``.gz`` is looked through.
    """
    p = Path(path)
    if not p.exists():
        raise CorpusError(str(p), "no such file or directory")
    if p.is_dir():
        return "text"
    name = p.name.lower()
    if ".pubtator" in name:
        return "pubtator"
    base = name[:-3] if name.endswith(".gz") else name
    if base.endswith(".json"):
        return "bioc_json"
    if base.endswith(".jsonl"):
        return "jsonl"
    if base.endswith(".xml"):
        root = xml_root_tag(p)
        if root in _XML_ROOTS:
            return _XML_ROOTS[root]
        raise CorpusError(str(p), f"cannot tell the XML format: root element is "
                                  f"{repr(root) if root else 'unreadable'}; expected 'collection' (BioC) "
                                  f"or 'PubmedArticleSet' (PubMed); set corpus.format")
    if base.endswith(".txt"):
        with open_text(p) as f:
            for _, line in f:
                if line and line.strip():
                    return "pubtator" if PUBTATOR_HEADER.match(line.strip()) else "text"
        return "text"
    raise CorpusError(str(p), f"cannot tell the corpus format from the file name; set corpus.format "
                              f"to one of {READERS.names()}")


# --------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------


@dataclass
class DocumentCounts:
    """Documents, mentions and relations read, and mentions whose text differs from their offsets:
    the counts kept both for the whole pass (:class:`ReadStats`) and per file (:class:`FileStats`)."""

    documents: int = 0
    mentions: int = 0
    relations: int = 0
    offset_mismatches: int = 0

    def count(self, doc: Document, offset_mismatches: int) -> None:
        """Add one document read, with ``offset_mismatches`` of its mentions."""
        self.documents += 1
        self.mentions += len(doc.mentions)
        self.relations += len(doc.relations)
        self.offset_mismatches += offset_mismatches


@dataclass
class FileStats(DocumentCounts):
    """What was read from one source file; ``skipped`` counts its bad records."""

    skipped: int = 0


@dataclass
class ReadStats(DocumentCounts):
    """What a pass over the corpus read (complete once iteration has finished)."""

    skipped: list[SkippedRecord] = field(default_factory=list)
    files: dict[str, FileStats] = field(default_factory=dict)   # per source file

    def file(self, path: str) -> FileStats:
        return self.files.setdefault(path, FileStats())

    def to_dict(self) -> dict:
        """Plain JSON-serialisable counts (for manifests)."""
        return {"documents": self.documents, "mentions": self.mentions, "relations": self.relations,
                "offset_mismatches": self.offset_mismatches, "skipped_records": len(self.skipped),
                "skipped": [asdict(s) for s in self.skipped],
                "files": {k: asdict(v) for k, v in self.files.items()}}


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------


class CorpusReader:
    """Iterable over the Documents of several inputs; :attr:`stats` describes the last pass."""

    def __init__(self, paths: str | Path | Iterable[str | Path], format: str = CorpusConfig.format,
                 skip_bad_records: bool = CorpusConfig.skip_bad_records) -> None:
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.skip_bad_records = skip_bad_records
        self.inputs: list[tuple[Path, str]] = []
        for raw in paths:
            p = Path(raw)
            if format == "auto":
                fmt = detect_format(p)
            else:
                READERS.get(format)                     # unknown name → error naming corpus.format
                if not p.exists():
                    raise CorpusError(str(p), "no such file or directory")
                fmt = format
            self.inputs.append((p, fmt))
        if not self.inputs:
            raise CorpusError("corpus.paths", "no input files given")
        self.stats = ReadStats()

    def __iter__(self) -> Iterator[Document]:
        self.stats = stats = ReadStats()
        seen: dict[str, str] = {}                       # document id → where it was first read
        for path, fmt in self.inputs:
            ctx = ReadContext(path, self.skip_bad_records)
            n_docs = stats.documents
            logged = 0
            for rec in READERS.get(fmt)(path, ctx):
                doc = rec.document
                if doc.id in seen:
                    ctx.bad(rec.where, f"duplicate document id {doc.id!r}; first read at {seen[doc.id]}")
                    continue
                if len(doc.text) > MAX_TEXT_CHARS:
                    ctx.bad(rec.where, f"document {doc.id!r}: its text of {len(doc.text):,} characters is longer "
                                       f"than the {MAX_TEXT_CHARS:,} that sentence splitting and the recognizer "
                                       f"take (graphmert.corpus.readers.MAX_TEXT_CHARS); split it into "
                                       f"documents, or set corpus.skip_bad_records to skip it")
                    continue
                mismatches = self._check_mentions(rec, ctx)
                seen[doc.id] = str(rec.where)
                stats.count(doc, len(mismatches))
                stats.file(doc.source or str(path)).count(doc, len(mismatches))
                for i in mismatches:
                    if logged < _MAX_MISMATCH_LOGS:
                        m = doc.mentions[i]
                        logger.warning("%s: mention text %r differs from the text at its offsets "
                                       "%d-%d: %r", rec.mention_location(i), m.text, m.start, m.end,
                                       doc.text[m.start:m.end])
                    logged += 1
                yield doc
            if logged > _MAX_MISMATCH_LOGS:
                logger.warning("%s: %d mentions differ from the text at their offsets (%d logged)",
                               path, logged, _MAX_MISMATCH_LOGS)
            if stats.documents == n_docs:
                ctx.bad(Location(str(path)), "contains no documents")
            for s in ctx.skipped:
                stats.skipped.append(s)
                stats.file(s.path).skipped += 1
        if stats.documents == 0:
            raise CorpusError(", ".join(str(p) for p, _ in self.inputs),
                              f"no documents could be read ({len(stats.skipped)} bad records skipped)")

    @staticmethod
    def _check_mentions(rec: ReadRecord, ctx: ReadContext) -> list[int]:
        """Drop (report) mentions with impossible offsets; return indices of text mismatches."""
        doc = rec.document
        n = len(doc.text)
        kept, kept_where, mismatches = [], [], []
        for i, m in enumerate(doc.mentions):
            problem = None
            if m.start < 0 or m.end > n:
                problem = f"mention {m.text!r} offset {m.start}-{m.end} beyond text of length {n}"
            elif m.start >= m.end:
                problem = f"mention {m.text!r} has an empty or reversed span {m.start}-{m.end}"
            if problem:
                ctx.bad(rec.mention_location(i), problem)
                continue
            if doc.text[m.start:m.end] != m.text:
                mismatches.append(len(kept))
            kept.append(m)
            kept_where.append(rec.mention_location(i))
        if len(kept) != len(doc.mentions):
            doc.mentions, rec.mention_where = kept, kept_where
        return mismatches


def read_corpus(paths: str | Path | Iterable[str | Path], format: str = CorpusConfig.format,
                skip_bad_records: bool = CorpusConfig.skip_bad_records) -> CorpusReader:
    """The documents of ``paths`` (files or folders), streamed; ``.stats`` is complete afterwards.

    Formats are chosen per input by :func:`detect_format` when ``format`` is ``"auto"``. Missing
    inputs and unknown format names are reported here, before any reading.
    """
    return CorpusReader(paths, format=format, skip_bad_records=skip_bad_records)
