"""The TF-IDF scorer equals a hand-written TF-IDF cosine and is deterministic."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

from graphmert.config import ConfigError
from graphmert.kg.scoring import SCORERS, triple_text

CHUNKS = [
    "Metformin lowers blood glucose in type 2 diabetes.",
    "Insulin resistance is a hallmark of type 2 diabetes and obesity.",
    "Aspirin inhibits platelet aggregation; aspirin treats pain.",
    "",
]
TRIPLES = [
    triple_text("Metformin", "biolink:treats", "type 2 diabetes"),
    triple_text("INS", "associated_with", "obesity"),
    triple_text("Aspirin", "treats", "Pain"),
    "unseen words only",
]


def reference(chunks, triples, t_idx, c_idx):
    tok = lambda s: re.findall(r"\w+", s.lower())  # noqa: E731
    docs = [tok(c) for c in chunks]
    n = len(docs)
    vocab = sorted({w for d in docs for w in d})
    df = Counter(w for d in docs for w in set(d))
    idf = {w: math.log((1 + n) / (1 + df[w])) + 1 for w in vocab}

    def vec(words):
        tf = Counter(w for w in words if w in idf)
        v = {w: (1 + math.log(c)) * idf[w] for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {w: x / norm for w, x in v.items()} if norm else {}

    cv = [vec(d) for d in docs]
    tv = [vec(tok(t)) for t in triples]
    return np.array([sum(x * cv[c].get(w, 0.0) for w, x in tv[t].items()) for t, c in zip(t_idx, c_idx)])


def test_triple_text():
    assert triple_text("Metformin", "biolink:treats", "T2D") == "Metformin treats T2D"
    assert triple_text("A", "associated_with", "B") == "A associated with B"


def test_tfidf_equals_reference():
    rng = np.random.default_rng(0)
    t_idx = rng.integers(0, len(TRIPLES), 40)
    c_idx = rng.integers(0, len(CHUNKS), 40)
    s = SCORERS.get("tfidf")().fit(CHUNKS).score(TRIPLES, t_idx, c_idx)
    np.testing.assert_allclose(s, reference(CHUNKS, TRIPLES, t_idx, c_idx), atol=1e-12)
    assert s[(t_idx == 3)].max() == 0.0 and s[(c_idx == 3)].max() == 0.0
    # the matching chunk scores highest for each of the first three triples
    full = SCORERS.get("tfidf")().fit(CHUNKS)
    for t in range(3):
        sc = full.score(TRIPLES, np.full(4, t), np.arange(4))
        assert int(np.argmax(sc)) == t


def test_deterministic_and_order_independent():
    t_idx, c_idx = np.array([0, 1, 2, 0]), np.array([0, 1, 2, 1])
    a = SCORERS.get("tfidf")().fit(CHUNKS).score(TRIPLES, t_idx, c_idx)
    perm = np.array([3, 1, 0, 2])
    b = SCORERS.get("tfidf")().fit(CHUNKS).score(TRIPLES, t_idx[perm], c_idx[perm])
    np.testing.assert_array_equal(a[perm], b)


def test_unknown_scorer_names_key():
    with pytest.raises(ConfigError, match=r"kg.scorer: unknown triple scorer 'bm25'; choose from \['tfidf'\]"):
        SCORERS.get("bm25")


def test_fit_on_empty_texts():
    with pytest.raises(ValueError, match="every chunk text is empty"):
        SCORERS.get("tfidf")().fit(["", "  "])


def test_the_streamed_vocabulary_is_sklearns_fit():
    """fit_vocabulary reads the texts once as a stream and gives sklearn's vocabulary and IDF bit for
    bit; for_chunks then vectorises any chunks as fit + transform would."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(120)] + ["IL-6", "β-cell", "Alpha", "α"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 30)))) for _ in range(80)] + ["", "!!"]
    ref = TfidfVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b", sublinear_tf=True,
                          smooth_idf=True, norm="l2", dtype=np.float64).fit(texts)
    scorer = SCORERS.get("tfidf")().fit_vocabulary(iter(texts))
    assert scorer.vectorizer.vocabulary_ == ref.vocabulary_
    np.testing.assert_array_equal(scorer.vectorizer.idf_, ref.idf_)
    part = scorer.for_chunks(texts[10:20])
    np.testing.assert_array_equal(part._chunks.toarray(), ref.transform(texts[10:20]).toarray())
    t_idx, c_idx = np.array([0, 1, 2, 3]), np.array([0, 3, 5, 9])
    whole = SCORERS.get("tfidf")().fit(CHUNKS, reference=texts)
    shard = SCORERS.get("tfidf")().fit_vocabulary(texts).for_chunks(CHUNKS)
    np.testing.assert_array_equal(whole.score(TRIPLES, t_idx % 4, c_idx % 4),
                                  shard.score(TRIPLES, t_idx % 4, c_idx % 4))


def test_frequencies_counted_in_parts_fit_as_the_whole():
    """The graphs stage counts document frequencies shard by shard and sums them: the same
    vocabulary and IDF as one streamed fit over every text."""
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(60)] + ["IL-6", "β-cell"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 20)))) for _ in range(50)] + [""]
    whole = SCORERS.get("tfidf")().fit_vocabulary(texts)
    df, n = Counter(), 0
    for part in (texts[:7], texts[7:30], texts[30:]):
        d, k = SCORERS.get("tfidf")().document_frequencies(part)
        df.update(d)
        n += k
    assert n == len(texts) == 51
    summed = SCORERS.get("tfidf")().fit_frequencies(df, n)
    assert summed.vectorizer.vocabulary_ == whole.vectorizer.vocabulary_
    np.testing.assert_array_equal(summed.vectorizer.idf_, whole.vectorizer.idf_)
    with pytest.raises(ValueError, match="every chunk text is empty"):
        SCORERS.get("tfidf")().fit_frequencies(Counter(), 3)


def test_for_chunks_needs_a_vocabulary():
    with pytest.raises(RuntimeError, match="before fit_vocabulary"):
        SCORERS.get("tfidf")().for_chunks(["a b"])
    with pytest.raises(ValueError, match="every chunk text is empty"):
        SCORERS.get("tfidf")().fit_vocabulary(iter(["", "  ", "."]))
