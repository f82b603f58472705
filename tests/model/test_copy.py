"""Copying into masked leaves (``model.leaf_copy``): LeafCopy against its docstring's formula computed
one leaf at a time in float64, normalisation, the gate's limits, copy attention confined to the roots
of the leaf's own graph, and GraphMERT.leaf_log_probs with and without the copy head."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from graphmert.config import ModelConfig
from graphmert.model import build_model
from graphmert.model.copy import LeafCopy
from model_testgraphs import Graph, collate
from numerics import assert_close_f32

B, L, H, V = 3, 10, 16, 23
TINY = 1e-29          # log p is clamped at log 1e-30: "no mass" reads back as 1e-30


def random_inputs(seed: int):
    """hidden [B, L, H], input_ids [B, L], root_mask [B, L] (a prefix of each row, like a packed batch,
    with a few leaves after it), leaf index [N] (flat, leaf positions only), logits [N, V]."""
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, L, H, generator=gen)
    input_ids = torch.randint(0, V, (B, L), generator=gen)
    input_ids[:, 1] = input_ids[:, 2]                    # a repeated root token: its mass adds up
    n_roots = [6, 4, 7]
    root_mask = torch.zeros(B, L, dtype=torch.bool)
    leaves = []
    for b, n in enumerate(n_roots):
        root_mask[b, :n] = True
        leaves += [b * L + j for j in range(n, n + 3)]
    index = torch.tensor(leaves)
    logits = torch.randn(len(leaves), V, generator=gen) * 2
    return hidden, input_ids, root_mask, index, logits


def naive_copy(head: LeafCopy, hidden, input_ids, root_mask, index, logits) -> torch.Tensor:
    """p [N, V] in float64, one leaf at a time: (1 − g)·softmax(z) + g·Σ_{j: x_j = v} a_j."""
    Wq, bq = head.query.weight.detach().double(), head.query.bias.detach().double()
    Wk, bk = head.key.weight.detach().double(), head.key.bias.detach().double()
    wg, bg = head.gate.weight.detach().double()[0], head.gate.bias.detach().double()[0]
    Bn, Ln, Hn = hidden.shape
    hid = hidden.detach().double()
    out = []
    for n, pos in enumerate(index.tolist()):
        b, i = divmod(pos, Ln)
        h = hid[b, i]
        g = 1 / (1 + math.exp(-float(wg @ h + bg)))
        q = Wq @ h + bq
        roots = [j for j in range(Ln) if root_mask[b, j]]
        scores = [float(q @ (Wk @ hid[b, j] + bk)) / math.sqrt(Hn) for j in roots]
        m = max(scores)
        w = [math.exp(s - m) for s in scores]
        a = [x / sum(w) for x in w]
        z = logits[n].double()
        gen = torch.softmax(z, 0)
        p = (1 - g) * gen
        for j, aj in zip(roots, a):
            p[int(input_ids[b, j])] += g * aj
        out.append(p)
    return torch.stack(out)


def copy_head(seed: int, gate_bias: float = 0.0) -> LeafCopy:
    torch.manual_seed(seed)
    head = LeafCopy(H)
    with torch.no_grad():
        head.gate.bias.fill_(gate_bias)
    return head


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_docstring_formula(seed):
    head = copy_head(seed, gate_bias=0.4)
    args = random_inputs(seed)
    got = head(*args)
    assert got.shape == (args[3].numel(), V) and got.dtype == torch.float32
    want = naive_copy(head, *args)
    # p to float32 resolution; log p to a few float32 steps of relative error in p, where p is not tiny
    assert_close_f32(got.exp(), want, scale=1.0)
    big = want > 1e-6
    assert_close_f32(got[big], want[big].log(), scale=1.0)


def test_rows_are_distributions():
    head = copy_head(1, gate_bias=-0.3)
    got = head(*random_inputs(4))
    assert_close_f32(got.double().exp().sum(-1), torch.ones(got.shape[0], dtype=torch.float64))


def test_gate_closed_gives_the_mnm_softmax_and_open_gives_the_copy_distribution():
    hidden, input_ids, root_mask, index, logits = random_inputs(7)
    closed = copy_head(0, gate_bias=-1e4)
    with torch.no_grad():
        closed.gate.weight.zero_()
    assert_close_f32(closed(hidden, input_ids, root_mask, index, logits).exp(),
                     torch.softmax(logits.double(), -1), scale=1.0)
    assert_close_f32(closed(hidden, input_ids, root_mask, index, logits),
                     torch.log_softmax(logits.double(), -1))
    opened = copy_head(0, gate_bias=1e4)
    with torch.no_grad():
        opened.gate.weight.zero_()
    p = opened(hidden, input_ids, root_mask, index, logits).exp()
    for n, pos in enumerate(index.tolist()):
        b = pos // L
        in_roots = set(input_ids[b][root_mask[b]].tolist())
        outside = [v for v in range(V) if v not in in_roots]
        assert (p[n, outside] <= TINY).all()               # only tokens the roots hold
        assert p[n].sum().item() == pytest.approx(1.0, abs=1e-6)


def test_copy_attends_only_to_roots_of_the_leaf_own_graph():
    """A distinctive token that only another graph's roots, or a leaf, or padding hold gets no copy
    mass; the same token as a root of the leaf's own graph does."""
    hidden, input_ids, root_mask, index, logits = random_inputs(3)
    special = V - 1
    input_ids[input_ids == special] = 0
    input_ids[1, 0] = special                       # a root of graph 1
    input_ids[0, 7] = special                       # a leaf of graph 0 (after its 6 roots)
    input_ids[2, 9] = special                       # padding of graph 2 (after its 7 roots, 3 leaves)
    head = copy_head(0, gate_bias=1e4)
    with torch.no_grad():
        head.gate.weight.zero_()
        # make the distinctive positions the most attractive keys: any leak would show
        hidden[1, 0] = hidden[0, 7] = hidden[2, 9] = 50 * torch.ones(H)
    p = head(hidden, input_ids, root_mask, index, logits).exp()
    graph = index // L
    assert (p[graph != 1, special] <= TINY).all()
    assert (p[graph == 1, special] > TINY).all()


def tiny(**kw) -> ModelConfig:
    return ModelConfig(hidden_size=H, num_layers=2, num_heads=2, intermediate_size=32, max_leaf_slots=3,
                       **kw)


GRAPHS = [Graph([2, 9, 10, 11, 12, 3], {1: (0, 1, [4, 4, 4]), 3: (1, 2, [4, 4, 4])}),
          Graph([2, 13, 14, 15, 3], {2: (1, 1, [4, 4, 4])})]


def leaf_positions(batch):
    return torch.nonzero((batch.leaf_slot.reshape(-1) >= 0) & batch.attention_mask.reshape(-1)).flatten()


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_model_leaf_log_probs_copy_only_from_own_roots(layout):
    """Through the model: the roots are the real non-leaf positions of the leaf's graph; leaves (here
    all [MASK] = 4) and the other graph's roots are never copied."""
    torch.manual_seed(0)
    model = build_model(tiny(leaf_copy=True, leaf_query="fixed"), V, 2).eval()
    with torch.no_grad():
        model.leaf_copy.gate.weight.zero_()
        model.leaf_copy.gate.bias.fill_(1e4)
    batch, _ = collate(GRAPHS, 6, 3, layout)
    index = leaf_positions(batch)
    with torch.no_grad():
        out = model(batch, logits_at=index)
        p = model.leaf_log_probs(out.hidden, batch, index, out.logits).exp()
    Lb = batch.input_ids.shape[1]
    for n, pos in enumerate(index.tolist()):
        own = set(GRAPHS[pos // Lb].roots)
        support = set(torch.nonzero(p[n] > TINY).flatten().tolist())
        assert support == own, (support, own)
        assert p[n].sum().item() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_leaf_log_probs_is_log_softmax_without_copy(layout):
    torch.manual_seed(0)
    model = build_model(tiny(), V, 2).eval()
    assert model.leaf_copy is None
    batch, _ = collate(GRAPHS, 6, 3, layout)
    index = leaf_positions(batch)
    with torch.no_grad():
        out = model(batch, logits_at=index)
        got = model.leaf_log_probs(out.hidden, batch, index, out.logits)
    assert torch.equal(got, torch.log_softmax(out.logits.float(), -1))


def test_copy_head_gets_gradients_through_the_objective():
    torch.manual_seed(0)
    model = build_model(tiny(leaf_copy=True, leaf_query="fixed"), V, 2)
    batch, _ = collate(GRAPHS, 6, 3, "packed")
    index = leaf_positions(batch)
    out = model(batch, logits_at=index)
    logp = model.leaf_log_probs(out.hidden, batch, index, out.logits)
    (-logp[:, 9].sum()).backward()
    for name, p in model.leaf_copy.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_config_switches_the_head():
    assert build_model(tiny(leaf_copy=True), V, 2).leaf_copy is not None
    assert build_model(dataclasses.replace(tiny(), leaf_copy=False), V, 2).leaf_copy is None
