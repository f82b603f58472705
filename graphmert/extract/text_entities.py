"""Unlinked mentions as entities of their own: text nodes (issue #19).

A mention that the linker cannot link (or a corpus mention marked unlinked, ``-1``) keeps
``ids == []``: the documents extraction writes, and that ``graphmert evaluate`` scores, stay so. The
pair extractor pairs entities by id (:func:`~graphmert.graph.distant.chunk_entities`), so such a
mention would silently never be a head or a tail. With ``extract.text_entities``,
:func:`with_text_entities` gives each one, for extraction only, the key of its text::

    key(m) = "name:" + lower(m.text), whitespace collapsed       (triples.entity_key with no id)

so the mentions of one text are one entity in a document, and the same key in every document: the
key is document-independent, like the exporter's id for a nameless entity, which is minted from the
same normalised name. :func:`is_text_entity` tells such a key from an id; a triple stores it as an
empty id with the mention's text as the name (:meth:`graphmert.extract.pairs.PairExtractor.triples`),
which is how every other id-less head or tail is written, so merging, export and the pair metrics
(where an id-less end gives no pair) need nothing new.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from graphmert.extract.triples import NAME_KEY, entity_key

__all__ = ["with_text_entities", "is_text_entity"]

T = TypeVar("T")                       # a Document or a Chunk: a dataclass with .mentions


def is_text_entity(entity: str) -> bool:
    """Whether an entity key is a text node's (:func:`with_text_entities`), not an id."""
    return entity.startswith(NAME_KEY)


def with_text_entities(item: T) -> T:
    """``item`` (a :class:`~graphmert.corpus.document.Document` or a
    :class:`~graphmert.corpus.chunk.Chunk`) with each unlinked mention carrying its text key as its
    one id (module docstring): a shallow copy where a mention changes, else ``item`` itself, which
    is never modified."""
    if all(m.ids or not m.text.strip() for m in item.mentions):
        return item
    mentions = [m if m.ids or not m.text.strip() else replace(m, ids=[entity_key("", m.text)])
                for m in item.mentions]
    return replace(item, mentions=mentions)
