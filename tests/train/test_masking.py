"""Masking: the statistics of span masking and leaf-group masking over 10,000 graphs, the rules
(whole words, no overlap, specials untouched, whole leaf groups), determinism, and the collated
targets (positions, labels, SBO boundaries) in both layouts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from graphmert.config import TrainConfig
from graphmert.graph.layout import layout_arrays
from graphmert.train.masking import (MODE_KEEP, MODE_MASK, MODE_RANDOM, MaskingCollator, MaskingSpec,
                                     mask_graph, root_words, sample_rng, span_length_pmf)
from train_helpers import CLS, MASK, PAD, SEP, UNK, random_graph

R, K, V = 128, 7, 500
SPECIALS = {"pad": PAD, "unk": UNK, "cls": CLS, "sep": SEP, "mask": MASK}


def make_spec(**train) -> MaskingSpec:
    return MaskingSpec.from_config(TrainConfig(**train), K, SPECIALS, V, sbo_max_span_length=10)


@pytest.fixture(scope="module")
def sample():
    """10,000 graphs (40–128 roots, words of 1–3 tokens, ~30% of roots with a leaf group) and masks."""
    spec = make_spec()
    rng = np.random.default_rng(1)
    out = []
    for i in range(10_000):
        g = random_graph(rng, R, K, V, n=int(rng.integers(40, R + 1)), fill=0.3)
        out.append((g, mask_graph(g, spec, sample_rng(0, 0, 0, i))))
    return spec, out


def test_truncated_geometric_pmf():
    p = 0.2
    pmf = span_length_pmf(p, 7)
    raw = np.array([p * (1 - p) ** (k - 1) for k in range(1, 8)])
    np.testing.assert_allclose(pmf, raw / raw.sum())
    assert pmf.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(span_length_pmf(1.0, 3), [1, 0, 0])


def test_root_mask_rate_within_one_point(sample):
    spec, data = sample
    masked = sum(int(m.root_masked.sum()) for _, m in data)
    maskable = sum(int((~np.isin(g.root_ids[:g.num_roots], spec.special_ids)).sum()) for g, _ in data)
    rate = masked / maskable
    assert abs(rate - spec.mlm_probability) < 0.01, rate


def test_span_lengths_follow_truncated_geometric(sample):
    spec, data = sample
    lengths = np.concatenate([m.span_words for _, m in data])
    observed = np.bincount(lengths, minlength=K + 1)[1:]
    assert observed.sum() == lengths.size and lengths.min() >= 1 and lengths.max() <= K
    expected = span_length_pmf(spec.span_geometric_p, K) * lengths.size
    assert chisquare(observed, expected).pvalue > 1e-3, (observed, expected.round())
    # and per length: within 4 standard errors of its probability
    pmf = expected / lengths.size
    se = np.sqrt(pmf * (1 - pmf) / lengths.size)
    assert np.all(np.abs(observed / lengths.size - pmf) < 4 * se)


def test_spans_are_whole_words_without_overlap_or_specials(sample):
    spec, data = sample
    for g, m in data[:2000]:
        n = g.num_roots
        specials = np.isin(g.root_ids, spec.special_ids)
        assert not (m.root_masked & specials).any()
        assert (m.root_ids[specials] == g.root_ids[specials]).all()
        assert not m.root_masked[n:].any()
        covered = np.zeros(g.R, dtype=int)
        starts, ends, _ = root_words(g, spec.special_ids)
        for (a, e), w in zip(m.spans, m.span_words):
            covered[a:e] += 1
            assert a in starts and e in ends                       # whole words at both ends
            assert np.searchsorted(ends, e) - np.searchsorted(starts, a) + 1 == w
            assert not specials[a:e].any()                         # never crosses a special token
        assert covered.max() <= 1                                  # no overlaps
        assert (covered.astype(bool) == m.root_masked).all()
        assert (np.diff(m.spans[:, 0]) > 0).all()


def test_leaf_groups_masked_whole_at_rate(sample):
    spec, data = sample
    filled = sum(int((g.leaf_length > 0).sum()) for g, _ in data)
    groups = sum(int(m.leaf_groups.sum()) for _, m in data)
    assert abs(groups / filled - spec.mnm_probability) < 0.01
    for g, m in data[:2000]:
        assert not (m.leaf_groups & (g.leaf_length == 0)).any()
        changed = (m.leaf_ids != g.leaf_ids).any(axis=1)
        assert not (changed & ~m.leaf_groups).any()                # only masked groups change
        for i in np.flatnonzero(m.group_mode == MODE_MASK):
            t = g.leaf_length[i]
            assert (m.leaf_ids[i, :t] == MASK).all() and (m.leaf_ids[i, t:] == PAD).all()


def test_replacement_split_80_10_10(sample):
    spec, data = sample
    modes = np.concatenate([m.span_mode for _, m in data] + [m.group_mode[m.leaf_groups] for _, m in data])
    frac = np.bincount(modes, minlength=3) / modes.size
    np.testing.assert_allclose(frac, [0.8, 0.1, 0.1], atol=0.01)
    random_ok = set(spec.random_ids.tolist())
    for g, m in data[:2000]:
        for (a, e), mode in zip(m.spans, m.span_mode):
            if mode == MODE_MASK:
                assert (m.root_ids[a:e] == MASK).all()
            elif mode == MODE_RANDOM:
                assert set(m.root_ids[a:e].tolist()) <= random_ok
            else:
                assert (m.root_ids[a:e] == g.root_ids[a:e]).all()
        assert (m.root_ids[~m.root_masked] == g.root_ids[~m.root_masked]).all()
    assert UNK not in random_ok and MASK not in random_ok and V - 1 in random_ok


def test_rates_come_from_config():
    rng = np.random.default_rng(5)
    graphs = [random_graph(rng, R, K, V, n=R, fill=0.5) for _ in range(400)]
    spec = make_spec(mlm_probability=0.3, mnm_probability=0.5, mask_token_fraction=1.0,
                     random_token_fraction=0.0)
    masks = [mask_graph(g, spec, sample_rng(3, 0, 0, i)) for i, g in enumerate(graphs)]
    rate = sum(m.root_masked.sum() for m in masks) / sum(g.num_roots - 2 for g in graphs)
    assert abs(rate - 0.3) < 0.015
    assert abs(sum(m.leaf_groups.sum() for m in masks) / sum((g.leaf_length > 0).sum() for g in graphs)
               - 0.5) < 0.03
    assert all((m.span_mode == MODE_MASK).all() for m in masks)
    none = make_spec(mlm_probability=0.0, mnm_probability=0.0)
    m = mask_graph(graphs[0], none, sample_rng(0, 0, 0, 0))
    assert not m.root_masked.any() and not m.leaf_groups.any() and len(m.spans) == 0


def test_unk_is_maskable_but_other_specials_are_not():
    g = random_graph(np.random.default_rng(0), 32, 3, V, n=32, fill=0.0)
    g.root_ids[1:31] = UNK
    spec = make_spec(mlm_probability=1.0)
    m = mask_graph(g, spec, sample_rng(0, 0, 0, 0))
    assert m.root_masked[1:31].any() and not m.root_masked[[0, 31]].any()


def test_masks_are_deterministic_per_seed_epoch_index():
    rng = np.random.default_rng(2)
    g = random_graph(rng, R, K, V, n=R, fill=0.5)
    spec = make_spec()
    a = mask_graph(g, spec, sample_rng(7, 0, 3, 11))
    b = mask_graph(g, spec, sample_rng(7, 0, 3, 11))
    assert np.array_equal(a.root_ids, b.root_ids) and np.array_equal(a.leaf_ids, b.leaf_ids)
    others = [mask_graph(g, spec, sample_rng(*key)) for key in ((8, 0, 3, 11), (7, 0, 4, 11), (7, 0, 3, 12),
                                                                (7, 1, 3, 11))]
    assert all(not np.array_equal(a.root_masked, o.root_masked) for o in others)


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_collated_targets_point_at_the_masked_positions(layout):
    rng = np.random.default_rng(4)
    graphs = [random_graph(rng, 32, 4, V, fill=0.6) for _ in range(6)]
    spec = make_spec(mlm_probability=0.3, mnm_probability=0.5)
    collate = MaskingCollator(spec, layout, seed=9)
    items = [(1, 10 + i, g) for i, g in enumerate(graphs)]
    batch = collate(items)
    B, L = batch.graph.input_ids.shape
    flat_ids = batch.graph.input_ids.reshape(-1)
    expect_mlm, expect_mnm, expect_sbo = [], [], []
    for b, (epoch, index, g) in enumerate(items):
        m = collate.mask(epoch, index, g)                        # the same draws as inside the batch
        pos = layout_arrays(g, layout).leaf_position
        for i in np.flatnonzero(m.root_masked):
            expect_mlm.append((b * L + i, g.root_ids[i], m.root_ids[i]))
        for i in np.flatnonzero(m.leaf_groups):
            for k in range(g.leaf_length[i]):
                expect_mnm.append((b * L + pos[i, k], g.leaf_ids[i, k], m.leaf_ids[i, k]))
        for a, e in m.spans:
            for t in range(a, min(e, a + spec.sbo_max_span_length)):
                expect_sbo.append((b * L + a - 1, b * L + e, t - a, g.root_ids[t]))
    got_mlm = list(zip(batch.mlm_index.tolist(), batch.mlm_labels.tolist()))
    assert got_mlm == [(p, y) for p, y, _ in expect_mlm]
    assert flat_ids[batch.mlm_index].tolist() == [x for _, _, x in expect_mlm]
    assert list(zip(batch.mnm_index.tolist(), batch.mnm_labels.tolist())) == [(p, y) for p, y, _ in expect_mnm]
    assert flat_ids[batch.mnm_index].tolist() == [x for _, _, x in expect_mnm]
    got_sbo = list(zip(batch.sbo_left.tolist(), batch.sbo_right.tolist(), batch.sbo_rel_pos.tolist(),
                       batch.sbo_labels.tolist()))
    assert got_sbo == expect_sbo and len(got_sbo) > 0
    # boundaries are never padding, and leaf targets sit at leaf positions
    real = batch.graph.attention_mask.reshape(-1)
    assert real[batch.sbo_left].all() and real[batch.sbo_right].all()
    assert (batch.graph.leaf_slot.reshape(-1)[batch.mnm_index] >= 0).all()
    assert (batch.graph.leaf_slot.reshape(-1)[batch.mlm_index] == -1).all()
    assert batch.sample_index.tolist() == [i for _, i, _ in items]
    assert batch.counts == (len(expect_mlm), len(expect_mnm), len(expect_sbo), 0)


def test_sbo_targets_are_capped_and_optional():
    rng = np.random.default_rng(6)
    graphs = [random_graph(rng, R, K, V, n=R, fill=0.0, word_lengths=(0.0, 0.0, 1.0)) for _ in range(20)]
    capped = MaskingSpec.from_config(TrainConfig(), K, SPECIALS, V, sbo_max_span_length=4)
    batch = MaskingCollator(capped, "packed", seed=0)([(0, i, g) for i, g in enumerate(graphs)])
    assert batch.sbo_rel_pos.max().item() == 3
    none = MaskingSpec.from_config(TrainConfig(), K, SPECIALS, V, sbo_max_span_length=None)
    batch = MaskingCollator(none, "packed", seed=0)([(0, i, g) for i, g in enumerate(graphs)])
    assert batch.counts[2] == 0 and batch.counts[0] > 0


def test_evaluation_spec_shows_every_unit_as_mask():
    spec = make_spec().for_evaluation()
    rng = np.random.default_rng(8)
    for i in range(50):
        g = random_graph(rng, R, K, V, fill=0.5)
        m = mask_graph(g, spec, sample_rng(0, 1, 0, i))
        assert (m.root_ids[m.root_masked] == MASK).all()
        assert (m.span_mode == MODE_MASK).all() and not (m.group_mode == MODE_KEEP).any()


def test_bad_fractions_are_config_errors():
    from graphmert.config import ConfigError

    with pytest.raises(ConfigError, match="train.random_token_fraction"):
        make_spec(mask_token_fraction=0.95, random_token_fraction=0.1)
    with pytest.raises(ConfigError, match="train.span_geometric_p"):
        span_length_pmf(0.0, 3)
    with pytest.raises(ConfigError, match="tokenizer: a vocabulary of 5 tokens"):
        MaskingSpec.from_config(TrainConfig(), K, SPECIALS, 5, 10)        # ids 0–4: all special
    # The boundary is valid: fractions that add up to exactly 1 are accepted and honoured — every
    # masked unit is replaced ([MASK] or random), none is kept, in the configured proportions.
    spec = make_spec(mask_token_fraction=0.7, random_token_fraction=0.3)
    rng = np.random.default_rng(3)
    masks = [mask_graph(random_graph(rng, R, K, V, fill=0.5), spec, sample_rng(0, 0, 0, i)) for i in range(300)]
    modes = np.concatenate([m.span_mode for m in masks] + [m.group_mode[m.leaf_groups] for m in masks])
    assert modes.size > 2000 and MODE_KEEP not in modes
    assert abs((modes == MODE_RANDOM).mean() - 0.3) < 0.03
