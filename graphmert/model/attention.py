"""Self-attention over a leafy chain graph: the attention spec, kernels, rotary positions.

Every backbone layer computes, per head h (head size d_h = H / n_heads):

    s = (Q Kᵀ) / √d_h                                  [B, h, L, L]
    s ← s · scale            if the decay mode gives a multiplicative scale (``logit_scale``)
    s ← s + bias             if it gives an additive bias (``log_bias``)
    s ← −∞ at padded keys    (key padding mask)
    A = dropout(softmax(s)) V                          [B, h, L, d_h]

Everything in that recipe that does not depend on the layer is computed once per forward and
carried to every layer by one :class:`AttentionSpec` — the single object a backbone's forward
receives: ``backbone(hidden [B, L, H], spec) -> hidden [B, L, H]``.

Kernels (``model.attention_kernel``, registry :data:`ATTENTION_KERNELS`) turn (Q, K, V, spec) into
the attention output:

* ``eager`` — the explicit recipe above; supports every decay mode.
* ``sdpa``  — :func:`torch.nn.functional.scaled_dot_product_attention` with the decay bias and the
  padding mask folded into one additive mask (fused kernels where the platform has them). A
  multiplicative ``logit_scale`` decay has no additive form (it scales each logit by its own factor,
  which cannot be factored into Q or K), so for that mode this kernel computes the logits explicitly,
  exactly as ``eager`` does — same result, no fused-kernel speed-up. (Passing the scaled logits to
  SDPA as a mask with ``scale=0`` was measured slower than the explicit softmax on CPU.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.graph.batch import GraphBatch, graph_distance
from graphmert.config import ConfigError
from graphmert.registry import Registry

__all__ = ["AttentionSpec", "ATTENTION_KERNELS", "AttentionKernel", "RotaryEmbedding", "SelfAttention",
           "build_attention_spec", "eager_attention", "project_qkv", "sdpa_attention"]

# kernel(q, k, v [B, h, L, d], spec, dropout_p, scaling) -> [B, h, L, d]
AttentionKernel = Callable[[Tensor, Tensor, Tensor, "AttentionSpec", float, float], Tensor]
ATTENTION_KERNELS: Registry[AttentionKernel] = Registry("attention kernel", key="model.attention_kernel")


@dataclass
class AttentionSpec:
    """Per-forward attention inputs shared by all layers of a backbone.

    Attributes:
        key_padding_mask: [B, L] bool, True at real positions (only these may be attended to).
        positions: [B, L] long, the root index of each position (leaves share their root's).
        leaf_slot: [B, L] long, −1 for roots, k for leaf k (−1 at padding).
        decay_bias: [B or 1, h, L, L] additive logit bias, or None.
        decay_scale: [B or 1, h, L, L] multiplicative logit scale, or None.
        cache: per-forward tensors derived from the above and shared by layers (e.g. the combined
            additive mask per dtype, rotary cos/sin). Lives only as long as the spec.
    """

    key_padding_mask: Tensor
    positions: Tensor
    leaf_slot: Tensor
    decay_bias: Optional[Tensor] = None
    decay_scale: Optional[Tensor] = None
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def padding_bias(self, dtype: torch.dtype) -> Tensor:
        """0 at real keys, the dtype's minimum at padded keys: [B, 1, 1, L], cached per dtype."""
        key = ("padding_bias", dtype)
        if key not in self.cache:
            bias = torch.zeros(self.key_padding_mask.shape, dtype=dtype, device=self.key_padding_mask.device)
            bias.masked_fill_(~self.key_padding_mask, torch.finfo(dtype).min)
            self.cache[key] = bias[:, None, None, :]
        return self.cache[key]

    def additive_mask(self, dtype: torch.dtype) -> Tensor:
        """decay bias with the padded keys set to the dtype's minimum, as one additive mask.

        Returns [B, h, L, L] of ``dtype`` when there is a bias, else a bool keep-mask [B, 1, 1, L]
        (SDPA accepts both). Computed once per dtype and cached for all layers.
        """
        key = ("additive_mask", dtype)
        if key not in self.cache:
            keep = self.key_padding_mask[:, None, None, :]                        # [B, 1, 1, L]
            if self.decay_bias is None:
                self.cache[key] = keep
            else:
                bias = self.decay_bias.to(dtype)                                   # [B|1, h, L, L]
                self.cache[key] = bias.masked_fill(~keep, torch.finfo(dtype).min)  # [B, h, L, L]
        return self.cache[key]


def _structural_layout(R: int, K: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """root_index, leaf_slot [1, R + R·K] of the dense layout (leaf k of root i at R + K·i + k)."""
    roots = torch.arange(R, device=device)
    root_index = torch.cat([roots, roots.repeat_interleave(K)])
    leaf_slot = torch.cat([torch.full((R,), -1, device=device), torch.arange(K, device=device).repeat(R)])
    return root_index.unsqueeze(0), leaf_slot.unsqueeze(0)


def build_attention_spec(batch: GraphBatch, decay: nn.Module) -> AttentionSpec:
    """The :class:`AttentionSpec` of a batch: padding mask, positions and the decay terms.

    Distances come from :func:`graph_distance` once per forward. In the dense layout every graph has
    the same structure, so distances (and decay terms) are computed once as [1, L, L]: real
    positions carry their structural root index and slot, and padded positions are masked as keys.
    """
    B, L = batch.input_ids.shape
    spec = AttentionSpec(key_padding_mask=batch.attention_mask.bool(), positions=batch.root_index,
                         leaf_slot=batch.leaf_slot)
    if not getattr(decay, "uses_distance", False):
        return spec
    R = batch.relation_ids.shape[1]
    if batch.layout == "dense" and R > 0 and L % R == 0 and L > R:
        root_index, leaf_slot = _structural_layout(R, L // R - 1, batch.input_ids.device)
    else:
        root_index, leaf_slot = batch.root_index, batch.leaf_slot
    dist = graph_distance(root_index, leaf_slot)                                  # [B|1, L, L]
    terms = decay(dist)
    spec.decay_bias, spec.decay_scale = terms.bias, terms.scale
    return spec


# --------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------


@ATTENTION_KERNELS.register("eager")
def eager_attention(q: Tensor, k: Tensor, v: Tensor, spec: AttentionSpec, dropout_p: float,
                    scaling: float) -> Tensor:
    """Explicit softmax attention; supports additive and multiplicative decay. q, k, v [B, h, L, d].

    The L×L work is kept to one fused op before the softmax: ``addcmul`` (padding + QKᵀ·scale) for
    a multiplicative decay, ``baddbmm`` (bias-and-padding mask + QKᵀ) otherwise.
    """
    B, h, L, d = q.shape
    q = q * scaling                                                             # [B, h, L, d]
    if spec.decay_scale is not None:
        qk = torch.matmul(q, k.transpose(-1, -2))                               # [B, h, L, L]
        s = torch.addcmul(spec.padding_bias(qk.dtype), qk, spec.decay_scale.to(qk.dtype))
    else:
        mask = spec.additive_mask(q.dtype)
        if mask.dtype == torch.bool:                                             # no bias: padding only
            mask = spec.padding_bias(q.dtype)
        mask = mask.expand(B, h, L, L).reshape(B * h, L, L)
        s = torch.baddbmm(mask, q.reshape(B * h, L, d), k.reshape(B * h, L, d).transpose(1, 2))
        s = s.view(B, h, L, L)
    probs = torch.softmax(s, dim=-1)
    probs = F.dropout(probs, p=dropout_p, training=dropout_p > 0)
    return torch.matmul(probs.to(v.dtype), v)                                   # [B, h, L, d]


@ATTENTION_KERNELS.register("sdpa")
def sdpa_attention(q: Tensor, k: Tensor, v: Tensor, spec: AttentionSpec, dropout_p: float,
                   scaling: float) -> Tensor:
    """``F.scaled_dot_product_attention`` with decay bias + padding as one additive mask.

    A multiplicative (``logit_scale``) decay has no additive form; those logits are computed
    explicitly (see the module docstring), giving the same result as :func:`eager_attention`.
    """
    if spec.decay_scale is not None:
        return eager_attention(q, k, v, spec, dropout_p, scaling)
    mask = spec.additive_mask(q.dtype)                                           # [B, h|1, L|1, L]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scaling)


# --------------------------------------------------------------------------------------------------
# Rotary positions over the root index
# --------------------------------------------------------------------------------------------------


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoFormer; rotate-half convention) on the root index.

    For position m and frequency θ_i = theta^(−2i/d): (x_{2i}, x_{2i+d/2}) is rotated by m·θ_i.
    Leaves share their root's position, so their rotation equals the root's.
    """

    def __init__(self, head_dim: int, theta: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary embedding needs an even head size, got {head_dim}")
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)            # [d/2]

    def cos_sin(self, spec: AttentionSpec) -> tuple[Tensor, Tensor]:
        """cos, sin [B, 1, L, d] for the spec's positions, cached in the spec for all layers."""
        key = ("rotary", id(self))
        if key not in spec.cache:
            angles = spec.positions.float().unsqueeze(-1) * self.inv_freq        # [B, L, d/2]
            angles = torch.cat([angles, angles], dim=-1).unsqueeze(1)            # [B, 1, L, d]
            spec.cache[key] = (angles.cos(), angles.sin())
        return spec.cache[key]

    @staticmethod
    def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """x [B, h, L, d] rotated by the angles behind cos/sin [B, 1, L, d]."""
        x1, x2 = x.chunk(2, dim=-1)
        rotated = torch.cat([-x2, x1], dim=-1)
        return (x * cos.to(x.dtype) + rotated * sin.to(x.dtype)).to(x.dtype)


# --------------------------------------------------------------------------------------------------
# Multi-head self-attention (projections + kernel), shared by backbones
# --------------------------------------------------------------------------------------------------


def project_qkv(qkv: nn.Module, x: Tensor, num_heads: int, rotary: Optional[RotaryEmbedding],
                spec: AttentionSpec) -> tuple[Tensor, Tensor, Tensor]:
    """Queries, keys and values per head from one fused projection, rotary applied to Q and K.

        [Q | K | V] = qkv(x)                    x [B, L, H] → [B, L, 3H] → 3 × [B, h, L, d_h]
        (Q, K) ← rotary(Q, K) at the root index  (when ``rotary`` is given)

    ``qkv`` is any module mapping H to 3H (a plain ``nn.Linear`` in :class:`SelfAttention`, a
    weight-normalised one in the normalised backbone); every backbone splits heads the same way, so
    a checkpoint's fused weight means the same thing whichever layer reads it.
    """
    B, L, H = x.shape
    heads = qkv(x).view(B, L, 3, num_heads, H // num_heads)                    # [B, L, 3, h, d]
    q, k, v = heads.permute(2, 0, 3, 1, 4).unbind(0)                           # 3 × [B, h, L, d]
    if rotary is not None:
        cos, sin = rotary.cos_sin(spec)                                          # [B, 1, L, d]
        q, k = rotary.rotate(q, cos, sin), rotary.rotate(k, cos, sin)
    return q, k, v


class SelfAttention(nn.Module):
    """Multi-head self-attention context vectors (no output projection).

        [Q | K | V] = x W_qkv + b_qkv           x [B, L, H] → 3 × [B, h, L, d_h]
        (Q, K) ← rotary(Q, K) at the root index  (optional)
        C = kernel(Q, K, V, spec)               [B, h, L, d_h] → [B, L, H]

    Args:
        hidden_size: H.  num_heads: h (H divisible by h).  dropout: on attention probabilities.
        kernel: ``model.attention_kernel`` name.  rotary: a shared :class:`RotaryEmbedding` or None.
        bias: whether W_qkv has a bias (RoBERTa: yes; NeoBERT: no).
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float, kernel: str,
                 rotary: Optional[RotaryEmbedding] = None, bias: bool = True) -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ConfigError(f"model.hidden_size: {hidden_size} is not divisible by model.num_heads "
                             f"({num_heads})")
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.kernel_name = kernel
        self.kernel = ATTENTION_KERNELS.get(kernel)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=bias)
        self.rotary = rotary

    def forward(self, x: Tensor, spec: AttentionSpec) -> Tensor:
        B, L, H = x.shape
        q, k, v = project_qkv(self.qkv, x, self.num_heads, self.rotary, spec)    # 3 × [B, h, L, d]
        p = self.dropout if self.training else 0.0
        ctx = self.kernel(q, k, v, spec, p, self.scaling)                       # [B, h, L, d]
        return ctx.transpose(1, 2).reshape(B, L, H)                             # [B, L, H]

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, head_dim={self.head_dim}, kernel={self.kernel_name!r}"
