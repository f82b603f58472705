"""RoBERTa with routed cross-layer bridges on the last n layers (``model.backbone = "bridges"``).

The stack is the paper's post-LN RoBERTa (:class:`~graphmert.model.backbones.roberta.RobertaLayer`,
same parameter names as the ``roberta`` backbone). Layers j = N−n+1 .. N (n = ``route_last_n``) get a
bridge from earlier depths, injected into the residual stream between attention and FFN:

    h_0 = x                                                         [B, L, H]
    a_j = LN(h_{j−1} + Dropout(Attn(h_{j−1}, spec) W_o))             attention half of layer j
    M_j = Σ_{i<j} w_ji h_i                                          routed source (routing.py):
                                                                    top-k of i < j, softmax over them
    u_j = g_Q · LN_Q(QKV(a_j, M_j)) + g_H · LN_H(HDIM(a_j, M_j))     bridge_paths.py; per-layer gates
    a_j ← a_j + Dropout(u_j W_B)                                    W_B ∈ R^{H×H}, no bias, ≈ 0 at init
    h_j = LN(a_j + Dropout(FFN(a_j)))                                FFN half of layer j

Modes: ``qkv`` (only the QKV path), ``hdim`` (only the HDIM path), ``hybrid`` (both). The gates g are
scalars per layer (init 0.15 for QKV, 0.05 for HDIM), used as is or through softplus
(``softplus_gates``; then stored as softplus⁻¹ of the initial value). With both gates at 0 the bridge
adds exactly 0 and the stack is the ``roberta`` backbone. W_B starts near zero (normal with std
``output_init_std``), so training starts from plain RoBERTa while every bridge parameter already
receives gradient.

Every forward fills :attr:`BridgesBackbone.last_metrics` (detached tensors; ``metrics()`` gives
Python numbers) per bridged layer ``l`` (0-based index in the stack):

* ``layer{l}.gate_qkv`` / ``layer{l}.gate_hdim``: the effective gate values;
* ``layer{l}.norm_qkv`` / ``layer{l}.norm_hdim``: mean over real tokens of ‖g_P · LN_P(c_P) W_B‖,
  each path's contribution to the residual stream;
* ``layer{l}.sources``: histogram [l + 1] of the routed source indices i (0 = the backbone input)
  over the batch and the top-k picks.

Options (``model.backbone_options``): see :class:`BridgesOptions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig, opt
from graphmert.model.attention import AttentionSpec, RotaryEmbedding
from graphmert.model.backbones.base import BACKBONES, Backbone
from graphmert.model.backbones.bridge_paths import FUSIONS, HDIMBridge, QKVBridge
from graphmert.model.backbones.roberta import RobertaLayer
from graphmert.model.backbones.routing import LayerRouter, pool_summary

__all__ = ["BridgesOptions", "CrossLayerBridge", "BridgesBackbone"]


@dataclass
class BridgesOptions:
    """``model.backbone_options`` of the ``bridges`` backbone."""

    mode: str = opt("hybrid", choices=("qkv", "hdim", "hybrid"), help="bridge paths")
    route_last_n: int = opt(4, min=1, help="bridges on the last n layers (<= model.num_layers; the "
                            "default bridges every layer of a stack shallower than 4)")
    pool: str = opt("mean", choices=("mean", "cls"), help="layer summary for routing")
    router_dim: int = opt(128, min=1, help="d_r: router projection size")
    temperature: float = opt(0.7, min=0.0, min_exclusive=True, help="τ of the routing scores")
    top_k: int = opt(1, min=1, help="earlier layers mixed per bridge")
    hdim_dim: int = opt(24, min=1, help="D: HDIM projection size")
    hdim_hidden: int = opt(32, min=1, help="width of the HDIM pair-scorer MLP")
    fusion: str = opt("concat_mlp", choices=FUSIONS, help="HDIM fusion of pooled source and target")
    gate_init_qkv: float = opt(0.15, help="initial QKV gate of every bridged layer")
    gate_init_hdim: float = opt(0.05, help="initial HDIM gate of every bridged layer")
    softplus_gates: bool = opt(False, help="gates through softplus (then the inits must be > 0)")
    output_init_std: float = opt(1e-3, min=0.0, help="std of the bridge output projection W_B at init")
    collect_metrics: bool = opt(True, help="fill last_metrics on every forward")


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))                                    # log(exp(y) − 1), stable


class CrossLayerBridge(nn.Module):
    """The bridge of one target layer: router, paths, gates, LN, output projection.

    Args:
        cfg: the model config.  opts: the resolved :class:`BridgesOptions`.
        num_sources: j, the earlier outputs h_0 .. h_{j−1} it can route to (with one source there is
            nothing to choose, and no router).
    """

    def __init__(self, cfg: ModelConfig, opts: BridgesOptions, num_sources: int) -> None:
        super().__init__()
        H = cfg.hidden_size
        self.num_sources = num_sources
        self.softplus_gates = opts.softplus_gates
        self.gate_inits = {"qkv": opts.gate_init_qkv, "hdim": opts.gate_init_hdim}
        self.output_init_std = opts.output_init_std
        self.router = (LayerRouter(H, opts.router_dim, opts.temperature, opts.top_k)
                       if num_sources > 1 else None)
        self.paths = nn.ModuleDict()
        self.norms = nn.ModuleDict()
        self.gates = nn.ParameterDict()
        if opts.mode in ("qkv", "hybrid"):
            self.paths["qkv"] = QKVBridge(H, cfg.num_heads, cfg.attention_dropout, cfg.attention_kernel)
        if opts.mode in ("hdim", "hybrid"):
            self.paths["hdim"] = HDIMBridge(H, opts.hdim_dim, opts.hdim_hidden, opts.fusion,
                                            cfg.attention_dropout)
        for name in self.paths:
            self.norms[name] = nn.LayerNorm(H, eps=cfg.layer_norm_eps)
            self.gates[name] = nn.Parameter(torch.zeros(()))
        self.out = nn.Linear(H, H, bias=False)                              # W_B
        self.dropout = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Gates to their initial values, W_B ~ N(0, output_init_std²)."""
        with torch.no_grad():
            for name, gate in self.gates.items():
                g = self.gate_inits[name]
                gate.fill_(_inverse_softplus(g) if self.softplus_gates else g)
        nn.init.normal_(self.out.weight, std=self.output_init_std)

    def gate(self, name: str) -> Tensor:
        """The effective gate g_P (a 0-d tensor)."""
        raw = self.gates[name]
        return F.softplus(raw) if self.softplus_gates else raw

    def forward(self, target: Tensor, target_summary: Tensor, states: list[Tensor],
                source_summaries: Tensor, spec: AttentionSpec,
                metrics: Optional[dict[str, Tensor]] = None, prefix: str = "") -> Tensor:
        """The bridge term added to the target.

        Args:
            target: a_j [B, L, H].  target_summary: [B, H].
            states: h_0 .. h_{j−1}, each [B, L, H].  source_summaries: [B, j, H].
            spec: attention spec carrying only the key-padding mask.
            metrics: a dict to fill (``prefix`` + name) or None.
        Returns: Dropout(u_j W_B) [B, L, H].
        """
        if self.router is None:                                             # j = 1: M = h_0
            source = states[0]
            chosen = torch.zeros(target.shape[0], 1, dtype=torch.long, device=target.device)
        else:
            weights, chosen = self.router(target_summary, source_summaries)  # [B, j], [B, k]
            source = weights[:, 0, None, None] * states[0]
            for i in range(1, len(states)):
                source = source + weights[:, i, None, None] * states[i]     # M_j [B, L, H]
        out = None
        for name, path in self.paths.items():
            y = self.gate(name) * self.out(self.norms[name](path(target, source, spec)))   # [B, L, H]
            out = y if out is None else out + y
            if metrics is not None:
                with torch.no_grad():
                    mask = spec.key_padding_mask
                    metrics[f"{prefix}gate_{name}"] = self.gate(name).detach().float()
                    metrics[f"{prefix}norm_{name}"] = y.detach().float().norm(dim=-1)[mask].mean()
        if metrics is not None:
            metrics[f"{prefix}sources"] = torch.bincount(chosen.reshape(-1), minlength=len(states))
        return self.dropout(out)


def attention_half(layer: RobertaLayer, x: Tensor, spec: AttentionSpec) -> Tensor:
    """a = LN(x + Dropout(Attn(x) W_o)) — RobertaLayer.forward up to the FFN."""
    return layer.attn_norm(x + layer.dropout(layer.attn_out(layer.attention(x, spec))))


def ffn_half(layer: RobertaLayer, a: Tensor) -> Tensor:
    """y = LN(a + Dropout(FFN(a))) — the rest of RobertaLayer.forward."""
    return layer.ffn_norm(a + layer.dropout(layer.ffn_out(F.gelu(layer.ffn_in(a)))))


@BACKBONES.register("bridges")
class BridgesBackbone(Backbone):
    """``model.num_layers`` RoBERTa layers, the last ``route_last_n`` with cross-layer bridges."""

    options = BridgesOptions

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        opts: BridgesOptions = self.opts
        n_bridged = opts.route_last_n
        if n_bridged > cfg.num_layers:
            if "route_last_n" in cfg.backbone_options:
                raise ConfigError(f"model.backbone_options.route_last_n: {n_bridged} exceeds "
                                  f"model.num_layers ({cfg.num_layers})")
            n_bridged = cfg.num_layers                                      # default on a shallow stack
        if opts.softplus_gates:
            for key in ("gate_init_qkv", "gate_init_hdim"):
                if getattr(opts, key) <= 0:
                    raise ConfigError(f"model.backbone_options.{key}: {getattr(opts, key)!r} must be > 0 "
                                      f"with softplus_gates (softplus is positive)")
        self.pool = opts.pool
        self.collect_metrics = opts.collect_metrics
        self.rotary = (RotaryEmbedding(cfg.hidden_size // cfg.num_heads, cfg.rope_theta)
                       if cfg.position_embedding == "rotary" else None)
        self.layers = nn.ModuleList(RobertaLayer(cfg, self.rotary) for _ in range(cfg.num_layers))
        self.first_bridged = cfg.num_layers - n_bridged
        self.bridges = nn.ModuleList(CrossLayerBridge(cfg, opts, num_sources=l + 1)
                                     for l in range(self.first_bridged, cfg.num_layers))
        self.last_metrics: dict[str, Tensor] = {}

    def reset_parameters(self) -> None:
        for bridge in self.bridges:
            bridge.reset_parameters()

    @staticmethod
    def _padding_only(spec: AttentionSpec) -> AttentionSpec:
        """The spec's key-padding mask without the decay (bridges attend across depth, not distance)."""
        if "bridge_spec" not in spec.cache:
            spec.cache["bridge_spec"] = AttentionSpec(spec.key_padding_mask, spec.positions, spec.leaf_slot)
        return spec.cache["bridge_spec"]

    def forward(self, hidden: Tensor, spec: AttentionSpec) -> Tensor:
        mask = spec.key_padding_mask
        bridge_spec = self._padding_only(spec)
        metrics: Optional[dict[str, Tensor]] = {} if self.collect_metrics else None
        states = [hidden]                                                   # h_0 .. h_{j−1}
        summaries = [pool_summary(hidden, mask, self.pool)]                 # s_0 .. s_{j−1}, [B, H]
        for l, layer in enumerate(self.layers):
            if l < self.first_bridged:
                hidden = layer(hidden, spec)                                # [B, L, H]
            else:
                a = attention_half(layer, hidden, spec)                     # [B, L, H]
                bridge = self.bridges[l - self.first_bridged]
                a = a + bridge(a, pool_summary(a, mask, self.pool), states, torch.stack(summaries, 1),
                               bridge_spec, metrics, prefix=f"layer{l}.")
                hidden = ffn_half(layer, a)                                 # [B, L, H]
            if l + 1 < len(self.layers):
                states.append(hidden)
                summaries.append(pool_summary(hidden, mask, self.pool))
        if metrics is not None:
            self.last_metrics = metrics
        return hidden

    def metrics(self) -> dict[str, Any]:
        """:attr:`last_metrics` as Python numbers (floats; lists of counts for the histograms)."""
        return {k: (v.tolist() if v.ndim else v.item()) for k, v in self.last_metrics.items()}
