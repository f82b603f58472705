"""Pairs that no chunk holds: a document-feature regression for chosen category pairs.

Why. The model reads one chunk (``graph.num_roots`` roots) at a time, so two entities that no chunk
of their document names together are never asked about. For most category pairs that costs little
(their related pairs share a sentence), but a variant's disease is often named in another part of the
abstract: on BioRED train, 91 of the 538 gold disease–variant pairs have no chunk in common
(docs/experiments/document-scope.md, §22). Such a pair is scored here from the document alone.

For each unordered category pair {A, B} of ``extract.cross_chunk_pairs`` (A before B by name) and
each pair of entities (a of category A, b of category B) of a document that no chunk holds
together, the features are

    x = [ log(1 + n_a), [a is the most mentioned of A], [a in the title],
          log(1 + n_b), [b is the most mentioned of B], [b in the title],
          log(1 + |A entities|), log(1 + |B entities|), log(1 + Δs),
          |B entities sharing a chunk with a| / |B entities|, s_a / S, s_b / S ]

with n the entity's mentions, Δs the sentence distance between their nearest mentions, s the
sentences naming it and S the document's sentences. One logistic regression per category pair,
P(related | x), is fitted on the typer documents (``extract.typer_files``, chunked as the run
chunks), labelled by their gold pairs; extraction keeps the pairs with P ≥
``extract.cross_chunk_min_probability``. A pair adds F1 only when it is right more often than F1 / 2
(§21), which sets the threshold's scale; it was chosen by cross-validation over BioRED train.

Hand-written: twelve counts and a scikit-learn regression; no library scores pairs across a
document's windows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from graphmert.config import category_pair
from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document, Mention
from graphmert.errors import GraphmertError
from graphmert.extract.text_entities import is_text_entity
from graphmert.extract.triples import Evidence, Triple
from graphmert.kg.schema import mention_category

__all__ = ["CrossChunkError", "CrossChunkPair", "CrossChunkScorer", "cross_chunk_pairs",
           "cross_chunk_triples"]


class CrossChunkError(GraphmertError, ValueError):
    """The regression cannot be fitted (no pairs, or one label only) or was asked before its fit."""


@dataclass(frozen=True)
class CrossChunkPair:
    """Entities ``a`` (category ``categories[0]``) and ``b`` of document ``doc`` that no chunk holds
    together, with their features (module docstring)."""

    doc: Document
    a: str
    b: str
    categories: tuple[str, str]
    x: tuple[float, ...]


def _ordered(pair: frozenset[str]) -> tuple[str, str]:
    """A category pair as (A, B), A first by name; (A, A) for a pair of one category."""
    return (min(pair), max(pair))


def _sentence(doc: Document, start: int) -> int:
    return next((k for k, (lo, hi) in enumerate(doc.sentences) if lo <= start < hi), -1)


def cross_chunk_pairs(docs: Iterable[Document], chunks: Iterable[Chunk], pairs: Iterable[frozenset[str]]
                      ) -> Iterator[CrossChunkPair]:
    """The pairs of ``pairs``' category pairs that no chunk of ``chunks`` holds together, in each of
    ``docs`` that has a chunk, with their features (module docstring)."""
    wanted = [_ordered(p) for p in pairs]
    together: dict[str, list[set[str]]] = defaultdict(list)
    for c in chunks:
        together[c.doc_id].append({i for m in c.mentions for i in m.ids})
    for doc in docs:
        if doc.id in together:
            yield from _document_pairs(doc, together[doc.id], wanted)


def _document_pairs(doc: Document, together: list[set[str]], wanted: list[tuple[str, str]]
                    ) -> Iterator[CrossChunkPair]:
    cats, n, sents = {}, Counter(), defaultdict(set)
    for m in doc.mentions:
        for i in (i for i in m.ids if not is_text_entity(i)):          # linked entities only
            cats.setdefault(i, mention_category(m.type))
            n[i] += 1
            sents[i].add(_sentence(doc, m.start))
    by_cat = defaultdict(list)
    for i in sorted(cats):
        by_cat[cats[i]].append(i)
    shared = lambda x, y: any(x in s and y in s for s in together)      # noqa: E731
    total = max(len(doc.sentences), 1)
    for cat_a, cat_b in wanted:
        As, Bs = by_cat.get(cat_a, []), by_cat.get(cat_b, [])
        if not As or not Bs:
            continue
        top_a, top_b = max(n[i] for i in As), max(n[i] for i in Bs)
        for a in As:
            reach = sum(shared(a, b) for b in Bs) / len(Bs)
            for b in Bs:
                if a == b or (cat_a == cat_b and b < a) or shared(a, b):
                    continue
                gap = min(abs(p - q) for p in sents[a] for q in sents[b])
                x = (math.log1p(n[a]), float(n[a] == top_a), float(0 in sents[a]),
                     math.log1p(n[b]), float(n[b] == top_b), float(0 in sents[b]),
                     math.log1p(len(As)), math.log1p(len(Bs)), math.log1p(gap), reach,
                     len(sents[a]) / total, len(sents[b]) / total)
                yield CrossChunkPair(doc=doc, a=a, b=b, categories=(cat_a, cat_b), x=x)


@dataclass
class CrossChunkScorer:
    """P(related) of the pairs no chunk holds, per category pair (module docstring). ``pairs``: the
    category pairs, written ``"Disease|SequenceVariant"``; ``c``: the inverse L2 strength."""

    pairs: list[str]
    c: float = 1.0
    fit_counts: dict = field(default_factory=dict)
    _models: dict = field(default_factory=dict, repr=False)

    @property
    def category_pairs(self) -> list[frozenset[str]]:
        return [category_pair(p, "extract.cross_chunk_pairs") for p in self.pairs]

    def fit(self, docs: Sequence[Document], chunks: Sequence[Chunk]) -> "CrossChunkScorer":
        """Fit one regression per category pair on the cross-chunk pairs of ``docs`` (with their
        relations), labelled by whether the document relates the pair."""
        from sklearn.linear_model import LogisticRegression

        rows: dict[tuple[str, str], list[tuple[tuple, bool]]] = defaultdict(list)
        for p in cross_chunk_pairs(docs, chunks, self.category_pairs):
            gold = p.doc.relations and any({r.head, r.tail} == {p.a, p.b} for r in p.doc.relations)
            rows[p.categories].append((p.x, bool(gold)))
        self._models, self.fit_counts = {}, {}
        for cats in (_ordered(c) for c in self.category_pairs):
            labels = [y for _, y in rows.get(cats, [])]
            name = "|".join(c.split(":", 1)[-1] for c in cats)
            if len(set(labels)) < 2:
                raise CrossChunkError(f"extract.cross_chunk_pairs {name}: the typer documents hold "
                                      f"{len(labels)} such pairs that no chunk holds, {sum(labels)} of them "
                                      f"related; the regression needs related and unrelated ones")
            self._models[cats] = LogisticRegression(C=self.c, max_iter=2000).fit(
                np.array([x for x, _ in rows[cats]]), np.array(labels))
            self.fit_counts[name] = {"pairs": len(labels), "related": sum(labels)}
        return self

    def score(self, docs: Iterable[Document], chunks: Iterable[Chunk]) -> list[tuple[CrossChunkPair, float]]:
        """Every cross-chunk pair of ``docs`` with its P(related), in document order."""
        if not self._models:
            raise CrossChunkError("the cross-chunk regression was asked before it was fitted")
        found = list(cross_chunk_pairs(docs, chunks, self.category_pairs))
        out = []
        for cats, model in self._models.items():
            mine = [p for p in found if p.categories == cats]
            if mine:
                prob = model.predict_proba(np.array([p.x for p in mine]))[:, 1]       # [pairs]
                out += list(zip(mine, prob.tolist()))
        order = {id(p): i for i, p in enumerate(found)}
        return sorted(out, key=lambda pv: order[id(pv[0])])


def cross_chunk_triples(kept: Sequence[tuple[CrossChunkPair, float, str, str, str]], chunks: Sequence[Chunk],
                        name_of: Callable[[CrossChunkPair, str], str], checkpoint_id: str = "",
                        run_id: str = "") -> list[Triple]:
    """One triple per kept pair, given as (pair, P(related), relation, head id, tail id). Its
    evidence: the head and tail mentions nearest to each other (in different chunks; their spans
    are the document's), the first chunk holding that head mention, and the text from the sentence
    of the earlier of the two through the sentence of the later, so the quote names both ends;
    confidence P. ``name_of(pair, id)``: an entity's name."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out = []
    for p, v, relation, head, tail in kept:
        doc = p.doc
        h, t = min(((m, n) for m in doc.mentions if head in m.ids for n in doc.mentions if tail in n.ids),
                   key=lambda mn: (abs(mn[0].start - mn[1].start), mn[0].start, mn[1].start))
        s0, s1 = _sentences_through(doc, h, t)
        chunk_id = next((c.id for c in by_doc[doc.id] if any(a <= h.start < b for a, b in c.char_ranges())), "")
        ev = Evidence(doc_id=doc.id, chunk_id=chunk_id, sentence=doc.text[s0:s1],
                      sentence_start=s0, head_start=h.start, head_end=h.end, tail_start=t.start,
                      tail_end=t.end, confidence=v, tail_source="mention")
        cats = dict(zip((p.a, p.b), p.categories))
        out.append(Triple(head_id=head, head_name=name_of(p, head), head_category=cats[head],
                          relation=relation, tail_id=tail, tail_name=name_of(p, tail),
                          tail_category=cats[tail], tail_source="mention", confidence=v, confidence_mean=v,
                          evidence_count=1, documents=[doc.id], evidence=[ev],
                          checkpoint_id=checkpoint_id, run_id=run_id))
    return out


def _sentences_through(doc: Document, a: Mention, b: Mention) -> tuple[int, int]:
    """(start, end) of ``doc``'s text from the sentence holding the earlier of mentions ``a`` and
    ``b`` through the sentence holding the later; a mention outside every sentence counts as its own."""
    first, last = sorted((a, b), key=lambda m: m.start)
    start = next((s for s, e in doc.sentences if s <= first.start < e), first.start)
    end = next((e for s, e in doc.sentences if s <= last.start < e), last.end)
    return start, max(end, first.end, last.end)
