"""Triple-to-chunk similarity scorers, chosen by name (``kg.scorer``) from a registry.

The paper scores a candidate injection by the similarity of the triple's text to the chunk using a
closed embedding API; here the score must be local and deterministic. A scorer is fitted on the chunk
texts and then scores (triple text, chunk) pairs:

    scorer = SCORERS.get("tfidf")()
    scorer.fit(chunk_texts)                                  # list[str], one per chunk
    scorer.fit(chunk_texts, reference=corpus_texts)          # IDF from another corpus (below)
    scorer.fit_vocabulary(corpus_texts).for_chunks(chunk_texts)   # the same, the corpus streamed
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
``reference=None`` the chunks are their own reference.

A large corpus is fitted as a stream: :meth:`TfidfScorer.fit_vocabulary` reads the texts once and
keeps only document frequencies, and :meth:`TfidfScorer.for_chunks` vectorises one shard's chunks
(the graph stage's workers each score their own shard).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Iterable, Protocol, Sequence

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

    def fit_vocabulary(self, texts: Iterable[str]) -> "Scorer": ...

    def document_frequencies(self, texts: Iterable[str]) -> tuple[Counter, int]: ...

    def fit_frequencies(self, df: Counter, n: int) -> "Scorer": ...

    def for_chunks(self, chunk_texts: Sequence[str]) -> "Scorer": ...

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
        self.fit_vocabulary(texts if reference is None else reference)
        self._chunks = self.vectorizer.transform(texts).tocsr()              # [C, V]
        return self

    def fit_vocabulary(self, texts: Iterable[str]) -> "TfidfScorer":
        """Vocabulary and IDF from ``texts``, read once as a stream; no chunk is vectorised yet
        (:meth:`for_chunks`). Only the document frequencies are held, so a corpus of any size fits.

        Written here rather than ``TfidfVectorizer.fit`` because that builds the whole [C, V] count
        matrix, and sklearn has no streaming fit with a vocabulary (``HashingVectorizer`` streams,
        but its hashed features would change every score). The vocabulary (sorted terms) and the
        float64 operations are sklearn's own (``TfidfTransformer.fit``: idf = ln((n + 1) / (df + 1))
        + 1), so the vectors equal a ``fit`` on the same texts; a test pins it."""
        return self.fit_frequencies(*self.document_frequencies(texts))

    def document_frequencies(self, texts: Iterable[str]) -> tuple[Counter, int]:
        """(term → how many of ``texts`` hold it, how many texts): what :meth:`fit_frequencies`
        needs. The counts of disjoint parts of a corpus add up to the corpus's, so workers can count
        their own shards (the graphs stage)."""
        analyze = self.vectorizer.build_analyzer()
        df: Counter = Counter()
        n = 0
        for text in texts:
            df.update(set(analyze(text)))
            n += 1
        return df, n

    def fit_frequencies(self, df: Counter, n: int) -> "TfidfScorer":
        """Vocabulary and IDF from the document frequencies ``df`` of ``n`` texts
        (:meth:`document_frequencies`, summed over a corpus's parts)."""
        if not df:
            raise ValueError("kg.scorer tfidf: every chunk text is empty; nothing to fit on")
        terms = sorted(df)
        counts = np.fromiter((df[t] for t in terms), dtype=np.float64, count=len(terms))  # [V]
        counts += 1.0                                                        # smooth_idf
        idf = np.full_like(counts, fill_value=n + 1, dtype=np.float64)
        idf /= counts
        np.log(idf, out=idf)
        idf += 1.0
        self.vectorizer.vocabulary_ = {t: i for i, t in enumerate(terms)}
        self.vectorizer.fixed_vocabulary_ = False
        self.vectorizer.idf_ = idf
        self._chunks = None
        return self

    def for_chunks(self, chunk_texts: Sequence[str]) -> "TfidfScorer":
        """A scorer with this one's vocabulary and IDF whose chunk ``i`` is ``chunk_texts[i]``: a
        worker vectorises only its own shard's chunks."""
        if not hasattr(self.vectorizer, "vocabulary_"):
            raise RuntimeError("TfidfScorer.for_chunks called before fit_vocabulary")
        out = copy.copy(self)
        out._chunks = self.vectorizer.transform(list(chunk_texts)).tocsr()  # [C, V]
        return out

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
