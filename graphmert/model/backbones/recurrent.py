"""Recurrent-depth encoder: a block of N pre-norm layers applied for D iterations.

With F_t the block used at iteration t (N :class:`~graphmert.model.backbones.layers.PreNormLayer`
in sequence — the RMSNorm / SwiGLU / RoPE layer of ``neobert``) and α = ``residual_scale``:

    h_0 = x                                                   [B, L, H]
    h_1 = F_1(h_0)
    h_t = F_t(h_{t−1}) + α · h_{t−1},        t = 2..D         cross-iteration residual
    out = RMSNorm(h_D)                                        [B, L, H]

* ``share_weights_across_depth: true``  — F_1 = … = F_D: one set of N layers reused D times; the
  parameter count does not depend on D (compute grows D-fold, parameters do not).
* ``share_weights_across_depth: false`` — N·D independent layers; F_t is layers (t−1)·N .. t·N − 1.

D = 1 is the plain stack: the module, its parameter names and its output equal ``neobert``'s with
the same weights. Every layer sees the same spec (padding mask, graph decay, RoPE positions), and
the shared RoPE module computes its angles once per forward for all N·D layer applications.

Since each pre-norm block already carries its own residual (F(h) = h + Δ(h)), α > 0 gives the
carried state weight 1 + α per iteration; α = 0 (the default) is a plain weight-tied deep stack.

Options (``model.backbone_options``): see :class:`RecurrentOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from graphmert.config import ModelConfig, opt
from graphmert.model.attention import AttentionSpec
from graphmert.model.backbones.base import BACKBONES, Backbone
from graphmert.model.backbones.layers import PreNormLayer, PreNormOptions, build_rotary, ffn_size_of
from graphmert.model.backbones.rmsnorm import RMSNorm

__all__ = ["RecurrentOptions", "RecurrentBackbone"]


@dataclass
class RecurrentOptions(PreNormOptions):
    """``model.backbone_options`` of the ``recurrent`` backbone (N = ``model.num_layers``)."""

    recurrent_depth: int = opt(2, min=1, help="D: iterations of the block of model.num_layers layers")
    share_weights_across_depth: bool = opt(True, help="true: one set of N layers reused D times; "
                                           "false: N·D independent layers")
    residual_scale: float = opt(0.0, min=0.0, max=1.0, help="α in h ← F(h) + α·h_prev from the "
                                "second iteration on")


@BACKBONES.register("recurrent")
class RecurrentBackbone(Backbone):
    """N pre-norm layers × D iterations (optionally weight-shared) and a final RMSNorm."""

    options = RecurrentOptions

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        opts: RecurrentOptions = self.opts
        self.num_block_layers = cfg.num_layers                               # N
        self.depth = opts.recurrent_depth                                    # D
        self.share = opts.share_weights_across_depth
        self.residual_scale = opts.residual_scale                            # α
        self.rotary = build_rotary(cfg, opts)
        F = ffn_size_of(cfg, opts)
        n_layers = self.num_block_layers * (1 if self.share else self.depth)
        self.layers = nn.ModuleList(PreNormLayer(cfg, F, opts.bias, self.rotary) for _ in range(n_layers))
        self.final_norm = RMSNorm(cfg.hidden_size, cfg.layer_norm_eps)

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()
        self.final_norm.reset_parameters()

    def block(self, t: int) -> nn.ModuleList:
        """The N layers F_t of iteration t (0-based)."""
        if self.share:
            return self.layers
        N = self.num_block_layers
        return self.layers[t * N:(t + 1) * N]

    def forward(self, hidden: Tensor, spec: AttentionSpec) -> Tensor:
        for t in range(self.depth):
            prev = hidden                                                    # h_{t−1}
            for layer in self.block(t):
                hidden = layer(hidden, spec)                                 # [B, L, H]
            if t > 0 and self.residual_scale:
                hidden = hidden + self.residual_scale * prev                 # + α·h_{t−1}
        return self.final_norm(hidden)

    def extra_repr(self) -> str:
        return (f"num_layers={self.num_block_layers}, recurrent_depth={self.depth}, "
                f"share_weights_across_depth={self.share}, residual_scale={self.residual_scale}")
