"""Filters on extracted triples (DESIGN §8, step 5), each one's effect counted.

Applied in this order to every per-chunk triple; a triple is counted under the first filter it fails:

``confidence``            confidence < ``extract.min_confidence``
``range``                 the relation schema does not admit (head category, tail category) — only
                          when ``extract.check_range`` and the tail is typed; untyped tails pass and
                          are counted under ``untyped_tails``. (The extractor already skips typed
                          candidates outside the range when it picks the best tails, and adds those
                          that outranked a kept tail to this count.)
``similarity``            cosine of the triple text "head relation tail" to its chunk's text
                          < ``extract.beta``, by the ``extract.similarity_scorer`` scorer (TF-IDF:
                          local and deterministic) fitted on all chunk texts of the extraction
``tail_not_in_document``  with ``extract.require_tail_in_document``: the tail's name (or one of its
                          surface forms) does not occur in the document text (case-insensitive)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from graphmert.config import ExtractConfig
from graphmert.extract.triples import Triple
from graphmert.kg.schema import RelationSchema
from graphmert.kg.scoring import triple_text

__all__ = ["FILTERS", "Pending", "FilterReport", "apply_filters"]

FILTERS = ("confidence", "range", "similarity", "tail_not_in_document")


@dataclass(kw_only=True)
class Pending:
    """A per-chunk triple with what the filters need to judge it."""

    triple: Triple
    chunk_index: int                 # row of the fitted similarity scorer
    doc_text: str
    tail_forms: tuple[str, ...] = ()  # surface forms of the tail besides its name


@dataclass(kw_only=True)
class FilterReport:
    checked: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    untyped_tails: int = 0

    def add(self, other: "FilterReport") -> None:
        self.checked += other.checked
        self.kept += other.kept
        self.dropped.update(other.dropped)
        self.untyped_tails += other.untyped_tails

    def to_dict(self) -> dict:
        return {"checked": self.checked, "kept": self.kept,
                "dropped": {f: int(self.dropped.get(f, 0)) for f in FILTERS},
                "untyped_tails": self.untyped_tails}


def _in_text(names: Sequence[str], text: str) -> bool:
    low = text.casefold()
    return any(n and n.casefold() in low for n in names)


def apply_filters(pending: Sequence[Pending], cfg: ExtractConfig, schema: RelationSchema,
                  scorer=None) -> tuple[list[Triple], FilterReport]:
    """The triples of ``pending`` that pass every filter (input order) and the counts.

    ``scorer`` is a fitted similarity scorer (``fit`` on the chunk texts, rows = ``chunk_index``);
    it may be None only when ``cfg.beta`` is 0 (the filter then passes everything).
    """
    rep = FilterReport(checked=len(pending))
    if not pending:
        return [], rep
    sims = np.ones(len(pending))
    if cfg.beta > 0:
        if scorer is None:
            raise ValueError("apply_filters: extract.beta > 0 needs a fitted similarity scorer")
        texts = [triple_text(p.triple.head_name, p.triple.relation, p.triple.tail_name) for p in pending]
        sims = scorer.score(texts, np.arange(len(pending)), np.array([p.chunk_index for p in pending]))
    kept = []
    for p, sim in zip(pending, sims):
        t = p.triple
        typed = bool(t.tail_category)
        if not typed:
            rep.untyped_tails += 1
        if t.confidence < cfg.min_confidence:
            rep.dropped["confidence"] += 1
        elif cfg.check_range and typed and not schema.allows(t.relation, t.head_category, t.tail_category):
            rep.dropped["range"] += 1
        elif sim < cfg.beta:
            rep.dropped["similarity"] += 1
        elif cfg.require_tail_in_document and not _in_text((t.tail_name, *p.tail_forms), p.doc_text):
            rep.dropped["tail_not_in_document"] += 1
        else:
            kept.append(t)
    rep.kept = len(kept)
    return kept, rep
