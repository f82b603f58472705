"""Losses: both forms against a naive log-softmax on hand-built logits, split invariance, the
objective module (logits only at masked positions, equal to gathering the full logits), and the
candidate objective against a naive multi-positive softmax with a "none" option."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from graphmert.config import ConfigError, ModelConfig, TrainConfig
from graphmert.corpus.tokenizer import special_ids
from graphmert.graph.candidates import NUM_CANDIDATE_FEATURES, CandidateQuery
from graphmert.model import build_model
from graphmert.train.losses import (TERMS, MaskedModelingObjective, TargetCounts, candidate_loss, combine_losses,
                                    summed_cross_entropy, term_means)
from graphmert.train.masking import MaskingCollator, MaskingSpec
from entity_graphs import CLS, MASK, PAD, SEP, UNK, graph_a, graph_c
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
    n_r, n_l, n_s, _ = batch.counts
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


# -- the candidate objective -------------------------------------------------------------------------

# groups: 0 has gold candidates 0 and 2 (two positives); 1 has none gold ("none" is its answer);
# 2 has one gold candidate, scored below "none"; 3 has a gold candidate tied with the best wrong one
CAND_GROUP = [0, 0, 0, 1, 1, 2, 2, 3, 3]
CAND_SCORE = [1.0, 2.5, 0.5, 0.3, -1.0, -0.5, 0.2, 1.5, 1.5]
CAND_GOLD = [True, False, True, False, False, True, False, True, False]
NONE_SCORE = [0.0, 0.5, 0.7, -2.0]


class FixedScores(torch.nn.Module):
    """A stand-in model whose candidate head returns given scores."""

    def __init__(self, s, none):
        super().__init__()
        self.candidate_head = torch.nn.Identity()
        self.s, self.none = torch.tensor(s), torch.tensor(none)

    def candidate_logits(self, hidden, cq):
        return self.s + hidden.sum() * 0, self.none + hidden.sum() * 0


def query(group=CAND_GROUP, gold=CAND_GOLD, G=len(NONE_SCORE)) -> CandidateQuery:
    C = len(group)
    return CandidateQuery(query_index=torch.zeros(G, dtype=torch.long), entity_token=torch.zeros(0, dtype=torch.long),
                          entity_of_token=torch.zeros(0, dtype=torch.long), num_entities=C,
                          cand_group=torch.tensor(group, dtype=torch.long), cand_entity=torch.arange(C),
                          cand_features=torch.zeros(C, NUM_CANDIDATE_FEATURES), cand_positive=torch.tensor(gold))


def naive_candidate_loss(group, score, gold, none):
    """Σ_q −log Σ_{y ∈ Y_q} softmax over {∅} ∪ C_q (Y_q = {∅} when no candidate is gold), and how many
    groups have a gold option among their top-scored (ties count as correct)."""
    total, correct = 0.0, 0
    for q, s_none in enumerate(none):
        options = [(s_none, not any(g for c, g in zip(group, gold) if c == q))]
        options += [(s, g) for c, s, g in zip(group, score, gold) if c == q]
        z = sum(math.exp(s) for s, _ in options)
        total -= math.log(sum(math.exp(s) for s, g in options if g) / z)
        top = max(s for s, _ in options)
        correct += any(g and s >= top for s, g in options)
    return total, correct


def test_candidate_loss_is_a_multi_positive_nll_with_none():
    loss, correct = candidate_loss(FixedScores(CAND_SCORE, NONE_SCORE), torch.zeros(1, 1, 1), query())
    want, want_correct = naive_candidate_loss(CAND_GROUP, CAND_SCORE, CAND_GOLD, NONE_SCORE)
    assert float(loss) == pytest.approx(want, rel=1e-6)
    assert int(correct) == want_correct == 2             # group 1 (none) and group 3 (a tie) are right
    assert loss.dtype == torch.float32 and correct.dtype == torch.long


def test_candidate_loss_groups_one_by_one_and_gradients():
    model = FixedScores(CAND_SCORE, NONE_SCORE)
    model.s.requires_grad_(True)
    loss, _ = candidate_loss(model, torch.zeros(1, 1, 1), query())
    loss.backward()
    # ∂ℓ/∂s_c = P(c) − P(c | gold) within its group: a gold row gets P(c) − P(c)/P(gold), others P(c)
    for q in range(4):
        rows = [i for i, c in enumerate(CAND_GROUP) if c == q]
        has_gold = any(CAND_GOLD[i] for i in rows)
        s = [NONE_SCORE[q]] + [CAND_SCORE[i] for i in rows]
        gold = [not has_gold] + [CAND_GOLD[i] for i in rows]
        p = [math.exp(v) / sum(math.exp(u) for u in s) for v in s]
        pg = sum(pi for pi, g in zip(p, gold) if g)
        for j, i in enumerate(rows, start=1):
            want = p[j] - (p[j] / pg if gold[j] else 0.0)
            assert float(model.s.grad[i]) == pytest.approx(want, abs=1e-6)


def test_candidate_loss_without_questions_or_head_is_zero():
    hidden = torch.randn(2, 3, 4, requires_grad=True)
    empty = query(group=[], gold=[], G=0)
    loss, correct = candidate_loss(FixedScores([], []), hidden, empty)
    assert float(loss.detach()) == 0.0 and int(correct) == 0
    loss.backward()                                       # still part of the graph
    no_head = torch.nn.Module()
    loss, correct = candidate_loss(no_head, hidden, query())
    assert float(loss.detach()) == 0.0 and int(correct) == 0
    # a group with no candidate row has only "none" to choose: it adds nothing to the loss
    loss, _ = candidate_loss(FixedScores(CAND_SCORE, NONE_SCORE + [3.0]), torch.zeros(1), query(G=5))
    want, _ = naive_candidate_loss(CAND_GROUP, CAND_SCORE, CAND_GOLD, NONE_SCORE)
    assert float(loss) == pytest.approx(want, rel=1e-6)


def test_target_counts_and_combine_with_the_candidate_term():
    assert TERMS == ("mlm", "mnm", "sbo", "cand")
    assert TargetCounts(1, 2, 3) == TargetCounts(1, 2, 3, 0)
    assert TargetCounts(1, 2, 3, 4) + TargetCounts(10, 20, 30, 40) == TargetCounts(11, 22, 33, 44)
    sums = hand_sums()
    r, l, s = (naive_ce(ROOT_LOGITS, ROOT_LABELS), naive_ce(LEAF_LOGITS, LEAF_LABELS),
               naive_ce(SBO_LOGITS, SBO_LABELS))
    base = sum(r) / 3 + 0.5 * sum(l) / 2 + sum(s) / 2
    assert float(combine_losses(sums, TargetCounts(3, 2, 2, 4), "separate", 0.5, 0.25)) == pytest.approx(base)
    sums["cand"] = torch.tensor(6.0)
    for form, first in [("separate", sum(r) / 3 + 0.5 * sum(l) / 2), ("paper", (sum(r) + sum(l)) / 5)]:
        got = combine_losses(sums, TargetCounts(3, 2, 2, 4), form, 0.5, 0.25)
        assert float(got) == pytest.approx(first + sum(s) / 2 + 0.25 * 6.0 / 4, rel=1e-6)
    assert float(combine_losses(sums, TargetCounts(3, 2, 2, 4), "separate", 0.5, 0.0)) == pytest.approx(base)
    # split invariance holds for the candidate term too
    a, b = dict(sums, cand=torch.tensor(2.0)), dict(sums, cand=torch.tensor(4.0))
    counts = TargetCounts(3, 2, 2, 1) + TargetCounts(3, 2, 2, 3)
    whole = combine_losses({k: a[k] + b[k] for k in ("mlm", "mnm", "sbo", "cand")}, counts, "separate", 1.0, 0.7)
    parts = combine_losses(a, counts, "separate", 1.0, 0.7) + combine_losses(b, counts, "separate", 1.0, 0.7)
    assert float(parts) == pytest.approx(float(whole), rel=1e-6)
    means = term_means({**{k: float(v) for k, v in hand_sums().items()}, "cand": 6.0, "cand_correct": 3.0},
                       TargetCounts(3, 2, 2, 4))
    assert means["cand_loss"] == pytest.approx(1.5) and means["cand_acc"] == pytest.approx(0.75)


def test_objective_with_copy_and_candidate_heads():
    """The objective's mnm term reads the copy-mixed log p, its cand term the candidate head, and
    mnm_tail_correct counts tail tokens only."""
    V, K = 64, 3
    spec = MaskingSpec.from_config(TrainConfig(mlm_probability=0.2, mnm_probability=1.0), K,
                                   {"pad": PAD, "unk": UNK, "cls": CLS, "sep": SEP, "mask": MASK}, V, None,
                                   leaf_query="fixed")
    cfg = ModelConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, sbo_head=False,
                      leaf_query="fixed", candidate_head=True, leaf_copy=True)
    torch.manual_seed(0)
    model = build_model(cfg, V, 3).eval()
    batch = MaskingCollator(spec, "packed", seed=0)([(0, 0, graph_a()), (0, 1, graph_c())])
    assert batch.counts[3] == 3 and batch.mnm_end.any() and (~batch.mnm_end).any()
    with torch.no_grad():
        sums = MaskedModelingObjective(model)(batch)
        out = model(batch.graph, logits_at=batch.mnm_index)
        logp = model.leaf_log_probs(out.hidden, batch.graph, batch.mnm_index, out.logits)
        want_cand, want_ok = candidate_loss(model, out.hidden, batch.candidates)
    nll = -logp.gather(1, batch.mnm_labels[:, None]).sum()
    torch.testing.assert_close(sums["mnm"], nll, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sums["cand"], want_cand, rtol=1e-5, atol=1e-5)
    assert int(sums["cand_correct"]) == int(want_ok)
    hit = logp.gather(1, batch.mnm_labels[:, None]).squeeze(1) >= logp.amax(-1)
    assert int(sums["mnm_tail_correct"]) == int((hit & ~batch.mnm_end).sum())
    assert int(sums["mnm_correct"]) == int(hit.sum())
    # without the candidate head the term is 0 and nothing else changes
    plain = build_model(dataclasses.replace(cfg, candidate_head=False), V, 3).eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("candidate_head.")}
    plain.load_state_dict(state)
    with torch.no_grad():
        other = MaskedModelingObjective(plain)(batch)
    assert float(other["cand"]) == 0.0 and int(other["cand_correct"]) == 0
    torch.testing.assert_close(other["mnm"], sums["mnm"])
