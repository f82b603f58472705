"""What the injection selection needs of a corpus's candidates, in memory bounded by the seed KG.

A corpus of D documents yields about 350 candidate rows (chunk, head, triple) a document (3,000
documents of the shared texts: 1.04M rows for 42,636 distinct triples). Holding them all, as
:func:`~graphmert.kg.injection.select_injections` does, grows the graphs driver with the corpus.
But the selection's rules 1–3 (module docstring of :mod:`graphmert.kg.injection`) keep at most one
row of each triple: its first in the order score ↓, chunk ↑, head ↑, and only if its tail is usable
and its score is above α. Rules 4–6 see only those rows. So a digest keeps, per distinct triple t:

    best(t)   the row first in that order                    (chunk, head, head length, score)
    n(t)      how many rows t has
    a(t)      how many of them score above α                 (all of them when α is None)

and the selection over the best rows is the selection over all rows. A digest of two disjoint sets
of rows is the digest of their union (:meth:`CandidateDigest.merge`: the better best, the counts
added), so each chunk shard writes its own and the driver folds them, holding at most one row per
distinct triple — never more than the seed KG's edges.

The report's per-reason counts follow from the counts: of t's rows other than best(t), all are
``tail_unknown`` when t's tail is; else the n(t) − a(t) at or below α are ``below_alpha`` and the
a(t) − 1 others ``not_best_chunk`` (best(t) itself is above α whenever a(t) > 0, as it scores
highest). :meth:`CandidateDigest.report` adds them to :func:`~graphmert.kg.injection.injection_report`
of the best rows, so every count equals the report over all rows. The one figure that needs every
row's score, ``score_quantiles``, comes from a histogram of :data:`BINS` bins over [0, 1] (scores are
similarities in [0, 1], :class:`~graphmert.kg.scoring.Scorer`): its quantiles are exact to within one
bin (10⁻⁴), its minimum, maximum and mean exact.

Shapes: T distinct triples; every array field is [T], sorted by triple id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from graphmert.kg.injection import QUANTILES, REASONS, Candidates, Selection, injection_report, select_injections

__all__ = ["CandidateDigest", "BINS"]

#: histogram bins of the candidate scores over [0, 1]: quantiles to within 1e-4, the report's rounding
BINS = 10_000
_ARRAYS = ("triple", "chunk", "head", "head_length", "score", "rows", "above")


@dataclass
class CandidateDigest:
    """One row per distinct triple (module docstring), the score histogram and the head count.

    ``heads`` counts distinct (chunk, head) pairs with a candidate; digests of disjoint chunk sets
    add it up. ``alpha`` is the α that ``above`` counts against (``kg.alpha``; None: no threshold).
    """

    triple: np.ndarray          # [T] int64 triple id, ascending
    chunk: np.ndarray           # [T] int64 best(t)'s chunk
    head: np.ndarray            # [T] int64 best(t)'s head start
    head_length: np.ndarray     # [T] int64 best(t)'s head length
    score: np.ndarray           # [T] float64 best(t)'s score
    rows: np.ndarray            # [T] int64 n(t)
    above: np.ndarray           # [T] int64 a(t)
    histogram: np.ndarray       # [BINS] int64 candidate scores per bin
    score_sum: float
    score_min: float
    score_max: float
    heads: int
    alpha: float | None

    def __len__(self) -> int:
        return len(self.triple)

    @property
    def candidates(self) -> int:
        """How many candidate rows the digest summarises."""
        return int(self.rows.sum())

    @classmethod
    def of(cls, rows: np.ndarray, scores: np.ndarray, alpha: float | None) -> "CandidateDigest":
        """The digest of candidate ``rows`` [P, 4] (chunk, head start, head length, triple id, as
        :func:`~graphmert.graph.builder.find_candidates`) with their ``scores`` [P] in [0, 1]."""
        rows, scores = np.asarray(rows, dtype=np.int64).reshape(-1, 4), np.asarray(scores, dtype=np.float64)
        if len(scores) != len(rows):
            raise ValueError(f"CandidateDigest.of: {len(rows)} rows but {len(scores)} scores")
        if len(scores) and not (scores.min() >= 0.0 and scores.max() <= 1.0):
            raise ValueError(f"CandidateDigest.of: scores must lie in [0, 1], not "
                             f"[{scores.min():.4g}, {scores.max():.4g}]")
        hist = np.bincount(_bins(scores), minlength=BINS)
        heads = len(np.unique(rows[:, 0] * (int(rows[:, 1].max()) + 1) + rows[:, 1])) if len(rows) else 0
        above = scores > alpha if alpha is not None else np.ones(len(scores), dtype=bool)
        part = cls._reduce(rows[:, 3], rows[:, 0], rows[:, 1], rows[:, 2], scores,
                           np.ones(len(rows), dtype=np.int64), above.astype(np.int64))
        return cls(**part, histogram=hist, score_sum=float(scores.sum()),
                   score_min=float(scores.min()) if len(scores) else np.inf,
                   score_max=float(scores.max()) if len(scores) else -np.inf, heads=heads, alpha=alpha)

    @staticmethod
    def _reduce(triple, chunk, head, head_length, score, rows, above) -> dict[str, np.ndarray]:
        """Per triple: the first row in (score ↓, chunk ↑, head ↑) order, the counts summed."""
        order = np.lexsort((head, chunk, -score, triple))                        # [N]
        t = triple[order]
        starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]) if len(t) else np.zeros(0, dtype=np.int64)
        first = order[starts]                                                    # [T]
        return {"triple": triple[first], "chunk": chunk[first], "head": head[first],
                "head_length": head_length[first], "score": score[first],
                "rows": np.add.reduceat(rows[order], starts) if len(t) else rows[:0],
                "above": np.add.reduceat(above[order], starts) if len(t) else above[:0]}

    def merge(self, other: "CandidateDigest") -> "CandidateDigest":
        """The digest of both digests' rows together (their chunks must be disjoint)."""
        return CandidateDigest.fold([self, other])

    @staticmethod
    def fold(digests: Iterable["CandidateDigest"]) -> "CandidateDigest":
        """The digest of every digest's rows together, reduced as they come: at most the running
        digest and the digests read since its last reduction (no more rows than it holds) are in memory."""
        held: list[CandidateDigest] = []
        size = 0
        for d in digests:
            held.append(d)
            size += len(d)
            if len(held) > 1 and size >= 2 * len(held[0]):
                held = [CandidateDigest._fold_now(held)]
                size = len(held[0])
        if not held:
            raise ValueError("CandidateDigest.fold: no digests")
        return CandidateDigest._fold_now(held)

    @staticmethod
    def _fold_now(ds: Sequence["CandidateDigest"]) -> "CandidateDigest":
        alphas = {d.alpha for d in ds}
        if len(alphas) > 1:
            raise ValueError(f"CandidateDigest.merge: digests counted against different α {sorted(alphas, key=str)}")
        if len(ds) == 1:
            return ds[0]
        part = CandidateDigest._reduce(*(np.concatenate([getattr(d, k) for d in ds]) for k in _ARRAYS))
        return CandidateDigest(**part, histogram=sum(d.histogram for d in ds),
                               score_sum=sum(d.score_sum for d in ds), score_min=min(d.score_min for d in ds),
                               score_max=max(d.score_max for d in ds), heads=sum(d.heads for d in ds),
                               alpha=ds[0].alpha)

    def best_candidates(self, relation: np.ndarray, tail_length: np.ndarray) -> Candidates:
        """The best rows as :class:`Candidates`, with each triple's ``relation`` and ``tail_length`` [T]."""
        return Candidates(chunk=self.chunk, head=self.head, head_length=self.head_length, triple=self.triple,
                          relation=relation, score=self.score, tail_length=tail_length)

    def select(self, best: Candidates, num_relations: int, *, min_relation_count: int,
               score_band: float | None, max_tail_length: int | None) -> Selection:
        """:func:`~graphmert.kg.injection.select_injections` (every rule on, α the digest's) over
        the ``best`` rows (:meth:`best_candidates`): the same kept triples as over every row."""
        return select_injections(best, num_relations, alpha=self.alpha, min_relation_count=min_relation_count,
                                 score_band=score_band, max_tail_length=max_tail_length)

    def report(self, best: Candidates, sel: Selection, relations: Sequence[str]) -> dict:
        """:func:`~graphmert.kg.injection.injection_report` as over every row (module docstring)."""
        rep = injection_report(best, sel, relations)
        unknown = best.tail_length == 0                                          # [T]
        extra = {"tail_unknown": np.where(unknown, self.rows - 1, 0),            # [T] each
                 "below_alpha": np.where(unknown, 0, self.rows - self.above - (self.above == 0)),
                 "not_best_chunk": np.where(unknown, 0, np.maximum(self.above - 1, 0))}

        def per_relation(v: np.ndarray) -> np.ndarray:                           # [T] → [R]
            return np.bincount(best.relation, weights=v, minlength=len(relations)).round().astype(np.int64)

        added = {k: per_relation(v) for k, v in extra.items()}
        totals = per_relation(self.rows)
        rep["candidates"] = self.candidates
        for k, v in added.items():
            rep["dropped"][k] += int(v.sum())
        for r, name in enumerate(relations):
            if (row := rep["per_relation"].get(name)) is not None:
                counts = {k: row.get(k, 0) + (int(added[k][r]) if k in added else 0) for k in REASONS}
                rep["per_relation"][name] = {"candidates": int(totals[r]), "kept": row["kept"],
                                             **{k: n for k, n in counts.items() if n}}
        rep["score_quantiles"] = self.score_quantiles()
        return rep

    def score_quantiles(self) -> dict[str, float]:
        """min, p10 … p99, max and mean of every candidate's score: the quantiles as
        ``numpy.quantile``'s (linear interpolation between order statistics) with each order
        statistic taken at its bin's midpoint, so within half a bin; min, max and mean exact."""
        n = self.candidates
        if not n:
            return {}
        cum = np.cumsum(self.histogram)                                          # [BINS]

        def order_statistic(rank: int) -> float:                                 # 0-based rank
            mid = (np.searchsorted(cum, rank + 1, side="left") + 0.5) / BINS
            return float(np.clip(mid, self.score_min, self.score_max))

        out = {}
        for k, q in QUANTILES.items():
            pos = q * (n - 1)
            lo = int(np.floor(pos))
            hi = min(lo + 1, n - 1)
            out[k] = order_statistic(lo) + (pos - lo) * (order_statistic(hi) - order_statistic(lo))
        out["min"], out["max"], out["mean"] = self.score_min, self.score_max, self.score_sum / n
        return {k: round(v, 4) for k, v in out.items()}

    def save(self, path: Path) -> None:
        """Write the digest to ``path`` (``.npz``)."""
        with open(path, "wb") as f:
            np.savez(f, **{k: getattr(self, k) for k in (*_ARRAYS, "histogram")},
                     scalars=np.array([self.score_sum, self.score_min, self.score_max, self.heads,
                                       np.nan if self.alpha is None else self.alpha]))

    @classmethod
    def load(cls, path: Path) -> "CandidateDigest":
        """The digest :meth:`save` wrote to ``path``."""
        with np.load(path) as z:
            s = z["scalars"]
            return cls(**{k: z[k] for k in (*_ARRAYS, "histogram")}, score_sum=float(s[0]),
                       score_min=float(s[1]), score_max=float(s[2]), heads=int(s[3]),
                       alpha=None if np.isnan(s[4]) else float(s[4]))


def _bins(scores: np.ndarray) -> np.ndarray:
    """Each score's histogram bin: ⌊score · BINS⌋, 1.0 in the last."""
    return np.minimum((scores * BINS).astype(np.int64), BINS - 1)

