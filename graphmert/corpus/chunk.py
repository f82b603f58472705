"""A chunk: one leafy chain graph's worth of root tokens, with provenance back to its document.

Layout of ``input_ids`` (length ≤ R): ``[CLS] t_1 … t_n [SEP]`` with n ≤ R − 2. Position i of
``input_ids`` is root i of the leafy chain graph. ``offsets[i]`` is the (start, end) character span of
token i in the source document's text (``(-1, -1)`` for ``[CLS]``/``[SEP]``); ``word_ids[i]`` numbers
the whole words of the chunk (``-1`` for specials) so span masking can mask whole words.

A :class:`ChunkMention` maps a document mention onto root token positions ``[token_start, token_end)``.
In ``concatenate`` mode a chunk may span documents: ``doc_ids[i]`` then says which document root i
came from (in ``document`` mode it is ``doc_id`` everywhere and is not stored). ``doc_id`` is only the
first of them; :attr:`Chunk.documents` lists them all — what anything that must keep documents apart
(the train/held-out split) has to use.

With ``corpus.repeat_title`` a later window of a long document starts with the document's title:
``[CLS] title_1 … title_t w_1 … w_m [SEP]``. ``title_roots`` = t then says which roots repeat the
title (0: none), ``text`` is the title and the window's text joined by one space (the convention of
``concatenate`` mode's pieces), and ``char_start`` is where the title starts.
:meth:`Chunk.char_ranges` gives the document ranges the chunk covers, :meth:`Chunk.doc_offset` maps a
position of ``text`` back to the document.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa

from graphmert.io import read_parquet, write_parquet_stream

__all__ = ["ChunkMention", "Chunk", "write_chunks", "read_chunks"]


@dataclass
class ChunkMention:
    token_start: int                # first root position covered (≥ 1: after [CLS])
    token_end: int                  # exclusive
    char_start: int                 # offsets into the source document's text
    char_end: int
    text: str
    type: str
    ids: list[str] = field(default_factory=list)
    doc_id: str = ""                # the document this mention belongs to


@dataclass
class Chunk:
    id: str                         # "<doc_id>#<window>" in document mode, "concat#<n>" otherwise
    doc_id: str                     # the (first) source document
    input_ids: list[int]            # [n_roots] root token ids incl. [CLS] and [SEP]
    offsets: list[tuple[int, int]]  # [n_roots] char spans in the source document, (-1,-1) for specials
    word_ids: list[int]             # [n_roots] whole-word index, -1 for specials
    mentions: list[ChunkMention] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)  # [n_roots] only in concatenate mode
    text: str = ""                  # the source text the chunk covers (for scoring and provenance)
    char_start: int = 0             # where that text starts in the document
    title_roots: int = 0            # roots 1..title_roots repeat the document's title (module docstring)
    sentence_ids: list[int] = field(default_factory=list)   # [n_roots] document sentence of each root
    title_chars: int = 0            # len(document title) when the text starts with it

    @property
    def num_roots(self) -> int:
        return len(self.input_ids)

    @property
    def documents(self) -> list[str]:
        """Every document whose text the chunk holds, in order of appearance (``[doc_id]`` in
        ``document`` mode)."""
        return list(dict.fromkeys(d for d in self.doc_ids if d)) or [self.doc_id]

    def char_ranges(self) -> list[tuple[int, int]]:
        """The document character ranges [a, b) that ``text`` holds, in order: one, or the title's and
        the window's when the chunk repeats the title."""
        if not self.title_roots:
            return [(self.char_start, self.char_start + len(self.text))]
        t = self.title_roots
        return [(self.offsets[1][0], self.offsets[t][1]), (self.offsets[t + 1][0], self.offsets[-2][1])]

    def doc_offset(self, pos: int) -> int:
        """The document character offset of position ``pos`` of ``text`` (document mode)."""
        at = 0
        for a, b in self.char_ranges():
            if pos <= at + b - a:
                return a + pos - at
            at += b - a + 1                                     # the joining space
        return self.char_ranges()[-1][1]


_CMENTION = pa.struct([("token_start", pa.int32()), ("token_end", pa.int32()),
                       ("char_start", pa.int32()), ("char_end", pa.int32()), ("text", pa.string()),
                       ("type", pa.string()), ("ids", pa.list_(pa.string())), ("doc_id", pa.string())])
SCHEMA = pa.schema([
    ("id", pa.string()),
    ("doc_id", pa.string()),
    ("input_ids", pa.list_(pa.int32())),
    ("offsets", pa.list_(pa.list_(pa.int32(), 2))),
    ("word_ids", pa.list_(pa.int32())),
    ("mentions", pa.list_(_CMENTION)),
    ("doc_ids", pa.list_(pa.string())),
    ("text", pa.string()),
    ("char_start", pa.int32()),
    ("title_roots", pa.int32()),
    ("sentence_ids", pa.list_(pa.int32())),
    ("title_chars", pa.int32()),
])


def write_chunks(chunks: Iterable[Chunk], path: str | Path) -> int:
    """Write one Parquet shard of chunks atomically, as a stream (a row group per 4,096 chunks: a
    ``concatenate``-mode shard holds the whole corpus). Returns the number written."""
    def rows() -> Iterator[dict]:
        for c in chunks:
            row = asdict(c)
            row["offsets"] = [list(o) for o in c.offsets]
            yield row

    return write_parquet_stream(rows(), SCHEMA, path)


def read_chunks(paths: str | Path | Iterable[str | Path]) -> Iterator[Chunk]:
    """Chunks of one shard or several, in order; a file that is not a chunk shard is refused."""
    added = ("title_roots", "sentence_ids", "title_chars")     # columns newer than the first shards
    for row in read_parquet(paths, SCHEMA, what="chunk", optional=added):
        for key in ("title_roots", "title_chars"):
            row[key] = row[key] or 0                            # shards written before the column
        row["sentence_ids"] = list(row["sentence_ids"] or [])
        row["offsets"] = [(int(a), int(b)) for a, b in row["offsets"]]
        row["mentions"] = [ChunkMention(**m) for m in row["mentions"]]
        yield Chunk(**row)

