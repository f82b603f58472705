"""The paired bootstrap of F1 differences: its counts and point estimate against prf, its interval
against a naive resampling loop, and the cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from graphmert.eval.bootstrap import counts_f1, document_counts, f1_difference
from graphmert.eval.metrics import prf


def _systems(seed: int = 0, docs: int = 60):
    """Gold pairs over ``docs`` documents and two systems: ``a`` finds more of them than ``b``."""
    rng = np.random.default_rng(seed)
    ids = [f"d{i}" for i in range(docs)]
    gold, a, b = set(), set(), set()
    for d in ids:
        for k in range(int(rng.integers(0, 8))):
            pair = (d, frozenset((f"e{k}", f"f{k}")))
            gold.add(pair)
            if rng.random() < 0.7:
                a.add(pair)
            if rng.random() < 0.5:
                b.add(pair)
        for k in range(int(rng.integers(0, 4))):
            a.add((d, frozenset((f"x{k}", "y"))))
            b.add((d, frozenset((f"z{k}", "y"))))
    return ids, gold, a, b


def test_counts_sum_to_prf_and_leave_other_documents_out():
    ids, gold, a, _ = _systems()
    outside = {("elsewhere", frozenset(("p", "q")))}
    counts = document_counts(a | outside, gold, ids)
    whole = prf({p for p in a if p[0] in ids}, gold)
    assert counts.sum(axis=0).tolist() == [whole["tp"], whole["predicted"], whole["gold"]]
    assert counts_f1(counts) == pytest.approx(whole["f1"], abs=1e-12)
    assert counts_f1(np.zeros((3, 3), dtype=np.int64)) == 0.0
    assert counts[ids.index("d3")].tolist() == [len({p for p in a & gold if p[0] == "d3"}),
                                                 len({p for p in a if p[0] == "d3"}),
                                                 len({p for p in gold if p[0] == "d3"})]


def test_the_difference_is_prfs_and_the_interval_a_naive_loops():
    ids, gold, a, b = _systems()
    ca, cb = document_counts(a, gold, ids), document_counts(b, gold, ids)
    got = f1_difference(ca, cb, resamples=4000, seed=1)
    assert got["delta"] == pytest.approx(prf(a, gold)["f1"] - prf(b, gold)["f1"], abs=1e-12)
    rng = np.random.default_rng(7)                 # the definition, one resample at a time
    deltas = []
    for _ in range(4000):
        pick = rng.integers(0, len(ids), len(ids))
        fa = 2 * ca[pick, 0].sum() / (ca[pick, 1].sum() + ca[pick, 2].sum())
        fb = 2 * cb[pick, 0].sum() / (cb[pick, 1].sum() + cb[pick, 2].sum())
        deltas.append(fa - fb)
    low, high = np.percentile(deltas, [2.5, 97.5])
    assert got["low"] == pytest.approx(low, abs=0.01) and got["high"] == pytest.approx(high, abs=0.01)
    assert got["share_not_above"] == pytest.approx(np.mean(np.array(deltas) <= 0), abs=0.01)
    assert got["low"] < got["delta"] < got["high"] and (got["resamples"], got["documents"]) == (4000, 60)
    assert f1_difference(ca, cb, resamples=500, seed=3) == f1_difference(ca, cb, resamples=500, seed=3)


def test_known_answers():
    ids, gold, a, b = _systems()
    ca, cb = document_counts(a, gold, ids), document_counts(b, gold, ids)
    same = f1_difference(ca, ca, resamples=200)
    assert (same["delta"], same["low"], same["high"], same["share_not_above"]) == (0.0, 0.0, 0.0, 1.0)
    perfect = document_counts(gold, gold, ids)                # right on every document
    empty = document_counts(set(), gold, ids)
    up = f1_difference(perfect, empty, resamples=200)
    assert up["delta"] == 1.0 and up["low"] == 1.0 and up["share_not_above"] == 0.0
    flip = f1_difference(cb, ca, resamples=300, seed=5)
    there = f1_difference(ca, cb, resamples=300, seed=5)
    assert flip["delta"] == -there["delta"] and flip["low"] == pytest.approx(-there["high"])


def test_bad_counts_are_refused():
    ids, gold, a, b = _systems()
    ca = document_counts(a, gold, ids)
    with pytest.raises(ValueError, match=r"must both be \[D, 3\]"):
        f1_difference(ca, ca[:-1], resamples=10)
    other = ca.copy()
    other[0, 2] += 1
    with pytest.raises(ValueError, match="gold counts differ"):
        f1_difference(ca, other, resamples=10)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        f1_difference(ca, ca, resamples=0)
    one = f1_difference(ca[:1], ca[:1], resamples=10)
    assert one["resamples"] == 0 and one["low"] == one["high"] == one["delta"]
