"""Where a mention tail may lie for a head (``extract.tail_scope``, ``extract.tail_scope_by_category``).

A scope is a set of document character ranges around a head at character ``h`` of chunk ``c``::

    sentence   { S(h) }                         the sentence holding the head
    title      { S(h), [0, |title|) }           that sentence and the document's title
    chunk      the document ranges of the chunk's text (its window, and its repeated title)
    document   everything (None)

A mention tail is in scope when one of its spans lies inside one of the ranges. ``title`` is written
for abstracts whose title names what the whole abstract is about: in BioRED a variant's disease is
often named in the title and not in the variant's sentence (docs/experiments/tail-scope.md, "Scope
per category pair").

The scope may depend on the pair's categories: ``tail_scope_by_category`` maps an unordered pair of
Biolink categories, written ``"Disease|SequenceVariant"`` (the ``biolink:`` prefix optional), to a
scope name; every other pair gets ``tail_scope``. This module is shared by both extractors
(:mod:`graphmert.extract.extractor`, :mod:`graphmert.extract.pairs`); training questions can be held
to the same scope on roots (:mod:`graphmert.graph.scope`, ``kg.candidate_scope``).
"""

from __future__ import annotations

from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.extract.heads import head_sentence
from graphmert.graph.scope import ScopeNames

__all__ = ["Ranges", "TailScopes", "within"]

Ranges = list[tuple[int, int]] | None          # document character ranges; None: anywhere


class TailScopes(ScopeNames):
    """The scope of each (head category, tail category) pair (:class:`~graphmert.graph.scope.ScopeNames`:
    ``extract.tail_scope`` and ``extract.tail_scope_by_category``) and its character ranges."""

    @staticmethod
    def ranges(name: str, doc: Document, chunk: Chunk, head_char: int) -> Ranges:
        """The character ranges of scope ``name`` for a head starting at ``head_char``."""
        if name == "document":
            return None
        if name == "chunk":
            return chunk.char_ranges()
        start, text = head_sentence(doc, head_char, chunk)
        out = [(start, start + len(text))]
        if name == "title" and doc.title:
            out.append((0, len(doc.title)))
        return out


def within(span: tuple[int, int], ranges: Ranges) -> bool:
    """Whether the span [a, b) lies inside one of ``ranges`` (always, for None)."""
    return ranges is None or any(lo <= span[0] and span[1] <= hi for lo, hi in ranges)
