"""The two paths a cross-layer bridge can carry from a routed source M [B, L, H] into a target a [B, L, H].

Both attend only to the real tokens of the source (the key-padding mask of the spec); the target
and the source are the same sequence at different depths, so position l of M is token l.

QKV bridge — multi-head cross-attention (h heads of size d = H/h), target queries, source keys/values:

    Q = a W_Q,  K = M W_K,  V = M W_V                              [B, h, L, d]
    c = softmax(Q Kᵀ / √d  + pad) V  W_O                           [B, L, H]

HDIM bridge — a pairwise MLP scorer in a small space of dimension D (``hdim_dim``, 24):

    z_t = a P_t,   z_s = M P_s                                     [B, L, D]
    φ_ts = [z_s ‖ z_t ‖ z_s ⊙ z_t ‖ |z_s − z_t|]                   [B, L_t, L_s, 4D]
    e_ts = w_2ᵀ GELU(W_1 φ_ts + b_1)                               [B, L_t, L_s]  (W_1 ∈ R^{m×4D})
    β_ts = softmax_s(e_ts + pad)                                    masked softmax over source tokens
    p_t  = Σ_s β_ts M_s                                            [B, L, H]  pooled source states
    c    = fusion(p, a)                                            [B, L, H]

The first layer splits as W_1 φ = W_s z_s + W_t z_t + W_× [z_s ⊙ z_t ‖ |z_s − z_t|]: the first two
terms are per token (computed on [B, L, D]); only the last needs the pairwise tensor [B, L, L, 2D].
Memory is O(B·L²·(2D + m)) per bridged layer — the reason D is small. Fusion variants:

* ``concat_mlp``  — c = W_b GELU([p ‖ a] W_a + b_a) + b_b        (value MLP over source and target)
* ``concat_only`` — c = [p ‖ a] W + b                            (one linear map, no hidden layer)
* ``value_mlp``   — c = W_b GELU(p W_a + b_a) + b_b              (the pooled source alone)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError
from graphmert.model.attention import ATTENTION_KERNELS, AttentionSpec

__all__ = ["QKVBridge", "HDIMBridge", "FUSIONS"]

FUSIONS = ("concat_mlp", "concat_only", "value_mlp")


class QKVBridge(nn.Module):
    """Cross-attention target → routed source: (a [B, L, H], M [B, L, H], spec) → [B, L, H].

    Args:
        hidden_size: H.  num_heads: h.  dropout: on attention probabilities.
        kernel: ``model.attention_kernel`` name (the spec passed in carries only the padding mask).
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float, kernel: str) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.kernel = ATTENTION_KERNELS.get(kernel)
        self.query = nn.Linear(hidden_size, hidden_size)                    # W_Q
        self.key_value = nn.Linear(hidden_size, 2 * hidden_size)            # [W_K | W_V]
        self.out = nn.Linear(hidden_size, hidden_size)                      # W_O

    def forward(self, target: Tensor, source: Tensor, spec: AttentionSpec) -> Tensor:
        B, L, H = target.shape
        h, d = self.num_heads, self.head_dim
        q = self.query(target).view(B, L, h, d).transpose(1, 2)             # [B, h, L, d]
        kv = self.key_value(source).view(B, L, 2, h, d)
        k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)                          # 2 × [B, h, L, d]
        p = self.dropout if self.training else 0.0
        ctx = self.kernel(q, k, v, spec, p, self.scaling)                   # [B, h, L, d]
        return self.out(ctx.transpose(1, 2).reshape(B, L, H))               # [B, L, H]


class HDIMBridge(nn.Module):
    """Pairwise-MLP attention in a D-dim space + fusion: (a, M [B, L, H], spec) → [B, L, H].

    Args:
        hidden_size: H.  dim: D.  scorer_hidden: m, the scorer MLP's width.
        fusion: one of :data:`FUSIONS`.  dropout: on the source weights β.
    """

    def __init__(self, hidden_size: int, dim: int, scorer_hidden: int, fusion: str,
                 dropout: float) -> None:
        super().__init__()
        if fusion not in FUSIONS:
            raise ConfigError(f"model.backbone_options.fusion: unknown fusion {fusion!r}; "
                             f"choose from {list(FUSIONS)}")
        H = hidden_size
        self.dim = dim
        self.fusion = fusion
        self.dropout = dropout
        self.target_proj = nn.Linear(H, dim)                                # P_t
        self.source_proj = nn.Linear(H, dim)                                # P_s
        self.score_in = nn.Linear(4 * dim, scorer_hidden)                   # W_1, b_1 over φ
        self.score_out = nn.Linear(scorer_hidden, 1, bias=False)            # w_2 (a bias b_2 would
        # shift every e_ts of a row equally: no effect on the softmax, no gradient)
        fuse_in = H if fusion == "value_mlp" else 2 * H
        if fusion == "concat_only":
            self.fuse = nn.Linear(fuse_in, H)
        else:
            self.fuse = nn.Sequential(nn.Linear(fuse_in, H), nn.GELU(), nn.Linear(H, H))

    def scores(self, target: Tensor, source: Tensor) -> Tensor:
        """e_ts (before masking): target, source [B, L, H] → [B, L_t, L_s]."""
        z_t = self.target_proj(target)                                      # [B, L, D]
        z_s = self.source_proj(source)                                      # [B, L, D]
        D = self.dim
        W = self.score_in.weight                                            # [m, 4D]
        per_s = F.linear(z_s, W[:, :D])                                     # [B, L_s, m]
        per_t = F.linear(z_t, W[:, D:2 * D], self.score_in.bias)            # [B, L_t, m]
        zt, zs = z_t.unsqueeze(2), z_s.unsqueeze(1)                         # [B, L_t, 1, D], [B, 1, L_s, D]
        pair = torch.cat([zt * zs, (zt - zs).abs()], dim=-1)                # [B, L_t, L_s, 2D]
        pre = F.linear(pair, W[:, 2 * D:]) + per_s.unsqueeze(1) + per_t.unsqueeze(2)   # [B, L_t, L_s, m]
        return self.score_out(F.gelu(pre)).squeeze(-1)                      # [B, L_t, L_s]

    def forward(self, target: Tensor, source: Tensor, spec: AttentionSpec) -> Tensor:
        e = self.scores(target, source)                                     # [B, L_t, L_s]
        e = e + spec.padding_bias(e.dtype)[:, 0]                            # −∞ at padded sources
        beta = torch.softmax(e, dim=-1)
        beta = F.dropout(beta, p=self.dropout, training=self.training)
        pooled = torch.matmul(beta.to(source.dtype), source)                # [B, L_t, H]
        if self.fusion == "value_mlp":
            return self.fuse(pooled)
        return self.fuse(torch.cat([pooled, target], dim=-1))              # [B, L, H]

    def extra_repr(self) -> str:
        return f"dim={self.dim}, fusion={self.fusion!r}"
