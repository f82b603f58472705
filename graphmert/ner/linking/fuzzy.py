"""The fuzzy step: character 3-gram TF-IDF nearest neighbours among one category's names, keeping the
query's markers (:mod:`graphmert.ner.linking`, step 4)."""

from __future__ import annotations

import numpy as np

from graphmert.ner.vocabularies.surface import _markers

_FUZZY_MIN_CHARS = 4          # shorter keys (gene symbols, acronyms) are never matched fuzzily
_FUZZY_CACHE_SIZE = 100_000
_FUZZY_TOP_K = 10


class _FuzzyIndex:
    """Character 3-gram TF-IDF over one category's names; fitted on the first query."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._vectorizer = None
        self._matrix = None

    def _fit(self) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=False,
                                           dtype=np.float32)
        self._matrix = self._vectorizer.fit_transform(self.names).tocsr()

    def best(self, query: str) -> tuple[int, float]:
        """Index of the nearest name with the same :func:`_markers` as ``query`` among the
        ``_FUZZY_TOP_K`` most similar, and its cosine similarity; (-1, 0.0) if there is none."""
        if not self.names:
            return -1, 0.0
        if self._vectorizer is None:
            self._fit()
        q = self._vectorizer.transform([query])
        if q.nnz == 0:
            return -1, 0.0
        scores = (self._matrix @ q.T).toarray().ravel()
        k = min(_FUZZY_TOP_K, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        want = _markers(query)
        for i in sorted(top.tolist(), key=lambda j: (-scores[j], j)):
            if scores[i] > 0 and _markers(self.names[i]) == want:
                return i, float(scores[i])
        return -1, 0.0
