"""model.sbo_decoder: the SBO head's V×H output matrix, tied to the token embedding (default, cheaper)
or its own (the paper's code; configs/graphmert-80m.yaml) — logits, parameter counts, checkpoints and
the paper-sized model's size."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, models
from typer.testing import CliRunner

from graphmert.config import ModelConfig, load_config
from graphmert.model import CheckpointError, build_model, load_checkpoint, parameter_breakdown, save_checkpoint
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED_KG = ROOT.parent / "shared" / "datasets" / "seed_kg_hetionet_disgenet_mesh"
V, H, NREL = 50, 16, 3
TIED = ModelConfig(hidden_size=H, num_layers=1, num_heads=2, intermediate_size=32)
UNTIED = dataclasses.replace(TIED, sbo_decoder="untied")
SPANS = (torch.tensor([0, 1, 5]), torch.tensor([3, 4, 9]), torch.tensor([0, 1, 2]))


def _model(cfg: ModelConfig, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(cfg, V, NREL).eval()


def _sbo(model, hidden):
    with torch.no_grad():
        return model.sbo_logits(hidden, *SPANS)


def test_tied_is_the_default_and_shares_the_token_embedding():
    assert ModelConfig().sbo_decoder == "tied"
    model = _model(TIED)
    assert model.sbo_head.decoder is None
    assert not any(n.startswith("sbo_head.decoder") for n, _ in model.named_parameters())


def test_untied_decodes_with_its_own_matrix():
    model, hidden = _model(UNTIED), torch.randn(2, 6, H)
    head = model.sbo_head
    assert head.decoder.weight.shape == (V, H)
    assert not torch.equal(head.decoder.weight, model.token_embedding)     # initialised on its own
    flat = hidden.reshape(12, H)
    z = torch.cat([flat[5], flat[9], head.position_embeddings.weight[2]])
    want = F.linear(head.transform(z), head.decoder.weight, head.bias)
    before = _sbo(model, hidden)
    torch.testing.assert_close(before[2], want)
    with torch.no_grad():                             # the token embedding does not reach the SBO head
        model.token_embedding.add_(1.0)
    torch.testing.assert_close(_sbo(model, hidden), before, rtol=0, atol=0)


def test_untied_adds_exactly_one_vocabulary_matrix():
    tied, untied = parameter_breakdown(_model(TIED)), parameter_breakdown(_model(UNTIED))
    assert untied["heads"] - tied["heads"] == untied["total"] - tied["total"] == V * H
    assert untied["embeddings"] == tied["embeddings"]


def test_untied_checkpoint_round_trip(tmp_path):
    vocab = tmp_path / "tok.json"
    Tokenizer(models.WordPiece({f"t{i}": i for i in range(V)}, unk_token="t0")).save(str(vocab))
    model = _model(UNTIED, seed=3)
    ckpt = save_checkpoint(tmp_path / "ckpt", model, UNTIED, vocab, {"a": 0, "b": 1, "c": 2})
    loaded, info = load_checkpoint(ckpt, expected_vocab=V, expected_config=UNTIED)
    assert info["config"].sbo_decoder == "untied"
    assert torch.equal(loaded.sbo_head.decoder.weight, model.sbo_head.decoder.weight)
    hidden = torch.randn(2, 6, H)
    torch.testing.assert_close(_sbo(loaded, hidden), _sbo(model, hidden), rtol=0, atol=0)
    with pytest.raises(CheckpointError, match="model.sbo_decoder"):
        load_checkpoint(ckpt, expected_config=TIED)


def test_checkpoints_without_the_key_load_as_tied(tmp_path):
    """Checkpoints written before model.sbo_decoder existed have no such key: they were tied."""
    vocab = tmp_path / "tok.json"
    Tokenizer(models.WordPiece({f"t{i}": i for i in range(V)}, unk_token="t0")).save(str(vocab))
    ckpt = save_checkpoint(tmp_path / "ckpt", _model(TIED), TIED, vocab, {"a": 0, "b": 1, "c": 2})
    data = json.loads((ckpt / "config.json").read_text())
    del data["model"]["sbo_decoder"]
    (ckpt / "config.json").write_text(json.dumps(data))
    loaded, info = load_checkpoint(ckpt)
    assert info["config"].sbo_decoder == "tied" and loaded.sbo_head.decoder is None


def test_the_paper_config_is_untied_and_the_paper_size_at_its_relation_count():
    """70,729,340 + 263,168·R: the paper's code has R = 34 rows of relation matrices → 79.7M."""
    cfg = load_config(ROOT / "configs" / "graphmert-80m.yaml")
    assert cfg.model.sbo_decoder == "untied"
    with torch.device("meta"):
        untied = parameter_breakdown(build_model(cfg.model, cfg.tokenizer.vocab_size, 34))
        tied = parameter_breakdown(build_model(dataclasses.replace(cfg.model, sbo_decoder="tied"),
                                               cfg.tokenizer.vocab_size, 34))
    assert untied["total"] == 70_729_340 + 34 * 263_168 == 79_677_052
    assert untied["total"] - tied["total"] == 30522 * 512                    # the cheaper variant


@pytest.mark.shared
@pytest.mark.skipif(not SEED_KG.is_dir(), reason=f"shared seed KG not found at {SEED_KG}")
def test_info_on_the_paper_config_with_the_shared_seed_kg():
    """What `graphmert info` prints for the paper's model on its config's seed KG — the shared KG's
    10 relations plus the BioRED and BC5CDR relation corpora's 9 — is the paper's size (75–85M):
    75.7M; the KG alone gives 73.4M (the figures in configs/graphmert-80m.yaml)."""
    files = [ROOT.parent / "shared" / "datasets" / f for f in
             ("biored/Train.PubTator", "bc5cdr/CDR_TrainingSet.PubTator.txt",
              "bc5cdr/CDR_DevelopmentSet.PubTator.txt")]
    args = ["info", "--json", "--config", str(ROOT / "configs" / "graphmert-80m.yaml"), f"kg.path={SEED_KG}"]
    r = CliRunner().invoke(app, args + [f"kg.relation_files=[{','.join(map(str, files))}]"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.output)["parameters"]
    assert p["num_relations"] == 19 and p["per_relation"] == 263_168
    assert p["heads"] == 17_272_436 and p["total"] == 75_729_532
    assert 75_000_000 <= p["total"] <= 85_000_000
    r = CliRunner().invoke(app, args + ["kg.relation_files=[]"])
    assert json.loads(r.output)["parameters"]["total"] == 73_361_020
