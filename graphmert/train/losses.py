"""The pre-training objective: masked language modelling on roots, masked node modelling on leaves,
SpanBERT's span-boundary objective (DESIGN §6), and the candidate objective of query groups.

With per-token cross-entropies ℓ_t = −log softmax(z_t)[y_t] summed per term over the masked roots
(M), the masked leaves (N), the SBO targets (S) and the candidate questions (Q) of the whole
effective batch:

    paper:     L = (Σ_M ℓ + Σ_N ℓ) / (|M| + |N|)  +  Σ_S ℓ_sbo / |S|  +  ν · Σ_Q ℓ_cand / |Q|
    separate:  L = Σ_M ℓ / |M|  +  μ · Σ_N ℓ / |N|  +  Σ_S ℓ_sbo / |S|  +  ν · Σ_Q ℓ_cand / |Q|

with μ = ``train.mnm_weight`` and ν = ``train.candidate_weight``. The paper's code averages one
cross-entropy over roots and leaves together; ``separate`` normalises the MNM term on its own, so μ
is a real weight. A term with no targets contributes 0.

Candidate objective (:mod:`graphmert.model.candidates`). A query group q with candidate scores s(c)
over C_q and "none" score s(∅) has gold set Y_q (its gold tails among C_q, or {∅} when it has none):

    ℓ_cand(q) = −log Σ_{y ∈ Y_q} P(y | q) = logsumexp_{{∅} ∪ C_q} s − logsumexp_{Y_q} s

a multi-positive softmax: any gold tail answers the question.

Normalisers are counts over the *whole* effective batch (all micro-batches of all processes), so a
micro-batch contributes its *sums* divided by the global counts and the accumulated gradient is
independent of how the batch was split. Logits are computed only at masked positions
(``model(batch, logits_at=indices)``): N_r + N_l rows of [·, V] instead of B·L.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphmert.config import ConfigError
from graphmert.graph.candidates import CandidateQuery
from graphmert.model.candidates import segment_logsumexp
from graphmert.train.masking import MaskedBatch

__all__ = ["LOSS_FORMS", "TERMS", "TargetCounts", "summed_cross_entropy", "combine_losses",
           "term_means", "MaskedModelingObjective"]

LOSS_FORMS = ("paper", "separate")
TERMS = ("mlm", "mnm", "sbo", "cand")


@dataclass(frozen=True)
class TargetCounts:
    """Targets per term over the whole effective batch (the loss normalisers)."""

    mlm: int
    mnm: int
    sbo: int
    cand: int = 0

    def __add__(self, other: "TargetCounts") -> "TargetCounts":
        return TargetCounts(self.mlm + other.mlm, self.mnm + other.mnm, self.sbo + other.sbo,
                            self.cand + other.cand)


def summed_cross_entropy(logits: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """(Σ cross-entropy, number of correct top-1 predictions) of logits [N, V], labels [N].

    Computed in float32 whatever the logits' dtype; N = 0 gives (0, 0). A prediction is correct
    when the label's logit is the row maximum (a tie for the maximum counts as correct; ``amax`` is
    several times faster than ``argmax`` on CPU)."""
    if labels.numel() == 0:
        zero = logits.sum() * 0.0                       # keeps the graph (and the device) alive
        return zero.float(), torch.zeros((), dtype=torch.long, device=logits.device)
    ce = F.cross_entropy(logits.float(), labels, reduction="sum")
    z = logits.detach()
    correct = (z.gather(-1, labels.unsqueeze(-1)).squeeze(-1) >= z.amax(-1)).sum()
    return ce, correct


def combine_losses(sums: Mapping[str, Tensor], counts: TargetCounts, form: str,
                   mnm_weight: float = 1.0, candidate_weight: float = 1.0) -> Tensor:
    """The scalar loss from summed cross-entropies ``sums["mlm" | "mnm" | "sbo" | "cand"]`` and the
    global ``counts`` (see the module docstring)."""
    if form not in LOSS_FORMS:
        raise ConfigError(f"train.loss: {form!r} is not allowed; choose from {list(LOSS_FORMS)}")
    if form == "paper":
        loss = (sums["mlm"] + sums["mnm"]) / max(counts.mlm + counts.mnm, 1)
    else:
        loss = sums["mlm"] / max(counts.mlm, 1) + mnm_weight * sums["mnm"] / max(counts.mnm, 1)
    loss = loss + sums["sbo"] / max(counts.sbo, 1)
    return loss + candidate_weight * sums.get("cand", 0.0) / max(counts.cand, 1)


def term_means(sums: Mapping[str, float], counts: TargetCounts) -> dict[str, float]:
    """Per-term mean cross-entropy and accuracy (``<term>_loss``, ``<term>_acc``) for reporting."""
    out = {}
    for term in TERMS:
        n = getattr(counts, term)
        out[f"{term}_loss"] = float(sums[term]) / n if n else float("nan")
        out[f"{term}_acc"] = float(sums[f"{term}_correct"]) / n if n else float("nan")
    return out


class MaskedModelingObjective(nn.Module):
    """Wraps a :class:`~graphmert.model.GraphMERT` so that one ``forward`` does the whole objective
    (needed by DistributedDataParallel, which tracks parameters used inside ``forward`` only).

    ``forward(batch: MaskedBatch) -> dict`` with summed cross-entropies ``mlm``, ``mnm``, ``sbo``,
    ``cand`` (float32 scalars with gradient) and correct-prediction counts ``mlm_correct``,
    ``mnm_correct``, ``sbo_correct``, ``cand_correct`` (long scalars), plus ``mnm_tail_correct``:
    the correct MNM predictions that are tail tokens (not the end token of a "fixed" query), and
    ``mnm_tail_correct_generator``: the same from the MNM decoder alone, the copy path
    (``model.leaf_copy``) left out — argmax of softmax(z) rather than of the mixed p (equal to
    ``mnm_tail_correct`` without copying).
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: MaskedBatch) -> dict[str, Tensor]:
        n_r = batch.mlm_index.numel()
        index = torch.cat([batch.mlm_index, batch.mnm_index])                      # [N_r + N_l]
        out = self.model(batch.graph, logits_at=index)                             # logits [N, V]
        mlm, mlm_ok = summed_cross_entropy(out.logits[:n_r], batch.mlm_labels)
        leaves = generator = out.logits[n_r:]                                      # [N_l, V]
        if getattr(self.model, "leaf_copy", None) is not None and leaves.shape[0]:
            leaves = self.model.leaf_log_probs(out.hidden, batch.graph, batch.mnm_index, leaves)
        mnm, mnm_ok = summed_cross_entropy(leaves, batch.mnm_labels)
        tail_ok = _correct(leaves, batch.mnm_labels, ~batch.mnm_end)
        generator_ok = _correct(generator, batch.mnm_labels, ~batch.mnm_end)
        has_sbo = getattr(self.model, "sbo_head", None) is not None and batch.sbo_left.numel() > 0
        if has_sbo:
            sbo_logits = self.model.sbo_logits(out.hidden, batch.sbo_left, batch.sbo_right,
                                               batch.sbo_rel_pos)                   # [S, V]
            sbo, sbo_ok = summed_cross_entropy(sbo_logits, batch.sbo_labels)
        else:
            sbo = out.hidden.sum() * 0.0
            sbo_ok = torch.zeros((), dtype=torch.long, device=out.hidden.device)
        cand, cand_ok = candidate_loss(self.model, out.hidden, batch.candidates)
        return {"mlm": mlm, "mnm": mnm, "sbo": sbo.float(), "cand": cand,
                "mlm_correct": mlm_ok, "mnm_correct": mnm_ok, "sbo_correct": sbo_ok,
                "cand_correct": cand_ok, "mnm_tail_correct": tail_ok,
                "mnm_tail_correct_generator": generator_ok}


def _correct(logits: Tensor, labels: Tensor, where: Tensor) -> Tensor:
    """Rows of ``where`` whose label's logit is the row maximum (ties count as correct)."""
    if not bool(where.any()):
        return torch.zeros((), dtype=torch.long, device=logits.device)
    z, y = logits.detach()[where], labels[where]
    return (z.gather(-1, y.unsqueeze(-1)).squeeze(-1) >= z.amax(-1)).sum()


def candidate_loss(model: nn.Module, hidden: Tensor, cq: CandidateQuery) -> tuple[Tensor, Tensor]:
    """(Σ_Q ℓ_cand, number of groups whose top-scored option is gold) — module docstring."""
    G = cq.num_groups
    if G == 0 or getattr(model, "candidate_head", None) is None:
        return (hidden.sum() * 0.0).float(), torch.zeros((), dtype=torch.long, device=hidden.device)
    s, none = model.candidate_logits(hidden, cq)                                  # [C], [G]
    s, none = s.float(), none.float()
    groups = torch.arange(G, device=s.device)
    has_gold = torch.zeros(G, dtype=torch.bool, device=s.device)
    has_gold[cq.cand_group[cq.cand_positive]] = True
    every = segment_logsumexp(torch.cat([s, none]), torch.cat([cq.cand_group, groups]), G)   # [G]
    gold_v = torch.cat([s[cq.cand_positive], none[~has_gold]])
    gold_g = torch.cat([cq.cand_group[cq.cand_positive], groups[~has_gold]])
    gold = segment_logsumexp(gold_v, gold_g, G)                                   # [G]
    top = _segment_max(torch.cat([s, none]).detach(), torch.cat([cq.cand_group, groups]), G)
    best_gold = _segment_max(gold_v.detach(), gold_g, G)
    return (every - gold).sum(), (best_gold >= top).sum()


def _segment_max(values: Tensor, segment: Tensor, num: int) -> Tensor:
    out = torch.full((num,), float("-inf"), dtype=values.dtype, device=values.device)
    return out.scatter_reduce(0, segment, values, reduce="amax", include_self=True)
