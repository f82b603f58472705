"""Task heads for using a backbone stand-alone on plain token sequences (NeoBERT's LM and
sequence-classification heads), outside GraphMERT's graph pipeline.

A plain sequence is a leafy chain graph with roots only: position m has root index m, leaf slot −1,
and the graph distance of positions m, n is |m − n|. :class:`SequenceEncoder` embeds it with
GraphMERT's embedding block and runs any registered backbone with the configured decay:

    x = Embed(input_ids)                              [B, L, H]   (token (+ learned pos) + LN + dropout)
    h = Backbone(x, spec(attention_mask, |m − n|))    [B, L, H]

Heads:

* :class:`LMHead` — logits = h W_dᵀ + b                                          [B, L, V]
  (with ``normalized``, nGPT's form: logits = s_z ⊙ (h Ŵ_dᵀ), rows of Ŵ_d unit-norm, s_z learnable)
* :class:`SequenceClassificationHead` — on the first ([CLS]) token:
  x = h[:, 0];  logits = Dropout(tanh(Dropout(x) W_1 + b_1)) W_2 + b_2              [B, C]

:class:`BackboneForMaskedLM` and :class:`BackboneForSequenceClassification` combine the two with the
losses: masked-LM cross-entropy over labels ≠ −100; for classification cross-entropy over C ≥ 2
classes (long labels [B]), BCE-with-logits for multi-label float targets [B, C], and MSE for C = 1
(regression). Parameters are initialised BERT-style (normal(0, ``initializer_range``), zero biases,
unit norms), then by the backbone's own :meth:`~Backbone.reset_parameters`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig
from graphmert.graph.batch import graph_distance
from graphmert.model.attention import AttentionSpec
from graphmert.model.backbones.base import Backbone, build_backbone
from graphmert.model.backbones.rmsnorm import l2_normalize
from graphmert.model.decay import build_decay
from graphmert.model.embeddings import GraphEmbeddings

__all__ = ["LMHead", "SequenceClassificationHead", "SequenceEncoder", "BackboneForMaskedLM",
           "BackboneForSequenceClassification", "SequenceOutput", "init_bert_weights",
           "sequence_attention_spec"]


def init_bert_weights(module: nn.Module, std: float) -> None:
    """normal(0, std) Linear/Embedding weights, zero biases, unit LayerNorm; then every backbone's
    own :meth:`reset_parameters` (RMSNorm gains, bridge gates, nGPT scalers)."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    for m in module.modules():
        if isinstance(m, Backbone):
            m.reset_parameters()


def sequence_attention_spec(attention_mask: Tensor, decay: nn.Module) -> AttentionSpec:
    """Spec of plain sequences: positions 0..L−1, no leaves, decay over |m − n|.  mask [B, L] bool."""
    B, L = attention_mask.shape
    positions = torch.arange(L, device=attention_mask.device).expand(B, L)
    leaf_slot = torch.full_like(positions, -1)
    spec = AttentionSpec(key_padding_mask=attention_mask, positions=positions, leaf_slot=leaf_slot)
    if getattr(decay, "uses_distance", False):
        terms = decay(graph_distance(positions[:1], leaf_slot[:1]))        # [1, L, L] → [1, h, L, L]
        spec.decay_bias, spec.decay_scale = terms.bias, terms.scale
    return spec


@dataclass
class SequenceOutput:
    """logits ([B, L, V] or [B, C]), hidden [B, L, H], loss (a scalar when labels were given)."""

    logits: Tensor
    hidden: Tensor
    loss: Optional[Tensor] = None


class LMHead(nn.Module):
    """Token logits from final hidden states: [*, H] → [*, V].

    Args:
        hidden_size: H.  vocab_size: V.
        normalized: nGPT form — unit-norm decoder rows, no bias, a learnable per-token scale s_z
            (stored as ŝ_z = 1/√H, used as ŝ_z·√H, so s_z starts at 1).
    """

    def __init__(self, hidden_size: int, vocab_size: int, normalized: bool = False) -> None:
        super().__init__()
        self.normalized = normalized
        self.decoder = nn.Linear(hidden_size, vocab_size, bias=not normalized)     # W_d [V, H]
        self.s_z = nn.Parameter(torch.full((vocab_size,), hidden_size ** -0.5)) if normalized else None
        self.hidden_size = hidden_size

    def reset_parameters(self) -> None:
        if self.s_z is not None:
            nn.init.constant_(self.s_z, self.hidden_size ** -0.5)

    def forward(self, hidden: Tensor) -> Tensor:
        if not self.normalized:
            return self.decoder(hidden)
        logits = F.linear(hidden, l2_normalize(self.decoder.weight, dim=1))       # cosines
        return logits * (self.s_z * math.sqrt(self.hidden_size)).to(logits.dtype)


class SequenceClassificationHead(nn.Module):
    """NeoBERT's / RoBERTa's classification head on the [CLS] token: [B, L, H] → [B, C].

    Args:
        hidden_size: H.  num_labels: C.  dropout: before and after the tanh dense layer.
    """

    def __init__(self, hidden_size: int, num_labels: int, dropout: float) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)                    # W_1
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)                # W_2

    def forward(self, hidden: Tensor) -> Tensor:
        x = self.dropout(hidden[:, 0])                                      # [B, H]  CLS token
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.classifier(x)                                           # [B, C]


class SequenceEncoder(nn.Module):
    """Embedding block + backbone (``cfg.backbone``) + decay over plain token sequences.

    Args:
        cfg: the model config (backbone, options, decay, dimensions).  vocab_size: V.
    """

    def __init__(self, cfg: ModelConfig, vocab_size: int) -> None:
        super().__init__()
        cfg.validate()
        self.config = cfg
        self.embeddings = GraphEmbeddings(
            vocab_size, cfg.hidden_size,
            num_positions=cfg.max_position_embeddings if cfg.position_embedding == "learned" else None,
            layer_norm_eps=cfg.layer_norm_eps, dropout=cfg.dropout)
        self.decay = build_decay(cfg.decay_mode, cfg.num_heads, cfg.decay_lambda, cfg.decay_p_init)
        self.backbone = build_backbone(cfg)

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        """input_ids [B, L] long, attention_mask [B, L] (True/1 at real tokens) → hidden [B, L, H]."""
        B, L = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(B, L, dtype=torch.bool, device=input_ids.device)
        attention_mask = attention_mask.bool()
        positions = torch.arange(L, device=input_ids.device).expand(B, L)
        table = self.embeddings.position_embeddings
        if table is not None and L > table.num_embeddings:
            raise ValueError(f"sequence length {L} exceeds model.max_position_embeddings "
                             f"({table.num_embeddings})")
        x = self.embeddings(input_ids, positions, torch.full_like(positions, -1))    # [B, L, H]
        return self.backbone(x, sequence_attention_spec(attention_mask, self.decay))


class BackboneForMaskedLM(nn.Module):
    """:class:`SequenceEncoder` + :class:`LMHead`; loss = CE over positions with label ≠ −100."""

    def __init__(self, cfg: ModelConfig, vocab_size: int) -> None:
        super().__init__()
        self.encoder = SequenceEncoder(cfg, vocab_size)
        normalized = bool(getattr(self.encoder.backbone.opts, "normalized", False))
        self.lm_head = LMHead(cfg.hidden_size, vocab_size, normalized=normalized)
        init_bert_weights(self, cfg.initializer_range)
        self.lm_head.reset_parameters()

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,
                labels: Optional[Tensor] = None) -> SequenceOutput:
        hidden = self.encoder(input_ids, attention_mask)                    # [B, L, H]
        logits = self.lm_head(hidden)                                       # [B, L, V]
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                   ignore_index=-100)
        return SequenceOutput(logits=logits, hidden=hidden, loss=loss)


class BackboneForSequenceClassification(nn.Module):
    """:class:`SequenceEncoder` + :class:`SequenceClassificationHead` on the first token.

    Args:
        cfg: the model config.  vocab_size: V.  num_labels: C (1: regression with MSE).
        classifier_dropout: dropout of the head (None: ``cfg.dropout``).
    """

    def __init__(self, cfg: ModelConfig, vocab_size: int, num_labels: int,
                 classifier_dropout: Optional[float] = None) -> None:
        super().__init__()
        if num_labels < 1:
            raise ConfigError(f"num_labels: must be >= 1, got {num_labels}")
        self.num_labels = num_labels
        self.encoder = SequenceEncoder(cfg, vocab_size)
        p = cfg.dropout if classifier_dropout is None else classifier_dropout
        self.head = SequenceClassificationHead(cfg.hidden_size, num_labels, p)
        init_bert_weights(self, cfg.initializer_range)

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,
                labels: Optional[Tensor] = None) -> SequenceOutput:
        """labels: long [B] (C ≥ 2, cross-entropy), float [B] or [B, 1] (C = 1, MSE), or float
        [B, C] (multi-label, BCE with logits)."""
        hidden = self.encoder(input_ids, attention_mask)                    # [B, L, H]
        logits = self.head(hidden)                                          # [B, C]
        loss = None
        if labels is not None:
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.reshape(-1).float())
            elif not labels.is_floating_point():
                loss = F.cross_entropy(logits.float(), labels.reshape(-1).long())
            elif labels.shape == logits.shape:
                loss = F.binary_cross_entropy_with_logits(logits.float(), labels.float())
            else:
                raise ValueError(f"labels: expected class indices [B] (long) or multi-label targets "
                                 f"{list(logits.shape)} (float), got {labels.dtype} {list(labels.shape)}")
        return SequenceOutput(logits=logits, hidden=hidden, loss=loss)
