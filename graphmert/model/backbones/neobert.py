"""NeoBERT (Le Breton et al. 2025, arXiv 2502.19587): a pre-norm encoder with RMSNorm, SwiGLU and RoPE.

    h_0 = x                                              [B, L, H]  token embeddings from GraphMERT's
                                                                    embedding block (no absolute positions)
    h_l = PreNormLayer_l(h_{l−1}, spec),  l = 1..N       [B, L, H]
    out = RMSNorm(h_N)                                   [B, L, H]

with :class:`~graphmert.model.backbones.layers.PreNormLayer`:

    h ← h + Dropout(RoPE-Attention(RMSNorm(h)) W_o)      (padding mask + graph decay from the spec)
    h ← h + Dropout(SwiGLU(RMSNorm(h)))                  SwiGLU hidden F = 8/3·H (rounded up to 8)

RoPE rotates queries and keys by the spec's positions — the root index, so the leaves of a root share
its position and order is relative (score(m, n) depends on n − m only); θ is ``rope_theta``.
Attention runs through the configured kernel (``sdpa``: the padding mask and an additive ``log_bias``
decay folded into one mask; the paper's ``logit_scale`` decay computed explicitly). No biases by
default. Weights are initialised BERT-style by the model (normal(0, ``initializer_range`` = 0.02));
RMSNorm gains are 1.

``normalized: true`` switches every layer to the nGPT form
(:class:`~graphmert.model.backbones.normalized.NormalizedLayer`): the input is projected onto the unit
sphere, every layer moves along the sphere with learnable eigen learning rates α, queries/keys are
normalised and scaled (s_qk, softmax scale √d), and there is no final norm (the output has unit norm).

Options (``model.backbone_options``): see :class:`NeoBERTOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig, opt
from graphmert.model.attention import AttentionSpec
from graphmert.model.backbones.base import BACKBONES, Backbone
from graphmert.model.backbones.layers import PreNormLayer, PreNormOptions, build_rotary, ffn_size_of
from graphmert.model.backbones.normalized import NormalizedLayer
from graphmert.model.backbones.rmsnorm import RMSNorm, l2_normalize

__all__ = ["NeoBERTOptions", "NeoBERTBackbone"]


@dataclass
class NeoBERTOptions(PreNormOptions):
    """``model.backbone_options`` of the ``neobert`` backbone."""

    normalized: bool = opt(False, help="experimental nGPT variant: unit-norm weights and hidden "
                           "states, eigen learning rates α, scaled q·k, no RMSNorm")
    alpha_init: float = opt(0.05, min=0.0, min_exclusive=True, max=1.0,
                            help="normalized only: initial eigen learning rate α of every layer")


@BACKBONES.register("neobert")
class NeoBERTBackbone(Backbone):
    """``model.num_layers`` pre-norm RMSNorm / SwiGLU / RoPE layers and a final RMSNorm."""

    options = NeoBERTOptions

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        opts: NeoBERTOptions = self.opts
        self.normalized = opts.normalized
        if opts.normalized and opts.bias:
            raise ConfigError("model.backbone_options.bias: the normalized (nGPT) variant has no biases; "
                              "set bias: false or normalized: false")
        self.rotary = build_rotary(cfg, opts)
        F = ffn_size_of(cfg, opts)
        if self.normalized:
            self.layers = nn.ModuleList(NormalizedLayer(cfg, F, self.rotary, opts.alpha_init)
                                        for _ in range(cfg.num_layers))
            self.final_norm = None
        else:
            self.layers = nn.ModuleList(PreNormLayer(cfg, F, opts.bias, self.rotary)
                                        for _ in range(cfg.num_layers))
            self.final_norm = RMSNorm(cfg.hidden_size, cfg.layer_norm_eps)

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()
        if self.final_norm is not None:
            self.final_norm.reset_parameters()

    def forward(self, hidden: Tensor, spec: AttentionSpec) -> Tensor:
        if self.normalized:
            hidden = l2_normalize(hidden)                                   # onto the unit sphere
        for layer in self.layers:
            hidden = layer(hidden, spec)                                    # [B, L, H]
        return hidden if self.final_norm is None else self.final_norm(hidden)
