"""The candidate head's pair term (``model.pair_features``, issue #48): the between spans
(tests/graph/test_candidates.py checks those the candidate query builds), the span means against a
naive loop, the term against its formula in float64, its zero start, and that it learns what the
bilinear head cannot: to tell two candidates apart by the words between them and the head."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphmert.config import ConfigError, ModelConfig
from graphmert.graph.candidates import NUM_CANDIDATE_FEATURES, CandidateQuery, between_span
from graphmert.model.candidates import CandidateHead, span_means

from test_candidate_head import naive_scores, random_query

B, L, H = 3, 9, 16


def test_between_span_lies_strictly_between_the_head_and_the_nearest_mention():
    spans = np.array([[8, 10], [2, 3]])
    assert between_span(spans, head_root=4, head_end=5) == (3, 4)          # nearest is [2, 3): before
    assert between_span(spans, head_root=5, head_end=6) == (6, 8)          # a tie: the first listed
    assert between_span(spans, head_root=6, head_end=7) == (7, 8)          # nearest is [8, 10): after
    assert between_span(np.array([[6, 7]]), head_root=5, head_end=6) == (6, 6)    # touching: empty
    assert between_span(np.array([[4, 7]]), head_root=5, head_end=6) == (0, 0)    # overlapping: empty
    assert between_span(np.zeros((0, 2), dtype=np.int64), head_root=5, head_end=6) == (0, 0)


def test_span_means_match_a_naive_loop():
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(B, L, H, generator=gen, dtype=torch.float64)
    spans = torch.tensor([[0, 3], [L + 2, L + 9], [2 * L + 4, 2 * L + 5], [5, 5], [2 * L, 2 * L]])
    got = span_means(hidden, spans)
    flat = hidden.reshape(-1, H)
    for (lo, hi), row in zip(spans.tolist(), got):
        want = flat[lo:hi].mean(0) if hi > lo else torch.zeros(H, dtype=torch.float64)
        torch.testing.assert_close(row, want, atol=1e-12, rtol=0)
    assert span_means(hidden.float(), spans).dtype == torch.float32


def pair_query(gen: torch.Generator) -> CandidateQuery:
    cq = random_query(gen, G=4, E=6, empty_groups=())
    C = cq.cand_group.numel()
    lo = torch.randint(0, L, (C,), generator=gen)
    n = torch.randint(0, 4, (C,), generator=gen)
    row = torch.randint(0, B, (C,), generator=gen)
    hi = torch.minimum(lo + n, torch.full_like(lo, L))
    cq.cand_between = torch.stack([row * L + lo, row * L + hi], dim=1)
    return cq


def test_the_pair_term_is_the_documented_perceptron():
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    head = CandidateHead(H, pair=True).double()
    with torch.no_grad():
        for p in head.pair.parameters():
            p.normal_()
    hidden = torch.randn(B, L, H, generator=gen, dtype=torch.float64)
    cq = pair_query(gen)
    with torch.no_grad():
        s, none = head(hidden, cq)
    bilinear, want_none = naive_scores(head, hidden, cq)
    flat = hidden.reshape(-1, H)
    W, b = head.pair[0].weight.detach(), head.pair[0].bias.detach()
    v, c = head.pair[2].weight.detach()[0], head.pair[2].bias.detach()[0]
    for i in range(cq.cand_group.numel()):
        q = flat[int(cq.query_index[cq.cand_group[i]])]
        e = int(cq.cand_entity[i])
        ent = flat[[int(t) for t, te in zip(cq.entity_token, cq.entity_of_token) if int(te) == e]].mean(0)
        lo, hi = cq.cand_between[i].tolist()
        between = flat[lo:hi].mean(0) if hi > lo else torch.zeros(H, dtype=torch.float64)
        x = torch.cat([q, ent, between])
        gelu = 0.5 * (W @ x + b) * (1 + torch.erf((W @ x + b) / math.sqrt(2)))
        assert float(s[i]) == pytest.approx(float(bilinear[i] + v @ gelu + c), abs=1e-10)
    torch.testing.assert_close(none, want_none, atol=1e-12, rtol=0)


def test_the_pair_term_starts_at_zero_and_needs_its_spans():
    gen = torch.Generator().manual_seed(2)
    torch.manual_seed(2)
    plain = CandidateHead(H)
    torch.manual_seed(2)
    paired = CandidateHead(H, pair=True)
    hidden = torch.randn(B, L, H, generator=gen)
    cq = pair_query(gen)
    assert torch.equal(paired(hidden, cq)[0], plain(hidden, cq)[0])
    cq.cand_between = None
    with pytest.raises(ValueError, match="no between spans"):
        paired(hidden, cq)
    with pytest.raises(ConfigError, match="model.pair_features: needs model.candidate_head"):
        ModelConfig(pair_features=True).validate()


def cue_task(gen: torch.Generator, n: int = 64):
    """n groups of two candidates with the same entity state and features, apart only in the roots
    between them and the head: one span holds a cue vector, the other noise. Row b of the batch is
    group b: query at 0, candidates' mentions at 1 and 2, their between spans at 3–5 and 6–8."""
    cue = torch.randn(H, generator=gen)
    hidden = torch.randn(n, L, H, generator=gen) * 0.5
    hidden[:, 1] = hidden[:, 2] = torch.randn(n, 1, H, generator=gen).squeeze(1)    # same entity states
    right = torch.randint(0, 2, (n,), generator=gen)
    for b in range(n):
        at = 3 if int(right[b]) == 0 else 6
        hidden[b, at:at + 3] += cue
    base = torch.arange(n) * L
    cq = CandidateQuery(
        query_index=base, entity_token=torch.stack([base + 1, base + 2], 1).reshape(-1),
        entity_of_token=torch.arange(2 * n), num_entities=2 * n,
        cand_group=torch.arange(n).repeat_interleave(2), cand_entity=torch.arange(2 * n),
        cand_features=torch.zeros(2 * n, NUM_CANDIDATE_FEATURES),
        cand_positive=torch.stack([right == 0, right == 1], 1).reshape(-1),
        cand_between=torch.stack([torch.stack([base + 3, base + 6], 1), torch.stack([base + 6, base + 9], 1)],
                                 -1).reshape(-1, 2))
    return hidden, cq


def accuracy_after_training(pair: bool, steps: int = 150) -> float:
    torch.manual_seed(0)
    head = CandidateHead(H, pair=pair)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(3)
    for _ in range(steps):
        hidden, cq = cue_task(gen)
        p, _ = head.probabilities(hidden, cq)
        loss = -torch.log(p[cq.cand_positive] + 1e-9).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    hidden, cq = cue_task(torch.Generator().manual_seed(99), n=400)
    with torch.no_grad():
        p, _ = head.probabilities(hidden, cq)
    picked = p.view(-1, 2).argmax(1)
    return float((picked == cq.cand_positive.view(-1, 2).long().argmax(1)).float().mean())


def test_training_learns_to_read_the_words_between():
    """Candidates alike but for the words between them and the head: the pair term learns to pick the
    cued one; the bilinear head alone stays at chance."""
    assert accuracy_after_training(pair=True) > 0.95
    assert accuracy_after_training(pair=False) < 0.65
