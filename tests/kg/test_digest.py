"""The candidate digest against the reference it replaces: selecting over the folded digests of any
split of the candidates keeps what :func:`select_injections` over every row keeps, and its report
is :func:`injection_report`'s (the score quantiles to within a histogram bin)."""

from __future__ import annotations

import numpy as np
import pytest

from graphmert.kg.digest import CandidateDigest
from graphmert.kg.injection import Candidates, injection_report, select_injections

RULES = dict(min_relation_count=2, score_band=0.1, max_tail_length=5)


def random_candidates(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(rows [P, 4], scores [P], relation of each triple, tail length of each triple, relations):
    one row per (chunk, head, triple) as find_candidates gives, exact score ties included."""
    n_triples, n_rel = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    seen = {}
    for _ in range(int(rng.integers(1, 200))):
        key = (int(rng.integers(0, 12)), int(rng.integers(1, 5)), int(rng.integers(0, n_triples)))
        seen[key] = float(rng.choice([rng.random(), round(rng.random(), 1), 0.0, 1.0]))
    rows = np.array([(c, h, 1 + h % 2, t) for c, h, t in seen], dtype=np.int64)
    return (rows, np.array(list(seen.values())), rng.integers(0, n_rel, n_triples),
            rng.integers(0, 8, n_triples), n_rel)


def full(rows, scores, relation, tail_length) -> Candidates:
    t = rows[:, 3]
    return Candidates(chunk=rows[:, 0], head=rows[:, 1], head_length=rows[:, 2], triple=t,
                      relation=relation[t], score=scores, tail_length=tail_length[t])


def digests_of_a_split(rows, scores, alpha, rng) -> list[CandidateDigest]:
    """The rows cut by chunk into 1–4 groups (as chunk shards are), one digest each, shuffled."""
    group = rng.integers(0, int(rng.integers(1, 5)), 12)[rows[:, 0]]
    out = [CandidateDigest.of(rows[group == g], scores[group == g], alpha) for g in np.unique(group)]
    return [out[i] for i in rng.permutation(len(out))]


def kept_rows(c: Candidates, kept: np.ndarray) -> list[tuple[int, int, int]]:
    return sorted((int(c.chunk[p]), int(c.head[p]), int(c.triple[p])) for p in kept)


@pytest.mark.parametrize("seed", range(60))
def test_the_folded_digests_select_and_report_as_every_row_does(seed):
    rng = np.random.default_rng(seed)
    rows, scores, relation, tail_length, n_rel = random_candidates(rng)
    alpha = [None, 0.0, 0.3, 0.7][seed % 4]
    names = [f"r{i}" for i in range(n_rel)]
    c = full(rows, scores, relation, tail_length)
    sel = select_injections(c, n_rel, alpha=alpha, **RULES)
    expected = injection_report(c, sel, names)

    digest = CandidateDigest.fold(digests_of_a_split(rows, scores, alpha, rng))
    best = digest.best_candidates(relation[digest.triple], tail_length[digest.triple])
    got_sel = digest.select(best, n_rel, **RULES)
    got = digest.report(best, got_sel, names)

    assert kept_rows(best, got_sel.kept) == kept_rows(c, sel.kept)
    assert len(digest) == len(np.unique(rows[:, 3]))
    assert digest.heads == len({(r[0], r[1]) for r in rows.tolist()})
    want_q, got_q = expected.pop("score_quantiles"), got.pop("score_quantiles")
    assert got == expected                  # every count, per reason and relation, in the same order
    assert want_q.keys() == got_q.keys()
    for k in want_q:
        assert abs(want_q[k] - got_q[k]) <= 1.5e-4, (k, want_q[k], got_q[k])
    for k in ("min", "max", "mean"):
        assert got_q[k] == want_q[k]


def test_a_digest_round_trips_through_its_file(tmp_path):
    rows, scores, *_ = random_candidates(np.random.default_rng(3))
    for alpha in (None, 0.25):
        d = CandidateDigest.of(rows, scores, alpha)
        d.save(tmp_path / "d.npz")
        back = CandidateDigest.load(tmp_path / "d.npz")
        assert back.alpha == alpha and back.heads == d.heads and back.score_sum == d.score_sum
        for k in ("triple", "chunk", "head", "head_length", "score", "rows", "above", "histogram"):
            assert np.array_equal(getattr(back, k), getattr(d, k)), k


def test_a_digest_holds_one_row_per_triple_however_many_shards_repeat_it():
    rng = np.random.default_rng(0)
    parts = []
    for shard in range(50):                     # 50 shards of 40 chunks, each naming triples 0..9
        rows = np.array([(shard * 40 + c, 1, 1, t) for c in range(40) for t in range(10)], dtype=np.int64)
        parts.append(CandidateDigest.of(rows, rng.random(len(rows)), 0.5))
    d = CandidateDigest.fold(parts)
    assert len(d) == 10 and d.candidates == 50 * 40 * 10 and d.heads == 50 * 40
    assert d.rows.tolist() == [2000] * 10


def test_bad_digests_are_refused_with_the_reason():
    rows = np.array([[0, 1, 1, 0]], dtype=np.int64)
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        CandidateDigest.of(rows, np.array([1.5]), None)
    with pytest.raises(ValueError, match="1 rows but 2 scores"):
        CandidateDigest.of(rows, np.array([0.1, 0.2]), None)
    with pytest.raises(ValueError, match="different α"):
        CandidateDigest.of(rows, np.array([0.1]), 0.2).merge(CandidateDigest.of(rows + [1, 0, 0, 0], np.array([0.1]), None))
    with pytest.raises(ValueError, match="no digests"):
        CandidateDigest.fold([])
