"""Paired bootstrap over documents: how far a difference in F1 between two systems depends on which
documents happened to be scored.

Micro F1 from per-document counts: with tp_d (pairs right), n_d (pairs predicted) and g_d (gold
pairs) of document d,

    F1 = 2 · Σ_d tp_d / (Σ_d n_d + Σ_d g_d)             (= 2PR / (P + R); 0 when both sums are 0)

A resample draws the D scored documents with replacement, the same draw for both systems (paired:
the two systems answered the same documents), and Δ = F1_a − F1_b is recomputed on it. Over B
resamples the interval is the percentile one, [q_(1−c)/2, q_(1+c)/2] of the B values of Δ at
confidence c; ``share_not_above`` is the share of resamples where a does not beat b (Δ ≤ 0).

A held-out set of other documents varies the way these resamples do, so a difference whose interval
holds 0 may not carry over to it. The resampling is :func:`scipy.stats.bootstrap`'s (``paired``,
``method="percentile"``, seeded).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from scipy import stats

__all__ = ["document_counts", "counts_f1", "f1_difference"]


def document_counts(pred: Iterable[tuple], gold: Iterable[tuple], documents: Sequence[str]) -> np.ndarray:
    """[D, 3] int64 (tp, predicted, gold) per document of ``documents`` (in that order) for pair sets
    whose element 0 is the document id (:mod:`graphmert.eval.gold`); pairs of other documents are
    left out, as :func:`~graphmert.eval.metrics.evaluate_system` leaves them."""
    row = {d: i for i, d in enumerate(documents)}
    counts = np.zeros((len(documents), 3), dtype=np.int64)
    gold = set(gold)
    for p in gold:
        if p[0] in row:
            counts[row[p[0]], 2] += 1
    for p in set(pred):
        if p[0] in row:
            counts[row[p[0]], 1] += 1
            counts[row[p[0]], 0] += p in gold
    return counts


def _f1(tp: np.ndarray, predicted: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    """Micro F1 of summed per-document counts (module docstring); [...] over ``axis``."""
    num, den = 2.0 * tp.sum(axis=axis), predicted.sum(axis=axis) + gold.sum(axis=axis)
    return np.divide(num, den, out=np.zeros_like(num, dtype=np.float64), where=den > 0)


def counts_f1(counts: np.ndarray) -> float:
    """Micro F1 of a [D, 3] (tp, predicted, gold) array of :func:`document_counts` (module docstring)."""
    return float(_f1(*np.asarray(counts).T))


def f1_difference(a: np.ndarray, b: np.ndarray, resamples: int, seed: int = 0,
                  confidence: float = 0.95) -> dict[str, float | int]:
    """Δ = F1_a − F1_b with its paired-bootstrap interval (module docstring).

    Args:
        a, b: [D, 3] :func:`document_counts` of the two systems over the same documents and gold.
        resamples: B, at least 1.
        seed: the resampling's seed (the same seed gives the same interval).
        confidence: c, the interval's level.

    Returns ``{"delta", "low", "high", "share_not_above", "resamples", "documents"}``.
    """
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"f1_difference: counts must both be [D, 3]; got {a.shape} and {b.shape}")
    if not np.array_equal(a[:, 2], b[:, 2]):
        raise ValueError("f1_difference: the two systems' gold counts differ; score them on the same gold")
    if resamples < 1:
        raise ValueError(f"f1_difference: resamples must be at least 1; got {resamples}")
    delta = float(_f1(*a.T) - _f1(*b.T))
    if len(a) < 2:                      # nothing to resample
        return {"delta": delta, "low": delta, "high": delta, "share_not_above": float(delta <= 0),
                "resamples": 0, "documents": len(a)}

    def statistic(tp_a, n_a, tp_b, n_b, g, axis=-1):
        return _f1(tp_a, n_a, g, axis) - _f1(tp_b, n_b, g, axis)

    res = stats.bootstrap((a[:, 0], a[:, 1], b[:, 0], b[:, 1], a[:, 2]), statistic, paired=True,
                          vectorized=True, n_resamples=resamples, confidence_level=confidence,
                          method="percentile", random_state=np.random.default_rng(seed))
    low, high = res.confidence_interval
    dist = res.bootstrap_distribution                                                   # [B]
    return {"delta": delta, "low": float(low), "high": float(high),
            "share_not_above": float(np.mean(dist <= 0)), "resamples": resamples, "documents": len(a)}
