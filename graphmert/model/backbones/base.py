"""The backbone interface: every encoder stack GraphMERT can run is one of these.

A backbone maps the embedded graph to contextual hidden states, attending as the spec says:

    backbone(hidden [B, L, H], spec: AttentionSpec) -> hidden [B, L, H]

The :class:`~graphmert.model.attention.AttentionSpec` carries everything a layer needs besides the
hidden states, computed once per forward by the model: the key-padding mask, the graph-distance
decay (an additive bias or a multiplicative logit scale per head, or neither), the root index of
every position (for rotary / other positional schemes; leaves share their root's position) and the
leaf slot. A backbone must

* attend only to keys where ``spec.key_padding_mask`` is True, and apply the decay terms of the spec
  (use :class:`~graphmert.model.attention.SelfAttention`, whose kernels do both);
* return a tensor of the input's shape; outputs at padded positions are unspecified;
* be constructible from the model config alone: ``cls(cfg: ModelConfig)``; backbone-specific
  settings live in ``cfg.backbone_options`` (a dict from YAML ``model.backbone_options``) and unknown
  keys or bad values there are errors naming ``model.backbone_options.<key>``;
* leave token/position embeddings and output heads to :class:`~graphmert.model.GraphMERT`.

Parameters are initialised by the model (normal(0, ``initializer_range``) for Linear/Embedding
weights, zeros for biases, ones/zeros for LayerNorm); a backbone that needs a different scheme
overrides :meth:`Backbone.reset_parameters`, which the model calls after its own initialisation.

A backbone declares its options in one of two ways (:meth:`Backbone.resolve_options`):

* a typed dataclass whose fields use :func:`graphmert.config.opt` (default, range, choices, help) —
  validated with :func:`graphmert.config.build_section` under the prefix ``model.backbone_options``,
  so ``self.opts`` is an instance of that class;
* a plain dict of defaults (unknown keys are errors; values are not type-checked) — ``self.opts``
  is a dict.

Register an implementation under a name chosen by ``model.backbone``::

    @BACKBONES.register("roberta")
    class RobertaBackbone(Backbone): ...
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, Union

from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig, build_section
from graphmert.model.attention import AttentionSpec
from graphmert.registry import Registry

__all__ = ["BACKBONES", "Backbone", "build_backbone"]

BACKBONES: Registry[type["Backbone"]] = Registry("backbone", key="model.backbone")


class Backbone(nn.Module, ABC):
    """Base class of encoder stacks: ``forward(hidden [B, L, H], spec) -> [B, L, H]``.

    Attributes:
        options: the backbone-specific settings this class accepts, with defaults: a dataclass type
            (typed and range-checked) or a dict; the values in ``cfg.backbone_options`` override
            them (see :meth:`resolve_options`).
        opts: the resolved options (an instance of the dataclass, or a dict).
    """

    options: Union[dict[str, Any], type] = {}

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.hidden_size = cfg.hidden_size
        self.opts = self.resolve_options(cfg)

    @classmethod
    def resolve_options(cls, cfg: ModelConfig) -> Any:
        """``cls.options`` overridden by ``cfg.backbone_options``; unknown keys are errors.

        With a dataclass ``options`` the values are also type- and range-checked and the result is
        an instance of it; errors name ``model.backbone_options.<key>`` and the backbone.
        """
        if isinstance(cls.options, type) and dataclasses.is_dataclass(cls.options):
            try:
                return build_section(cls.options, cfg.backbone_options, "model.backbone_options")
            except ConfigError as e:
                raise ConfigError(f"{e} (backbone {cfg.backbone!r})") from None
        unknown = sorted(set(cfg.backbone_options) - set(cls.options))
        if unknown:
            allowed = sorted(cls.options) or "none"
            raise ConfigError(f"model.backbone_options.{unknown[0]}: unknown option for backbone "
                              f"{cfg.backbone!r}; allowed: {allowed}")
        return {**cls.options, **cfg.backbone_options}

    @abstractmethod
    def forward(self, hidden: Tensor, spec: AttentionSpec) -> Tensor:
        """hidden [B, L, H], spec → hidden [B, L, H]."""

    def reset_parameters(self) -> None:
        """Backbone-specific initialisation after the model's generic one (default: none)."""


def build_backbone(cfg: ModelConfig) -> Backbone:
    """The backbone registered under ``cfg.backbone``."""
    return BACKBONES.get(cfg.backbone)(cfg)
