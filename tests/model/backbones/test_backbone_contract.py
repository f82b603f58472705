"""The backbone contract, for every registered backbone inside GraphMERT: output shapes, gradients to
every parameter, determinism under a seed, packed = dense at real positions, the registry, and
option validation (errors name ``model.backbone_options.<key>``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from backbone_testutils import (K, NREL, R, V, VARIANTS, batch_of, make, outputs_by_node, tiny,
                                variant_id)
from graphmert.config import ConfigError, load_config
from graphmert.model import BACKBONES, build_model
from graphmert.model.backbones import Backbone, build_backbone
from model_testgraphs import collate, random_graphs

IDS = [variant_id(v) for v in VARIANTS]


def test_registered_backbones_do_not_disappear():
    assert {"roberta", "neobert", "recurrent", "bridges"} <= set(BACKBONES.names())
    for name in ("roberta", "neobert", "recurrent", "bridges"):
        cls = BACKBONES.get(name)
        assert issubclass(cls, Backbone)
        assert isinstance(build_backbone(tiny(backbone=name)), cls)


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_forward_shapes(variant):
    model = make(*variant).eval()
    for layout in ("dense", "packed"):
        batch = batch_of(layout)
        with torch.no_grad():
            out = model(batch, logits_at=batch.attention_mask)
            x = model.embed(batch)
            h = model.backbone(x, model.attention_spec(batch))
        assert out.hidden.shape == (*batch.input_ids.shape, 32)
        assert h.shape == x.shape
        assert out.logits.shape == (int(batch.attention_mask.sum()), V)
        assert torch.isfinite(out.hidden[batch.attention_mask]).all()


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
@pytest.mark.parametrize("mode", ["logit_scale", "log_bias"])
def test_packed_equals_dense(variant, mode):
    model = make(*variant, decay_mode=mode).eval()
    dense, packed = outputs_by_node(model, "dense"), outputs_by_node(model, "packed")
    assert dense.keys() == packed.keys()
    assert any(key[1][1] >= 0 for key in dense)                     # leaves are really compared
    worst = max((dense[k] - packed[k]).abs().max().item() for k in dense)
    assert worst < 1e-5


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v[0] != "roberta"],
                         ids=[i for i in IDS if i != "roberta"])
def test_eager_equals_sdpa(variant):
    for mode in ("log_bias", "none"):
        eager = make(*variant, attention_kernel="eager", decay_mode=mode).eval()
        sdpa = make(*variant, attention_kernel="sdpa", decay_mode=mode).eval()
        sdpa.load_state_dict(eager.state_dict())
        batch = batch_of("packed")
        with torch.no_grad():
            a, b = eager(batch).hidden, sdpa(batch).hidden
        m = batch.attention_mask
        assert torch.allclose(a[m], b[m], atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_gradients_reach_every_parameter(variant):
    model = make(*variant, decay_mode="log_bias").train()
    graphs = random_graphs(6, R, K, V, NREL, fill=0.6, seed=3)
    batch, _ = collate(graphs, R, K, "packed")
    targets = batch.attention_mask
    out = model(batch, logits_at=targets)
    F.cross_entropy(out.logits, batch.input_ids[targets]).backward()
    dead = [n for n, p in model.named_parameters()
            if n.startswith(("backbone.", "decay.")) and (p.grad is None or not p.grad.abs().sum() > 0)]
    assert not dead, dead
    assert any(n.startswith("backbone.") for n, _ in model.named_parameters())


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_deterministic_under_a_seed(variant):
    batch = batch_of("packed")
    outs = []
    for _ in range(2):
        model = make(*variant, seed=5).train()                      # dropout on
        torch.manual_seed(9)
        outs.append((model(batch).hidden, model.state_dict()))
    (h1, sd1), (h2, sd2) = outs
    assert all(torch.equal(sd1[k], sd2[k]) for k in sd1)
    assert torch.equal(h1, h2)
    other = make(*variant, seed=6)
    assert any(not torch.equal(sd1[k], v) for k, v in other.state_dict().items())


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_runs_under_bf16_autocast(variant):
    model = make(*variant).train()
    batch = batch_of("packed")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch, logits_at=batch.attention_mask)
        loss = F.cross_entropy(out.logits.float(), batch.input_ids[batch.attention_mask])
    loss.backward()
    assert torch.isfinite(loss)


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_checkpoint_round_trip(variant, tmp_path):
    from tokenizers import Tokenizer, models

    from graphmert.model import load_checkpoint, save_checkpoint

    tok = tmp_path / "tok.json"
    Tokenizer(models.WordPiece({f"t{i}": i for i in range(V)}, unk_token="t0")).save(str(tok))
    model = make(*variant).eval()
    with torch.no_grad():                                           # off the init values (gates too)
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    rmap = {f"r{i}": i for i in range(NREL)}
    ckpt = save_checkpoint(tmp_path / "ckpt", model, model.config, tok, rmap)
    loaded, info = load_checkpoint(ckpt, expected_vocab=V, expected_relations=rmap,
                                   expected_config=model.config)
    assert info["config"].backbone_options == variant[1]
    batch = batch_of("packed")
    with torch.no_grad():
        assert torch.equal(model(batch).hidden, loaded(batch).hidden)


# -- options -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backbone,key,value,match", [
    ("neobert", "depth", 3, "unknown key"),
    ("neobert", "normalized", "yes", "expected true/false"),
    ("neobert", "rope_theta", -1.0, "out of range"),
    ("neobert", "ffn_size", 0, "out of range"),
    ("recurrent", "recurrent_depth", 0, "out of range"),
    ("recurrent", "residual_scale", 2.0, "out of range"),
    ("recurrent", "share_weights_across_depth", 1, "expected true/false"),
    ("bridges", "mode", "cross", "not allowed"),
    ("bridges", "pool", "max", "not allowed"),
    ("bridges", "fusion", "sum", "not allowed"),
    ("bridges", "temperature", 0.0, "out of range"),
    ("bridges", "top_k", 0, "out of range"),
    ("bridges", "route_last_n", 4, "exceeds model.num_layers"),
    ("roberta", "depth", 3, "unknown option"),
])
def test_bad_options_name_the_key(backbone, key, value, match):
    with pytest.raises(ConfigError, match=rf"model\.backbone_options\.{key}: .*{match}"):
        build_model(tiny(backbone=backbone, backbone_options={key: value}), V, NREL)


def test_option_combinations_are_checked():
    with pytest.raises(ConfigError, match=r"model\.backbone_options\.bias: .*normalized"):
        build_model(tiny(backbone="neobert", backbone_options={"normalized": True, "bias": True}), V, NREL)


def test_options_come_from_yaml_and_dotted_overrides():
    cfg = load_config(CONFIGS / "tiny-recurrent.yaml", overrides=[
        "model.backbone_options.recurrent_depth=3", "model.backbone_options.rope_theta=500.0"])
    bb = build_backbone(cfg.model)
    assert (bb.depth, bb.residual_scale, bb.share) == (3, 0.5, True)   # 0.5 from the YAML file
    assert bb.opts.rope_theta == 500.0
    with pytest.raises(ConfigError, match=r"model\.backbone_options\.recurrent_dept: unknown key"):
        build_backbone(load_config(CONFIGS / "tiny-recurrent.yaml",
                                   overrides=["model.backbone_options.recurrent_dept=3"]).model)


def test_bridges_softplus_needs_positive_gate_inits():
    with pytest.raises(ConfigError, match=r"model\.backbone_options\.gate_init_hdim: .*softplus"):
        build_model(tiny(backbone="bridges", backbone_options={"softplus_gates": True,
                                                               "gate_init_hdim": 0.0}), V, NREL)


@pytest.mark.parametrize("backbone", ["neobert", "recurrent"])
def test_rope_backbones_reject_learned_positions_and_odd_heads(backbone):
    with pytest.raises(ConfigError, match=r"model\.position_embedding: 'learned'"):
        build_model(tiny(backbone=backbone, position_embedding="learned"), V, NREL)
    with pytest.raises(ConfigError, match=r"model\.num_heads: .*even head size"):
        build_model(tiny(backbone=backbone, hidden_size=36, num_heads=4), V, NREL)


def test_options_are_typed_and_defaults_resolved():
    model = make("neobert", {"rope_theta": 500, "ffn_size": 40})
    assert model.backbone.opts.rope_theta == 500.0 and isinstance(model.backbone.opts.rope_theta, float)
    assert model.backbone.layers[0].ffn.ffn_size == 40
    default = make("neobert")
    theta = 10000.0 ** (-2 / 8)                                      # head size 8: inv_freq[1]
    assert default.backbone.rotary.inv_freq[1].item() == pytest.approx(theta)
    custom = make("neobert", {"rope_theta": 500}).backbone.rotary
    assert custom.inv_freq[1].item() == pytest.approx(500 ** (-2 / 8))


# -- shipped configs -----------------------------------------------------------------------------------

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "backbones"


@pytest.mark.parametrize("name", ["tiny-neobert", "tiny-recurrent", "tiny-bridges"])
def test_tiny_backbone_configs_run(name):
    cfg = load_config(CONFIGS / f"{name}.yaml")
    model = build_model(cfg.model, cfg.tokenizer.vocab_size, NREL).eval()
    R_, K_ = cfg.graph.num_roots, cfg.graph.num_leaves
    batch, _ = collate(random_graphs(2, R_, K_, cfg.tokenizer.vocab_size, NREL, seed=0), R_, K_, "packed")
    with torch.no_grad():
        out = model(batch, logits_at=batch.attention_mask)
    assert cfg.model.backbone == name.removeprefix("tiny-")
    assert torch.isfinite(out.logits).all()


@pytest.mark.parametrize("name,lo,hi", [("neobert", 0.95, 1.05), ("bridges", 1.0, 1.3),
                                         ("recurrent", 0.45, 0.55)])
def test_paper_sized_backbone_configs(name, lo, hi):
    """Full-size configs match the paper encoder (12 × 512): neobert in parameters, bridges adds
    its bridges to the same stack, recurrent in layer applications (6 layers × 2 iterations)."""
    cfg = load_config(CONFIGS / f"{name}.yaml")
    paper = load_config(CONFIGS.parent / "graphmert-80m.yaml")
    assert cfg.model.backbone == name and cfg.model.hidden_size == 512
    backbone = build_backbone(cfg.model)
    n = sum(p.numel() for p in backbone.parameters())
    ref = sum(p.numel() for p in build_backbone(paper.model).parameters())
    assert lo * ref <= n <= hi * ref, (n, ref)
    applications = cfg.model.num_layers * getattr(backbone.opts, "recurrent_depth", 1)
    assert applications == 12
