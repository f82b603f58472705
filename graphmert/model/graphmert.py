"""GraphMERT: a graph-aware masked-language-model encoder over leafy chain graphs (DESIGN §5).

    x  = Embed(input_ids, root_index, leaf_slot)             [B, L, H]   token (+pos) + LN + dropout
    x  ← H-GAT(x; head → tail edges, relation per edge)      [B·L, H]    only leaf positions change
    h  = Backbone(x, spec)                                   [B, L, H]   spec: padding + decay f(d)
    y  = MLMHead(h[selected])                                [N, V]      roots (MLM) and leaves (MNM)
    y' = SBOHead(h[left], h[right], p_k)                     [S, V]      span boundary, training only
                                                                         (decoder E_tok, or its own
                                                                         D [V, H] when untied)

The decay f(d) = λ^{GELU(√d − p_h)} is one module shared by all layers; distances come from
``root_index``/``leaf_slot`` once per forward (:func:`graphmert.model.attention.build_attention_spec`).
Logits are computed only where the caller asks (``logits_at``): at masked positions that is a few
percent of B·L × V.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import Tensor, nn

from graphmert.config import ConfigError, ModelConfig
from graphmert.graph.batch import GraphBatch
from graphmert.graph.layout import SALIENCE_BUCKETS
from graphmert.model.attention import AttentionSpec, build_attention_spec
from graphmert.kg.schema import ENTITY_TYPES
from graphmert.model.backbones import build_backbone
from graphmert.model.candidates import CandidateHead, CandidateQuery
from graphmert.model.copy import LeafCopy
from graphmert.model.decay import build_decay
from graphmert.model.embeddings import GraphEmbeddings
from graphmert.model.prediction_heads import MLMHead, SpanBoundaryHead
from graphmert.model.hgat import HGAT

__all__ = ["GraphMERT", "GraphMERTOutput", "build_model", "parameter_breakdown"]

LogitsAt = Union[Tensor, str, None]


@dataclass
class GraphMERTOutput:
    """hidden [B, L, H]; logits [N, V] at the requested positions ([B, L, V] for "all") or None."""

    hidden: Tensor
    logits: Optional[Tensor] = None


class GraphMERT(nn.Module):
    """The GraphMERT network. Build with :func:`build_model`.

    Args:
        cfg: the model section of the config (validated here).
        vocab_size: V, the tokenizer's vocabulary size.
        num_relations: R, relations of the seed KG (one W_r, a_r each).
    """

    def __init__(self, cfg: ModelConfig, vocab_size: int, num_relations: int) -> None:
        super().__init__()
        cfg.validate()
        if vocab_size < 1:
            raise ConfigError(f"vocab_size: must be >= 1, got {vocab_size}")
        if num_relations < 0:
            raise ConfigError(f"num_relations: must be >= 0, got {num_relations}")
        self.config = cfg
        self.vocab_size = vocab_size
        self.num_relations = num_relations
        H = cfg.hidden_size
        self.decay = build_decay(cfg.decay_mode, cfg.num_heads, cfg.decay_lambda, cfg.decay_p_init)
        self.backbone = build_backbone(cfg)
        self.embeddings = GraphEmbeddings(
            vocab_size, H,
            num_positions=cfg.max_position_embeddings if cfg.position_embedding == "learned" else None,
            num_leaf_slots=cfg.max_leaf_slots if cfg.leaf_slot_embedding else None,
            layer_norm_eps=cfg.layer_norm_eps, dropout=cfg.dropout,
            num_entity_types=len(ENTITY_TYPES) if cfg.entity_type_embedding else None,
            num_salience_buckets=SALIENCE_BUCKETS if cfg.salience_embedding else None)
        self.hgat = HGAT(H, num_relations, cfg.relation_dropout) if cfg.hgat else None
        self.mlm_head = MLMHead(H, vocab_size, cfg.layer_norm_eps)
        self.sbo_head = (SpanBoundaryHead(H, vocab_size, cfg.sbo_max_span_length, cfg.layer_norm_eps,
                                          untied=cfg.sbo_decoder == "untied")
                         if cfg.sbo_head else None)
        self.candidate_head = CandidateHead(H, cfg.locality_features, cfg.pair_features) if cfg.candidate_head else None
        self.leaf_copy = LeafCopy(H) if cfg.leaf_copy else None
        self.reset_parameters()

    # -- initialisation ----------------------------------------------------------------------------

    def reset_parameters(self) -> None:
        """RoBERTa's init: N(0, initializer_range) for Linear/Embedding weights, zero biases, unit
        LayerNorm; H-GAT keeps its Glorot init, the decay its p_init; then backbone-specific init."""
        std = self.config.initializer_range
        skip = set(self.hgat.modules()) if self.hgat is not None else set()
        for module in self.modules():
            if module in skip:
                continue
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=std)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        for head in (self.mlm_head, self.sbo_head):
            if head is not None:
                nn.init.zeros_(head.bias)
        if self.hgat is not None:
            self.hgat.reset_parameters()
        if self.candidate_head is not None:
            self.candidate_head.reset_parameters()
        self.backbone.reset_parameters()

    # -- forward -----------------------------------------------------------------------------------

    @property
    def token_embedding(self) -> Tensor:
        """E_tok [V, H], shared by the input embedding, the MLM decoder and a tied SBO decoder."""
        return self.embeddings.word_embeddings.weight

    def embed(self, batch: GraphBatch) -> Tensor:
        """Embedding block, then H-GAT into the leaves: [B, L, H]."""
        x = self.embeddings(batch.input_ids, batch.root_index, batch.leaf_slot,
                            batch.entity_type, batch.entity_salience)               # [B, L, H]
        if self.hgat is not None and batch.hgat_edge_index.numel():
            B, L, H = x.shape
            x = self.hgat(x.reshape(B * L, H), batch.hgat_edge_index, batch.hgat_edge_type)
            x = x.view(B, L, H)
        return x

    def attention_spec(self, batch: GraphBatch) -> AttentionSpec:
        return build_attention_spec(batch, self.decay)

    def forward(self, batch: GraphBatch, logits_at: LogitsAt = None) -> GraphMERTOutput:
        """Encode a batch; optionally decode MLM logits at selected positions.

        Args:
            batch: a :class:`GraphBatch` (dense or packed layout).
            logits_at: None (no logits); a bool mask [B, L]; flat indices [N] into B·L; or "all".
        Returns:
            :class:`GraphMERTOutput` with hidden [B, L, H] and logits [N, V] (mask/indices, in
            flattened row-major order) or [B, L, V] ("all").
        """
        x = self.embed(batch)                                                       # [B, L, H]
        hidden = self.backbone(x, self.attention_spec(batch))                       # [B, L, H]
        logits = None if logits_at is None else self.mlm_logits(hidden, logits_at)
        return GraphMERTOutput(hidden=hidden, logits=logits)

    def mlm_logits(self, hidden: Tensor, at: Union[Tensor, str] = "all") -> Tensor:
        """MLM/MNM logits at positions ``at`` (bool [B, L], flat indices [N], or "all")."""
        if isinstance(at, str):
            if at != "all":
                raise ValueError(f"logits_at: expected a mask, indices or 'all', got {at!r}")
            return self.mlm_head(hidden, self.token_embedding)                      # [B, L, V]
        B, L, H = hidden.shape
        flat = hidden.reshape(B * L, H)
        selected = flat[at.reshape(-1)] if at.dtype == torch.bool else flat[at]     # [N, H]
        return self.mlm_head(selected, self.token_embedding)                        # [N, V]

    def sbo_logits(self, hidden: Tensor, left: Tensor, right: Tensor, rel_pos: Tensor) -> Tensor:
        """SpanBERT span-boundary logits for S span tokens.

        Args:
            hidden: [B, L, H] from :meth:`forward`.
            left, right: [S] flat indices into B·L of each target token's span boundaries (the
                positions just before and just after its masked span).
            rel_pos: [S] long, the target's 0-based offset inside its span.
        Returns: [S, V].
        """
        if self.sbo_head is None:
            raise ValueError("model.sbo_head is false: this model has no span-boundary head")
        flat = hidden.reshape(-1, hidden.shape[-1])
        return self.sbo_head(flat[left], flat[right], rel_pos, self.token_embedding)

    def leaf_log_probs(self, hidden: Tensor, batch: GraphBatch, index: Tensor, logits: Tensor) -> Tensor:
        """log p [N, V] of masked leaves at flat positions ``index`` [N] from their MNM ``logits``:
        log_softmax, mixed with copying from the roots when ``model.leaf_copy``
        (:mod:`graphmert.model.copy`)."""
        if self.leaf_copy is None:
            return torch.log_softmax(logits.float(), dim=-1)
        roots = batch.attention_mask & (batch.leaf_slot < 0)
        return self.leaf_copy(hidden, batch.input_ids, roots, index, logits)

    def candidate_logits(self, hidden: Tensor, query: CandidateQuery) -> tuple[Tensor, Tensor]:
        """(candidate logits [C], none logits [G]) of the query groups in ``query``
        (:class:`~graphmert.model.candidates.CandidateQuery`)."""
        if self.candidate_head is None:
            raise ValueError("model.candidate_head is false: this model has no candidate head")
        return self.candidate_head(hidden, query)


def build_model(model_cfg: ModelConfig, vocab_size: int, num_relations: int) -> GraphMERT:
    """A freshly initialised :class:`GraphMERT`. Unknown backbone / kernel / decay names raise a
    :class:`~graphmert.config.ConfigError` naming the config key and the known names."""
    return GraphMERT(model_cfg, vocab_size, num_relations)


def _count(module: Optional[nn.Module]) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def parameter_breakdown(model: GraphMERT) -> dict[str, int]:
    """Parameter counts: embeddings (incl. the tied MLM decoder), encoder (backbone + decay),
    relations (H-GAT W_r, a_r), heads (MLM transforms + biases, SBO — with its own V×H decoder when
    ``model.sbo_decoder`` is untied —, the candidate head), total (each parameter once)."""
    parts = {
        "embeddings": _count(model.embeddings),
        "encoder": _count(model.backbone) + _count(model.decay),
        "relations": _count(model.hgat),
        "heads": (_count(model.mlm_head) + _count(model.sbo_head) + _count(model.candidate_head)
                  + _count(model.leaf_copy)),
    }
    parts["total"] = sum(p.numel() for p in model.parameters())
    if parts["total"] != sum(v for k, v in parts.items() if k != "total"):
        raise AssertionError(f"parameter breakdown does not add up: {parts}")
    return parts
