"""Checkpoint directories: round trip, atomic replacement, no pickle, clear mismatch errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models

from graphmert.model import CheckpointError, build_model, load_checkpoint, save_checkpoint
from graphmert.model.checkpoint import read_checkpoint_config
from graphmert.config import ModelConfig
from model_testgraphs import collate, random_graphs

V, NREL, R, K = 40, 3, 10, 2
CFG = ModelConfig(hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32, decay_mode="log_bias",
                  position_embedding="learned", leaf_slot_embedding=True, max_leaf_slots=K)
RMAP = {"treats": 0, "binds": 1, "isa": 2}


@pytest.fixture()
def tokenizer_file(tmp_path: Path) -> Path:
    vocab = {f"tok{i}": i for i in range(V)}
    path = tmp_path / "tok.json"
    Tokenizer(models.WordPiece(vocab, unk_token="tok0")).save(str(path))
    return path


def trained_model():
    torch.manual_seed(0)
    model = build_model(CFG, V, NREL)
    with torch.no_grad():                      # move every parameter off its init value
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return model.eval()


def test_round_trip_gives_identical_outputs(tmp_path, tokenizer_file):
    model = trained_model()
    ckpt = save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, RMAP)
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors",
                                                       "relation_map.json", "tokenizer.json"]
    loaded, info = load_checkpoint(ckpt, expected_vocab=V, expected_relations=RMAP, expected_config=CFG)
    assert info["config"] == CFG and info["vocab_size"] == V and info["num_relations"] == NREL
    assert info["relation_map"] == RMAP
    assert info["tokenizer_path"].read_bytes() == tokenizer_file.read_bytes()
    assert not loaded.training
    batch, _ = collate(random_graphs(3, R, K, V, NREL, fill=0.5, seed=2), R, K, "packed")
    with torch.no_grad():
        a = model(batch, logits_at="all")
        b = loaded(batch, logits_at="all")
    assert torch.equal(a.hidden, b.hidden) and torch.equal(a.logits, b.logits)
    for (n1, p1), (n2, p2) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert n1 == n2 and torch.equal(p1, p2)


def test_the_trained_relations_round_trip_and_are_checked(tmp_path, tokenizer_file):
    """A checkpoint names the relations its model learned (a subset of the relation map); one
    written without them reads as None."""
    model = trained_model()
    save_checkpoint(tmp_path / "a", model, CFG, tokenizer_file, RMAP, ["treats", "binds"])
    assert load_checkpoint(tmp_path / "a")[1]["trained_relations"] == ["binds", "treats"]
    save_checkpoint(tmp_path / "b", model, CFG, tokenizer_file, RMAP)
    assert load_checkpoint(tmp_path / "b")[1]["trained_relations"] is None
    with pytest.raises(CheckpointError, match=r"c: trained_relations: 'causes' is not in the relation map"):
        save_checkpoint(tmp_path / "c", model, CFG, tokenizer_file, RMAP, ["treats", "causes"])
    assert not (tmp_path / "c").exists()
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    (tmp_path / "a" / "config.json").write_text(json.dumps({**config, "trained_relations": "treats"}))
    with pytest.raises(CheckpointError, match=r"a/config.json: trained_relations: must be a list of "
                                              r"relation names, got 'treats'"):
        load_checkpoint(tmp_path / "a")


def test_overwrite_is_atomic_and_leaves_no_temporaries(tmp_path, tokenizer_file):
    model = trained_model()
    save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, RMAP)
    with torch.no_grad():
        model.mlm_head.bias.fill_(3.0)
    save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, RMAP)
    assert [p.name for p in tmp_path.iterdir() if p.name != "tok.json"] == ["ckpt"]
    loaded, _ = load_checkpoint(tmp_path / "ckpt")
    assert torch.all(loaded.mlm_head.bias == 3.0)


def test_failed_save_leaves_previous_checkpoint(tmp_path, tokenizer_file):
    model = trained_model()
    save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, RMAP)
    before = (tmp_path / "ckpt" / "model.safetensors").read_bytes()
    with pytest.raises(CheckpointError, match="relation ids"):
        save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, {"treats": 0, "binds": 5, "isa": 2})
    with pytest.raises(CheckpointError, match="relation 'binds' has id '1', not an integer"):
        save_checkpoint(tmp_path / "ckpt", model, CFG, tokenizer_file, {"treats": 0, "binds": "1", "isa": 2})
    with pytest.raises(CheckpointError, match="tokenizer file not found"):
        save_checkpoint(tmp_path / "ckpt", model, CFG, tmp_path / "missing.json", RMAP)
    assert (tmp_path / "ckpt" / "model.safetensors").read_bytes() == before


def test_weights_are_safetensors_not_pickle(tmp_path, tokenizer_file):
    ckpt = save_checkpoint(tmp_path / "ckpt", trained_model(), CFG, tokenizer_file, RMAP)
    head = (ckpt / "model.safetensors").read_bytes()[:16]
    assert not head.startswith(b"\x80") and not head.startswith(b"PK")   # no pickle / torch zip
    from safetensors import safe_open
    with safe_open(str(ckpt / "model.safetensors"), "pt") as f:
        assert "embeddings.word_embeddings.weight" in f.keys()


def test_mismatches_are_clear_errors(tmp_path, tokenizer_file):
    ckpt = save_checkpoint(tmp_path / "ckpt", trained_model(), CFG, tokenizer_file, RMAP)
    with pytest.raises(CheckpointError, match="vocabulary size 40 does not match the expected 50"):
        load_checkpoint(ckpt, expected_vocab=50)
    with pytest.raises(CheckpointError, match="relation map does not match"):
        load_checkpoint(ckpt, expected_relations={"treats": 0, "binds": 2, "isa": 1})
    with pytest.raises(CheckpointError, match="3 relations, expected 4"):
        load_checkpoint(ckpt, expected_relations=4)
    with pytest.raises(CheckpointError, match="model.hidden_size: checkpoint 16 vs expected 32"):
        load_checkpoint(ckpt, expected_config=dataclasses.replace(CFG, hidden_size=32, num_heads=2))


def test_corrupt_checkpoints_are_clear_errors(tmp_path, tokenizer_file):
    ckpt = save_checkpoint(tmp_path / "ckpt", trained_model(), CFG, tokenizer_file, RMAP)
    cfg_path = ckpt / "config.json"
    data = json.loads(cfg_path.read_text())
    data["model"]["num_heads"] = 3
    cfg_path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="config.json: model.hidden_size"):
        load_checkpoint(ckpt)
    data["model"]["num_heads"] = 2
    data["model"]["hidden_size_typo"] = 1
    cfg_path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="model.hidden_size_typo: unknown key"):
        read_checkpoint_config(ckpt)
    del data["model"]["hidden_size_typo"]
    data["model"]["intermediate_size"] = 48        # valid config, tensors of the wrong shape
    cfg_path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="wrong shape"):
        load_checkpoint(ckpt)
    (ckpt / "relation_map.json").unlink()
    with pytest.raises(CheckpointError, match="missing relation_map.json"):
        load_checkpoint(ckpt)


def test_tokenizer_larger_than_vocab_is_rejected(tmp_path):
    path = tmp_path / "big.json"
    Tokenizer(models.WordPiece({f"t{i}": i for i in range(V + 5)}, unk_token="t0")).save(str(path))
    with pytest.raises(CheckpointError, match="tokenizer has 45 tokens"):
        save_checkpoint(tmp_path / "ckpt", trained_model(), CFG, path, RMAP)
