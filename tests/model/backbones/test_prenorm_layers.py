"""The pre-norm pieces against their formulas: RoPE is relative, RMSNorm, SwiGLU, the pre-norm layer,
and the normalised (nGPT) layer's invariants."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from backbone_testutils import tiny
from graphmert.model.attention import AttentionSpec, RotaryEmbedding
from graphmert.model.backbones.layers import PreNormLayer
from graphmert.model.backbones.normalized import NormalizedLayer, NormalizedLinear
from graphmert.model.backbones.rmsnorm import RMSNorm
from graphmert.model.backbones.swiglu import SwiGLU, swiglu_hidden_size


def spec_for(positions: torch.Tensor, mask: torch.Tensor | None = None) -> AttentionSpec:
    mask = torch.ones_like(positions, dtype=torch.bool) if mask is None else mask
    return AttentionSpec(key_padding_mask=mask, positions=positions, leaf_slot=torch.full_like(positions, -1))


# -- RoPE ----------------------------------------------------------------------------------------------


def rotary_scores(rope: RotaryEmbedding, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
    cos, sin = rope.cos_sin(spec_for(positions))
    return rope.rotate(q, cos, sin) @ rope.rotate(k, cos, sin).transpose(-1, -2)   # [B, h, L, L]


@pytest.mark.parametrize("theta", [10000.0, 100.0])
def test_rope_scores_depend_only_on_the_offset(theta):
    torch.manual_seed(0)
    rope = RotaryEmbedding(16, theta)
    q, k = torch.randn(1, 2, 9, 16, dtype=torch.float64), torch.randn(1, 2, 9, 16, dtype=torch.float64)
    rope.inv_freq = rope.inv_freq.double()
    pos = torch.tensor([[0, 1, 2, 3, 5, 8, 8, 13, 21]])              # repeated position: a root's leaves
    base = rotary_scores(rope, q, k, pos)
    for shift in (1, 7, 250):
        assert torch.allclose(rotary_scores(rope, q, k, pos + shift), base, atol=1e-9, rtol=0)
    # and they do depend on positions: permuting positions changes the scores
    assert not torch.allclose(rotary_scores(rope, q, k, pos.flip(-1)), base, atol=1e-3)
    # one (q, k) pair at offsets m − n: same offset → same score
    qq, kk = q[:, :, :1].expand(1, 2, 4, 16), k[:, :, :1].expand(1, 2, 4, 16)
    s = rotary_scores(rope, qq, kk, torch.tensor([[3, 5, 40, 42]]))
    assert torch.allclose(s[..., 0, 1], s[..., 2, 3], atol=1e-9)     # offset 2 both
    assert torch.allclose(s[..., 1, 0], s[..., 3, 2], atol=1e-9)     # offset −2 both


def test_rope_matches_the_rotation_formula():
    rope = RotaryEmbedding(4, 10000.0)
    x = torch.tensor([[[[1.0, 2.0, 3.0, 4.0]]]])                      # [1, 1, 1, 4]
    m = 3
    cos, sin = rope.cos_sin(spec_for(torch.tensor([[m]])))
    got = rope.rotate(x, cos, sin)[0, 0, 0]
    want = torch.empty(4)
    for i in range(2):                                                 # pairs (x_i, x_{i+d/2})
        a = m * 10000.0 ** (-2 * i / 4)
        want[i] = x[0, 0, 0, i] * math.cos(a) - x[0, 0, 0, i + 2] * math.sin(a)
        want[i + 2] = x[0, 0, 0, i] * math.sin(a) + x[0, 0, 0, i + 2] * math.cos(a)
    assert torch.allclose(got, want, atol=1e-6)


# -- RMSNorm and SwiGLU ---------------------------------------------------------------------------------


def test_rmsnorm_formula():
    torch.manual_seed(0)
    norm = RMSNorm(6, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(6))
    x = torch.randn(3, 4, 6)
    want = torch.empty_like(x)
    for idx in range(12):
        v = x.view(12, 6)[idx]
        rms = math.sqrt(sum(float(t) ** 2 for t in v) / 6 + 1e-5)
        want.view(12, 6)[idx] = v / rms * norm.weight
    assert torch.allclose(norm(x), want, atol=1e-6)
    norm.reset_parameters()
    assert torch.equal(norm.weight, torch.ones(6))


def test_swiglu_formula():
    torch.manual_seed(0)
    ffn = SwiGLU(5, 7, bias=True)
    x = torch.randn(2, 3, 5)
    W, b = ffn.w_in.weight, ffn.w_in.bias
    W1, W3, b1, b3 = W[:7], W[7:], b[:7], b[7:]                       # gate, value

    def silu(u):
        return u / (1 + torch.exp(-u))

    want = (silu(x @ W1.T + b1) * (x @ W3.T + b3)) @ ffn.w_out.weight.T + ffn.w_out.bias
    assert torch.allclose(ffn(x), want, atol=1e-6)
    assert sum(p.numel() for p in SwiGLU(5, 7).parameters()) == 3 * 5 * 7   # three matrices, no bias


@pytest.mark.parametrize("H,F_", [(512, 1368), (768, 2048), (32, 88), (64, 176)])
def test_swiglu_hidden_size_is_8_thirds_rounded_up_to_8(H, F_):
    assert swiglu_hidden_size(H) == F_
    assert F_ % 8 == 0 and 8 * H / 3 <= F_ < 8 * H / 3 + 8


# -- the pre-norm layer -----------------------------------------------------------------------------------


def test_prenorm_layer_matches_its_equations():
    torch.manual_seed(0)
    cfg = tiny(decay_mode="none", dropout=0.0, attention_dropout=0.0)
    rope = RotaryEmbedding(8, 10000.0)
    layer = PreNormLayer(cfg, 20, bias=False, rotary=rope).eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    x = torch.randn(2, 5, 32)
    pos = torch.tensor([[0, 1, 2, 2, 3], [0, 1, 1, 2, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], dtype=torch.bool)
    with torch.no_grad():
        got = layer(x, spec_for(pos, mask))
        want = naive_prenorm_layer(layer, x, pos, mask, cfg.layer_norm_eps)
    assert torch.allclose(got[0], want[0], atol=1e-4)
    assert torch.allclose(got[1, :4], want[1, :4], atol=1e-4)         # real positions of graph 1


def naive_prenorm_layer(layer, x, pos, mask, eps):
    """x + Attn(RMSNorm(x)) then + SwiGLU(RMSNorm(·)), with loops over heads, queries and keys."""
    B, L, H = x.shape
    h, d = 4, 8

    def rms(v, g):
        return v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + eps) * g

    xn = rms(x, layer.attn_norm.weight)
    q, k, v = (xn @ layer.attention.attn.qkv.weight.T).split(H, dim=-1)
    ctx = torch.zeros(B, L, H)
    for b in range(B):
        for head in range(h):
            sl = slice(head * d, (head + 1) * d)
            for i in range(L):
                scores = []
                for j in range(L):
                    qi = rotate_naive(q[b, i, sl], int(pos[b, i]))
                    kj = rotate_naive(k[b, j, sl], int(pos[b, j]))
                    scores.append(float(qi @ kj) / math.sqrt(d) if mask[b, j] else -math.inf)
                w = torch.softmax(torch.tensor(scores), 0)
                ctx[b, i, sl] = sum(w[j] * v[b, j, sl] for j in range(L))
    a = x + ctx @ layer.attention.out.weight.T
    an = rms(a, layer.ffn_norm.weight)
    g, u = (an @ layer.ffn.w_in.weight.T).split(20, dim=-1)
    return a + (F.silu(g) * u) @ layer.ffn.w_out.weight.T


def rotate_naive(x: torch.Tensor, m: int, theta: float = 10000.0) -> torch.Tensor:
    d = x.shape[0]
    out = x.clone()
    for i in range(d // 2):
        a = m * theta ** (-2 * i / d)
        out[i] = x[i] * math.cos(a) - x[i + d // 2] * math.sin(a)
        out[i + d // 2] = x[i] * math.sin(a) + x[i + d // 2] * math.cos(a)
    return out


# -- the normalised (nGPT) layer ---------------------------------------------------------------------------


def test_normalized_linear_uses_unit_vectors_along_the_embedding_dim():
    torch.manual_seed(0)
    reads, writes = NormalizedLinear(6, 4, norm_dim=1), NormalizedLinear(4, 6, norm_dim=0)
    with torch.no_grad():
        reads.weight.mul_(7.0)
        writes.weight.mul_(0.1)
    assert torch.allclose(reads.normalized_weight().norm(dim=1), torch.ones(4), atol=1e-6)
    assert torch.allclose(writes.normalized_weight().norm(dim=0), torch.ones(4), atol=1e-6)
    x = torch.randn(3, 6)
    assert torch.allclose(reads(x), x @ (reads.weight / reads.weight.norm(dim=1, keepdim=True)).T, atol=1e-6)
    assert reads.bias is None


def test_normalized_layer_keeps_states_on_the_sphere_and_starts_near_identity():
    torch.manual_seed(0)
    cfg = tiny(dropout=0.0, attention_dropout=0.0)
    layer = NormalizedLayer(cfg, 24, RotaryEmbedding(8), alpha_init=0.05).eval()
    for lin in (layer.qkv, layer.attn_out, layer.ffn_in, layer.ffn_out):
        torch.nn.init.normal_(lin.weight, std=0.02)
    h = F.normalize(torch.randn(2, 6, 32), dim=-1)
    pos = torch.arange(6).expand(2, 6)
    out = layer(h, spec_for(pos))
    assert torch.allclose(out.norm(dim=-1), torch.ones(2, 6), atol=1e-5)
    # effective scalers at init: α = 0.05, s_qk = 1, s_u = s_v = 1
    assert torch.allclose(layer.alpha_attn(), torch.full((32,), 0.05))
    assert torch.allclose(layer.s_qk(), torch.ones(32))
    # two steps of size α = 0.05 keep the state close to where it was
    assert (out * h).sum(-1).min() > 0.8
    # a larger α moves it further
    with torch.no_grad():
        layer.alpha_attn.weight.mul_(10)
        layer.alpha_ffn.weight.mul_(10)
    assert (layer(h, spec_for(pos)) * h).sum(-1).mean() < (out * h).sum(-1).mean()
