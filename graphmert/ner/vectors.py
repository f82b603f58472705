"""Word vectors learnt in the project, for the recognizer's tok2vec (``ner.vectors``; issue #19).

Nothing can be downloaded, so no pretrained biomedical vectors exist here; the recognizer's own
features are hashed word shapes, prefixes and suffixes learnt from its annotated documents alone.
Skip-gram word2vec (gensim, the field's standard implementation) on the text of every document the
``ner`` stage may read — annotated or not — gives it what those cannot: a word the annotated
documents show rarely or never gets a vector near the words it shares contexts with in all of them. Each word w of the vocabulary (words seen at least :data:`MIN_COUNT` times, as the
recognizer's tokenizer splits them) gets v_w ∈ ℝ^d maximising

    Σ_t Σ_{0<|j|≤c} log σ(v'_{w_{t+j}} · v_{w_t}) + Σ_{k=1..n} log σ(−v'_{n_k} · v_{w_t})

over the corpus positions t, window c = :data:`WINDOW`, n negative samples drawn from the unigram
distribution to the ¾. The rows are scaled to unit length; spaCy's ``StaticVectors`` reads them by
the token's exact text (ORTH) and learns a linear projection to the tok2vec's width (the vectors
themselves stay fixed). On held-out BioRED train (two seeds) the disease and chemical model's
strict F1 at the epoch its selection slice picks rises by 0.015 and 0.016; the gene model's does not
(docs/NER.md).

Training is single-threaded (``workers=1``) and seeded, so the same text gives the same vectors.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np

__all__ = ["MIN_COUNT", "WINDOW", "EPOCHS", "WordVectors", "train_word_vectors", "use_vectors"]

MIN_COUNT = 2           # words seen once get no vector (a vector from one context is noise)
WINDOW = 5              # words on each side that predict a word
EPOCHS = 10             # passes over the text (the corpus is small: ~0.8M tokens)


@dataclass(frozen=True, kw_only=True)
class WordVectors:
    """A word → vector table: ``words[i]``'s vector is ``table[i]`` (float32 [n, d], unit rows)."""

    words: tuple[str, ...]
    table: np.ndarray
    tokens: int          # tokens of the text they were learnt from
    seconds: float

    def __post_init__(self) -> None:
        if self.table.ndim != 2 or self.table.shape[0] != len(self.words) or self.table.dtype != np.float32:
            raise ValueError(f"word vectors: table {self.table.shape} {self.table.dtype} does not hold "
                             f"one float32 row per word of {len(self.words)}")

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    def summary(self) -> dict:
        return {"words": len(self.words), "dimensions": self.dim, "tokens": self.tokens,
                "seconds": round(self.seconds, 1)}


def train_word_vectors(texts: Iterable[str], tokenizer, *, dim: int, seed: int) -> WordVectors:
    """Skip-gram vectors of ``dim`` dimensions for the words of ``texts``, split by ``tokenizer``
    (the recognizer's: its tokens are what the vectors are looked up by). Raises ``ValueError``
    when no word occurs :data:`MIN_COUNT` times."""
    from gensim.models import Word2Vec

    start = time.monotonic()
    sentences = [[t.text for t in doc] for doc in tokenizer.pipe(texts)]
    tokens = sum(map(len, sentences))
    if not any(n >= MIN_COUNT for n in Counter(w for s in sentences for w in s).values()):
        raise ValueError(f"word vectors: no word occurs {MIN_COUNT} times in the {len(sentences)} "
                         f"texts ({tokens} tokens) to learn from")
    w2v = Word2Vec(sentences, vector_size=dim, window=WINDOW, min_count=MIN_COUNT, sg=1, epochs=EPOCHS,
                   workers=1, seed=seed)
    table = np.asarray(w2v.wv.vectors, dtype=np.float32)                       # [n, d]
    table /= np.linalg.norm(table, axis=1, keepdims=True) + 1e-8
    return WordVectors(words=tuple(w2v.wv.index_to_key), table=table, tokens=tokens,
                       seconds=time.monotonic() - start)


def use_vectors(nlp, vectors: WordVectors) -> None:
    """Give ``nlp``'s vocabulary the table (before ``nlp.initialize``: the tok2vec's StaticVectors
    size their projection from it). Saved and loaded with the pipeline (``to_disk``, ``to_bytes``)."""
    from spacy.vectors import Vectors

    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=vectors.table, keys=list(vectors.words))
