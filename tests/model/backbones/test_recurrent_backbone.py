"""The recurrent-depth backbone: D = 1 is the plain (neobert) stack, the cross-iteration residual
against a reference loop, and exact parameter counts with and without weight sharing."""

from __future__ import annotations

import pytest
import torch

from backbone_testutils import batch_of, make, tiny
from graphmert.model.backbones import NeoBERTBackbone, RecurrentBackbone, build_backbone
from graphmert.model.backbones.swiglu import swiglu_hidden_size


def test_depth_one_is_the_plain_stack():
    neo = make("neobert").eval()
    for share in (True, False):
        rec = make("recurrent", {"recurrent_depth": 1, "share_weights_across_depth": share}, seed=1).eval()
        assert rec.backbone.state_dict().keys() == neo.backbone.state_dict().keys()
        rec.load_state_dict(neo.state_dict())
        batch = batch_of("packed")
        with torch.no_grad():
            assert torch.equal(rec(batch).hidden, neo(batch).hidden)


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_iterations_and_residual_match_a_reference_loop(share, alpha):
    model = make("recurrent", {"recurrent_depth": 3, "share_weights_across_depth": share,
                               "residual_scale": alpha}).eval()
    bb: RecurrentBackbone = model.backbone
    batch = batch_of("packed")
    with torch.no_grad():
        x = model.embed(batch)
        spec = model.attention_spec(batch)
        got = bb(x, spec)
        N = 3                                                       # tiny: num_layers = 3
        layers = list(bb.layers)
        h = x
        for t in range(3):
            block = layers[:N] if share else layers[t * N:(t + 1) * N]
            prev = h
            for layer in block:
                h = layer(h, spec)
            if t >= 1:
                h = h + alpha * prev
        want = bb.final_norm(h)
    assert torch.allclose(got, want, atol=1e-6)
    if not share:                                                   # the iterations really differ
        assert not torch.equal(layers[0].attention.attn.qkv.weight, layers[N].attention.attn.qkv.weight)


def test_residual_scale_changes_the_output():
    batch = batch_of("packed")
    with torch.no_grad():
        a = make("recurrent", {"residual_scale": 0.0}).eval()(batch).hidden
        b = make("recurrent", {"residual_scale": 0.5}).eval()(batch).hidden
    m = batch.attention_mask
    assert not torch.allclose(a[m], b[m], atol=1e-3)


def layer_params(H: int, F: int) -> int:
    """One pre-norm layer without biases: W_qkv, W_o, SwiGLU's three matrices, two RMSNorm gains."""
    return 3 * H * H + H * H + 3 * H * F + 2 * H


@pytest.mark.parametrize("N", [1, 3])
def test_parameter_counts(N):
    H = 32
    F = swiglu_hidden_size(H)
    per_layer = layer_params(H, F)

    def count(D, share):
        bb = build_backbone(tiny(backbone="recurrent", num_layers=N, backbone_options={
            "recurrent_depth": D, "share_weights_across_depth": share}))
        return sum(p.numel() for p in bb.parameters())

    for D in (1, 2, 4):
        assert count(D, True) == N * per_layer + H                   # independent of D
        assert count(D, False) == N * D * per_layer + H              # D-fold in the layers
    neo = sum(p.numel() for p in NeoBERTBackbone(tiny(backbone="neobert", num_layers=N)).parameters())
    assert neo == count(1, True) == count(1, False)
