"""Stand-alone heads: classification heads of NeoBERT and the recurrent backbone learn a task that
needs word order, the losses (cross-entropy / MSE / BCE), the LM head (plain and nGPT), padding
invariance of the stand-alone encoder, and the plain-sequence attention spec."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from graphmert.config import ConfigError, ModelConfig
from graphmert.model.backbones.sequence import (BackboneForMaskedLM, BackboneForSequenceClassification,
                                             LMHead, SequenceClassificationHead, sequence_attention_spec)
from graphmert.model.decay import build_decay

V, L = 20, 10
CLS, A, B = 1, 2, 3


def cfg(backbone: str, options: dict | None = None, **kw) -> ModelConfig:
    base = dict(backbone=backbone, backbone_options=dict(options or {}), hidden_size=32, num_layers=2,
                num_heads=4, intermediate_size=64, dropout=0.0, attention_dropout=0.0,
                decay_mode="log_bias")
    return ModelConfig(**{**base, **kw})


def a_before_b(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """[CLS] + 9 filler tokens with one A and one B at random places; label: A comes before B."""
    ids = torch.randint(4, V, (n, L), generator=gen)
    ids[:, 0] = CLS
    where = torch.argsort(torch.rand(n, L - 1, generator=gen), dim=1)[:, :2] + 1    # two distinct slots
    ids[torch.arange(n), where[:, 0]] = A
    ids[torch.arange(n), where[:, 1]] = B
    return ids, (where[:, 0] < where[:, 1]).long()


@pytest.mark.parametrize("backbone,options", [
    ("neobert", {}),
    ("neobert", {"normalized": True}),
    ("recurrent", {"recurrent_depth": 2, "residual_scale": 0.5}),
])
def test_classification_head_learns_word_order(backbone, options):
    """Order reaches these backbones only through RoPE; 120 Adam steps take them far above chance.

    initializer_range 0.1 gives this H = 32 model the per-layer gain √H·σ ≈ 0.57 of BERT-base's
    default (√768 · 0.02 ≈ 0.55); at σ = 0.02 a 32-wide model sits on the chance plateau much longer.
    """
    torch.manual_seed(0)
    model = BackboneForSequenceClassification(cfg(backbone, options, initializer_range=0.1), V, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(0)
    test_x, test_y = a_before_b(512, torch.Generator().manual_seed(1))
    for _ in range(120):
        x, y = a_before_b(32, gen)
        loss = model(x, labels=y).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(test_x).logits.argmax(-1) == test_y).float().mean().item()
    assert test_y.float().mean().item() == pytest.approx(0.5, abs=0.06)   # balanced: chance is ~0.5
    assert acc > 0.85, acc


def test_classification_losses():
    torch.manual_seed(0)
    x, _ = a_before_b(4, torch.Generator().manual_seed(0))
    model = BackboneForSequenceClassification(cfg("neobert"), V, 3).eval()
    labels = torch.tensor([0, 2, 1, 2])
    out = model(x, labels=labels)
    assert out.logits.shape == (4, 3) and out.hidden.shape == (4, L, 32)
    assert torch.allclose(out.loss, F.cross_entropy(out.logits, labels))
    multi = torch.tensor([[1.0, 0, 1], [0, 0, 1], [1, 1, 1], [0, 0, 0]])
    assert torch.allclose(model(x, labels=multi).loss, F.binary_cross_entropy_with_logits(out.logits, multi))
    with pytest.raises(ValueError, match="labels"):
        model(x, labels=torch.zeros(4, 2))
    reg = BackboneForSequenceClassification(cfg("recurrent"), V, 1).eval()
    target = torch.randn(4)
    out = reg(x, labels=target)
    assert out.logits.shape == (4, 1)
    assert torch.allclose(out.loss, F.mse_loss(out.logits.squeeze(-1), target))
    with pytest.raises(ConfigError, match="num_labels"):
        BackboneForSequenceClassification(cfg("neobert"), V, 0)


def test_classification_head_formula_uses_the_first_token():
    torch.manual_seed(0)
    head = SequenceClassificationHead(8, 3, dropout=0.5).eval()
    h = torch.randn(2, 5, 8)
    want = torch.tanh(h[:, 0] @ head.dense.weight.T + head.dense.bias) @ head.classifier.weight.T \
        + head.classifier.bias
    assert torch.allclose(head(h), want, atol=1e-6)
    h2 = h.clone()
    h2[:, 1:] = torch.randn(2, 4, 8)
    assert torch.equal(head(h2), head(h))


def test_masked_lm_head_and_loss():
    torch.manual_seed(0)
    model = BackboneForMaskedLM(cfg("neobert"), V).eval()
    x, _ = a_before_b(3, torch.Generator().manual_seed(0))
    labels = torch.full_like(x, -100)
    labels[:, 3] = x[:, 3]
    out = model(x, labels=labels)
    assert out.logits.shape == (3, L, V)
    assert torch.allclose(out.loss, F.cross_entropy(out.logits[:, 3], x[:, 3]))
    decoder = model.lm_head.decoder
    assert torch.allclose(out.logits, out.hidden @ decoder.weight.T + decoder.bias)


def test_normalized_lm_head_is_scaled_cosine():
    torch.manual_seed(0)
    head = LMHead(8, 11, normalized=True)
    assert head.decoder.bias is None
    with torch.no_grad():
        head.decoder.weight.mul_(5)
    h = F.normalize(torch.randn(4, 8), dim=-1)
    cos = h @ F.normalize(head.decoder.weight, dim=1).T
    assert torch.allclose(head(h), cos, atol=1e-6)                      # s_z starts at 1
    with torch.no_grad():
        head.s_z.mul_(2)
    assert torch.allclose(head(h), 2 * cos, atol=1e-6)
    model = BackboneForMaskedLM(cfg("neobert", {"normalized": True}), V)
    assert model.lm_head.normalized
    with torch.no_grad():
        assert torch.allclose(model.encoder(torch.randint(0, V, (2, L))).norm(dim=-1), torch.ones(2, L),
                              atol=1e-5)                               # unit-norm hidden states


@pytest.mark.parametrize("backbone", ["roberta", "neobert", "recurrent", "bridges"])
def test_right_padding_does_not_change_real_outputs(backbone):
    torch.manual_seed(0)
    model = BackboneForSequenceClassification(cfg(backbone, position_embedding="rotary"
                                                  if backbone == "roberta" else "none"), V, 2).eval()
    x, _ = a_before_b(2, torch.Generator().manual_seed(0))
    padded = torch.cat([x, torch.randint(4, V, (2, 5))], dim=1)
    mask = torch.cat([torch.ones(2, L), torch.zeros(2, 5)], dim=1)
    with torch.no_grad():
        a = model(x)
        b = model(padded, attention_mask=mask)
    assert torch.allclose(a.logits, b.logits, atol=1e-5)
    assert torch.allclose(a.hidden, b.hidden[:, :L], atol=1e-5)


@pytest.mark.parametrize("mode", ["log_bias", "logit_scale", "none"])
def test_sequence_spec_is_a_chain_graph(mode):
    decay = build_decay(mode, 4, 0.6, 1.0)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    spec = sequence_attention_spec(mask, decay)
    assert torch.equal(spec.positions, torch.arange(4).expand(2, 4))
    assert (spec.leaf_slot == -1).all()
    dist = (torch.arange(4)[:, None] - torch.arange(4)[None, :]).abs()
    if mode == "log_bias":
        want = torch.stack([torch.tensor([[(math.erf((math.sqrt(d) - 1) / math.sqrt(2)) + 1) / 2
                                            * (math.sqrt(d) - 1) * math.log(0.6) for d in row]
                                          for row in dist.tolist()])] * 4)
        assert torch.allclose(spec.decay_bias[0], want.float(), atol=1e-6)
    elif mode == "logit_scale":
        assert torch.allclose(spec.decay_scale[0, 0], decay.table(5)[0][dist], atol=1e-6)
    else:
        assert spec.decay_bias is None and spec.decay_scale is None
