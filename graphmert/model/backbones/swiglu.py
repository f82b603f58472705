"""SwiGLU feed-forward network (Shazeer 2020, "GLU Variants Improve Transformer"; as in LLaMA/NeoBERT).

Three matrices W_1, W_3 ∈ R^{H×F} (gate and value) and W_2 ∈ R^{F×H}:

    SwiGLU(x) = (SiLU(x W_1) ⊙ x W_3) W_2,        SiLU(u) = u · σ(u)

Shapes: x [*, H] → [*, F] (twice) → [*, H]. W_1 and W_3 are stored stacked as one [H, 2F] projection
(``w_in``; rows 0..F−1 of its weight are W_1ᵀ, rows F..2F−1 are W_3ᵀ) so both come from one GEMM.

Hidden size: with 3 matrices instead of 2, F = 8/3·H matches the parameter count of a GELU FFN with
4·H; :func:`swiglu_hidden_size` rounds 8/3·H up to a multiple of 8 (NeoBERT's rule: 2/3 of 4·H,
rounded up to a multiple of 8).
"""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["SwiGLU", "swiglu_hidden_size"]


def swiglu_hidden_size(hidden_size: int, multiple_of: int = 8) -> int:
    """F = 8/3·H rounded up to a multiple of ``multiple_of`` (H = 512 → 1368, H = 768 → 2048)."""
    return multiple_of * math.ceil(8 * hidden_size / 3 / multiple_of)


class SwiGLU(nn.Module):
    """(SiLU(x W_1) ⊙ x W_3) W_2:  [*, H] → [*, H].

    Args:
        hidden_size: H.  ffn_size: F.  bias: add biases to the projections (NeoBERT has none).
    """

    def __init__(self, hidden_size: int, ffn_size: int, bias: bool = False) -> None:
        super().__init__()
        self.ffn_size = ffn_size
        self.w_in = nn.Linear(hidden_size, 2 * ffn_size, bias=bias)         # [W_1 | W_3]  H → 2F
        self.w_out = nn.Linear(ffn_size, hidden_size, bias=bias)            # W_2          F → H

    def forward(self, x: Tensor) -> Tensor:
        gate, value = self.w_in(x).chunk(2, dim=-1)                         # 2 × [*, F]
        return self.w_out(F.silu(gate) * value)                             # [*, H]
