"""H-GAT: hierarchical graph attention that fuses relation embeddings into leaf tokens (DESIGN §5).

For an injected triple (h, r, t) with head tokens h_1..h_m (roots) and tail tokens t_1..t_n (leaves
of the head's first root), every tail token attends over the head tokens through relation r:

    e_ij = LeakyReLU_0.01( a_rᵀ [ W_r t_i ‖ W_r h_j ] )          a_r ∈ R^{2H},  W_r ∈ R^{H×H}
    α_ij = softmax_j( e_ij )                                      over tail i's incoming edges
    t_i ← t_i + Σ_j α_ij W_r h_j

Only tail (leaf) positions change; every other position passes through unchanged. During training,
dropout (``relation_dropout``, 0.3 in the paper) is applied element-wise to W_r and a_r.

It is a :class:`~torch_geometric.nn.MessagePassing` layer over head-token → tail-token edges
(source j = head token, target i = tail token), with sum aggregation of α_ij · W_r h_j.

Efficiency. Writing a_r = [a_r^t ‖ a_r^h] (tail half, head half):

* a_r^tᵀ (W_r t_i) = (W_rᵀ a_r^t)ᵀ t_i — the tail term needs one vector u_r = W_rᵀ a_r^t per
  relation and a dot product per edge; W_r t_i is never formed.
* W_r h_j is computed once per distinct (head token, relation) pair, not per edge (a head token
  sends the same message to all n tail tokens), with one matmul per relation present in the batch
  (pairs grouped by relation; the loop runs over relations, never over triples or tokens).

Conventions: ``weight[r]`` is stored [H_in, H_out] and W_r x = x @ weight[r]; ``att[r]`` is [2H].

Shapes:
    x [N, H] (N = B·L flattened positions), edge_index [2, E] (row 0 = head token j, row 1 = tail
    token i), edge_type [E] → [N, H].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import softmax

from graphmert.model.pyg_templates import remove_propagate_file

__all__ = ["HGAT"]


class HGAT(MessagePassing):
    """Relation-aware graph attention from head tokens into tail (leaf) tokens.

    Args:
        hidden_size: H.
        num_relations: number of relations R (one W_r and a_r each).
        relation_dropout: element-wise dropout on W_r and a_r in training.
        negative_slope: LeakyReLU slope (0.01 in the paper).
    """

    def __init__(self, hidden_size: int, num_relations: int, relation_dropout: float = 0.3,
                 negative_slope: float = 0.01) -> None:
        super().__init__(aggr="add", flow="source_to_target", node_dim=0)
        remove_propagate_file(type(self))        # PyG's rendered propagate, left in the temp dir
        self.hidden_size = hidden_size
        self.num_relations = num_relations
        self.relation_dropout = relation_dropout
        self.negative_slope = negative_slope
        self.weight = nn.Parameter(torch.empty(num_relations, hidden_size, hidden_size))  # [R, H, H]
        self.att = nn.Parameter(torch.empty(num_relations, 2 * hidden_size))              # [R, 2H]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform W_r and a_r per relation (as PyG's GATConv)."""
        H = self.hidden_size
        bound_w = math.sqrt(6.0 / (H + H))
        bound_a = math.sqrt(6.0 / (1 + 2 * H))
        with torch.no_grad():
            self.weight.uniform_(-bound_w, bound_w)
            self.att.uniform_(-bound_a, bound_a)

    def _check_types(self, edge_type: Tensor) -> None:
        """A clear error for relation ids outside [0, R) (one host sync)."""
        lo, hi = (int(v) for v in torch.aminmax(edge_type))
        if lo < 0 or hi >= self.num_relations:
            raise ValueError(f"hgat_edge_type: relation id {lo if lo < 0 else hi} is outside "
                             f"[0, {self.num_relations}) (the model was built with "
                             f"{self.num_relations} relations)")

    def forward(self, x: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        """x [N, H], edge_index [2, E] (head → tail), edge_type [E] → updated x [N, H]."""
        if edge_index.numel() == 0:
            return x
        N, H = x.shape
        R = self.num_relations
        self._check_types(edge_type)
        src, dst = edge_index[0], edge_index[1]                                 # [E], [E]
        p = self.relation_dropout if self.training else 0.0
        att = F.dropout(self.att, p=p, training=self.training)                  # [R, 2H]
        a_tail, a_head = att[:, :H], att[:, H:]                                 # [R, H] each

        # Distinct (head token, relation) pairs, grouped by relation.
        pair, edge_to_pair = torch.unique(src * R + edge_type, return_inverse=True)  # [P], [E]
        pair_src, pair_rel = pair // R, pair % R                                # [P], [P]
        order = torch.argsort(pair_rel, stable=True)                            # [P]
        counts = torch.bincount(pair_rel, minlength=R).tolist()                # R ints (host sync)
        groups = x[pair_src[order]].split(counts)                               # R × [P_r, H]

        projected, u_rows, used = [], [], []
        for r, h_r in enumerate(groups):
            if h_r.shape[0] == 0:
                continue
            w_r = F.dropout(self.weight[r], p=p, training=self.training)        # [H, H]
            projected.append(h_r @ w_r)                                         # [P_r, H] = W_r h_j
            u_rows.append(w_r @ a_tail[r])                                      # [H] = W_rᵀ a_r^t
            used.append(r)
        wh_sorted = torch.cat(projected)                                        # [P, H]
        wh = torch.empty_like(wh_sorted).index_copy(0, order, wh_sorted)       # [P, H] pair order
        used_t = torch.tensor(used, device=x.device)
        u = wh.new_zeros(R, H).index_copy(0, used_t, torch.stack(u_rows).to(wh.dtype))  # [R, H]

        msg = wh[edge_to_pair]                                                  # [E, H] = W_r h_j
        score = ((x[dst].to(wh.dtype) * u[edge_type]).sum(-1)                   # a_r^tᵀ W_r t_i
                 + (msg * a_head[edge_type].to(wh.dtype)).sum(-1))              # a_r^hᵀ W_r h_j
        score = F.leaky_relu(score, self.negative_slope)                        # [E]
        out = self.propagate(edge_index, msg=msg, score=score, size=(N, N))     # [N, H]
        return x + out.to(x.dtype)

    def message(self, msg: Tensor, score: Tensor, index: Tensor, ptr: Tensor | None,
                size_i: int | None) -> Tensor:
        alpha = softmax(score, index, ptr, size_i)                              # [E], per tail token
        return alpha.unsqueeze(-1) * msg                                        # [E, H]

    def extra_repr(self) -> str:
        return (f"hidden_size={self.hidden_size}, num_relations={self.num_relations}, "
                f"relation_dropout={self.relation_dropout}")
