"""Graph-distance attention decay (DESIGN §5).

GraphMERT lets attention fall off with the shortest-path distance d between two nodes of the leafy
chain graph:

    f(d) = λ^{GELU(√d − p_h)},        0 < λ ≤ 1,  p_h learnable per head (init ``decay_p_init``)

One decay module is shared by all layers. How f enters attention is a *decay mode*, chosen by name
(``model.decay_mode``) from :data:`DECAY_MODES`:

* ``logit_scale`` — the paper's code: the pre-softmax logits are *multiplied* by f at the shifted
  distance d + 1:  s_ij ← s_ij · λ^{GELU(√(d_ij+1) − p_h)}.
* ``log_bias``    — an *additive* bias, log f(d):  s_ij ← s_ij + GELU(√d_ij − p_h) · ln λ, so that
  softmax(s + log f) ∝ f · exp(s). Compatible with fused SDPA / Flash kernels.
* ``none``        — no decay, no parameters.

Distances are small non-negative integers (at most R + 1), so each mode evaluates f once per
(head, distance) into a table [h, D] and gathers it with the distance matrix — the per-pair cost is
a lookup, and the gradient w.r.t. p flows through the table.

Shapes: ``dist`` [B, L, L] (or [1, L, L] when all graphs share one layout) → [B, h, L, L].
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError
from graphmert.registry import Registry

__all__ = ["DECAY_MODES", "DecayTerms", "DistanceDecay", "LogitScaleDecay", "LogBiasDecay", "NoDecay",
           "build_decay"]

DECAY_MODES: Registry[type[nn.Module]] = Registry("decay mode", key="model.decay_mode")


@dataclass
class DecayTerms:
    """What a decay mode contributes to the attention logits s [B, h, L, L] (at most one is set)."""

    bias: Optional[Tensor] = None    # [B, h, L, L] added to s
    scale: Optional[Tensor] = None   # [B, h, L, L] multiplied into s


class DistanceDecay(nn.Module, ABC):
    """Base class: holds λ and the per-head p; subclasses say how f enters the logits.

    Args:
        num_heads: h, one learnable p per head.
        decay_lambda: λ ∈ (0, 1].
        p_init: initial value of every p_h.
    """

    uses_distance: bool = True

    def __init__(self, num_heads: int, decay_lambda: float, p_init: float) -> None:
        super().__init__()
        if not 0.0 < decay_lambda <= 1.0:
            raise ConfigError(f"model.decay_lambda: {decay_lambda!r} is out of range; must be > 0 and <= 1")
        self.num_heads = num_heads
        self.decay_lambda = float(decay_lambda)
        self.p = nn.Parameter(torch.full((num_heads,), float(p_init)))   # [h]

    def exponent(self, d: Tensor) -> Tensor:
        """GELU(√d − p_h) for distances d [D] (any real dtype) → [h, D]."""
        root = d.to(self.p.dtype).sqrt()                                  # [D]
        return F.gelu(root.unsqueeze(0) - self.p.unsqueeze(1))           # [h, D]

    def values(self, d: Tensor) -> Tensor:
        """The decay f(d) = λ^{GELU(√d − p_h)} for distances d [D] → [h, D] (no shift)."""
        return torch.exp(self.exponent(d) * math.log(self.decay_lambda))

    @abstractmethod
    def table(self, max_distance: int) -> Tensor:
        """Per-head contribution for every distance 0..max_distance → [h, max_distance + 1]."""

    def lookup(self, dist: Tensor) -> Tensor:
        """Gather the table with a distance matrix: dist [B, L, L] long → [B, h, L, L].

        One ``gather`` writes the [B, h, L, L] result directly from the broadcast table (no copy of
        it is made). ``F.embedding`` into [B, L, L, h] and a permuting copy were about 30× slower on
        CPU forward and 6× forward + backward (B = 64, h = 4, L = 250; ``git show 426f54f:benchmarks/decay_lookup.py``):
        rows of h floats are too short for an embedding lookup.
        """
        B, L, _ = dist.shape
        # d ≤ max root index + 2 ≤ L + 1 because every root is a position of the batch.
        table = self.table(L + 1)                                         # [h, D]
        h, D = table.shape
        index = dist.unsqueeze(1).expand(B, h, L, L)                      # [B, h, L, L]
        return torch.gather(table[None, :, None, :].expand(B, h, L, D), 3, index)   # [B, h, L, L]

    @abstractmethod
    def forward(self, dist: Tensor) -> DecayTerms:
        """dist [B, L, L] long → the :class:`DecayTerms` this mode adds to the logits."""

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, decay_lambda={self.decay_lambda}"


@DECAY_MODES.register("logit_scale")
class LogitScaleDecay(DistanceDecay):
    """The paper's code: logits multiplied by f(d + 1) = λ^{GELU(√(d+1) − p_h)}."""

    def table(self, max_distance: int) -> Tensor:
        d = torch.arange(max_distance + 1, device=self.p.device)
        return self.values(d + 1)                                         # [h, D]

    def forward(self, dist: Tensor) -> DecayTerms:
        return DecayTerms(scale=self.lookup(dist))


@DECAY_MODES.register("log_bias")
class LogBiasDecay(DistanceDecay):
    """Additive bias log f(d) = GELU(√d − p_h) · ln λ (SDPA-compatible)."""

    def table(self, max_distance: int) -> Tensor:
        d = torch.arange(max_distance + 1, device=self.p.device)
        return self.exponent(d) * math.log(self.decay_lambda)            # [h, D]

    def forward(self, dist: Tensor) -> DecayTerms:
        return DecayTerms(bias=self.lookup(dist))


@DECAY_MODES.register("none")
class NoDecay(nn.Module):
    """No distance decay: plain (masked) attention, no parameters, distances never computed."""

    uses_distance = False

    def __init__(self, num_heads: int, decay_lambda: float, p_init: float) -> None:
        super().__init__()

    def forward(self, dist: Optional[Tensor] = None) -> DecayTerms:
        return DecayTerms()


def build_decay(mode: str, num_heads: int, decay_lambda: float, p_init: float) -> nn.Module:
    """The decay module registered under ``mode`` (``model.decay_mode``)."""
    return DECAY_MODES.get(mode)(num_heads, decay_lambda, p_init)
