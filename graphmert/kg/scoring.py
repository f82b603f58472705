"""Triple-to-chunk similarity scorers, chosen by name (``kg.scorer``) from a registry.

The paper scores a candidate injection by the similarity of the triple's text to the chunk using a
closed embedding API; here the score must be local and deterministic. A scorer is fitted on the chunk
texts and then scores (triple text, chunk) pairs:

    scorer = SCORERS.get("tfidf")()
    scorer.fit(chunk_texts)                                  # list[str], one per chunk
    scorer.fit(chunk_texts, reference=corpus_texts)          # IDF from another corpus (below)
    s = scorer.score(triple_texts, triple_index, chunk_index)   # [P] float64 in [0, 1]

where pair p compares ``triple_texts[triple_index[p]]`` with chunk ``chunk_index[p]``.

``tfidf`` (default): TF-IDF vectors with vocabulary and IDF fitted on the chunk texts
(lower-cased word tokens ``\\b\\w+\\b``, sublinear tf, smoothed idf, L2-normalised), and the cosine

    score(t, c) = ⟨v(t), v(c)⟩ / (‖v(t)‖ ‖v(c)‖)

Triple text is ``"head name relation tail name"`` (:func:`triple_text`; ``_`` in relation names read
as spaces). Words of the triple that never occur in the chunks carry no weight.

With ``reference`` the vocabulary and IDF come from those texts (extraction passes the run's own
chunk corpus) and the chunks are only transformed, so a chunk's vector, and every score against it,
does not depend on which other documents are extracted with it: documents added to a knowledge graph
later (``graphmert update``) are scored exactly as they would have been in one batch. With
``reference=None`` the chunks are their own reference (``fit_transform``, the same numbers as fitting
on them and transforming them).
"""

from __future__ import annotations

import re
from typing import Protocol, Sequence

import numpy as np

from graphmert.registry import Registry

__all__ = ["Scorer", "SCORERS", "TfidfScorer", "triple_text"]

_CURIE_PREFIX = re.compile(r"^[A-Za-z][\w.-]*:")


def triple_text(head_name: str, relation: str, tail_name: str) -> str:
    """``"head relation tail"`` with the relation's CURIE prefix dropped and ``_`` as spaces."""
    rel = _CURIE_PREFIX.sub("", relation).replace("_", " ")
    return f"{head_name} {rel} {tail_name}"


class Scorer(Protocol):
    def fit(self, chunk_texts: Sequence[str], reference: Sequence[str] | None = None) -> "Scorer": ...

    def score(self, triple_texts: Sequence[str], triple_index: np.ndarray,
              chunk_index: np.ndarray) -> np.ndarray: ...


SCORERS: Registry[type] = Registry("triple scorer", key="kg.scorer")


@SCORERS.register("tfidf")
class TfidfScorer:
    """TF-IDF cosine between triple text and chunk text (see module docstring)."""

    def __init__(self) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vectorizer = TfidfVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b",
                                          sublinear_tf=True, smooth_idf=True, norm="l2",
                                          dtype=np.float64)
        self._chunks = None

    def fit(self, chunk_texts: Sequence[str], reference: Sequence[str] | None = None) -> "TfidfScorer":
        texts = list(chunk_texts)
        ref = texts if reference is None else list(reference)
        if not any(t.strip() for t in ref):
            raise ValueError("kg.scorer tfidf: every chunk text is empty; nothing to fit on")
        if reference is None:
            self._chunks = self.vectorizer.fit_transform(texts).tocsr()     # [C, V]
        else:
            self._chunks = self.vectorizer.fit(ref).transform(texts).tocsr()  # [C, V], V from ref
        return self

    def score(self, triple_texts: Sequence[str], triple_index: np.ndarray,
              chunk_index: np.ndarray) -> np.ndarray:
        if self._chunks is None:
            raise RuntimeError("TfidfScorer.score called before fit")
        triple_index = np.asarray(triple_index, dtype=np.int64)
        chunk_index = np.asarray(chunk_index, dtype=np.int64)
        out = np.zeros(len(triple_index), dtype=np.float64)
        if len(out) == 0:
            return out
        T = self.vectorizer.transform(list(triple_texts)).tocsr()        # [N_triples, V]
        # Group pairs by chunk: one sparse [n_c, V] @ [V, 1] product per chunk.
        order = np.argsort(chunk_index, kind="stable")
        bounds = np.flatnonzero(np.diff(chunk_index[order])) + 1
        for grp in np.split(order, bounds):
            c = int(chunk_index[grp[0]])
            col = T[triple_index[grp]] @ self._chunks[c].T               # [n_c, 1]
            out[grp] = col.toarray().ravel()
        return np.clip(out, 0.0, 1.0)
