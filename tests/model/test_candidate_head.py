"""The candidate head: scores against a naive per-group loop (mean-pooled entity states, bilinear
score / √H + feature term, "none" score), the softmax over {none} ∪ candidates, segment_logsumexp
against a naive loop (empty segments give −inf), and the feature weights' zero init."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from graphmert.config import ModelConfig
from graphmert.graph.candidates import NUM_CANDIDATE_FEATURES, CandidateQuery
from graphmert.model import build_model
from graphmert.model.candidates import CandidateHead, segment_logsumexp
from numerics import assert_close_f32

B, L, H = 3, 9, 16


def random_query(gen: torch.Generator, G: int = 5, E: int = 7, empty_groups=(3,)) -> CandidateQuery:
    """G groups over E entities; each entity has 1–3 mention tokens somewhere in the batch (a token
    may belong to two entities); groups in ``empty_groups`` have no candidate row."""
    tok, ent = [], []
    for e in range(E):
        n = int(torch.randint(1, 4, (1,), generator=gen))
        tok += torch.randint(0, B * L, (n,), generator=gen).tolist()
        ent += [e] * n
    group, cand = [], []
    for g in range(G):
        if g in empty_groups:
            continue
        n = int(torch.randint(1, E + 1, (1,), generator=gen))
        group += [g] * n
        cand += torch.randperm(E, generator=gen)[:n].tolist()
    C = len(group)
    return CandidateQuery(
        query_index=torch.randint(0, B * L, (G,), generator=gen),
        entity_token=torch.tensor(tok), entity_of_token=torch.tensor(ent), num_entities=E,
        cand_group=torch.tensor(group), cand_entity=torch.tensor(cand),
        cand_features=torch.rand(C, NUM_CANDIDATE_FEATURES, generator=gen) * 3,
        cand_positive=torch.rand(C, generator=gen) < 0.3)


def naive_scores(head: CandidateHead, hidden: torch.Tensor, cq: CandidateQuery):
    """float64, one group and one candidate at a time, straight from the module docstring."""
    Wq, bq = head.query.weight.detach().double(), head.query.bias.detach().double()
    Wk, bk = head.key.weight.detach().double(), head.key.bias.detach().double()
    wn, bn = head.none.weight.detach().double()[0], head.none.bias.detach().double()[0]
    w = head.features.weight.detach().double()[0]
    flat = hidden.detach().double().reshape(-1, hidden.shape[-1])
    Hs = hidden.shape[-1]
    cand, none = [], []
    for g in range(cq.num_groups):
        q_state = flat[int(cq.query_index[g])]
        q = Wq @ q_state + bq
        none.append(float(wn @ q_state + bn))
        for c in range(cq.cand_group.numel()):
            if int(cq.cand_group[c]) != g:
                continue
            e = int(cq.cand_entity[c])
            rows = [int(t) for t, te in zip(cq.entity_token, cq.entity_of_token) if int(te) == e]
            mean = sum(flat[t] for t in rows) / len(rows)
            k = Wk @ mean + bk
            phi = cq.cand_features[c, :head.num_features].double()
            cand.append((c, float(q @ k) / math.sqrt(Hs) + float(w @ phi)))
    cand.sort()
    return torch.tensor([s for _, s in cand], dtype=torch.float64), torch.tensor(none, dtype=torch.float64)


def head_with_features(seed: int, locality: bool = False) -> CandidateHead:
    torch.manual_seed(seed)
    head = CandidateHead(H, locality)
    with torch.no_grad():
        head.features.weight.normal_()            # a trained head: the feature term really counts
        head.none.bias.fill_(0.3)
        head.query.bias.normal_()
    return head


@pytest.mark.parametrize("seed, locality", [(0, False), (1, False), (2, True)])
def test_forward_matches_naive_per_group_loop(seed, locality):
    gen = torch.Generator().manual_seed(seed)
    head = head_with_features(seed, locality)
    assert head.num_features == (NUM_CANDIDATE_FEATURES if locality else 4)
    hidden = torch.randn(B, L, H, generator=gen)
    cq = random_query(gen)
    s, none = head(hidden, cq)
    assert s.shape == (cq.cand_group.numel(),) and none.shape == (cq.num_groups,)
    want_s, want_none = naive_scores(head, hidden, cq)
    assert_close_f32(s, want_s, msg="candidate scores")
    assert_close_f32(none, want_none, msg="none scores")


def test_forward_in_float64_is_exact():
    gen = torch.Generator().manual_seed(5)
    head = head_with_features(5).double()
    hidden = torch.randn(B, L, H, generator=gen, dtype=torch.float64)
    cq = random_query(gen, G=4, E=6, empty_groups=())
    s, none = head(hidden, cq)
    want_s, want_none = naive_scores(head, hidden, cq)
    torch.testing.assert_close(s, want_s, atol=1e-12, rtol=0)
    torch.testing.assert_close(none, want_none, atol=1e-12, rtol=0)


def test_entity_state_is_the_mean_over_all_its_mention_tokens():
    """An entity's key depends on its tokens' mean only: moving one token's state moves the score by
    1/(its token count) of the change, and states of tokens of other entities do not matter."""
    head = CandidateHead(H).double()
    hidden = torch.zeros(1, 6, H, dtype=torch.float64)
    cq = CandidateQuery(query_index=torch.tensor([0]), entity_token=torch.tensor([1, 2, 3, 4]),
                        entity_of_token=torch.tensor([0, 0, 0, 1]), num_entities=2,
                        cand_group=torch.tensor([0]), cand_entity=torch.tensor([0]),
                        cand_features=torch.zeros(1, NUM_CANDIDATE_FEATURES, dtype=torch.float64),
                        cand_positive=torch.tensor([True]))
    hidden[0, 1:4] = torch.randn(3, H, dtype=torch.float64)
    ent = head.entity_states(hidden.reshape(-1, H), cq.entity_token, cq.entity_of_token, 2)
    torch.testing.assert_close(ent[0], hidden[0, 1:4].mean(0), atol=1e-15, rtol=0)
    before = head(hidden, cq)[0]
    hidden[0, 4] = 100.0                          # entity 1, not a candidate
    hidden[0, 5] = -100.0                         # no entity at all
    assert torch.equal(head(hidden, cq)[0], before)


def test_probabilities_sum_to_one_per_group_with_none():
    gen = torch.Generator().manual_seed(3)
    head = head_with_features(3)
    cq = random_query(gen, G=6, E=8, empty_groups=(2, 5))
    with torch.no_grad():
        p, p_none = head.probabilities(torch.randn(B, L, H, generator=gen), cq)
    assert (p >= 0).all() and (p_none >= 0).all()
    total = p_none.double().clone()
    total.index_add_(0, cq.cand_group, p.double())
    assert_close_f32(total, torch.ones(cq.num_groups, dtype=torch.float64))
    assert p_none[2] == pytest.approx(1.0) and p_none[5] == pytest.approx(1.0)   # nothing else to pick
    # and it is the softmax of the scores, group by group
    hidden = torch.randn(B, L, H, generator=gen)
    s, none = head(hidden, cq)
    p, p_none = head.probabilities(hidden, cq)
    for g in range(cq.num_groups):
        rows = (cq.cand_group == g).nonzero().flatten()
        want = torch.softmax(torch.cat([none[g:g + 1], s[rows]]).double(), 0)
        assert_close_f32(torch.cat([p_none[g:g + 1], p[rows]]), want, scale=1.0)


def naive_segment_logsumexp(values, segment, S):
    out = []
    for k in range(S):
        vs = [float(v) for v, s in zip(values, segment) if int(s) == k]
        if not vs:
            out.append(float("-inf"))
            continue
        m = max(vs)
        out.append(m + math.log(sum(math.exp(v - m) for v in vs)) if math.isfinite(m) else m)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_segment_logsumexp_matches_naive_including_empty_segments(dtype):
    gen = torch.Generator().manual_seed(0)
    values = (torch.randn(40, generator=gen) * 30).to(dtype)     # large spreads: the max is subtracted
    segment = torch.randint(0, 9, (40,), generator=gen)
    segment[segment == 4] = 5                                    # segment 4 is empty
    S = 11                                                       # so are 9 and 10
    got = segment_logsumexp(values, segment, S)
    want = naive_segment_logsumexp(values, segment, S)
    assert got.dtype == dtype
    for k in (4, 9, 10):
        assert got[k] == float("-inf")
    finite = torch.isfinite(want)
    if dtype == torch.float64:
        torch.testing.assert_close(got[finite], want[finite], atol=1e-12, rtol=0)
    else:
        assert_close_f32(got[finite], want[finite])


def test_segment_logsumexp_is_stable_and_differentiable():
    values = torch.tensor([1000.0, 1000.0, -1000.0, float("-inf"), float("-inf")], requires_grad=True)
    segment = torch.tensor([0, 0, 1, 1, 2])
    out = segment_logsumexp(values, segment, 4)
    assert out[0].item() == pytest.approx(1000.0 + math.log(2))
    assert out[1].item() == -1000.0                       # a −inf value adds nothing
    assert out[2].item() == float("-inf") and out[3].item() == float("-inf")   # all −inf; empty
    out[:2].sum().backward()
    # ∂/∂v of logsumexp is the softmax within the segment (0 for a −inf member)
    torch.testing.assert_close(values.grad[:4], torch.tensor([0.5, 0.5, 1.0, 0.0]))


def test_feature_weights_start_at_zero():
    head = CandidateHead(H)
    head.reset_parameters()
    assert torch.equal(head.features.weight, torch.zeros(1, 4))
    assert head.features.bias is None
    cfg = ModelConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                      leaf_query="fixed", candidate_head=True)
    model = build_model(cfg, 30, 2)
    assert torch.equal(model.candidate_head.features.weight, torch.zeros(1, 4))
    local = build_model(dataclasses.replace(cfg, locality_features=True), 30, 2)
    assert torch.equal(local.candidate_head.features.weight, torch.zeros(1, NUM_CANDIDATE_FEATURES))
    assert model.candidate_head.query.weight.abs().sum() > 0        # the projections are initialised
    # so at step 0 the features do not move a score
    gen = torch.Generator().manual_seed(1)
    cq = random_query(gen)
    hidden = torch.randn(B, L, 16, generator=gen)
    s0, _ = model.candidate_head(hidden, cq)
    cq.cand_features = cq.cand_features * 10
    s1, _ = model.candidate_head(hidden, cq)
    assert torch.equal(s0, s1)


def test_locality_features_need_the_candidate_head():
    from graphmert.config import ConfigError

    with pytest.raises(ConfigError, match="model.locality_features: needs model.candidate_head"):
        ModelConfig(leaf_query="fixed", locality_features=True).validate()
