"""Head linking: which mentions of a chunk are seed-KG nodes (the heads injection can hang leaves on).

* Annotated chunks: a head is a mention with at least one id that is a seed-KG node; its ids are
  narrowed to those nodes.
* Chunks without annotations (no mentions at all): the chunk text is matched against the lexicon
  (:class:`~graphmert.kg.lexicon.LexiconMatcher`) and each match becomes a mention whose token span
  is every root token overlapping the matched characters (found through the chunk's offsets).

Chunk text and offsets (see :mod:`graphmert.corpus.chunk`): ``offsets[i]`` are character offsets
into the source document of root ``i``. The chunk's text is the document text from the first to the
last root token; in ``concatenate`` mode it is the per-document pieces in order of appearance, joined
by one space, as are a repeated title and its window (``Chunk.title_roots``). Each run of roots from one
document is therefore one *segment* of ``chunk.text``.
"""

from __future__ import annotations

from dataclasses import replace

from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.lexicon import LexiconMatcher

__all__ = ["annotated_heads", "segments", "lexicon_mentions", "link_heads"]


def annotated_heads(chunk: Chunk, kg: SeedKG) -> list[ChunkMention]:
    """The chunk's mentions with ids in the KG (ids narrowed to KG nodes), in span order."""
    out = []
    for m in chunk.mentions:
        ids = [i for i in m.ids if i in kg.nodes]
        if ids:
            out.append(replace(m, ids=ids))
    return sorted(out, key=lambda m: (m.token_start, -m.token_end))


def segments(chunk: Chunk) -> list[tuple[int, int, int, int, str]]:
    """Per document run of real roots: ``(first root, last root + 1, doc char start, text offset, doc id)``.

    ``text offset`` is where the segment's characters begin in ``chunk.text``.
    """
    n = chunk.num_roots
    doc_of = chunk.doc_ids if chunk.doc_ids else [chunk.doc_id] * n
    body = 1 + chunk.title_roots if chunk.title_roots else -1     # the first root after a repeated title
    runs: list[list] = []
    for i in range(n):
        if chunk.offsets[i][0] < 0:
            continue
        if runs and runs[-1][4] == doc_of[i] and runs[-1][1] == i and i != body:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1, chunk.offsets[i][0], 0, doc_of[i]])
    pos = 0
    for r in runs:
        r[3] = pos
        pos += chunk.offsets[r[1] - 1][1] - r[2] + 1
    if runs and pos - 1 != len(chunk.text):
        raise KGError(f"chunk {chunk.id}: its text ({len(chunk.text)} chars) does not match its token "
                      f"offsets ({pos - 1} chars); chunks and text are out of step")
    return [tuple(r) for r in runs]  # type: ignore[misc]


def lexicon_mentions(chunk: Chunk, matcher: LexiconMatcher, kg: SeedKG) -> list[ChunkMention]:
    """Lexicon matches in the chunk's text as mentions on root token spans (type = node category)."""
    if not chunk.text:
        return []
    out: list[ChunkMention] = []
    for first, last, doc_start, text_pos, doc_id in segments(chunk):
        seg_len = chunk.offsets[last - 1][1] - doc_start
        for m in matcher.match(chunk.text[text_pos:text_pos + seg_len]):
            a, b = m.start + doc_start, m.end + doc_start          # document char offsets
            toks = [i for i in range(first, last) if chunk.offsets[i][0] < b and chunk.offsets[i][1] > a]
            if not toks:
                continue
            out.append(ChunkMention(token_start=toks[0], token_end=toks[-1] + 1, char_start=a, char_end=b,
                                    text=m.text, type=kg.category(m.ids[0]), ids=list(m.ids),
                                    doc_id=doc_id))
    return out


def link_heads(chunk: Chunk, kg: SeedKG, matcher: LexiconMatcher | None) -> tuple[list[ChunkMention], str]:
    """Heads of one chunk and how they were found: ``"annotated"``, ``"lexicon"`` or ``"none"``."""
    if chunk.mentions:
        return annotated_heads(chunk, kg), "annotated"
    if matcher is not None and chunk.text:
        return lexicon_mentions(chunk, matcher, kg), "lexicon"
    return [], "none"
