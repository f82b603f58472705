"""The normalised-transformer layer (nGPT; Loshchilov et al. 2024, arXiv 2410.01131) — NeoBERT's
experimental ``normalized: true`` variant.

Every vector that lives in the residual stream is kept on the unit sphere; write Norm(x) = x / ‖x‖.
The matrices that read from the stream are normalised along their input (embedding) dimension, those
that write into it along their output dimension, so every projection is a set of cosine similarities.
A layer (hidden H, h heads of size d, SwiGLU size F) maps unit vectors to unit vectors:

    [Q | K | V] = h W_qkv                                         rows of W_qkv ∈ unit sphere in R^H
    Q, K ← RoPE(Q, K);  Q ← s_qk ⊙ Norm(Q);  K ← s_qk ⊙ Norm(K)     (Norm per head over d)
    C = kernel(Q, K, V, spec; softmax scale √d)                   (s_qk init 1: logits are √d·cos)
    h_A = Norm(C W_o)                                             columns of W_o ∈ unit sphere in R^H
    h ← Norm(h + α_A ⊙ (h_A − h))                                 α_A ∈ R^H: eigen learning rates

    [U | V'] = h W_uv;  U ← s_u ⊙ U;  V' ← s_v ⊙ V' · √H           (√H: unit-variance gate input)
    h_M = Norm((SiLU(V') ⊙ U) W_2)
    h ← Norm(h + α_M ⊙ (h_M − h))

The scale vectors are stored with nGPT's reparametrisation s = ŝ · (s_init / s_scale) with ŝ
initialised to s_scale, so that Adam's step on ŝ is of a sensible size: α (init ``alpha_init``,
scale 1/√H, used as |α|), s_qk (init 1, scale 1/√H), s_u, s_v (init 1, scale 1).

Weight normalisation is done in the forward (W / ‖W‖ along the embedding dimension), which gives the
forward of nGPT's post-step projection without an optimizer hook; the stored matrices may drift in
norm, which the forward ignores. There are no biases and no RMSNorm. Shapes: [B, L, H] → [B, L, H].
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ModelConfig
from graphmert.model.attention import ATTENTION_KERNELS, AttentionSpec, RotaryEmbedding, project_qkv
from graphmert.model.backbones.rmsnorm import l2_normalize

__all__ = ["NormalizedLinear", "NormalizedLayer"]


class NormalizedLinear(nn.Linear):
    """x Ŵᵀ with Ŵ = W / ‖W‖ along ``norm_dim`` (1: each row over the input dim; 0: each column
    over the output dim). No bias.  [*, in] → [*, out]."""

    def __init__(self, in_features: int, out_features: int, norm_dim: int) -> None:
        super().__init__(in_features, out_features, bias=False)
        self.norm_dim = norm_dim

    def normalized_weight(self) -> Tensor:
        return l2_normalize(self.weight, dim=self.norm_dim)                 # [out, in]

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.normalized_weight())

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, norm_dim={self.norm_dim}"


class _Scale(nn.Module):
    """A learnable vector s = ŝ · (init / scale), ŝ initialised to ``scale`` (nGPT's scalers)."""

    def __init__(self, size: int, init: float, scale: float) -> None:
        super().__init__()
        self.init, self.scale = float(init), float(scale)
        self.weight = nn.Parameter(torch.full((size,), self.scale))

    def reset_parameters(self) -> None:
        nn.init.constant_(self.weight, self.scale)

    def forward(self) -> Tensor:
        return self.weight * (self.init / self.scale)


class NormalizedLayer(nn.Module):
    """One nGPT layer on unit vectors: [B, L, H] → [B, L, H] (each position has ‖·‖ = 1).

    Args:
        cfg: the model config (H, heads, dropouts, kernel).  ffn_size: F.
        rotary: the shared RoPE module (or None).  alpha_init: initial eigen learning rate α.
    """

    def __init__(self, cfg: ModelConfig, ffn_size: int, rotary: Optional[RotaryEmbedding],
                 alpha_init: float) -> None:
        super().__init__()
        H = cfg.hidden_size
        self.num_heads = cfg.num_heads
        self.head_dim = H // cfg.num_heads
        self.hidden_size = H
        self.attention_dropout = cfg.attention_dropout
        self.kernel = ATTENTION_KERNELS.get(cfg.attention_kernel)
        self.rotary = rotary
        self.qkv = NormalizedLinear(H, 3 * H, norm_dim=1)                   # reads the stream
        self.attn_out = NormalizedLinear(H, H, norm_dim=0)                  # writes the stream
        self.ffn_in = NormalizedLinear(H, 2 * ffn_size, norm_dim=1)         # [W_u | W_v]
        self.ffn_out = NormalizedLinear(ffn_size, H, norm_dim=0)            # W_2
        base = 1.0 / math.sqrt(H)
        self.alpha_attn = _Scale(H, alpha_init, base)                       # α_A
        self.alpha_ffn = _Scale(H, alpha_init, base)                        # α_M
        self.s_qk = _Scale(H, 1.0, base)                                    # per head × head dim
        self.s_u = _Scale(ffn_size, 1.0, 1.0)
        self.s_v = _Scale(ffn_size, 1.0, 1.0)
        self.dropout = nn.Dropout(cfg.dropout)

    def reset_parameters(self) -> None:
        for s in (self.alpha_attn, self.alpha_ffn, self.s_qk, self.s_u, self.s_v):
            s.reset_parameters()

    def _attention(self, h: Tensor, spec: AttentionSpec) -> Tensor:
        B, L, H = h.shape
        q, k, v = project_qkv(self.qkv, h, self.num_heads, self.rotary, spec)  # 3 × [B, h, L, d]
        s_qk = self.s_qk().view(1, self.num_heads, 1, self.head_dim).to(q.dtype)
        q, k = s_qk * l2_normalize(q), s_qk * l2_normalize(k)              # [B, h, L, d]
        p = self.attention_dropout if self.training else 0.0
        ctx = self.kernel(q, k, v, spec, p, math.sqrt(self.head_dim))      # [B, h, L, d]
        return self.attn_out(ctx.transpose(1, 2).reshape(B, L, H))          # [B, L, H]

    def _ffn(self, h: Tensor) -> Tensor:
        u, v = self.ffn_in(h).chunk(2, dim=-1)                              # 2 × [B, L, F]
        u = u * self.s_u().to(u.dtype)
        v = v * (self.s_v() * math.sqrt(self.hidden_size)).to(v.dtype)
        return self.ffn_out(F.silu(v) * u)                                  # [B, L, H]

    @staticmethod
    def _step(h: Tensor, update: Tensor, alpha: Tensor) -> Tensor:
        """Norm(h + |α| ⊙ (Norm(update) − h)): a step towards the update on the sphere."""
        return l2_normalize(h + alpha.abs().to(h.dtype) * (l2_normalize(update) - h))

    def forward(self, h: Tensor, spec: AttentionSpec) -> Tensor:
        h = self._step(h, self.dropout(self._attention(h, spec)), self.alpha_attn())
        return self._step(h, self.dropout(self._ffn(h)), self.alpha_ffn())
