"""Root-mean-square layer normalisation (Zhang & Sennrich 2019), as used by the pre-norm backbones.

For x ∈ R^H (the last dimension) with a learnable gain g ∈ R^H (init 1) and a small ε:

    RMSNorm(x) = x / √(mean_i x_i² + ε) ⊙ g

Unlike LayerNorm there is no mean subtraction and no bias. Shapes: [*, H] → [*, H].
The forward calls :func:`torch.nn.functional.rms_norm` (one fused kernel where available).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["RMSNorm", "l2_normalize"]


class RMSNorm(nn.Module):
    """x / √(mean(x²) + ε) · g over the last dimension.  [*, H] → [*, H].

    Args:
        hidden_size: H.  eps: ε added to the mean square (``model.layer_norm_eps``).
    """

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(hidden_size))                 # g [H]

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def l2_normalize(x: Tensor, dim: int = -1) -> Tensor:
    """x / ‖x‖₂ along ``dim`` (projection onto the unit sphere; used by the normalised variant)."""
    return F.normalize(x, p=2.0, dim=dim, eps=1e-12)
