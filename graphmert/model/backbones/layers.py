"""The pre-norm transformer layer shared by the ``neobert`` and ``recurrent`` backbones.

One layer (hidden H, h heads of size d = H/h, SwiGLU size F, dropout p):

    x̂ = RMSNorm(x)                                            [B, L, H]
    [Q | K | V] = x̂ W_qkv                                     3 × [B, h, L, d]
    Q, K ← RoPE(Q, K; m)                                       m = root index (leaves share their root's)
    C = kernel(Q, K, V, spec)                                  [B, h, L, d] → [B, L, H]
    x ← x + Dropout(C W_o)                                     (padding mask + decay from the spec)
    x ← x + Dropout(SwiGLU(RMSNorm(x)))                        [B, L, H]

RoPE is :class:`graphmert.model.attention.RotaryEmbedding` (rotate-half convention, base θ): the
query/key pair at positions m, n scores ⟨R_m q, R_n k⟩ = ⟨q, R_{n−m} k⟩, a function of n − m only.
One rotary module is shared by all layers, so cos/sin are computed once per forward (cached in the
spec). The kernels (``model.attention_kernel``) apply the spec's key-padding mask and its decay —
an additive ``log_bias`` (folded into the SDPA mask) or the paper's multiplicative ``logit_scale``.

:class:`PreNormOptions` are the options every pre-norm backbone accepts under
``model.backbone_options``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig, opt
from graphmert.model.attention import AttentionSpec, RotaryEmbedding, SelfAttention
from graphmert.model.backbones.rmsnorm import RMSNorm
from graphmert.model.backbones.swiglu import SwiGLU, swiglu_hidden_size

__all__ = ["PreNormOptions", "RotarySelfAttention", "PreNormLayer", "build_rotary", "ffn_size_of"]


@dataclass
class PreNormOptions:
    """``model.backbone_options`` shared by the pre-norm (RMSNorm / SwiGLU / RoPE) backbones."""

    rope_theta: Optional[float] = opt(None, min=0.0, min_exclusive=True,
                                      help="RoPE base θ; None: model.rope_theta (10,000)")
    ffn_size: Optional[int] = opt(None, min=1, help="SwiGLU hidden size F; None: 8/3·H rounded up "
                                  "to a multiple of 8 (1368 for H = 512)")
    bias: bool = opt(False, help="biases in the attention and SwiGLU projections (NeoBERT: none)")


def ffn_size_of(cfg: ModelConfig, opts: PreNormOptions) -> int:
    """F: ``ffn_size`` if set, else 8/3·H rounded up to a multiple of 8."""
    return opts.ffn_size if opts.ffn_size is not None else swiglu_hidden_size(cfg.hidden_size)


def build_rotary(cfg: ModelConfig, opts: PreNormOptions) -> RotaryEmbedding:
    """The shared RoPE module; the config must not also add learned absolute positions."""
    if cfg.position_embedding == "learned":
        raise ConfigError(f"model.position_embedding: 'learned' adds absolute positions, but the "
                          f"{cfg.backbone!r} backbone encodes positions with RoPE inside attention; "
                          f"use 'none' or 'rotary'")
    head_dim = cfg.hidden_size // cfg.num_heads
    if head_dim % 2:
        raise ConfigError(f"model.num_heads: the {cfg.backbone!r} backbone uses RoPE, which needs an "
                          f"even head size; hidden_size / num_heads = {head_dim}")
    theta = opts.rope_theta if opts.rope_theta is not None else cfg.rope_theta
    return RotaryEmbedding(head_dim, theta)


class RotarySelfAttention(nn.Module):
    """Multi-head self-attention with RoPE and an output projection: [B, L, H] → [B, L, H].

        C = SelfAttention(x, spec)   ([Q|K|V] = x W_qkv (+ b);  Q, K ← RoPE;  kernel with the spec)
        y = C W_o (+ b)

    Args:
        hidden_size: H.  num_heads: h.  dropout: on attention probabilities.
        kernel: ``model.attention_kernel`` name.  rotary: the shared RoPE module (or None: no
        positions).  bias: biases on W_qkv and W_o.
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float, kernel: str,
                 rotary: Optional[RotaryEmbedding], bias: bool = False) -> None:
        super().__init__()
        self.attn = SelfAttention(hidden_size, num_heads, dropout, kernel, rotary, bias=bias)
        self.out = nn.Linear(hidden_size, hidden_size, bias=bias)            # W_o

    def forward(self, x: Tensor, spec: AttentionSpec) -> Tensor:
        return self.out(self.attn(x, spec))                                 # [B, L, H]


class PreNormLayer(nn.Module):
    """x + Attn(RMSNorm(x)), then + SwiGLU(RMSNorm(·)):  [B, L, H] → [B, L, H].

    Args:
        cfg: the model config (H, heads, dropouts, kernel, ``layer_norm_eps`` for RMSNorm's ε).
        ffn_size: F.  bias: biases on the projections.  rotary: the shared RoPE module.
    """

    def __init__(self, cfg: ModelConfig, ffn_size: int, bias: bool,
                 rotary: Optional[RotaryEmbedding]) -> None:
        super().__init__()
        H = cfg.hidden_size
        self.attn_norm = RMSNorm(H, cfg.layer_norm_eps)
        self.attention = RotarySelfAttention(H, cfg.num_heads, cfg.attention_dropout,
                                             cfg.attention_kernel, rotary, bias)
        self.ffn_norm = RMSNorm(H, cfg.layer_norm_eps)
        self.ffn = SwiGLU(H, ffn_size, bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, spec: AttentionSpec) -> Tensor:
        x = x + self.dropout(self.attention(self.attn_norm(x), spec))      # [B, L, H]
        return x + self.dropout(self.ffn(self.ffn_norm(x)))                 # [B, L, H]

    def reset_parameters(self) -> None:
        """Unit RMSNorm gains (the projections are initialised by the model: normal(0, 0.02))."""
        self.attn_norm.reset_parameters()
        self.ffn_norm.reset_parameters()
