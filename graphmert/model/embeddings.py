"""Input embeddings of a leafy chain graph (RoBERTa's embedding block, graph positions).

    e = E_tok[x]                                   token embedding (tied with the MLM decoder)
      + P[root_index]        if position_embedding = "learned"   (leaves share their root's row)
      + S[leaf_slot + 1]     if leaf_slot_embedding              (row 0: roots and padding)
    e ← Dropout(LayerNorm(e))

Shapes: input_ids, root_index, leaf_slot [B, L] long → [B, L, H].

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
        layer_norm_eps, dropout: as RoBERTa's embedding block.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_positions: Optional[int] = None,
                 num_leaf_slots: Optional[int] = None, layer_norm_eps: float = 1e-12,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)                 # [V, H]
        self.position_embeddings = (nn.Embedding(num_positions, hidden_size)         # [P, H]
                                    if num_positions else None)
        self.leaf_slot_embeddings = (nn.Embedding(num_leaf_slots + 1, hidden_size)   # [K_max + 1, H]
                                     if num_leaf_slots else None)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids: Tensor, root_index: Tensor, leaf_slot: Tensor) -> Tensor:
        e = self.word_embeddings(input_ids)                                           # [B, L, H]
        if self.position_embeddings is not None:
            e = e + self.position_embeddings(root_index)
        if self.leaf_slot_embeddings is not None:
            e = e + self.leaf_slot_embeddings(leaf_slot + 1)
        return self.dropout(self.norm(e))                                             # [B, L, H]
