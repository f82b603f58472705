"""Which seed triples go into which chunk (DESIGN §7), on a columnar table of candidates.

A candidate p is (chunk c, head h, triple t = (s, r, o)) where the head mention starting at root h of
chunk c is linked to node s. It carries the similarity score of t's text to c, the relation r, the head
mention's token length and the tail's token length (0 when the tail name tokenises to nothing but
``[UNK]``). The rules, applied in order — every threshold a ``kg.*`` key:

1. ``tail_unknown``        tails that tokenise to nothing usable are dropped;
2. ``below_alpha``         keep score > α                                    (``kg.alpha``);
3. ``not_best_chunk``      each distinct triple only in its best (chunk, head): highest score, ties
                           to the earlier chunk, then the earlier head;
4. ``rare_relation``       drop relations with < n_min remaining triples     (``kg.min_relation_count``);
5. per (chunk, head) keep one triple, ordered by score band ⌊score / w⌋ descending (``kg.score_band``),
   then rarer relation first (fewer triples after 4), then score, then triple id; a tail longer than K
   tokens (``graph.num_leaves``) is skipped and the next one taken:
   ``tail_too_long`` for skipped tails, ``head_has_better_triple`` for the rest;
6. ``rare_relation_after_selection``  drop relations that fall under n_min again.

Every candidate ends in exactly one bucket (kept or one reason), so the report's counts add up.
:func:`select_injections` exposes switches for the structural rules (uniqueness, one per head, rarity
preference) and ``None`` for the numeric ones, so each rule's effect can be shown in isolation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

import numpy as np

__all__ = ["Candidates", "Selection", "REASONS", "select_injections", "injection_report",
           "ALPHA_GRID"]

REASONS = ("tail_unknown", "below_alpha", "not_best_chunk", "rare_relation", "tail_too_long",
           "head_has_better_triple", "rare_relation_after_selection")
_KEPT = -1
ALPHA_GRID = tuple(round(0.05 * i, 2) for i in range(1, 13))   # report only: triples surviving each α


@dataclass
class Candidates:
    """Columnar candidates; every field is a [P] array."""

    chunk: np.ndarray        # int64 chunk index (input order = tie-break order)
    head: np.ndarray         # int64 root position where the head mention starts
    head_length: np.ndarray  # int64 head mention length in root tokens
    triple: np.ndarray       # int64 triple id (SeedKG.edges index)
    relation: np.ndarray     # int64 relation id
    score: np.ndarray        # float64 similarity of triple text to chunk
    tail_length: np.ndarray  # int64 tail tokens; 0 = only [UNK]

    def __post_init__(self) -> None:
        n = len(self.chunk)
        for f in fields(self):
            v = np.asarray(getattr(self, f.name), dtype=np.float64 if f.name == "score" else np.int64)
            if v.shape != (n,):
                raise ValueError(f"Candidates.{f.name}: shape {v.shape}, expected ({n},)")
            setattr(self, f.name, v)

    def __len__(self) -> int:
        return len(self.chunk)

    @classmethod
    def empty(cls) -> "Candidates":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, z, z, np.zeros(0), z)


@dataclass
class Selection:
    """The outcome: ``reason[p]`` is −1 for kept candidates, else an index into :data:`REASONS`."""

    reason: np.ndarray       # [P] int64

    @property
    def kept(self) -> np.ndarray:
        """Indices of the kept candidates, in candidate order."""
        return np.flatnonzero(self.reason == _KEPT)

    def dropped(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.reason == REASONS.index(name))


def _drop(reason: np.ndarray, alive: np.ndarray, keep: np.ndarray, why: str) -> np.ndarray:
    reason[alive[~keep]] = REASONS.index(why)
    return alive[keep]


def _group_starts(*keys: np.ndarray) -> np.ndarray:
    """Start positions of runs of equal key tuples in (already sorted) arrays."""
    n = len(keys[0])
    change = np.zeros(n, dtype=bool)
    change[:1] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(change)


def select_injections(c: Candidates, num_relations: int, *, alpha: float | None,
                      min_relation_count: int, score_band: float | None,
                      max_tail_length: int | None, unique_triples: bool = True,
                      drop_rare_before: bool = True, one_per_head: bool = True,
                      prefer_rare: bool = True, drop_rare_after: bool = True) -> Selection:
    """Apply the rules of the module docstring (all on by default, as the paper does).

    ``None`` switches a numeric rule off (``alpha=None``: no threshold; ``score_band=None``: exact
    score order; ``max_tail_length=None``: no length limit); the flags switch off rules 3, 4, 5
    (keeping every candidate that survives), the rarity preference in 5, and 6.
    """
    reason = np.full(len(c), _KEPT, dtype=np.int64)
    alive = np.arange(len(c))
    alive = _drop(reason, alive, c.tail_length[alive] > 0, "tail_unknown")
    if alpha is not None:
        alive = _drop(reason, alive, c.score[alive] > alpha, "below_alpha")
    if unique_triples and len(alive):
        # sort by triple, then score desc, chunk asc, head asc: the first of each triple wins
        order = alive[np.lexsort((c.head[alive], c.chunk[alive], -c.score[alive], c.triple[alive]))]
        first = np.zeros(len(order), dtype=bool)
        first[_group_starts(c.triple[order])] = True
        alive = _drop(reason, order, first, "not_best_chunk")
    counts = np.bincount(c.relation[alive], minlength=num_relations)
    if drop_rare_before:
        alive = _drop(reason, alive, counts[c.relation[alive]] >= min_relation_count, "rare_relation")
    counts = np.bincount(c.relation[alive], minlength=num_relations)
    ok = (c.tail_length[alive] <= max_tail_length) if max_tail_length is not None \
        else np.ones(len(alive), dtype=bool)
    if one_per_head and len(alive):
        band = (np.floor(c.score[alive] / score_band + 1e-9) if score_band is not None
                else c.score[alive])
        rarity = counts[c.relation[alive]] if prefer_rare else np.zeros(len(alive), dtype=np.int64)
        perm = np.lexsort((c.triple[alive], -c.score[alive], rarity, -band, c.head[alive], c.chunk[alive]))
        order, ok = alive[perm], ok[perm]
        starts = _group_starts(c.chunk[order], c.head[order])
        pos = np.arange(len(order))
        first_ok = np.minimum.reduceat(np.where(ok, pos, len(order)), starts)
        first_ok = np.repeat(first_ok, np.diff(np.append(starts, len(order))))
        chosen = pos == first_ok
        reason[order[~ok & (pos < first_ok)]] = REASONS.index("tail_too_long")
        reason[order[~chosen & ~(~ok & (pos < first_ok))]] = REASONS.index("head_has_better_triple")
        alive = order[chosen]
    else:
        alive = _drop(reason, alive, ok, "tail_too_long")
    if drop_rare_after:
        counts = np.bincount(c.relation[alive], minlength=num_relations)
        _drop(reason, alive, counts[c.relation[alive]] >= min_relation_count,
              "rare_relation_after_selection")
    return Selection(reason)


#: the score quantiles the report gives (name → q)
QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99, "max": 1.0}


def _quantiles(x: np.ndarray) -> dict[str, float]:
    if len(x) == 0:
        return {}
    vals = np.quantile(x, list(QUANTILES.values()))
    out = {k: round(float(v), 4) for k, v in zip(QUANTILES, vals)}
    out["mean"] = round(float(x.mean()), 4)
    return out


def injection_report(c: Candidates, sel: Selection, relations: Sequence[str]) -> dict:
    """JSON-serialisable counts: totals, drops by reason, per relation, and score distributions."""
    R = len(relations)
    per_rel: dict[str, dict[str, int]] = {}
    cand_counts = np.bincount(c.relation, minlength=R)
    kept = sel.kept
    kept_counts = np.bincount(c.relation[kept], minlength=R)
    by_reason = {name: np.bincount(c.relation[sel.dropped(name)], minlength=R) for name in REASONS}
    for r, name in enumerate(relations):
        if cand_counts[r] == 0:
            continue
        row = {"candidates": int(cand_counts[r]), "kept": int(kept_counts[r])}
        row.update({k: int(v[r]) for k, v in by_reason.items() if v[r]})
        per_rel[name] = row
    best = np.zeros(0)
    valid = c.tail_length > 0
    if valid.any():
        t, s = c.triple[valid], c.score[valid]
        order = np.lexsort((-s, t))
        best = s[order][_group_starts(t[order])]
    return {
        "candidates": int(len(c)),
        "kept": int(len(kept)),
        "dropped": {k: int(v.sum()) for k, v in by_reason.items()},
        "per_relation": per_rel,
        "relations_without_injections": [relations[r] for r in range(R) if cand_counts[r] and not kept_counts[r]],
        "distinct_triples": int(len(np.unique(c.triple))),
        "score_quantiles": _quantiles(c.score),
        "best_score_per_triple_quantiles": _quantiles(best),
        "triples_above_alpha": {f"{a:.2f}": int((best > a).sum()) for a in ALPHA_GRID},
    }
