"""In-project word vectors (graphmert.ner.vectors): they learn shared contexts, repeat, and refuse
text too thin to learn from."""

from __future__ import annotations

import random

import numpy as np
import pytest

from graphmert.ner.recognizer import recognizer_nlp
from graphmert.ner.vectors import MIN_COUNT, WordVectors, train_word_vectors


def _texts(n: int = 300) -> list[str]:
    """Drugs are taken, organs are where tumours grow: two context families, shuffled fillers."""
    rng = random.Random(0)
    drugs, organs = ["aspirin", "ibuprofen", "naproxen"], ["liver", "lung", "kidney"]
    fill = ["often", "rarely", "then", "also", "still"]
    out = []
    for _ in range(n):
        out.append(f"the patient {rng.choice(fill)} took {rng.choice(drugs)} twice daily with water")
        out.append(f"a tumour {rng.choice(fill)} grew in the {rng.choice(organs)} tissue of mice")
    return out


def _cos(v: WordVectors, a: str, b: str) -> float:
    i, j = v.words.index(a), v.words.index(b)
    return float(v.table[i] @ v.table[j])


def test_words_of_shared_contexts_end_up_closer():
    v = train_word_vectors(_texts(), recognizer_nlp([]).tokenizer, dim=16, seed=0)
    assert v.dim == 16 and v.table.dtype == np.float32
    assert np.allclose(np.linalg.norm(v.table, axis=1), 1.0, atol=1e-4)            # unit rows
    for a, b, other in [("aspirin", "ibuprofen", "liver"), ("lung", "kidney", "naproxen")]:
        assert _cos(v, a, b) > _cos(v, a, other) + 0.3, (a, b, other)


def test_the_same_text_gives_the_same_vectors():
    tok = recognizer_nlp([]).tokenizer
    a = train_word_vectors(_texts(60), tok, dim=8, seed=3)
    b = train_word_vectors(_texts(60), tok, dim=8, seed=3)
    assert a.words == b.words and np.array_equal(a.table, b.table)
    assert a.summary()["words"] == len(a.words) and a.tokens > len(a.words)


def test_words_seen_once_get_no_vector_and_no_repeated_word_is_an_error():
    tok = recognizer_nlp([]).tokenizer
    v = train_word_vectors(["alpha beta gamma", "alpha beta delta"], tok, dim=4, seed=0)
    assert set(v.words) == {"alpha", "beta"}                                       # MIN_COUNT == 2
    with pytest.raises(ValueError, match=f"no word occurs {MIN_COUNT} times in the 2 texts"):
        train_word_vectors(["one two", "three four"], tok, dim=4, seed=0)


def test_a_table_that_does_not_fit_its_words_is_refused():
    for table in (np.zeros((3, 4), dtype=np.float32), np.zeros(2, dtype=np.float32), np.zeros((2, 4))):
        with pytest.raises(ValueError, match="one float32 row per word of 2"):
            WordVectors(words=("a", "b"), table=table, tokens=5, seconds=0.0)
