"""Injection rules (DESIGN §7): a hand-built case where every rule changes the outcome, and a naive
loop-based reference compared with the vectorised selection on random candidate tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from graphmert.kg.injection import REASONS, Candidates, injection_report, select_injections

COMMON, RARE, TINY, FRAGILE = 0, 1, 2, 3
RELATIONS = ["common", "rare", "tiny", "fragile"]

# (chunk, head, triple, relation, score, tail_length) — head_length 1 everywhere.
ROWS = [
    # α: the only candidate of head (0,1) scores below α = 0.3
    (0, 1, 0, COMMON, 0.20, 2),
    # uniqueness: triple 1 in chunk 1 (0.9) and chunk 2 (0.6); and an exact tie (triple 2) → chunk 11
    (1, 1, 1, COMMON, 0.90, 2),
    (2, 1, 1, COMMON, 0.60, 2),
    (11, 1, 2, COMMON, 0.70, 2),
    (12, 1, 2, COMMON, 0.70, 2),
    # minimum count before selection: 'tiny' has one triple; with it head (3,1) takes triple 4
    (3, 1, 3, TINY, 0.80, 2),
    (3, 1, 4, COMMON, 0.50, 2),
    # banding vs exact order: same 0.1 band, rarer relation first
    (4, 1, 5, COMMON, 0.86, 2),
    (4, 1, 6, RARE, 0.84, 2),
    # rarity preference within a band
    (5, 1, 7, COMMON, 0.89, 2),
    (5, 1, 8, RARE, 0.81, 2),
    # band width: different 0.1 bands → better band wins even though 'rare' is rarer
    (6, 1, 9, COMMON, 0.95, 2),
    (6, 1, 10, RARE, 0.82, 2),
    # long tail: the best triple's tail has 9 tokens > K = 7
    (7, 1, 11, COMMON, 0.90, 9),
    (7, 1, 12, COMMON, 0.70, 3),
    # one per head: two good triples at head (8,1)
    (8, 1, 13, COMMON, 0.90, 2),
    (8, 1, 14, COMMON, 0.55, 2),
    # minimum count after selection: 'fragile' has 2 triples, one loses its head → 1 < 2
    (9, 1, 15, FRAGILE, 0.70, 2),
    (10, 1, 16, FRAGILE, 0.50, 2),
    (10, 1, 17, COMMON, 0.90, 2),
    # a second head in chunk 8 (not affected by one-per-head of head (8,1))
    (8, 3, 18, COMMON, 0.40, 2),
]
PARAMS = dict(alpha=0.3, min_relation_count=2, score_band=0.1, max_tail_length=7)


def candidates(rows=ROWS) -> Candidates:
    a = np.array([r[:4] for r in rows], dtype=np.int64)
    return Candidates(chunk=a[:, 0], head=a[:, 1], head_length=np.ones(len(rows), dtype=np.int64),
                      triple=a[:, 2], relation=a[:, 3], score=np.array([r[4] for r in rows]),
                      tail_length=np.array([r[5] for r in rows]))


def outcome(**changes) -> dict[tuple[int, int], list[int]]:
    """(chunk, head) → kept triples, under PARAMS with ``changes``."""
    c = candidates()
    sel = select_injections(c, len(RELATIONS), **(PARAMS | changes))
    out: dict[tuple[int, int], list[int]] = {}
    for p in sel.kept:
        out.setdefault((int(c.chunk[p]), int(c.head[p])), []).append(int(c.triple[p]))
    return {k: sorted(v) for k, v in out.items()}


BASE = None


def base():
    global BASE
    if BASE is None:
        BASE = outcome()
    return BASE


def test_alpha():
    assert (0, 1) not in base()
    assert outcome(alpha=None)[(0, 1)] == [0]


def test_each_triple_only_in_its_best_chunk():
    assert base()[(1, 1)] == [1] and (2, 1) not in base()
    assert outcome(unique_triples=False)[(2, 1)] == [1]
    # an exact tie goes to the earlier chunk
    assert base()[(11, 1)] == [2] and (12, 1) not in base()


def test_minimum_relation_count_before_selection():
    assert base()[(3, 1)] == [4]                       # 'tiny' dropped first, so the head takes triple 4
    assert (3, 1) not in outcome(drop_rare_before=False)   # 'tiny' wins the head, then falls under n_min
    assert outcome(min_relation_count=0)[(3, 1)] == [3]


def test_score_bands_let_rarity_decide_within_a_band():
    assert base()[(4, 1)] == [6]                       # 0.84 'rare' beats 0.86 'common' in band 8
    assert outcome(score_band=None)[(4, 1)] == [5]     # exact score order


def test_band_width():
    assert base()[(6, 1)] == [9]                       # 0.95 (band 9) beats rarer 0.82 (band 8)
    assert outcome(score_band=1.0)[(6, 1)] == [10]     # one wide band: rarity decides


def test_rarer_relation_first():
    assert base()[(5, 1)] == [8]
    assert outcome(prefer_rare=False)[(5, 1)] == [7]


def test_long_tails_are_skipped():
    assert base()[(7, 1)] == [12]
    assert outcome(max_tail_length=None)[(7, 1)] == [11]
    assert outcome(max_tail_length=9)[(7, 1)] == [11]


def test_one_injection_per_head():
    assert base()[(8, 1)] == [13] and base()[(8, 3)] == [18]
    assert outcome(one_per_head=False)[(8, 1)] == [13, 14]


def test_minimum_relation_count_after_selection():
    assert (9, 1) not in base() and base()[(10, 1)] == [17]
    assert outcome(drop_rare_after=False)[(9, 1)] == [15]


def test_report_accounts_for_every_candidate():
    c = candidates()
    sel = select_injections(c, len(RELATIONS), **PARAMS)
    rep = injection_report(c, sel, RELATIONS)
    json.dumps(rep)
    assert rep["candidates"] == len(ROWS)
    assert rep["kept"] + sum(rep["dropped"].values()) == len(ROWS)
    assert rep["dropped"]["below_alpha"] == 1
    assert rep["dropped"]["not_best_chunk"] == 2
    assert rep["dropped"]["rare_relation"] == 1
    assert rep["dropped"]["tail_too_long"] == 1
    assert rep["dropped"]["rare_relation_after_selection"] == 1
    assert rep["per_relation"]["tiny"] == {"candidates": 1, "kept": 0, "rare_relation": 1}
    assert set(rep["relations_without_injections"]) == {"tiny", "fragile"}
    for name, row in rep["per_relation"].items():
        assert row["candidates"] == row["kept"] + sum(v for k, v in row.items() if k in REASONS)


def test_unknown_tails_are_dropped_first():
    rows = [(0, 1, 0, COMMON, 0.9, 0), (0, 1, 1, COMMON, 0.5, 2), (1, 1, 2, COMMON, 0.9, 2)]
    c = candidates(rows)
    sel = select_injections(c, 4, **PARAMS)
    assert sel.kept.tolist() == [1, 2] and sel.dropped("tail_unknown").tolist() == [0]


# --------------------------------------------------------------------------------------------------
# Reference: the rules as plain loops over dicts
# --------------------------------------------------------------------------------------------------


def reference(rows, alpha, min_count, band, K):
    cand = [dict(i=i, c=r[0], h=r[1], t=r[2], r=r[3], s=r[4], tl=r[5]) for i, r in enumerate(rows)]
    cand = [x for x in cand if x["tl"] > 0 and x["s"] > alpha]
    best = {}
    for x in cand:
        k = x["t"]
        if k not in best or (-x["s"], x["c"], x["h"]) < (-best[k]["s"], best[k]["c"], best[k]["h"]):
            best[k] = x
    cand = list(best.values())
    count = {}
    for x in cand:
        count[x["r"]] = count.get(x["r"], 0) + 1
    cand = [x for x in cand if count[x["r"]] >= min_count]
    count = {}
    for x in cand:
        count[x["r"]] = count.get(x["r"], 0) + 1
    by_head = {}
    for x in cand:
        by_head.setdefault((x["c"], x["h"]), []).append(x)
    chosen = []
    for xs in by_head.values():
        xs.sort(key=lambda x: (-math.floor(x["s"] / band + 1e-9), count[x["r"]], -x["s"], x["t"]))
        for x in xs:
            if x["tl"] <= K:
                chosen.append(x)
                break
    count = {}
    for x in chosen:
        count[x["r"]] = count.get(x["r"], 0) + 1
    return sorted(x["i"] for x in chosen if count[x["r"]] >= min_count)


@pytest.mark.parametrize("seed", range(150))
def test_matches_reference_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    n_triples, n_rel = int(rng.integers(1, 30)), int(rng.integers(1, 5))
    rel_of = rng.integers(0, n_rel, n_triples)
    rows = []
    for _ in range(n):
        t = int(rng.integers(0, n_triples))
        score = float(rng.choice([rng.random(), round(rng.random(), 1)]))   # exact ties happen
        rows.append((int(rng.integers(0, 6)), int(rng.integers(1, 4)), t, int(rel_of[t]), score,
                     int(rng.integers(0, 10))))
    # one candidate per (chunk, head, triple), as the builder produces
    rows = list({(r[0], r[1], r[2]): r for r in rows}.values())
    alpha, min_count = float(rng.choice([0.0, 0.3])), int(rng.integers(0, 4))
    band, K = float(rng.choice([0.01, 0.1, 0.25])), int(rng.integers(1, 9))
    c = candidates(rows)
    sel = select_injections(c, n_rel, alpha=alpha, min_relation_count=min_count, score_band=band,
                            max_tail_length=K)
    assert sel.kept.tolist() == reference(rows, alpha, min_count, band, K)
    kept = sel.kept
    assert len({(c.chunk[p], c.head[p]) for p in kept}) == len(kept)     # one per head
    assert len(set(c.triple[kept].tolist())) == len(kept)                 # each triple once
    assert (sel.reason >= -1).all() and (sel.reason < len(REASONS)).all()
