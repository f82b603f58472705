"""Output heads: masked-token prediction (MLM/MNM) and the SpanBERT span-boundary objective.

The MLM head always decodes with the token embedding matrix E_tok [V, H] (weight tying); the caller
passes it in, so the tied matrix exists once in the model and in its checkpoint. The SBO head does the
same by default (``model.sbo_decoder: tied``); with ``untied`` it owns a separate matrix D [V, H], as
the paper's code does (its SBO decoder is an ``nn.Linear(H, V)`` of its own) — the parameters that
bring the paper's encoder to its quoted ~80M (V·H = 15,627,264 at V = 30,522, H = 512).

MLM head (over roots and leaves; two transform blocks as in the paper's code):

    z = LN(GELU(h W_1 + b_1));  z = LN(GELU(z W_2 + b_2));  logits = z E_tokᵀ + b        [N, V]

SBO head (SpanBERT; training only). For a token at relative position k inside a masked span whose
boundary tokens (just outside the span) have hidden states x_left, x_right:

    z = LN(GELU([x_left ‖ x_right ‖ p_k] W_1 + b_1));  z = LN(GELU(z W_2 + b_2))
    logits = z E_tokᵀ + b      (tied)      or      logits = z Dᵀ + b      (untied)          [S, V]

with W_1 [3H, H], W_2 [H, H], p_k a row of the position table [M, H], b [V] the head's own bias.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["TransformBlock", "MLMHead", "SpanBoundaryHead"]


class TransformBlock(nn.Module):
    """dense → GELU → LayerNorm:  [*, H_in] → [*, H]."""

    def __init__(self, in_size: int, hidden_size: int, layer_norm_eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(in_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(F.gelu(self.dense(x)))


class MLMHead(nn.Module):
    """Two transform blocks and the tied decoder with its own bias: [N, H] → [N, V]."""

    def __init__(self, hidden_size: int, vocab_size: int, layer_norm_eps: float) -> None:
        super().__init__()
        self.transform = nn.Sequential(TransformBlock(hidden_size, hidden_size, layer_norm_eps),
                                       TransformBlock(hidden_size, hidden_size, layer_norm_eps))
        self.bias = nn.Parameter(torch.zeros(vocab_size))                                   # [V]

    def forward(self, hidden: Tensor, decoder_weight: Tensor) -> Tensor:
        """hidden [N, H], decoder_weight = E_tok [V, H] → logits [N, V]."""
        return F.linear(self.transform(hidden), decoder_weight, self.bias)


class SpanBoundaryHead(nn.Module):
    """SpanBERT's span-boundary objective: predict a span token from its two boundary tokens.

    Args:
        hidden_size: H.  vocab_size: V.
        max_span_length: rows of the relative-position table (positions 0 .. max_span_length − 1).
        untied: own decoder D [V, H] (``decoder.weight``) instead of the caller's E_tok.
    """

    def __init__(self, hidden_size: int, vocab_size: int, max_span_length: int,
                 layer_norm_eps: float, untied: bool = False) -> None:
        super().__init__()
        self.max_span_length = max_span_length
        self.position_embeddings = nn.Embedding(max_span_length, hidden_size)         # [M, H]
        self.transform = nn.Sequential(TransformBlock(3 * hidden_size, hidden_size, layer_norm_eps),
                                       TransformBlock(hidden_size, hidden_size, layer_norm_eps))
        # D [V, H]: an nn.Linear so the model's init gives it N(0, initializer_range) like E_tok
        self.decoder = nn.Linear(hidden_size, vocab_size, bias=False) if untied else None
        self.bias = nn.Parameter(torch.zeros(vocab_size))                                   # [V]

    def forward(self, left: Tensor, right: Tensor, rel_pos: Tensor, decoder_weight: Tensor) -> Tensor:
        """left, right [S, H] boundary hidden states; rel_pos [S] long → [S, V].

        ``decoder_weight`` is E_tok [V, H]; an untied head ignores it and uses its own D.
        """
        if rel_pos.numel():
            lo, hi = (int(v) for v in torch.aminmax(rel_pos))
            if lo < 0 or hi >= self.max_span_length:
                raise ValueError(f"SBO relative position {lo if lo < 0 else hi} is outside "
                                 f"[0, model.sbo_max_span_length = {self.max_span_length}); raise "
                                 f"model.sbo_max_span_length or cap the span length in masking")
        z = torch.cat([left, right, self.position_embeddings(rel_pos)], dim=-1)  # [S, 3H]
        weight = self.decoder.weight if self.decoder is not None else decoder_weight        # [V, H]
        return F.linear(self.transform(z), weight, self.bias)
