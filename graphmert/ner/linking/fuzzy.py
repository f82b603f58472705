"""The fuzzy step: character 3-gram TF-IDF nearest neighbours among one category's names, keeping the
query's markers (:mod:`graphmert.ner.linking`, step 4)."""

from __future__ import annotations

import re

import numpy as np

from graphmert.ner.vocabularies.surface import _markers

_FUZZY_MIN_CHARS = 4          # shorter keys (gene symbols, acronyms) are never matched fuzzily
_FUZZY_CACHE_SIZE = 100_000
_FUZZY_TOP_K = 10

# a roman numeral with one letter after it names a subunit or a subtype ("glycoprotein Ib", "IIb/IIIa",
# "glycogen storage disease type Ia"); :func:`_markers` reads bare numerals only, so "glycoprotein
# Ib" matched the bare name "glycoprotein" (a synonym of APP) at cosine 0.85. "via" is a word.
_LETTERED_ROMAN = re.compile(r"(?<![a-z])(?!via(?![a-z]))(?:i{1,3}|iv|vi{0,3})[a-d](?![a-z])")


def fuzzy_markers(form: str) -> list[str]:
    """The tokens of a normalised ``form`` that a fuzzy neighbour must keep, sorted: :func:`_markers`
    (numbers, single letters, Greek letter names, roman numerals) and roman numerals with a letter
    ("ib", "iiia")."""
    return sorted(_markers(form) + _LETTERED_ROMAN.findall(form))


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
        """Index of the nearest name with the same :func:`fuzzy_markers` as ``query`` among the
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
        want = fuzzy_markers(query)
        for i in sorted(top.tolist(), key=lambda j: (-scores[j], j)):
            if scores[i] > 0 and fuzzy_markers(self.names[i]) == want:
                return i, float(scores[i])
        return -1, 0.0
