"""Layer routing for cross-layer bridges: which earlier layer outputs feed the bridge of layer j.

Each layer output h_i [B, L, H] is summarised by pooling (``mean`` over the real tokens, or the
``cls`` token at position 0):

    s_i = Σ_l m_l h_il / Σ_l m_l          (mean; m = key-padding mask)      [B, H]
    s_i = h_i0                            (cls)

For the bridge of target layer j with target summary t_j (the pooled state the bridge is injected
into) and the summaries s_0 .. s_{j−1} of the earlier outputs (only i < j can be sources):

    q = t_j W_t + b_t,   k_i = s_i W_s                            W_t, W_s ∈ R^{H×d_r}
    σ_i = ⟨q, k_i⟩ / (√d_r · τ)                                   [B, j]   temperature τ
    T = top-k_i(σ_i)                                               k = min(top_k, j)
    w_i = exp(σ_i) / Σ_{i'∈T} exp(σ_{i'})  for i ∈ T,  0 otherwise  (softmax restricted to T)
    M_j = Σ_i w_i h_i                                             [B, L, H]  the routed source

Routing is per sequence. Top-k selection has no gradient (with k = 1 the restricted softmax is
identically 1), so the router learns through a straight-through estimator: the forward uses w, the
backward the gradient of the unrestricted softmax p = softmax(σ):  w̃ = p + stopgrad(w − p).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from graphmert.config import ConfigError

__all__ = ["pool_summary", "LayerRouter"]


def pool_summary(hidden: Tensor, key_padding_mask: Tensor, mode: str) -> Tensor:
    """Summary of each sequence: hidden [B, L, H], mask [B, L] bool → [B, H]."""
    if mode == "cls":
        return hidden[:, 0]
    if mode == "mean":
        m = key_padding_mask.unsqueeze(-1).to(hidden.dtype)                 # [B, L, 1]
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)                 # [B, H]
    raise ConfigError(f"model.backbone_options.pool: unknown pooling {mode!r}; choose from ['cls', 'mean']")


class LayerRouter(nn.Module):
    """Scores the earlier layers for one target layer and mixes the top-k.

    Args:
        hidden_size: H.  router_dim: d_r.  temperature: τ.  top_k: k (capped at the number of sources).
    """

    def __init__(self, hidden_size: int, router_dim: int, temperature: float, top_k: int) -> None:
        super().__init__()
        self.temperature = temperature
        self.top_k = top_k
        self.scale = 1.0 / (math.sqrt(router_dim) * temperature)
        self.target_proj = nn.Linear(hidden_size, router_dim)               # W_t
        self.source_proj = nn.Linear(hidden_size, router_dim, bias=False)   # W_s (a bias would
        # add the same ⟨q, b⟩ to every source: no effect on the softmax, no gradient)

    def scores(self, target: Tensor, sources: Tensor) -> Tensor:
        """σ: target [B, H], sources [B, j, H] → [B, j]."""
        q = self.target_proj(target)                                        # [B, d_r]
        k = self.source_proj(sources)                                       # [B, j, d_r]
        return torch.einsum("bd,bjd->bj", q, k) * self.scale                # [B, j]

    def forward(self, target: Tensor, sources: Tensor) -> tuple[Tensor, Tensor]:
        """Mixing weights and the chosen sources.

        Args:
            target: [B, H] summary of the target layer.  sources: [B, j, H] summaries of h_0..h_{j−1}.
        Returns:
            weights [B, j] (forward: the restricted softmax, exactly k non-zeros summing to 1;
            backward: straight-through via the full softmax) and chosen [B, k] source indices.
        """
        sigma = self.scores(target, sources).float()                        # [B, j]
        k = min(self.top_k, sigma.shape[1])
        top, chosen = sigma.topk(k, dim=-1)                                 # [B, k]
        restricted = torch.zeros_like(sigma).scatter(-1, chosen, torch.softmax(top, dim=-1))
        full = torch.softmax(sigma, dim=-1)
        weights = full + (restricted - full).detach()                       # value: restricted
        return weights.to(target.dtype), chosen

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, top_k={self.top_k}"
