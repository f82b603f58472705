"""Cross-layer bridges: zero gates give plain RoBERTa exactly, routing (i < j, top-k, restricted
softmax, straight-through gradient), padding never leaks into a bridge, the QKV and HDIM paths
against naive references, gates and the usage metrics."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from backbone_testutils import batch_of, make, tiny
from graphmert.model.attention import AttentionSpec
from graphmert.model.backbones import BridgesBackbone, build_backbone
from graphmert.model.backbones.bridge_paths import HDIMBridge, QKVBridge
from graphmert.model.backbones.routing import LayerRouter, pool_summary

MODES = ["qkv", "hdim", "hybrid"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_zero_gates_reproduce_roberta_exactly(mode, layout):
    roberta = make("roberta", seed=0).eval()
    bridges = make("bridges", {"mode": mode, "route_last_n": 3, "top_k": 2}, seed=1).eval()
    missing, unexpected = bridges.load_state_dict(roberta.state_dict(), strict=False)
    assert not unexpected and missing and all(k.startswith("backbone.bridges.") for k in missing)
    batch = batch_of(layout)
    with torch.no_grad():
        want = roberta(batch).hidden
        assert not torch.equal(bridges(batch).hidden, want)                  # gates 0.15 / 0.05: a change
        for bridge in bridges.backbone.bridges:
            for gate in bridge.gates.values():
                gate.zero_()
        got = bridges(batch).hidden
    assert torch.equal(got, want)


# -- routing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("j,k", [(5, 1), (5, 2), (5, 3), (2, 4)])
def test_router_takes_top_k_with_a_restricted_softmax(j, k):
    torch.manual_seed(0)
    router = LayerRouter(16, 8, temperature=0.7, top_k=k)
    target, sources = torch.randn(6, 16), torch.randn(6, j, 16)
    weights, chosen = router(target, sources)
    sigma = router.scores(target, sources)
    q = router.target_proj(target)
    ks = sources @ router.source_proj.weight.T
    want_sigma = torch.stack([torch.stack([q[b] @ ks[b, i] for i in range(j)]) for b in range(6)])
    assert torch.allclose(sigma, want_sigma / (math.sqrt(8) * 0.7), atol=1e-5)
    k_eff = min(k, j)
    assert weights.shape == (6, j) and chosen.shape == (6, k_eff)
    for b in range(6):
        top = set(sigma[b].topk(k_eff).indices.tolist())
        assert set(chosen[b].tolist()) == top
        nz = set(weights[b].nonzero().squeeze(-1).tolist())
        assert nz == top                                                   # exactly the top-k, nothing else
        idx = sorted(top)
        assert torch.allclose(weights[b, idx], torch.softmax(sigma[b, idx], 0), atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(6), atol=1e-6)


def test_router_gradient_is_straight_through_the_full_softmax():
    torch.manual_seed(0)
    router = LayerRouter(16, 8, temperature=0.7, top_k=1)
    target, sources = torch.randn(3, 16), torch.randn(3, 4, 16)
    upstream = torch.randn(3, 4)
    weights, _ = router(target, sources)
    (weights * upstream).sum().backward()
    got = router.target_proj.weight.grad.clone()
    router.zero_grad()
    (torch.softmax(router.scores(target, sources), -1) * upstream).sum().backward()
    assert got.abs().sum() > 0
    assert torch.allclose(got, router.target_proj.weight.grad, atol=1e-6)


@pytest.mark.parametrize("top_k", [1, 2])
def test_bridges_route_only_to_earlier_layers(top_k, monkeypatch):
    model = make("bridges", {"route_last_n": 3, "top_k": top_k}).eval()
    bb: BridgesBackbone = model.backbone
    seen = []
    for bridge in bb.bridges:
        if bridge.router is not None:
            original = bridge.router.forward

            def spy(target, sources, _original=original):
                seen.append(sources.shape[1])
                return _original(target, sources)
            monkeypatch.setattr(bridge.router, "forward", spy)
    batch = batch_of("packed")
    with torch.no_grad():
        model(batch)
    B = batch.input_ids.shape[0]
    assert bb.bridges[0].router is None                                    # layer 0: only h_0 to route to
    assert seen == [2, 3]                                                  # layer j sees h_0 .. h_{j−1}
    metrics = bb.metrics()
    for l in range(3):
        hist = metrics[f"layer{l}.sources"]
        assert len(hist) == l + 1                                          # sources i < j = l + 1
        assert sum(hist) == B * min(top_k, l + 1)


# -- padding ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pool", ["mean", "cls"])
def test_padded_tokens_never_reach_a_bridge(mode, pool):
    model = make("bridges", {"mode": mode, "pool": pool, "route_last_n": 3, "top_k": 2}).eval()
    batch = batch_of("dense")
    pad = ~batch.attention_mask
    assert pad.any()
    with torch.no_grad():
        x = model.embed(batch)
        want = model.backbone(x, model.attention_spec(batch))
        metrics = {k: v.clone() for k, v in model.backbone.last_metrics.items()}
        noisy = torch.where(pad.unsqueeze(-1), 100 * torch.randn_like(x), x)
        got = model.backbone(noisy, model.attention_spec(batch))
    m = batch.attention_mask
    assert torch.allclose(got[m], want[m], atol=1e-5, rtol=0)
    for key, value in model.backbone.last_metrics.items():
        assert torch.allclose(value.float(), metrics[key].float(), atol=1e-5), key


def padding_spec(mask: torch.Tensor) -> AttentionSpec:
    B, L = mask.shape
    return AttentionSpec(mask, torch.zeros(B, L, dtype=torch.long), torch.full((B, L), -1))


def test_hdim_scores_match_a_pairwise_mlp_and_mask_padding():
    torch.manual_seed(0)
    hdim = HDIMBridge(16, dim=4, scorer_hidden=6, fusion="concat_mlp", dropout=0.0).eval()
    a, M = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        got = hdim.scores(a, M)
        out = hdim(a, M, padding_spec(mask))
        z_t, z_s = hdim.target_proj(a), hdim.source_proj(M)
        want = torch.empty(2, 5, 5)
        want_out = torch.empty(2, 5, 16)
        for b in range(2):
            for t in range(5):
                for s in range(5):
                    zs, zt = z_s[b, s], z_t[b, t]
                    phi = torch.cat([zs, zt, zs * zt, (zs - zt).abs()])
                    want[b, t, s] = hdim.score_out(F.gelu(hdim.score_in(phi)))[0]
                real = mask[b].nonzero().squeeze(-1)
                beta = torch.softmax(want[b, t, real], 0)
                pooled = (beta[:, None] * M[b, real]).sum(0)
                want_out[b, t] = hdim.fuse(torch.cat([pooled, a[b, t]]))
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(out, want_out, atol=1e-5)


@pytest.mark.parametrize("fusion,n_params", [("concat_mlp", 2 * 16 * 16 + 16 + 16 * 16 + 16),
                                             ("concat_only", 2 * 16 * 16 + 16),
                                             ("value_mlp", 16 * 16 + 16 + 16 * 16 + 16)])
def test_hdim_fusion_variants(fusion, n_params):
    torch.manual_seed(0)
    hdim = HDIMBridge(16, dim=4, scorer_hidden=6, fusion=fusion, dropout=0.0)
    assert sum(p.numel() for p in hdim.fuse.parameters()) == n_params
    a, M = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    out = hdim(a, M, padding_spec(torch.ones(2, 5, dtype=torch.bool)))
    assert out.shape == (2, 5, 16)
    if fusion == "value_mlp":                                              # the target enters only via β
        a2 = a.clone()
        with torch.no_grad():
            hdim.target_proj.weight.zero_()
            hdim.target_proj.bias.zero_()
            assert torch.allclose(hdim(a, M, padding_spec(torch.ones(2, 5, dtype=torch.bool))),
                                  hdim(a2 * 3, M, padding_spec(torch.ones(2, 5, dtype=torch.bool))))


def test_qkv_bridge_is_masked_cross_attention():
    torch.manual_seed(0)
    for kernel in ("eager", "sdpa"):
        torch.manual_seed(0)
        qkv = QKVBridge(16, 2, dropout=0.0, kernel=kernel).eval()
        a, M = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0]], dtype=torch.bool)
        with torch.no_grad():
            got = qkv(a, M, padding_spec(mask))
            q = qkv.query(a)
            k, v = qkv.key_value(M).split(16, dim=-1)
            want = torch.empty(2, 5, 16)
            for b in range(2):
                for h in range(2):
                    sl = slice(8 * h, 8 * h + 8)
                    s = q[b, :, sl] @ k[b, :, sl].T / math.sqrt(8)
                    s[:, ~mask[b]] = -math.inf
                    want[b, :, sl] = torch.softmax(s, -1) @ v[b, :, sl]
            want = qkv.out(want)
        assert torch.allclose(got, want, atol=1e-5)


def test_pool_summary():
    h = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.allclose(pool_summary(h, mask, "mean")[0], h[0, :2].mean(0), atol=1e-6)
    assert torch.allclose(pool_summary(h, mask, "mean")[1], h[1].mean(0), atol=1e-6)
    assert torch.equal(pool_summary(h, mask, "cls"), h[:, 0])


# -- gates, layout of the stack, metrics ---------------------------------------------------------------


@pytest.mark.parametrize("softplus", [False, True])
def test_gates_start_at_their_init_values(softplus):
    bb = build_backbone(tiny(backbone="bridges", backbone_options={"softplus_gates": softplus,
                                                                   "gate_init_qkv": 0.2}))
    for bridge in bb.bridges:
        assert bridge.gate("qkv").item() == pytest.approx(0.2, abs=1e-6)
        assert bridge.gate("hdim").item() == pytest.approx(0.05, abs=1e-6)
        assert bridge.out.bias is None and bridge.out.weight.std().item() < 5e-3


def test_bridged_layers_are_the_last_n():
    bb = build_backbone(tiny(backbone="bridges", num_layers=5, backbone_options={"route_last_n": 2}))
    assert len(bb.bridges) == 2 and bb.first_bridged == 3
    assert [b.num_sources for b in bb.bridges] == [4, 5]
    shallow = build_backbone(tiny(backbone="bridges", num_layers=2))      # default 4 on 2 layers
    assert len(shallow.bridges) == 2
    assert set(bb.bridges[0].paths) == {"qkv", "hdim"}
    assert set(build_backbone(tiny(backbone="bridges", backbone_options={"mode": "qkv"}))
               .bridges[0].paths) == {"qkv"}


@pytest.mark.parametrize("mode", MODES)
def test_metrics_report_gates_norms_and_sources(mode):
    model = make("bridges", {"mode": mode, "route_last_n": 2}).eval()
    batch = batch_of("packed")
    with torch.no_grad():
        model(batch)
    m = model.backbone.metrics()
    paths = ["qkv", "hdim"] if mode == "hybrid" else [mode]
    want_keys = {f"layer{l}.{what}" for l in (1, 2) for what in
                 [f"gate_{p}" for p in paths] + [f"norm_{p}" for p in paths] + ["sources"]}
    assert set(m) == want_keys
    for l in (1, 2):
        for p in paths:
            assert m[f"layer{l}.gate_{p}"] == pytest.approx(0.15 if p == "qkv" else 0.05)
            assert 0 < m[f"layer{l}.norm_{p}"] < 1.0                       # near-zero output projection
    off = make("bridges", {"collect_metrics": False}).eval()
    with torch.no_grad():
        off(batch)
    assert off.backbone.last_metrics == {}


def test_unknown_pool_and_fusion_built_in_code_name_the_option():
    """Constructed directly (not through the validated config), bad names are ConfigErrors too."""
    from graphmert.config import ConfigError

    with pytest.raises(ConfigError, match=r"model\.backbone_options\.pool: unknown pooling 'max'"):
        pool_summary(torch.zeros(1, 2, 4), torch.ones(1, 2, dtype=torch.bool), "max")
    with pytest.raises(ConfigError, match=r"model\.backbone_options\.fusion: unknown fusion 'sum'"):
        HDIMBridge(hidden_size=8, dim=4, scorer_hidden=4, fusion="sum", dropout=0.0)
