"""Losses: both forms against a naive log-softmax on hand-built logits, split invariance, and the
objective module (logits only at masked positions, equal to gathering the full logits)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphmert.config import ConfigError, TrainConfig
from graphmert.corpus.tokenizer import special_ids
from graphmert.model import build_model
from graphmert.train.losses import (MaskedModelingObjective, TargetCounts, combine_losses, summed_cross_entropy,
                                    term_means)
from graphmert.train.masking import MaskingCollator, MaskingSpec
from train_helpers import random_graphs, tiny_config

ROOT_LOGITS = [[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 0.4], [-2.0, 1.0, 3.0, 0.5]]
ROOT_LABELS = [0, 3, 1]
LEAF_LOGITS = [[1.0, 1.5, 1.0, 1.0], [0.0, -1.0, 4.0, 2.0]]
LEAF_LABELS = [2, 2]
SBO_LOGITS = [[0.5, -0.5, 0.0, 1.5], [3.0, 0.0, 0.0, 0.0]]
SBO_LABELS = [3, 1]


def naive_ce(logits, labels) -> list[float]:
    out = []
    for row, y in zip(logits, labels):
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        out.append(lse - row[y])
    return out


def sums_of(logits, labels):
    s, c = summed_cross_entropy(torch.tensor(logits), torch.tensor(labels))
    return s, c


def hand_sums():
    (mlm, mlm_ok), (mnm, mnm_ok), (sbo, sbo_ok) = (sums_of(ROOT_LOGITS, ROOT_LABELS),
                                                     sums_of(LEAF_LOGITS, LEAF_LABELS),
                                                     sums_of(SBO_LOGITS, SBO_LABELS))
    return {"mlm": mlm, "mnm": mnm, "sbo": sbo, "mlm_correct": mlm_ok, "mnm_correct": mnm_ok,
            "sbo_correct": sbo_ok}


def test_summed_cross_entropy_matches_naive():
    s, c = sums_of(ROOT_LOGITS, ROOT_LABELS)
    assert float(s) == pytest.approx(sum(naive_ce(ROOT_LOGITS, ROOT_LABELS)), rel=1e-6)
    assert int(c) == 2                     # rows 0 and 1 are right (argmax 0, 3); row 2 is not
    _, c = sums_of([[1.0, 1.0, 0.0]], [1])
    assert int(c) == 1                     # a tie for the maximum counts as correct
    s, c = summed_cross_entropy(torch.zeros(0, 4), torch.zeros(0, dtype=torch.long))
    assert float(s) == 0.0 and int(c) == 0


def test_paper_form_one_average_over_roots_and_leaves():
    r, l, s = (naive_ce(ROOT_LOGITS, ROOT_LABELS), naive_ce(LEAF_LOGITS, LEAF_LABELS),
               naive_ce(SBO_LOGITS, SBO_LABELS))
    loss = combine_losses(hand_sums(), TargetCounts(3, 2, 2), "paper")
    assert float(loss) == pytest.approx((sum(r) + sum(l)) / 5 + sum(s) / 2, rel=1e-6)


def test_separate_form_normalises_each_term():
    r, l, s = (naive_ce(ROOT_LOGITS, ROOT_LABELS), naive_ce(LEAF_LOGITS, LEAF_LABELS),
               naive_ce(SBO_LOGITS, SBO_LABELS))
    loss = combine_losses(hand_sums(), TargetCounts(3, 2, 2), "separate", mnm_weight=0.25)
    assert float(loss) == pytest.approx(sum(r) / 3 + 0.25 * sum(l) / 2 + sum(s) / 2, rel=1e-6)
    # μ = 1 and equal counts make the two forms differ only by the normalisation
    assert float(combine_losses(hand_sums(), TargetCounts(3, 2, 2), "separate")) != pytest.approx(
        float(combine_losses(hand_sums(), TargetCounts(3, 2, 2), "paper")))


def test_terms_without_targets_contribute_nothing_and_means_report_accuracy():
    sums = hand_sums()
    sums["mnm"] = torch.tensor(0.0)
    sums["sbo"] = torch.tensor(0.0)
    r = naive_ce(ROOT_LOGITS, ROOT_LABELS)
    assert float(combine_losses(sums, TargetCounts(3, 0, 0), "separate")) == pytest.approx(sum(r) / 3, rel=1e-6)
    means = term_means({k: float(v) for k, v in hand_sums().items()}, TargetCounts(3, 2, 2))
    assert means["mlm_acc"] == pytest.approx(2 / 3) and means["mnm_acc"] == pytest.approx(0.5)
    assert means["sbo_acc"] == pytest.approx(0.5)
    assert means["mnm_loss"] == pytest.approx(sum(naive_ce(LEAF_LOGITS, LEAF_LABELS)) / 2, rel=1e-6)
    assert math.isnan(term_means({k: 0.0 for k in hand_sums()}, TargetCounts(0, 0, 0))["mlm_loss"])


@pytest.mark.parametrize("form", ["paper", "separate"])
def test_split_batches_give_the_same_loss(form):
    """Σ over micro-batches of combine(sums_b, global counts) = combine(Σ sums, global counts)."""
    a = {"mlm": torch.tensor(3.0), "mnm": torch.tensor(1.5), "sbo": torch.tensor(0.7)}
    b = {"mlm": torch.tensor(5.0), "mnm": torch.tensor(0.5), "sbo": torch.tensor(1.1)}
    counts = TargetCounts(4, 3, 2) + TargetCounts(6, 1, 3)
    whole = combine_losses({k: a[k] + b[k] for k in a}, counts, form, 0.5)
    parts = combine_losses(a, counts, form, 0.5) + combine_losses(b, counts, form, 0.5)
    assert float(parts) == pytest.approx(float(whole), rel=1e-6)


def test_unknown_form_names_the_key():
    with pytest.raises(ConfigError, match="train.loss.*paper.*separate"):
        combine_losses(hand_sums(), TargetCounts(1, 1, 1), "mean")


def test_objective_computes_logits_only_at_masked_positions(tmp_path):
    from train_helpers import write_tokenizer
    from graphmert.corpus.tokenizer import load_tokenizer

    cfg = tiny_config()
    tok = load_tokenizer(write_tokenizer(tmp_path / "tokenizer.json"))
    torch.manual_seed(0)
    model = build_model(cfg.model, tok.get_vocab_size(), 3).eval()
    spec = MaskingSpec.from_config(TrainConfig(mlm_probability=0.3, mnm_probability=0.5), 3, special_ids(tok),
                                   tok.get_vocab_size(), cfg.model.sbo_max_span_length)
    graphs = random_graphs(6, R=16, K=3, fill=0.5)
    batch = MaskingCollator(spec, "packed", seed=0)([(0, i, g) for i, g in enumerate(graphs)])
    n_r, n_l, n_s = batch.counts
    assert n_r and n_l and n_s
    rows = []
    hook = model.mlm_head.register_forward_hook(lambda m, i, o: rows.append(i[0].shape[0]))
    with torch.no_grad():
        sums = MaskedModelingObjective(model)(batch)
        hook.remove()
        assert rows == [n_r + n_l]                               # one decoder call, masked rows only
        out = model(batch.graph, logits_at="all")                # [B, L, V] reference
        flat = out.logits.reshape(-1, out.logits.shape[-1])
        ref_mlm = torch.nn.functional.cross_entropy(flat[batch.mlm_index], batch.mlm_labels, reduction="sum")
        ref_mnm = torch.nn.functional.cross_entropy(flat[batch.mnm_index], batch.mnm_labels, reduction="sum")
        sbo = model.sbo_logits(out.hidden, batch.sbo_left, batch.sbo_right, batch.sbo_rel_pos)
        ref_sbo = torch.nn.functional.cross_entropy(sbo, batch.sbo_labels, reduction="sum")
    torch.testing.assert_close(sums["mlm"], ref_mlm, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sums["mnm"], ref_mnm, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sums["sbo"], ref_sbo, rtol=1e-5, atol=1e-5)
    assert int(sums["mnm_correct"]) == int((flat[batch.mnm_index].argmax(-1) == batch.mnm_labels).sum())
    assert np.isfinite(float(sums["mlm"]))
