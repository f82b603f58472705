"""Platt scaling of extracted confidences, so that a reported confidence says how often a triple holds.

Why. With gold entities the model's pair confidence is close to how often its pairs hold (BioRED dev:
expected calibration error 0.05). On raw text an end may be a mislinked or spurious mention, which
the model cannot see, so the same confidence holds far less often (raw dev: pairs at 0.9–1.0 hold
65% of the time, at 0.7–0.8 28%; ECE 0.35). A map fitted where gold exists (a held-out slice, by
``experiments/calibrate.py``) gives the number back its meaning:

    c' = σ(a · logit(c) + b),    logit(c) = log(c / (1 − c)),  c clipped to [ε, 1 − ε]

(Platt scaling). With a > 0 the map is monotone: the triples a threshold keeps, their order and every
F1 stay as they are, and only the number a user reads (and thresholds on afterwards) changes. It is
applied to a triple's confidence, its mean and each evidence event's (``extract.calibration``).

Hand-written: a sigmoid (scipy's ``expit``) of two stored numbers; the fit is scikit-learn's logistic regression on one
feature (scikit-learn's ``CalibratedClassifierCV`` wraps a classifier it trains, not a stored score).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np
from scipy.special import expit

from graphmert.extract.triples import Triple

__all__ = ["EPS", "calibrated", "fit_platt", "logit", "platt"]

EPS = 1e-6


def logit(c: float) -> float:
    """log(c / (1 − c)), with c clipped to [EPS, 1 − EPS]."""
    c = min(max(c, EPS), 1.0 - EPS)
    return math.log(c / (1.0 - c))


def platt(c: float, a: float, b: float) -> float:
    """σ(a · logit(c) + b) (module docstring)."""
    return float(expit(a * logit(c) + b))                      # scipy's sigmoid: no overflow either way


def calibrated(t: Triple, a: float, b: float) -> Triple:
    """``t`` with its confidence, mean confidence and every evidence event's confidence mapped by
    :func:`platt`."""
    return replace(t, confidence=platt(t.confidence, a, b), confidence_mean=platt(t.confidence_mean, a, b),
                   evidence=[replace(e, confidence=platt(e.confidence, a, b)) for e in t.evidence])


def fit_platt(confidences: Sequence[float], labels: Sequence[bool]) -> tuple[float, float]:
    """(a, b) maximising the likelihood of ``labels`` (whether each scored pair holds) under
    σ(a · logit(c) + b), nearly unregularised. Needs both labels."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, dtype=bool)
    if len(y) != len(confidences) or y.all() or not y.any():
        raise ValueError(f"fit_platt: needs as many labels as confidences ({len(confidences)}) and "
                         f"both right and wrong pairs; got {int(y.sum())} of {len(y)} right")
    x = np.array([[logit(c)] for c in confidences])                    # [pairs, 1]
    reg = LogisticRegression(C=1e6, max_iter=1000).fit(x, y)
    return float(reg.coef_[0, 0]), float(reg.intercept_[0])
