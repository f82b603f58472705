"""The pre-training objective: masked language modelling on roots, masked node modelling on leaves,
and SpanBERT's span-boundary objective (DESIGN §6).

With per-token cross-entropies ℓ_t = −log softmax(z_t)[y_t] summed per term over the masked roots
(M), the masked leaves (N) and the SBO targets (S) of the whole effective batch:

    paper:     L = (Σ_M ℓ + Σ_N ℓ) / (|M| + |N|)  +  Σ_S ℓ_sbo / |S|
    separate:  L = Σ_M ℓ / |M|  +  μ · Σ_N ℓ / |N|  +  Σ_S ℓ_sbo / |S|          μ = train.mnm_weight

The paper's code averages one cross-entropy over roots and leaves together; ``separate`` normalises
the MNM term on its own, so μ is a real weight. A term with no targets contributes 0.

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
from graphmert.train.masking import MaskedBatch

__all__ = ["LOSS_FORMS", "TERMS", "TargetCounts", "summed_cross_entropy", "combine_losses",
           "term_means", "MaskedModelingObjective"]

LOSS_FORMS = ("paper", "separate")
TERMS = ("mlm", "mnm", "sbo")


@dataclass(frozen=True)
class TargetCounts:
    """Targets per term over the whole effective batch (the loss normalisers)."""

    mlm: int
    mnm: int
    sbo: int

    def __add__(self, other: "TargetCounts") -> "TargetCounts":
        return TargetCounts(self.mlm + other.mlm, self.mnm + other.mnm, self.sbo + other.sbo)


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
                   mnm_weight: float = 1.0) -> Tensor:
    """The scalar loss from summed cross-entropies ``sums["mlm" | "mnm" | "sbo"]`` and the global
    ``counts`` (see the module docstring)."""
    if form not in LOSS_FORMS:
        raise ConfigError(f"train.loss: {form!r} is not allowed; choose from {list(LOSS_FORMS)}")
    if form == "paper":
        loss = (sums["mlm"] + sums["mnm"]) / max(counts.mlm + counts.mnm, 1)
    else:
        loss = sums["mlm"] / max(counts.mlm, 1) + mnm_weight * sums["mnm"] / max(counts.mnm, 1)
    return loss + sums["sbo"] / max(counts.sbo, 1)


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

    ``forward(batch: MaskedBatch) -> dict`` with summed cross-entropies ``mlm``, ``mnm``, ``sbo``
    (float32 scalars with gradient) and correct-prediction counts ``mlm_correct``, ``mnm_correct``,
    ``sbo_correct`` (long scalars).
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: MaskedBatch) -> dict[str, Tensor]:
        n_r = batch.mlm_index.numel()
        index = torch.cat([batch.mlm_index, batch.mnm_index])                      # [N_r + N_l]
        out = self.model(batch.graph, logits_at=index)                             # logits [N, V]
        mlm, mlm_ok = summed_cross_entropy(out.logits[:n_r], batch.mlm_labels)
        mnm, mnm_ok = summed_cross_entropy(out.logits[n_r:], batch.mnm_labels)
        has_sbo = getattr(self.model, "sbo_head", None) is not None and batch.sbo_left.numel() > 0
        if has_sbo:
            sbo_logits = self.model.sbo_logits(out.hidden, batch.sbo_left, batch.sbo_right,
                                               batch.sbo_rel_pos)                   # [S, V]
            sbo, sbo_ok = summed_cross_entropy(sbo_logits, batch.sbo_labels)
        else:
            sbo = out.hidden.sum() * 0.0
            sbo_ok = torch.zeros((), dtype=torch.long, device=out.hidden.device)
        return {"mlm": mlm, "mnm": mnm, "sbo": sbo.float(),
                "mlm_correct": mlm_ok, "mnm_correct": mnm_ok, "sbo_correct": sbo_ok}
