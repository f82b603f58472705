"""GraphMERT end to end: layout invariance, kernel equivalence, logits selection, SBO, gradients,
parameter breakdown, configuration errors and the registries."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from graphmert.config import ConfigError, ModelConfig, load_config
from graphmert.model import (ATTENTION_KERNELS, BACKBONES, DECAY_MODES, build_model,
                             parameter_breakdown)
from model_testgraphs import chain_graph_distances, collate, random_graphs

R, K, V, NREL = 12, 3, 60, 4

TINY = ModelConfig(hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_leaf_slots=K)


def tiny(**kw) -> ModelConfig:
    return dataclasses.replace(TINY, **kw)


def make(cfg: ModelConfig, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(cfg, V, NREL)


GRAPHS = random_graphs(4, R, K, V, NREL, fill=0.4, seed=11)


def outputs_by_node(model, layout):
    batch, positions = collate(GRAPHS, R, K, layout)
    with torch.no_grad():
        hidden = model(batch).hidden
    return {(b, key): hidden[b, pos] for b, p in enumerate(positions) for key, pos in p.items()}


@pytest.mark.parametrize("kernel", ["eager", "sdpa"])
@pytest.mark.parametrize("mode", ["logit_scale", "log_bias"])
@pytest.mark.parametrize("positions", ["none", "learned", "rotary"])
def test_packed_equals_dense(kernel, mode, positions):
    model = make(tiny(attention_kernel=kernel, decay_mode=mode, position_embedding=positions,
                      leaf_slot_embedding=positions != "none")).eval()
    dense, packed = outputs_by_node(model, "dense"), outputs_by_node(model, "packed")
    assert dense.keys() == packed.keys()
    assert any(key[1][1] >= 0 for key in dense)                     # leaves are really compared
    worst = max((dense[k] - packed[k]).abs().max().item() for k in dense)
    assert worst < 1e-5


@pytest.mark.parametrize("mode", ["logit_scale", "log_bias", "none"])
@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_eager_equals_sdpa(mode, layout):
    eager = make(tiny(attention_kernel="eager", decay_mode=mode)).eval()
    sdpa = make(tiny(attention_kernel="sdpa", decay_mode=mode)).eval()
    sdpa.load_state_dict(eager.state_dict())
    batch, _ = collate(GRAPHS, R, K, layout)
    with torch.no_grad():
        a, b = eager(batch).hidden, sdpa(batch).hidden
    m = batch.attention_mask
    assert torch.allclose(a[m], b[m], atol=1e-5, rtol=0)


def reference_forward(model, graph, decay: bool = True) -> dict:
    """GraphMERT (roberta backbone, eval) on one graph alone, written out from the formulas in float64
    (DESIGN §5): {(root i, slot k or −1): hidden [H]}. Only the graph's own nodes exist here — no
    padding, no other graphs — and distances are networkx shortest paths. ``decay=False`` drops the
    decay term (what a model that ignored it would compute)."""
    cfg, H, nh = model.config, model.config.hidden_size, model.config.num_heads
    dh = H // nh

    def layer_norm(x, norm):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + cfg.layer_norm_eps) * norm.weight + norm.bias

    def gelu(x):
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    nodes = [(i, -1) for i in range(len(graph.roots))]
    nodes += [(i, k) for i in sorted(graph.injections) for k in range(len(graph.injections[i][2]))]
    at = {n: a for a, n in enumerate(nodes)}
    tokens = [graph.roots[i] if k < 0 else graph.injections[i][2][k] for i, k in nodes]
    emb = model.embeddings
    x = emb.word_embeddings.weight[tokens]
    if emb.position_embeddings is not None:                        # leaves share their root's row
        x = x + emb.position_embeddings.weight[[i for i, _ in nodes]]
    if emb.leaf_slot_embeddings is not None:                       # row 0: roots
        x = x + emb.leaf_slot_embeddings.weight[[k + 1 for _, k in nodes]]
    x = layer_norm(x, emb.norm)
    # H-GAT: tail token t_k of the injection (r, m) at root i attends over head roots i..i+m−1
    fused = x.clone()
    for i, (r, m, tails) in graph.injections.items():
        W, a = model.hgat.weight[r], model.hgat.att[r]
        wh = torch.stack([x[at[(j, -1)]] @ W for j in range(i, i + m)])            # [m, H]
        for k in range(len(tails)):
            t = x[at[(i, k)]]
            e = F.leaky_relu(torch.stack([a @ torch.cat([t @ W, w]) for w in wh]), 0.01)
            fused[at[(i, k)]] = t + torch.softmax(e, 0) @ wh
    x = fused
    # decay f(d) = λ^GELU(√d − p_h): logits · f(d + 1) (logit_scale) or + ln f(d) (log_bias)
    dist = chain_graph_distances(len(graph.roots), {i: len(t) for i, (_, _, t) in graph.injections.items()})
    name = [("r", i) if k < 0 else ("l", i, k) for i, k in nodes]
    D = torch.tensor([[dist[u][v] for v in name] for u in name], dtype=torch.float64)   # [n, n]
    lam = cfg.decay_lambda
    for layer in model.backbone.layers:
        qkv = x @ layer.attention.qkv.weight.T + layer.attention.qkv.bias
        ctx = []
        for h in range(nh):
            q, k_, v = (qkv[:, j * H + h * dh: j * H + (h + 1) * dh] for j in range(3))
            s = q @ k_.T / math.sqrt(dh)
            if decay and cfg.decay_mode == "logit_scale":
                s = s * lam ** gelu(torch.sqrt(D + 1) - model.decay.p[h])
            elif decay and cfg.decay_mode == "log_bias":
                s = s + gelu(torch.sqrt(D) - model.decay.p[h]) * math.log(lam)
            ctx.append(torch.softmax(s, -1) @ v)
        c = torch.cat(ctx, -1)
        a_ = layer_norm(x + c @ layer.attn_out.weight.T + layer.attn_out.bias, layer.attn_norm)
        f_ = gelu(a_ @ layer.ffn_in.weight.T + layer.ffn_in.bias) @ layer.ffn_out.weight.T + layer.ffn_out.bias
        x = layer_norm(a_ + f_, layer.ffn_norm)
    return {n: x[a] for n, a in at.items()}


@pytest.mark.parametrize("layout", ["dense", "packed"])
@pytest.mark.parametrize("mode,positions,slots", [("logit_scale", "none", False),   # the paper's set-up
                                                  ("log_bias", "learned", True),
                                                  ("none", "none", False)])
def test_forward_matches_a_per_graph_reference(mode, positions, slots, layout):
    """Every real position of a batch equals the formulas applied to its graph alone: the decay by
    graph distance, H-GAT into the tails, embeddings, layers; padding and batch neighbours change
    nothing."""
    model = make(tiny(decay_mode=mode, position_embedding=positions, leaf_slot_embedding=slots,
                      decay_lambda=0.5)).double().eval()
    with torch.no_grad():
        if mode != "none":
            model.decay.p.copy_(torch.tensor([0.0, 0.5, 1.0, 2.0]))     # a different p per head
        for layer in model.backbone.layers:    # logits of order 1 (at init they are ~0, and a decay
            layer.attention.qkv.weight.normal_(std=0.3)       # that scales them has little to act on)
        got = outputs_by_node(model, layout)
        for b, graph in enumerate(GRAPHS):
            want = reference_forward(model, graph)
            assert {key for (bb, key) in got if bb == b} == set(want)
            for key, w in want.items():
                assert torch.allclose(got[(b, key)], w, atol=1e-10, rtol=0), (b, key)
            if mode != "none":   # the decay moves the output far beyond that tolerance
                plain = reference_forward(model, graph, decay=False)
                assert max((want[k] - plain[k]).abs().max().item() for k in want) > 1e-2


def test_hgat_changes_only_leaves_at_input():
    model = make(tiny()).eval()
    batch, _ = collate(GRAPHS, R, K, "packed")
    with torch.no_grad():
        with_hgat = model.embed(batch)
        plain = model.embeddings(batch.input_ids, batch.root_index, batch.leaf_slot)
    changed = (with_hgat - plain).abs().amax(-1) > 0                 # [B, L]
    tails = torch.zeros(batch.input_ids.numel(), dtype=torch.bool)
    tails[batch.hgat_edge_index[1]] = True
    assert torch.equal(changed.reshape(-1), tails)


def test_logits_at_selected_positions():
    model = make(tiny()).eval()
    batch, _ = collate(GRAPHS, R, K, "packed")
    gen = torch.Generator().manual_seed(0)
    select = batch.attention_mask & (torch.rand(batch.input_ids.shape, generator=gen) < 0.3)
    with torch.no_grad():
        full = model(batch, logits_at="all")
        part = model(batch, logits_at=select)
        idx = model(batch, logits_at=select.reshape(-1).nonzero().squeeze(-1))
    assert full.logits.shape == (*batch.input_ids.shape, V)
    assert part.logits.shape == (int(select.sum()), V)
    assert torch.allclose(part.logits, full.logits[select], atol=1e-6)
    assert torch.equal(part.logits, idx.logits)
    assert model(batch).logits is None
    with pytest.raises(ValueError, match="logits_at"):
        model(batch, logits_at="masked")


def test_decoder_is_tied_to_token_embedding():
    model = make(tiny()).eval()
    h = torch.randn(5, 32)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.mul_(2)
        z = model.mlm_head.transform(h)
        want = z @ model.embeddings.word_embeddings.weight.t() + model.mlm_head.bias
        assert torch.allclose(model.mlm_head(h, model.token_embedding), want, atol=1e-6)
    names = [n for n, _ in model.named_parameters()]
    assert not any("decoder" in n for n in names)


def test_sbo_logits():
    model = make(tiny()).eval()
    hidden = torch.randn(2, 10, 32)
    left, right, rel = torch.tensor([0, 0, 11]), torch.tensor([4, 4, 15]), torch.tensor([0, 2, 1])
    logits = model.sbo_logits(hidden, left, right, rel)
    assert logits.shape == (3, V)
    head = model.sbo_head
    flat = hidden.reshape(20, 32)
    z = torch.cat([flat[11], flat[15], head.position_embeddings.weight[1]])
    want = F.linear(head.transform(z), model.token_embedding, head.bias)
    assert torch.allclose(logits[2], want, atol=1e-6)
    with pytest.raises(ValueError, match="model.sbo_max_span_length"):
        model.sbo_logits(hidden, left[:1], right[:1], torch.tensor([TINY.sbo_max_span_length]))
    with pytest.raises(ValueError, match="model.sbo_head"):
        make(tiny(sbo_head=False)).sbo_logits(hidden, left, right, rel)


@pytest.mark.parametrize("mode,positions", [("logit_scale", "learned"), ("log_bias", "rotary")])
def test_gradients_reach_every_parameter(mode, positions):
    model = make(tiny(decay_mode=mode, position_embedding=positions, leaf_slot_embedding=True,
                      relation_dropout=0.1)).train()
    graphs = random_graphs(6, R, K, V, NREL, fill=0.6, seed=3)
    batch, _ = collate(graphs, R, K, "packed")
    assert set(batch.hgat_edge_type.tolist()) == set(range(NREL))
    targets = batch.attention_mask
    out = model(batch, logits_at=targets)
    loss = F.cross_entropy(out.logits, batch.input_ids[targets])
    left, right, rel = torch.tensor([0, 1]), torch.tensor([3, 4]), torch.tensor([0, 1])
    loss = loss + F.cross_entropy(model.sbo_logits(out.hidden, left, right, rel), batch.input_ids[0, 1:3])
    loss.backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not dead, dead
    assert model.decay.p.grad.abs().min() > 0                         # every head's p learns


def test_parameter_breakdown_paper_config():
    parts = parameter_breakdown(build_model(ModelConfig(), 30522, 3))
    H, Ff, Lyr = 512, 2048, 12
    assert parts["embeddings"] == 30522 * H + 2 * H
    assert parts["encoder"] == Lyr * (4 * H * H + 4 * H + 2 * H * Ff + Ff + H + 4 * H) + 8
    assert parts["relations"] == 3 * (H * H + 2 * H)
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")


# -- configuration errors ----------------------------------------------------------------------------


def test_hidden_not_divisible_by_heads():
    with pytest.raises(ConfigError, match="model.hidden_size"):
        load_config(overrides=["model.hidden_size=65"])
    with pytest.raises(ConfigError, match="model.hidden_size"):
        build_model(tiny(hidden_size=30), V, NREL)


@pytest.mark.parametrize("lam", [0.0, -0.5, 1.5])
def test_lambda_outside_unit_interval(lam):
    with pytest.raises(ConfigError, match="model.decay_lambda"):
        load_config(overrides=[f"model.decay_lambda={lam}"])
    with pytest.raises(ConfigError, match="model.decay_lambda"):
        build_model(tiny(decay_lambda=lam), V, NREL)


@pytest.mark.parametrize("key,value", [("backbone", "bert"), ("attention_kernel", "flash"),
                                       ("decay_mode", "linear")])
def test_unknown_registry_names(key, value):
    with pytest.raises(ConfigError, match=rf"model\.{key}: unknown .*'{value}'.*choose from"):
        build_model(tiny(**{key: value}), V, NREL)


def test_cross_checks_with_graph_section():
    with pytest.raises(ConfigError, match="model.max_position_embeddings"):
        load_config(overrides=["model.position_embedding=learned", "model.max_position_embeddings=64"])
    with pytest.raises(ConfigError, match="model.max_leaf_slots"):
        load_config(overrides=["model.leaf_slot_embedding=true", "model.max_leaf_slots=4"])
    with pytest.raises(ConfigError, match="model.position_embedding"):
        build_model(tiny(hidden_size=36, num_heads=4, position_embedding="rotary"), V, NREL)
    with pytest.raises(ConfigError, match="model.backbone_options.depth"):
        build_model(tiny(backbone_options={"depth": 3}), V, NREL)


def test_registered_names_do_not_disappear():
    assert {"roberta"} <= set(BACKBONES.names())
    assert {"eager", "sdpa"} <= set(ATTENTION_KERNELS.names())
    assert {"logit_scale", "log_bias", "none"} <= set(DECAY_MODES.names())
    assert BACKBONES.key == "model.backbone"
    assert ATTENTION_KERNELS.key == "model.attention_kernel"
    assert DECAY_MODES.key == "model.decay_mode"


# -- shipped configs -----------------------------------------------------------------------------------

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_paper_config_parameter_count():
    cfg = load_config(CONFIGS / "graphmert-80m.yaml")
    m = cfg.model
    assert (m.num_layers, m.hidden_size, m.num_heads, m.intermediate_size) == (12, 512, 8, 2048)
    assert (m.decay_mode, m.decay_lambda, m.decay_p_init, m.position_embedding) == ("logit_scale", 0.6,
                                                                                     1.0, "none")
    parts = parameter_breakdown(build_model(m, cfg.tokenizer.vocab_size, 0))
    assert parts["total"] == 70_729_340           # the figure quoted in the YAML (untied SBO decoder)
    per_relation = 512 * 512 + 2 * 512
    assert per_relation == 263_168
    assert 79.5e6 < parts["total"] + 34 * per_relation < 80.5e6  # the paper's 34 relations → ~79.7M


def test_tiny_config_runs():
    cfg = load_config(CONFIGS / "tiny.yaml")
    model = build_model(cfg.model, cfg.tokenizer.vocab_size, NREL).eval()
    R_, K_ = cfg.graph.num_roots, cfg.graph.num_leaves
    batch, _ = collate(random_graphs(2, R_, K_, cfg.tokenizer.vocab_size, NREL, seed=0), R_, K_, "packed")
    with torch.no_grad():
        out = model(batch, logits_at=batch.attention_mask)
    assert out.hidden.shape == (*batch.input_ids.shape, cfg.model.hidden_size)
    assert torch.isfinite(out.logits).all()


@pytest.mark.parametrize("kernel", ["eager", "sdpa"])
@pytest.mark.parametrize("mode", ["logit_scale", "log_bias"])
def test_runs_under_bf16_autocast(kernel, mode):
    model = make(tiny(attention_kernel=kernel, decay_mode=mode)).train()
    batch, _ = collate(GRAPHS, R, K, "packed")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch, logits_at=batch.attention_mask)
        loss = F.cross_entropy(out.logits.float(), batch.input_ids[batch.attention_mask])
    loss.backward()
    assert torch.isfinite(loss)
    assert model.decay.p.grad is not None and torch.isfinite(model.decay.p.grad).all()
    assert model.hgat.weight.grad.abs().sum() > 0
