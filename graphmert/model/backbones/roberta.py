"""The paper's backbone: a post-LN RoBERTa encoder whose attention carries the graph decay.

Each of the N layers (hidden H, h heads, FFN size I, GELU, dropout p):

    c = SelfAttention(x, spec)                           [B, L, H]  (decay + padding via the spec)
    a = LayerNorm(x + Dropout(c W_o + b_o))
    y = LayerNorm(a + Dropout(GELU(a W_1 + b_1) W_2 + b_2))           W_1 [H, I], W_2 [I, H]

With ``model.position_embedding = "rotary"`` the queries and keys are rotated by the root index
(one :class:`RotaryEmbedding` shared by all layers); learned absolute positions are added in the
embedding block instead.

:func:`load_hf_roberta_weights` copies a ``transformers`` RoBERTa checkpoint into a GraphMERT model
with this backbone (used to pin numerical equivalence with ``transformers.RobertaModel``).
"""

from __future__ import annotations

from typing import Mapping, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig
from graphmert.model.attention import AttentionSpec, RotaryEmbedding, SelfAttention
from graphmert.model.backbones.base import BACKBONES, Backbone

__all__ = ["RobertaLayer", "RobertaBackbone", "load_hf_roberta_weights"]


class RobertaLayer(nn.Module):
    """One post-LN transformer layer: [B, L, H] → [B, L, H]."""

    def __init__(self, cfg: ModelConfig, rotary: Optional[RotaryEmbedding] = None) -> None:
        super().__init__()
        H = cfg.hidden_size
        self.attention = SelfAttention(H, cfg.num_heads, cfg.attention_dropout, cfg.attention_kernel,
                                       rotary)
        self.attn_out = nn.Linear(H, H)                                       # W_o
        self.attn_norm = nn.LayerNorm(H, eps=cfg.layer_norm_eps)
        self.ffn_in = nn.Linear(H, cfg.intermediate_size)                     # W_1
        self.ffn_out = nn.Linear(cfg.intermediate_size, H)                    # W_2
        self.ffn_norm = nn.LayerNorm(H, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, spec: AttentionSpec) -> Tensor:
        c = self.attention(x, spec)                                           # [B, L, H]
        a = self.attn_norm(x + self.dropout(self.attn_out(c)))                # [B, L, H]
        f = self.ffn_out(F.gelu(self.ffn_in(a)))                              # [B, L, H]
        return self.ffn_norm(a + self.dropout(f))                             # [B, L, H]


@BACKBONES.register("roberta")
class RobertaBackbone(Backbone):
    """``model.num_layers`` post-LN RoBERTa layers (the paper: 12 × (H 512, 8 heads, FFN 2048))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.rotary = (RotaryEmbedding(cfg.hidden_size // cfg.num_heads, cfg.rope_theta)
                       if cfg.position_embedding == "rotary" else None)
        self.layers = nn.ModuleList(RobertaLayer(cfg, self.rotary) for _ in range(cfg.num_layers))

    def forward(self, hidden: Tensor, spec: AttentionSpec) -> Tensor:
        for layer in self.layers:
            hidden = layer(hidden, spec)
        return hidden


# --------------------------------------------------------------------------------------------------
# transformers RoBERTa → GraphMERT weights
# --------------------------------------------------------------------------------------------------


def load_hf_roberta_weights(model: nn.Module, hf_state_dict: Mapping[str, Tensor],
                            padding_idx: int = 1) -> list[str]:
    """Copy a ``transformers`` RobertaModel / RobertaForMaskedLM state dict into ``model``.

    ``model`` is a :class:`~graphmert.model.GraphMERT` with the ``roberta`` backbone and learned
    positions. Mapping (``roberta.`` prefixes are stripped):

    * word embeddings → ``embeddings.word_embeddings``;
    * RoBERTa numbers tokens from ``padding_idx + 1``, so root i takes HF position row
      ``padding_idx + 1 + i``; the (single) token-type embedding row 0 is added into every position
      row, which gives the same sum as HF's word + token-type + position;
    * embedding LayerNorm, and per layer query/key/value (concatenated into ``qkv``), attention
      output dense + LayerNorm, intermediate dense, output dense + LayerNorm.

    H-GAT, decay, the MLM/SBO heads and HF's pooler/LM head are not touched. Returns the HF keys
    that were not used. Raises ValueError on a shape mismatch or a missing key, :class:`ConfigError`
    naming the model key when the config does not fit the HF model (backbone, positions, layers).
    """
    sd = {k.removeprefix("roberta."): v for k, v in hf_state_dict.items()}
    used: set[str] = set()

    def take(key: str) -> Tensor:
        if key not in sd:
            raise ValueError(f"HF RoBERTa state dict has no {key!r}")
        used.add(key)
        return sd[key]

    def put(param: Tensor, value: Tensor, name: str) -> None:
        if param.shape != value.shape:
            raise ValueError(f"{name}: shape {tuple(value.shape)} from the HF model does not match "
                             f"{tuple(param.shape)} in the GraphMERT model")
        param.copy_(value)

    emb, backbone = model.embeddings, model.backbone
    if not isinstance(backbone, RobertaBackbone):
        raise ConfigError(f"model.backbone: HF RoBERTa weights need the 'roberta' backbone, got "
                         f"{type(backbone).__name__}")
    if emb.position_embeddings is None:
        raise ConfigError("model.position_embedding: HF RoBERTa weights need 'learned' positions")
    n_hf = sum(1 for k in sd if k.startswith("encoder.layer.") and k.endswith(".attention.self.query.weight"))
    if n_hf != len(backbone.layers):
        raise ConfigError(f"model.num_layers: the HF model has {n_hf} layers, the GraphMERT model "
                         f"{len(backbone.layers)}")
    with torch.no_grad():
        put(emb.word_embeddings.weight, take("embeddings.word_embeddings.weight"), "word_embeddings")
        hf_pos = take("embeddings.position_embeddings.weight")                       # [P_hf, H]
        token_type = take("embeddings.token_type_embeddings.weight")[0]              # [H]
        rows = min(emb.position_embeddings.num_embeddings, hf_pos.shape[0] - padding_idx - 1)
        put(emb.position_embeddings.weight[:rows], hf_pos[padding_idx + 1: padding_idx + 1 + rows]
            + token_type, "position_embeddings")
        put(emb.norm.weight, take("embeddings.LayerNorm.weight"), "embeddings.norm.weight")
        put(emb.norm.bias, take("embeddings.LayerNorm.bias"), "embeddings.norm.bias")
        for i, layer in enumerate(backbone.layers):
            p = f"encoder.layer.{i}."
            for part in ("weight", "bias"):
                qkv = torch.cat([take(f"{p}attention.self.{n}.{part}") for n in ("query", "key", "value")])
                put(getattr(layer.attention.qkv, part), qkv, f"layers.{i}.attention.qkv.{part}")
                for ours, theirs in (("attn_out", "attention.output.dense"),
                                     ("attn_norm", "attention.output.LayerNorm"),
                                     ("ffn_in", "intermediate.dense"),
                                     ("ffn_out", "output.dense"),
                                     ("ffn_norm", "output.LayerNorm")):
                    put(getattr(getattr(layer, ours), part), take(f"{p}{theirs}.{part}"),
                        f"layers.{i}.{ours}.{part}")
    return sorted(set(sd) - used)
