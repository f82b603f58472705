"""Section ``model``: the GraphMERT network (DESIGN §5)."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from graphmert.config.options import ConfigError, _check_range, _coerce, opt


@dataclass
class ModelConfig:
    """The GraphMERT network (DESIGN §5). Defaults are the paper's 80M-parameter encoder.

    Registry names (``backbone``, ``attention_kernel``, ``decay_mode``) are checked where the model is
    built (:func:`graphmert.model.build_model`); :meth:`validate` re-checks ranges and the constraints
    between model keys for configs constructed in code.
    """

    backbone: str = opt("roberta", help="backbone registry name (roberta, ...)")
    hidden_size: int = opt(512, min=1, help="H: hidden size (divisible by num_heads)")
    num_layers: int = opt(12, min=1, help="transformer layers")
    num_heads: int = opt(8, min=1, help="attention heads per layer")
    intermediate_size: int = opt(2048, min=1, help="feed-forward inner size")
    dropout: float = opt(0.1, min=0.0, max=1.0, help="dropout on hidden states")
    attention_dropout: float = opt(0.1, min=0.0, max=1.0, help="dropout on attention probabilities")
    layer_norm_eps: float = opt(1e-12, min=0.0, min_exclusive=True, help="ε of the layer norms")
    attention_kernel: str = opt("sdpa", help="attention kernel registry name: eager, sdpa")
    decay_mode: str = opt("logit_scale", help="attention decay registry name: logit_scale, log_bias, none")
    decay_lambda: float = opt(0.6, min=0.0, max=1.0, min_exclusive=True, help="λ in f(d)=λ^GELU(√d−p)")
    decay_p_init: float = opt(1.0, help="initial p of the decay, one per head")
    position_embedding: str = opt("none", choices=("none", "learned", "rotary"),
                                  help="positions over the root index; leaves share their root's")
    max_position_embeddings: int = opt(514, min=1, help="rows of the learned position table (> roots)")
    rope_theta: float = opt(10000.0, min=0.0, min_exclusive=True, help="rotary base frequency")
    leaf_slot_embedding: bool = opt(False, help="add a learned embedding of the leaf slot (roots: row 0)")
    max_leaf_slots: int = opt(16, min=1, help="leaf-slot embedding rows for leaves (>= graph.num_leaves)")
    hgat: bool = opt(True, help="fuse relation embeddings into leaves with H-GAT")
    leaf_query: str = opt("tail", choices=("tail", "fixed"),
                          help="a masked leaf group is 'tail': as many [MASK] leaves as the tail has "
                               "tokens (the paper; extraction asks once per tail length), or "
                               "'fixed': all K leaves, the tail followed by [SEP] as its end (one "
                               "query scores tails of every length; an empty tail means 'none')")
    entity_type_embedding: bool = opt(False, help="add a learned embedding of the entity type to "
                                      "the roots of entity mentions (graphmert.kg.schema.ENTITY_TYPES)")
    salience_embedding: bool = opt(False, help="add a learned embedding of how often the document "
                                   "mentions the entity (bucketed) to the roots of its mentions")
    leaf_copy: bool = opt(False, help="masked leaves may copy root tokens (a pointer-generator over "
                          "the chunk's roots mixed into the MNM distribution; graphmert.model.copy)")
    candidate_head: bool = opt(False, help="score a query group's candidate tails, the chunk's "
                               "entities, and 'none' (graphmert.model.candidates); needs "
                               "leaf_query 'fixed'")
    locality_features: bool = opt(False, help="candidate_head: two more candidate features, whether "
                                  "the candidate is mentioned in the head's sentence and "
                                  "log(1 + sentence boundaries to its nearest mention) "
                                  "(graphmert.graph.candidates)")
    pair_features: bool = opt(False, help="candidate_head: also score each candidate from the query, "
                              "its state and the mean state of the roots between the head mention and "
                              "its nearest mention, through a perceptron (entity-marker-style relation "
                              "classification; graphmert.model.candidates)")
    relation_dropout: float = opt(0.3, min=0.0, max=1.0, help="dropout on W_r and a_r")
    sbo_head: bool = opt(True, help="SpanBERT span-boundary objective head (training only)")
    sbo_max_span_length: int = opt(10, min=1, help="relative-position rows of the SBO head")
    sbo_decoder: str = opt("tied", choices=("tied", "untied"),
                           help="SBO head's V×H output matrix: 'tied' reuses the token embedding "
                                "(cheaper); 'untied' gives it its own, as the paper's code does "
                                "(+V·H parameters, 15.6M at V=30,522, H=512)")
    initializer_range: float = opt(0.02, min=0.0, help="std of the normal initialisation of "
                                   "weights and embeddings")
    backbone_options: dict[str, Any] = opt(factory=dict, help="backbone-specific settings")

    def validate(self, prefix: str = "model") -> "ModelConfig":
        """Check types, ranges and the constraints between model keys; return self.

        Raises :class:`ConfigError` naming the dotted key. :func:`build` runs the same checks on
        loaded configs; this method is for configs constructed directly in code.
        """
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            key = f"{prefix}.{f.name}"
            value = _coerce(key, getattr(self, f.name), hints[f.name])
            _check_range(key, value, dict(f.metadata))
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"{prefix}.hidden_size: {self.hidden_size} is not divisible by "
                              f"{prefix}.num_heads ({self.num_heads})")
        if self.candidate_head and self.leaf_query != "fixed":
            raise ConfigError(f"{prefix}.candidate_head: needs {prefix}.leaf_query 'fixed' (the head reads "
                              f"the first leaf of a K-leaf query group)")
        if self.locality_features and not self.candidate_head:
            raise ConfigError(f"{prefix}.locality_features: needs {prefix}.candidate_head (they are "
                              f"features of its candidates)")
        if self.pair_features and not self.candidate_head:
            raise ConfigError(f"{prefix}.pair_features: needs {prefix}.candidate_head (they are "
                              f"features of its candidates)")
        if self.position_embedding == "rotary" and (self.hidden_size // self.num_heads) % 2:
            raise ConfigError(f"{prefix}.position_embedding: rotary needs an even head size, got "
                              f"hidden_size/num_heads = {self.hidden_size // self.num_heads}")
        return self
