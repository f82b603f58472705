"""The candidate head: which of a chunk's entities is the tail of a masked query group.

A query group is the block of K masked leaves that hangs on a head's first root with relation r fused
in by H-GAT (``model.leaf_query = "fixed"``). Its first leaf's final hidden state q asks "what is the
r-tail of this head?"; every entity c mentioned in the chunk answers with its mean final hidden state
over all its mention tokens, ē_c. With φ_c the candidate's structural features (below)::

    s(c)  = (W_q q)ᵀ (W_k ē_c) / √H  +  wᵀ φ_c        score of candidate c            W_q, W_k ∈ R^{H×H}
    s(∅)  = w_∅ᵀ q + b_∅                               score of "no tail in this chunk"
    P(c | group) = softmax over {∅} ∪ C_group

φ_c = log(1 + ·) of: c's mentions in the chunk, the roots from the head to c's nearest mention,
c's mentions in the whole document, the head entity's mentions in the document
(:mod:`graphmert.graph.candidates`): how often and how near the candidate is mentioned, which mean
pooling alone cannot express (a mean forgets how many mentions it averaged), and how salient both
entities are in a document the chunk may show only part of. With ``model.locality_features`` φ_c
also says whether c is mentioned in the head's sentence and how many sentence boundaries lie between
(log(1 + ·)): where the query state reads the words around the head, these say where c stands from
it. ``w`` starts at 0.

With ``model.pair_features`` the score also reads the pair the way relation classifiers with entity
markers do: the query state, the candidate's state and b̄_c, the mean final state of the roots
strictly between the head mention and c's nearest mention (the words that say how they relate;
zero when the mentions touch), through a two-layer perceptron::

    s(c) += vᵀ GELU(W_p [q ‖ ē_c ‖ b̄_c] + b_p)                        W_p ∈ R^{H×3H}, v ∈ R^H

``v`` starts at 0 too, so the head starts as the bilinear one. The bilinear term compares the two
states; this one lets the words between them speak to the pair (a lexical relation classifier's
strongest features are the words between the mentions: graphmert.extract.relation_typer).

Why a head of its own rather than the MNM likelihood of the candidate's tokens: both are computed
(extraction can rank by either, :mod:`graphmert.extract`), but a small encoder trained on CPU points
at the right mention better than it spells it out through the vocabulary (BioRED tuning slice: pair
F1 0.672 against 0.655 for the likelihood, docs/experiments/rankers.md), and the softmax over the chunk's own
entities with a "none" option is exactly the decision extraction makes.

Shapes: hidden [B, L, H] and a :class:`~graphmert.graph.candidates.CandidateQuery` of G groups
with C candidate rows over E entities → candidate logits [C], none logits [G].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from graphmert.graph.candidates import NUM_CANDIDATE_FEATURES, NUM_LOCALITY_FEATURES, CandidateQuery

__all__ = ["CandidateHead", "CandidateQuery", "segment_logsumexp", "span_means"]


def segment_logsumexp(values: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    """logsumexp of ``values`` [N] within each segment [N] ∈ [0, S) → [S] (−inf for empty ones)."""
    top = torch.full((num_segments,), float("-inf"), dtype=values.dtype, device=values.device)
    top = top.scatter_reduce(0, segment, values.detach(), reduce="amax", include_self=True)   # [S]
    safe = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    total = torch.zeros(num_segments, dtype=values.dtype, device=values.device)
    total = total.index_add(0, segment, torch.exp(values - safe[segment]))                   # [S]
    return torch.log(total) + safe


def span_means(hidden: Tensor, spans: Tensor) -> Tensor:
    """Mean of ``hidden`` [B, L, H] over each flat span [lo, hi) of ``spans`` [S, 2] (within one row
    of the batch; flat = b·L + position) → [S, H]; zero for an empty span. Row-wise prefix sums (in
    float32 at least, float64 for float64 states), so a span costs two gathers."""
    B, L, H = hidden.shape
    acc = torch.float64 if hidden.dtype == torch.float64 else torch.float32
    prefix = torch.cat([hidden.new_zeros(B, 1, H, dtype=acc),
                        hidden.to(acc).cumsum(1)], dim=1).reshape(B * (L + 1), H)       # [B·(L+1), H]
    lo, hi = spans[:, 0], spans[:, 1]
    row = lo // L                                                                       # [S]
    lo_at, hi_at = lo + row, hi + row                                   # b·(L+1) + position in the prefix
    n = (hi - lo).clamp(min=1).unsqueeze(-1).to(acc)                                    # [S, 1]
    return ((prefix[hi_at] - prefix[lo_at]) / n).to(hidden.dtype)                       # [S, H]


class CandidateHead(nn.Module):
    """Scores a query group's candidate tails and its "none" option (module docstring).

    Args:
        hidden_size: H.
        locality: read the two locality features too (``model.locality_features``).
        pair: the pair term over the query, the candidate and the roots between them
            (``model.pair_features``).
    """

    def __init__(self, hidden_size: int, locality: bool = False, pair: bool = False) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.num_features = NUM_CANDIDATE_FEATURES - (0 if locality else NUM_LOCALITY_FEATURES)
        self.query = nn.Linear(hidden_size, hidden_size)          # W_q
        self.key = nn.Linear(hidden_size, hidden_size)            # W_k
        self.none = nn.Linear(hidden_size, 1)                     # w_∅, b_∅
        self.features = nn.Linear(self.num_features, 1, bias=False)          # w
        self.pair = nn.Sequential(nn.Linear(3 * hidden_size, hidden_size), nn.GELU(),
                                  nn.Linear(hidden_size, 1)) if pair else None   # W_p, b_p; v
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The model's init covers the projections; the feature weights start at 0 (a pure
        content model at step 0)."""
        nn.init.zeros_(self.features.weight)
        if self.pair is not None:
            nn.init.zeros_(self.pair[2].weight)
            nn.init.zeros_(self.pair[2].bias)

    def entity_states(self, flat: Tensor, entity_token: Tensor, entity_of_token: Tensor,
                      num_entities: int) -> Tensor:
        """ē [E, H]: the mean hidden state of each entity's mention tokens."""
        H = flat.shape[-1]
        total = torch.zeros(num_entities, H, dtype=flat.dtype, device=flat.device)
        total = total.index_add(0, entity_of_token, flat[entity_token])                  # [E, H]
        count = torch.zeros(num_entities, dtype=flat.dtype, device=flat.device)
        count = count.index_add(0, entity_of_token, torch.ones_like(entity_of_token, dtype=flat.dtype))
        return total / count.clamp(min=1).unsqueeze(-1)                                  # [E, H]

    def forward(self, hidden: Tensor, cq: CandidateQuery) -> tuple[Tensor, Tensor]:
        """(candidate logits [C], none logits [G]); see the module docstring for the shapes."""
        flat = hidden.reshape(-1, hidden.shape[-1])                                      # [B·L, H]
        q_state = flat[cq.query_index]                                                   # [G, H]
        q = self.query(q_state)                                                          # [G, H]
        ent = self.entity_states(flat, cq.entity_token, cq.entity_of_token, cq.num_entities)
        k = self.key(ent)                                                                # [E, H]
        s = (q[cq.cand_group] * k[cq.cand_entity]).sum(-1) / math.sqrt(self.hidden_size)  # [C]
        phi = cq.cand_features[:, :self.num_features].to(flat.dtype)                     # [C, F]
        s = s + self.features(phi).squeeze(-1)                                           # [C]
        if self.pair is not None:
            if cq.cand_between is None:
                raise ValueError("model.pair_features: the candidate query has no between spans")
            between = span_means(hidden, cq.cand_between)                                # [C, H]
            x = torch.cat([q_state[cq.cand_group], ent[cq.cand_entity], between], dim=-1)  # [C, 3H]
            s = s + self.pair(x).squeeze(-1)                                             # [C]
        return s, self.none(q_state).squeeze(-1)                                         # [C], [G]

    def margins(self, hidden: Tensor, cq: CandidateQuery) -> Tensor:
        """σ(s(c) − s(∅)) [C]: each candidate against "none" alone, whatever else is a candidate —
        comparable across questions with different candidate sets (e.g. across relations)."""
        s, none = self(hidden, cq)
        return torch.sigmoid(s - none[cq.cand_group])

    def probabilities(self, hidden: Tensor, cq: CandidateQuery) -> tuple[Tensor, Tensor]:
        """(P(candidate) [C], P(none) [G]): the softmax over each group's {∅} ∪ candidates."""
        s, none = self(hidden, cq)
        G = cq.num_groups
        values = torch.cat([s, none])                                                    # [C + G]
        segment = torch.cat([cq.cand_group, torch.arange(G, device=s.device)])
        z = segment_logsumexp(values, segment, G)                                        # [G]
        return torch.exp(s - z[cq.cand_group]), torch.exp(none - z)

    def extra_repr(self) -> str:
        return f"hidden_size={self.hidden_size}, features={self.num_features}, pair={self.pair is not None}"
