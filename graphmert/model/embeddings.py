"""Input embeddings of a leafy chain graph (RoBERTa's embedding block, graph positions).

    e = E_tok[x]                                   token embedding (tied with the MLM decoder)
      + P[root_index]        if position_embedding = "learned"   (leaves share their root's row)
      + S[leaf_slot + 1]     if leaf_slot_embedding              (row 0: roots and padding)
      + T[entity_type]       if entity_type_embedding            (row 0: not in an entity mention)
      + U[entity_salience]   if salience_embedding               (row 0: not in an entity mention)
    e ← Dropout(LayerNorm(e))

Shapes: input_ids, root_index, leaf_slot, entity_type, entity_salience [B, L] long → [B, L, H].

The entity-type table marks which roots belong to an entity mention and of which type
(:data:`graphmert.kg.schema.ENTITY_TYPES`): the candidates a query group chooses among are exactly
these mentions, and their spans are known wherever heads are (annotations, lexicon matches). The
salience table adds how often the whole document mentions the entity (bucketed,
:func:`graphmert.graph.layout.salience_bucket`): a chunk of a longer document cannot count that
itself, and the entities an abstract is about are the ones its relations involve.

The paper's code has no position embedding: order reaches the model only through the symmetric
graph-distance decay. Rotary positions (``position_embedding = "rotary"``) act inside attention and
are the backbone's business (:class:`graphmert.model.attention.RotaryEmbedding`).
"""

from __future__ import annotations

from typing import Optional

from torch import Tensor, nn

__all__ = ["GraphEmbeddings"]


class GraphEmbeddings(nn.Module):
    """Token (+ learned root-position) (+ leaf-slot) embeddings, LayerNorm, dropout.

    Args:
        vocab_size: V.  hidden_size: H.
        num_positions: rows of the learned position table, or None for no learned positions.
        num_leaf_slots: K_max, leaf slots with their own row, or None for no leaf-slot embedding.
        num_entity_types: rows of the entity-type table, or None for none.
        num_salience_buckets: rows of the salience table, or None for none.
        layer_norm_eps, dropout: as RoBERTa's embedding block.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_positions: Optional[int] = None,
                 num_leaf_slots: Optional[int] = None, layer_norm_eps: float = 1e-12,
                 dropout: float = 0.1, num_entity_types: Optional[int] = None,
                 num_salience_buckets: Optional[int] = None) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)                 # [V, H]
        self.position_embeddings = (nn.Embedding(num_positions, hidden_size)         # [P, H]
                                    if num_positions else None)
        self.leaf_slot_embeddings = (nn.Embedding(num_leaf_slots + 1, hidden_size)   # [K_max + 1, H]
                                     if num_leaf_slots else None)
        self.entity_type_embeddings = (nn.Embedding(num_entity_types, hidden_size)      # [T, H]
                                       if num_entity_types else None)
        self.salience_embeddings = (nn.Embedding(num_salience_buckets, hidden_size)      # [U, H]
                                    if num_salience_buckets else None)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids: Tensor, root_index: Tensor, leaf_slot: Tensor,
                entity_type: Optional[Tensor] = None, entity_salience: Optional[Tensor] = None) -> Tensor:
        e = self.word_embeddings(input_ids)                                           # [B, L, H]
        if self.position_embeddings is not None:
            e = e + self.position_embeddings(root_index)
        if self.leaf_slot_embeddings is not None:
            e = e + self.leaf_slot_embeddings(leaf_slot + 1)
        if self.entity_type_embeddings is not None and entity_type is not None:
            e = e + self.entity_type_embeddings(entity_type)
        if self.salience_embeddings is not None and entity_salience is not None:
            e = e + self.salience_embeddings(entity_salience)
        return self.dropout(self.norm(e))                                             # [B, L, H]
