"""H-GAT equals a naive per-triple, per-token reference; dropout and edge cases."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from graphmert.model.hgat import HGAT
from numerics import assert_close_f32


def naive_hgat(x, weight, att, triples):
    """t_i ← t_i + Σ_j softmax_j(LeakyReLU(a_rᵀ[W_r t_i ‖ W_r h_j])) W_r h_j, one triple at a time."""
    out = x.clone()
    for heads, tails, r in triples:
        W, a = weight[r], att[r]
        for i in tails:
            wt = x[i] @ W
            scores, msgs = [], []
            for j in heads:
                wh = x[j] @ W
                scores.append(F.leaky_relu(torch.dot(a, torch.cat([wt, wh])), 0.01))
                msgs.append(wh)
            alpha = torch.softmax(torch.stack(scores), dim=0)
            out[i] = x[i] + sum(al * m for al, m in zip(alpha, msgs))
    return out


def random_triples(N, num_relations, n_triples, gen):
    """Disjoint tail sets (a leaf belongs to one injection); heads may be shared between triples."""
    perm = torch.randperm(N, generator=gen).tolist()
    triples = []
    for _ in range(n_triples):
        m = int(torch.randint(1, 4, (1,), generator=gen))
        n = int(torch.randint(1, 5, (1,), generator=gen))
        tails = [perm.pop() for _ in range(n)]
        heads = torch.randint(0, N, (m,), generator=gen).unique().tolist()
        heads = [h for h in heads if h not in tails] or [perm.pop()]
        triples.append((heads, tails, int(torch.randint(0, num_relations, (1,), generator=gen))))
    return triples


def edges_of(triples):
    src = [j for heads, tails, _ in triples for i in tails for j in heads]
    dst = [i for heads, tails, _ in triples for i in tails for j in heads]
    typ = [r for heads, tails, r in triples for i in tails for j in heads]
    return torch.tensor([src, dst], dtype=torch.long).reshape(2, -1), torch.tensor(typ, dtype=torch.long)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_reference(seed):
    gen = torch.Generator().manual_seed(seed)
    N, H, R = 60, 16, 5
    layer = HGAT(H, R, relation_dropout=0.3).eval()
    x = torch.randn(N, H, generator=gen)
    triples = random_triples(N, R, 8, gen)
    edge_index, edge_type = edges_of(triples)
    got = layer(x, edge_index, edge_type)
    # the reference in float64: got may differ only by float32 rounding (values reach ~5, where an
    # absolute 1e-6 is two float32 steps — see tests/numerics.py)
    want = naive_hgat(x.double(), layer.weight.detach().double(), layer.att.detach().double(), triples)
    assert_close_f32(got, want)
    touched = {i for _, tails, _ in triples for i in tails}
    untouched = [i for i in range(N) if i not in touched]
    assert torch.equal(got[untouched], x[untouched])          # only tail positions change


def test_matches_naive_reference_float64_many_relations():
    gen = torch.Generator().manual_seed(7)
    N, H, R = 200, 24, 12
    layer = HGAT(H, R).double().eval()
    x = torch.randn(N, H, generator=gen, dtype=torch.float64)
    triples = random_triples(N, R, 30, gen)
    edge_index, edge_type = edges_of(triples)
    got = layer(x, edge_index, edge_type)
    want = naive_hgat(x, layer.weight.detach(), layer.att.detach(), triples)
    assert torch.allclose(got, want, atol=1e-12, rtol=0)


def test_edge_order_does_not_matter():
    gen = torch.Generator().manual_seed(3)
    layer = HGAT(8, 3).eval()
    x = torch.randn(40, 8, generator=gen)
    edge_index, edge_type = edges_of(random_triples(40, 3, 6, gen))
    perm = torch.randperm(edge_type.numel(), generator=gen)
    a = layer(x, edge_index, edge_type)
    b = layer(x, edge_index[:, perm], edge_type[perm])
    assert torch.allclose(a, b, atol=1e-6)


def test_empty_edge_set_is_identity():
    layer = HGAT(8, 3)
    x = torch.randn(10, 8)
    out = layer(x, torch.empty(2, 0, dtype=torch.long), torch.empty(0, dtype=torch.long))
    assert torch.equal(out, x)


def test_relation_dropout_only_in_training():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(30, 8, generator=gen)
    edge_index, edge_type = edges_of(random_triples(30, 2, 4, gen))
    layer = HGAT(8, 2, relation_dropout=1.0)
    layer.train()
    assert torch.equal(layer(x, edge_index, edge_type), x)   # W_r dropped entirely → no message
    layer.eval()
    assert not torch.equal(layer(x, edge_index, edge_type), x)
    layer = HGAT(8, 2, relation_dropout=0.5).train()
    torch.manual_seed(0)
    a = layer(x, edge_index, edge_type)
    b = layer(x, edge_index, edge_type)
    assert not torch.equal(a, b)


def test_gradients_reach_w_and_a():
    gen = torch.Generator().manual_seed(9)
    layer = HGAT(8, 3, relation_dropout=0.0).train()
    x = torch.randn(30, 8, generator=gen, requires_grad=True)
    triples = [([0, 1], [10, 11, 12], 0), ([2], [13], 2)]
    edge_index, edge_type = edges_of(triples)
    layer(x, edge_index, edge_type).pow(2).sum().backward()
    assert layer.weight.grad[[0, 2]].abs().sum() > 0 and layer.att.grad[[0, 2]].abs().sum() > 0
    assert layer.weight.grad[1].abs().sum() == 0            # relation 1 has no edges
    assert x.grad[[0, 1, 2]].abs().sum() > 0                # heads receive gradient


def test_bad_relation_id_is_a_clear_error():
    layer = HGAT(8, 3)
    edge_index = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match="relation id 3 is outside"):
        layer(torch.randn(4, 8), edge_index, torch.tensor([3]))
    with pytest.raises(ValueError, match="relation id -1 is outside"):
        layer(torch.randn(4, 8), edge_index, torch.tensor([-1]))


def test_building_hgat_leaves_no_file_in_the_temp_dir_and_keeps_pygs_compiled_propagate(tmp_path):
    """PyG renders HGAT's propagate into a file in the temp dir and imports it; building the layer
    removes that file (graphmert.model.pyg_templates), in a fresh process with its own TMPDIR, and
    the layer still runs PyG's rendered propagate."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, torch\n"
            "from graphmert.model.hgat import HGAT\n"
            "layer = HGAT(8, 2, relation_dropout=0.0)\n"
            "mod = sys.modules[HGAT.__module__ + '_HGAT_propagate']\n"
            "print(mod.__file__)\n"
            "print(type(layer).propagate.__module__ == mod.__name__)\n"
            "x = torch.randn(4, 8)\n"
            "y = layer(x, torch.tensor([[0, 1], [2, 3]]), torch.tensor([0, 1]))\n"
            "print(tuple(y.shape))\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    rendered = Path(out[0])
    assert rendered.parent == tmp_path                # PyG wrote it where the test pointed the temp dir
    assert out[1:3] == ["True", "(4, 8)"]
    assert not rendered.exists() and list(tmp_path.iterdir()) == []
