"""Extraction heads and their candidate relations (DESIGN §8, steps 1–2).

Heads of a chunk:

* annotated chunks — every mention of the chunk, linked or not: a mention without a seed-KG id (an
  unlinked ``-1`` mention, or an id the KG lacks) is still a head, kept with its corpus id (or none)
  and its surface form, so extraction can find facts about entities the seed KG does not have;
* chunks without annotations — the lexicon matches of the chunk text
  (:func:`graphmert.kg.linking.lexicon_mentions`), each carrying its KG node ids.

A head's category is the Biolink category of its mention type (:func:`mention_category`), or of its
first KG node when the type is unknown. Mentions starting at the same root keep only the longest (a
root hosts one query). Heads whose span does not fit between ``[CLS]`` and ``[SEP]`` are dropped.

Candidate relations of a head are the relations whose schema domain admits its category
(:meth:`RelationSchema.relations_for_subject`), intersected with the relations the model may answer
(``allowed``: those injected in training, or ``extract.relations``). An untyped head has none.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Sequence

from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.kg.graph import SeedKG
from graphmert.kg.lexicon import LexiconMatcher
from graphmert.kg.linking import lexicon_mentions
from graphmert.kg.schema import RelationSchema, mention_category

__all__ = ["Head", "find_heads", "candidate_relations", "head_sentence", "evidence_passage"]


@dataclass(frozen=True, kw_only=True)
class Head:
    token_start: int              # first root of the head span (the root its query leaves hang on)
    token_end: int                # exclusive
    char_start: int               # document character offsets
    char_end: int
    text: str                     # surface form
    category: str                 # Biolink category, "" when unknown
    ids: tuple[str, ...] = field(default_factory=tuple)   # corpus / KG ids, may be empty
    doc_id: str = ""
    how: str = "annotated"        # annotated | lexicon

    @property
    def id(self) -> str:
        """The head's id in triples: its first id, "" when it has none."""
        return self.ids[0] if self.ids else ""


def _category(mention_type: str, ids: Sequence[str], kg: SeedKG) -> str:
    cat = mention_category(mention_type)
    if not cat:
        for i in ids:
            if i in kg.nodes and kg.category(i):
                return kg.category(i)
    return cat


def find_heads(chunk: Chunk, kg: SeedKG, matcher: LexiconMatcher | None) -> list[Head]:
    """The heads of one chunk, in root order (one per start root: the longest mention there)."""
    if chunk.mentions:
        mentions, how = chunk.mentions, "annotated"
    elif matcher is not None and chunk.text:
        mentions, how = lexicon_mentions(chunk, matcher, kg), "lexicon"
    else:
        return []
    best: dict[int, Head] = {}
    for m in mentions:
        if not (1 <= m.token_start < m.token_end <= chunk.num_roots - 1):
            continue
        h = Head(token_start=m.token_start, token_end=m.token_end, char_start=m.char_start,
                 char_end=m.char_end, text=m.text, category=_category(m.type, m.ids, kg),
                 ids=tuple(m.ids), doc_id=m.doc_id or chunk.doc_id, how=how)
        old = best.get(h.token_start)
        if old is None or (h.token_end, h.char_end) > (old.token_end, old.char_end):
            best[h.token_start] = h
    return [best[k] for k in sorted(best)]


def candidate_relations(category: str, schema: RelationSchema, allowed: Sequence[str]) -> list[str]:
    """Relations whose domain admits ``category``, in ``allowed`` (sorted by name)."""
    if not category:
        return []
    ok = set(allowed)
    return [r for r in schema.relations_for_subject(category) if r in ok]


def head_sentence(doc: Document, char: int, chunk: Chunk) -> tuple[int, str]:
    """(start, text) of the document sentence holding character ``char`` (a head's start): the
    sentence a triple's evidence quotes and sentence scope keeps tails in. The chunk's own text (the
    piece holding ``char``: its window or its repeated title) when the document has no sentence there."""
    if doc.sentences:
        starts = [s for s, _ in doc.sentences]
        i = bisect.bisect_right(starts, char) - 1
        if i >= 0 and doc.sentences[i][0] <= char < doc.sentences[i][1]:
            s, e = doc.sentences[i]
            return s, doc.text[s:e]
    if not chunk.title_roots:
        return chunk.char_start, chunk.text
    a, b = next(((a, b) for a, b in chunk.char_ranges() if a <= char < b), chunk.char_ranges()[-1])
    return a, doc.text[a:b]


def evidence_passage(doc: Document, head: int, tail: int, chunk: Chunk) -> tuple[int, str]:
    """(start, text) of what a triple's evidence quotes: the document's sentences from the one holding
    character ``head`` (the head mention's start) through the one holding ``tail`` (the tail
    mention's), in text order, so that the quote names both ends when the tail scope lets them lie in
    different sentences of the chunk. The head's sentence alone (:func:`head_sentence`) when there is no
    tail mention (``tail`` < 0), when it lies in that sentence or outside the chunk (a quote stays
    within what the model read), or when the document has no sentences."""
    start, text = head_sentence(doc, head, chunk)
    inside = any(a <= tail < b for a, b in chunk.char_ranges())
    if not inside or not doc.sentences or start <= tail < start + len(text):
        return start, text
    t_start, t_text = head_sentence(doc, tail, chunk)
    a, b = min(start, t_start), max(start + len(text), t_start + len(t_text))
    return a, doc.text[a:b]
