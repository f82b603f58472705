"""Copying tail tokens from the text into masked leaves (``model.leaf_copy``).

Under distant supervision (:mod:`graphmert.graph.distant`) the tail of a query group is mentioned in
its chunk, so the context can predict every leaf: the answer is a token the roots already hold. The
MNM decoder alone must carry the tail token's identity through attention into the vocabulary
projection, which a small encoder trained on CPU learns slowly: without copying, held-out leaf
accuracy on the BioRED tuning slice falls from 0.573 to 0.023 and pair F1 from 0.672 to 0.659
(docs/experiments/model-ablations.md, §10).
A pointer-generator (See et al., 2017) gives each masked leaf a direct path to the roots::

    g    = σ(w_gᵀ h + b_g)                                        copy gate of the leaf       [N]
    a_j  = softmax_j( (W_q h)ᵀ (W_k r_j) / √H )                   over the roots j of its graph [N, L]
    p(v) = (1 − g) · softmax(z)_v  +  g · Σ_{j : x_j = v} a_j      z: the MNM logits            [N, V]

with h the leaf's final hidden state, r_j the roots' final hidden states and x_j their input tokens
(a root masked for MLM shows [MASK]: it can be copied, uselessly). The ``[SEP]`` root ends every chunk,
so copying it gives the end token of a "fixed" query. The loss and every score read log p.

Shapes: hidden [B, L, H]; input_ids, root_mask [B, L]; leaf index [N] (flat into B·L); logits
[N, V] → log p [N, V].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["LeafCopy"]


class LeafCopy(nn.Module):
    """Mixes the MNM distribution of masked leaves with a copy distribution over the roots.

    Args:
        hidden_size: H.
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)          # W_q
        self.key = nn.Linear(hidden_size, hidden_size)            # W_k
        self.gate = nn.Linear(hidden_size, 1)                     # w_g, b_g

    def forward(self, hidden: Tensor, input_ids: Tensor, root_mask: Tensor, index: Tensor,
                logits: Tensor) -> Tensor:
        """log p [N, V] at the flat positions ``index`` [N] (module docstring)."""
        B, L, H = hidden.shape
        flat = hidden.reshape(B * L, H)
        graph = index // L                                                              # [N]
        q = self.query(flat[index])                                                     # [N, H]
        k = self.key(hidden)                                                            # [B, L, H]
        scores = self._scores(q, k, graph) / math.sqrt(H)                               # [N, L]
        scores = scores.masked_fill(~root_mask[graph], float("-inf"))
        attn = torch.softmax(scores.float(), dim=-1)                                    # [N, L]
        copy = torch.zeros(logits.shape, dtype=attn.dtype, device=attn.device)          # [N, V]
        copy = copy.scatter_add(1, input_ids[graph], attn)                              # [N, V]
        g = torch.sigmoid(self.gate(flat[index]).float())                               # [N, 1]
        p = (1 - g) * torch.softmax(logits.float(), dim=-1) + g * copy                  # [N, V]
        return torch.log(p.clamp_min(1e-30))

    @staticmethod
    def _scores(q: Tensor, k: Tensor, graph: Tensor) -> Tensor:
        """q_n · k[graph_n, l] for every leaf n and position l: [N, L]. The leaves are padded per
        graph into [B, n_max, H] for one batched matmul, instead of copying each leaf's graph's keys
        (N × L × H)."""
        B = k.shape[0]
        counts = torch.bincount(graph, minlength=B)                                     # [B]
        order = torch.argsort(graph, stable=True)                                       # [N]
        starts = torch.cumsum(counts, 0) - counts                                       # [B]
        slot = torch.empty_like(graph)
        slot[order] = torch.arange(len(graph), device=graph.device) - starts[graph[order]]
        padded = q.new_zeros(B, int(counts.max()) if len(graph) else 0, q.shape[-1])    # [B, n_max, H]
        padded[graph, slot] = q
        out = torch.bmm(padded, k.transpose(1, 2))                                      # [B, n_max, L]
        return out[graph, slot]                                                         # [N, L]

    def extra_repr(self) -> str:
        return f"hidden_size={self.hidden_size}"
