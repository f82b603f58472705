"""Decay values, distance-derived attention terms, and the attention kernels against the formulas."""

from __future__ import annotations

import math

import pytest
import torch

from graphmert.model.attention import ATTENTION_KERNELS, AttentionSpec, build_attention_spec
from graphmert.model.decay import build_decay
from model_testgraphs import chain_graph_distances, collate, random_graphs
from numerics import assert_close_f32


def gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def f(d: float, lam: float, p: float) -> float:
    """The paper's decay f(d) = λ^GELU(√d − p)."""
    return lam ** gelu(math.sqrt(d) - p)


@pytest.mark.parametrize("lam", [0.6, 0.3, 1.0])
def test_values_at_init_match_formula(lam):
    d = torch.arange(128)
    want_scale = torch.tensor([f(x + 1, lam, 1.0) for x in range(128)], dtype=torch.float64).expand(4, -1)
    want_bias = torch.tensor([gelu(math.sqrt(x) - 1.0) * math.log(lam) for x in range(128)],
                             dtype=torch.float64).expand(4, -1)
    want_f = torch.tensor([f(x, lam, 1.0) for x in range(128)], dtype=torch.float64).expand(4, -1)
    # The formula, in float64 (the modules compute in their parameters' dtype): to rounding.
    logit_scale = build_decay("logit_scale", 4, lam, 1.0).double()
    log_bias = build_decay("log_bias", 4, lam, 1.0).double()
    assert logit_scale.table(127).shape == (4, 128)
    assert torch.allclose(logit_scale.table(127), want_scale, atol=1e-13, rtol=0)
    assert torch.allclose(log_bias.table(127), want_bias, atol=1e-13, rtol=0)
    # the unshifted decay and the bias are the same function: exp(bias) = f(d)
    assert torch.allclose(log_bias.values(d), want_f, atol=1e-13, rtol=0)
    assert torch.allclose(log_bias.table(127).exp(), want_f, atol=1e-13, rtol=0)
    # The float32 modules the model uses: the same values to float32 resolution. The bias reaches
    # |ln 0.3| · GELU(√127 − 1) ≈ 12.4, where float32 resolves only ~1e-6 (tests/numerics.py).
    for mode, want in (("logit_scale", want_scale), ("log_bias", want_bias)):
        table = build_decay(mode, 4, lam, 1.0).table(127)
        assert table.dtype == torch.float32
        assert_close_f32(table, want, msg=mode)
    assert_close_f32(build_decay("log_bias", 4, lam, 1.0).values(d), want_f, msg="values")


def test_p_is_per_head_and_learnable():
    dec = build_decay("log_bias", 3, 0.6, 1.0)
    with torch.no_grad():
        dec.p.copy_(torch.tensor([0.0, 1.0, 2.5]))
    got = dec.table(9)
    for h, p in enumerate([0.0, 1.0, 2.5]):
        want = torch.tensor([gelu(math.sqrt(x) - p) * math.log(0.6) for x in range(10)])
        assert torch.allclose(got[h], want, atol=1e-6)
    got.sum().backward()
    assert dec.p.grad is not None and (dec.p.grad != 0).all()



@pytest.mark.parametrize("mode", ["logit_scale", "log_bias"])
def test_lookup_and_its_gradient_match_indexing_the_table(mode):
    """lookup (one gather from the broadcast table) against plain indexing, values and dL/dp."""
    gen = torch.Generator().manual_seed(3)
    dist = torch.randint(0, 13, (3, 12, 12), generator=gen)                  # [B, L, L], d ≤ L + 1
    weights = torch.randn(3, 2, 12, 12, generator=gen, dtype=torch.float64)
    got_dec = build_decay(mode, 2, 0.6, 1.0).double()
    want_dec = build_decay(mode, 2, 0.6, 1.0).double()
    got = got_dec.lookup(dist)                                                  # [B, h, L, L]
    want = want_dec.table(13)[:, dist].permute(1, 0, 2, 3)                      # [B, h, L, L]
    assert got.shape == (3, 2, 12, 12) and torch.equal(got, want)
    (got * weights).sum().backward()
    (want * weights).sum().backward()
    assert torch.allclose(got_dec.p.grad, want_dec.p.grad, atol=1e-12, rtol=0)


@pytest.mark.parametrize("layout", ["dense", "packed"])
@pytest.mark.parametrize("mode", ["logit_scale", "log_bias"])
def test_spec_terms_follow_graph_distances(layout, mode):
    R, K, lam = 10, 3, 0.6
    graphs = random_graphs(2, R, K, 30, 2, fill=0.5, seed=4)
    batch, positions = collate(graphs, R, K, layout)
    decay = build_decay(mode, 2, lam, 1.0)
    spec = build_attention_spec(batch, decay)
    terms = spec.decay_scale if mode == "logit_scale" else spec.decay_bias
    for b, gr in enumerate(graphs):
        dist = chain_graph_distances(len(gr.roots), {i: len(t) for i, (_, _, t) in gr.injections.items()})
        node = {key: (("r", key[0]) if key[1] < 0 else ("l", key[0], key[1])) for key in positions[b]}
        for ka, pa in positions[b].items():
            for kb, pb in positions[b].items():
                d = dist[node[ka]][node[kb]]
                want = f(d + 1, lam, 1.0) if mode == "logit_scale" else gelu(math.sqrt(d) - 1) * math.log(lam)
                got = terms[b if terms.shape[0] > 1 else 0, :, pa, pb]
                assert torch.allclose(got, torch.tensor(want), atol=1e-6), (ka, kb, d)


def reference_attention(q, k, v, keep, scale=None, bias=None):
    """softmax(QKᵀ/√d · scale + bias, padded keys excluded) V, one (batch, head, query) at a time."""
    B, h, L, d = q.shape
    out = torch.zeros_like(q)
    for b in range(B):
        for hh in range(h):
            for i in range(L):
                s = (k[b, hh] @ q[b, hh, i]) / math.sqrt(d)
                if scale is not None:
                    s = s * scale[b, hh, i]
                if bias is not None:
                    s = s + bias[b, hh, i]
                w = torch.softmax(s[keep[b]], dim=0)
                out[b, hh, i] = w @ v[b, hh][keep[b]]
    return out


@pytest.mark.parametrize("kernel", ["eager", "sdpa"])
@pytest.mark.parametrize("mode", ["logit_scale", "log_bias", "none"])
def test_kernels_match_reference(kernel, mode):
    gen = torch.Generator().manual_seed(1)
    B, h, L, d = 2, 2, 7, 4
    q, k, v = (torch.randn(B, h, L, d, generator=gen, dtype=torch.float64) for _ in range(3))
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[0, 5:] = False
    rand = torch.rand(B, h, L, L, generator=gen, dtype=torch.float64)
    scale = rand + 0.5 if mode == "logit_scale" else None
    bias = -rand if mode == "log_bias" else None
    spec = AttentionSpec(key_padding_mask=keep, positions=torch.zeros(B, L, dtype=torch.long),
                         leaf_slot=torch.full((B, L), -1), decay_bias=bias, decay_scale=scale)
    got = ATTENTION_KERNELS.get(kernel)(q, k, v, spec, 0.0, d ** -0.5)
    want = reference_attention(q, k, v, keep, scale, bias)
    assert torch.allclose(got, want, atol=1e-10)


def test_none_mode_builds_no_distances():
    graphs = random_graphs(2, 8, 2, 30, 2, seed=0)
    batch, _ = collate(graphs, 8, 2, "packed")
    spec = build_attention_spec(batch, build_decay("none", 4, 0.6, 1.0))
    assert spec.decay_bias is None and spec.decay_scale is None
    assert torch.equal(spec.key_padding_mask, batch.attention_mask)
