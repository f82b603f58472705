"""The trainer: exact resume, clean stop on NaN, gradient accumulation, optimizer groups, training
checkpoints (atomic, no pickle), the held-out split and the batch plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from graphmert.model.checkpoint import CheckpointError
from graphmert.train import state as state_mod
from graphmert.train.data import BatchPlan, DistContext, split_by_document
from graphmert.train.state import (latest_checkpoint, list_checkpoints, load_training_state,
                                   optimizer_state_from_tensors, optimizer_state_tensors)
from graphmert.train.trainer import Trainer, TrainingDiverged, build_optimizer, parameter_groups
from train_helpers import RELATIONS, random_graphs, tiny_config, write_tokenizer

VOLATILE = {"step_s", "tokens_per_s"}


@pytest.fixture(scope="module")
def graphs():
    return random_graphs(40, R=16, K=3, fill=0.4, seed=3)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return write_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


def make(cfg, graphs, tokenizer, work) -> Trainer:
    return Trainer(cfg, graphs, tokenizer, RELATIONS, work, quiet=True, dist=DistContext())


def records(work: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in VOLATILE}
            for line in (work / "metrics.jsonl").read_text().splitlines()]


def test_stop_and_resume_reproduces_the_uninterrupted_run_bit_identically(graphs, tokenizer, tmp_path):
    cfg = tiny_config(max_steps=8, checkpoint_every=3, eval_every=2)
    full = make(cfg, graphs, tokenizer, tmp_path / "a")
    result = full.fit()
    assert result.finished and result.step == 8 and result.model_dir == tmp_path / "a" / "model"

    first = make(cfg, graphs, tokenizer, tmp_path / "b")
    partial = first.fit(until=5)                       # "crash" after step 5: last checkpoint is step 3
    assert partial.step == 5 and not partial.finished and partial.model_dir is None
    assert [s for s, _ in list_checkpoints(tmp_path / "b" / "checkpoints")] == [3]
    resumed = make(cfg, graphs, tokenizer, tmp_path / "b")
    assert resumed.step == 3
    resumed.fit()

    a, b = records(tmp_path / "a"), records(tmp_path / "b")
    assert [r["step"] for r in b if r["split"] == "train"] == list(range(1, 9))
    assert a == b                                       # every loss, accuracy, lr, grad norm, bit for bit
    sa, sb = full.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert (tmp_path / "b" / "curves.png").stat().st_size > 0


def test_nan_loss_stops_with_the_last_good_checkpoint_intact(graphs, tokenizer, tmp_path):
    cfg = tiny_config(max_steps=8, checkpoint_every=2, eval_every=100)
    trainer = make(cfg, graphs, tokenizer, tmp_path)
    trainer.fit(until=4)
    good = latest_checkpoint(tmp_path / "checkpoints")
    before = (good / "model" / "model.safetensors").read_bytes()
    with torch.no_grad():
        trainer.model.mlm_head.bias.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match=r"step 5: the mlm loss is nan.*step-00000004"):
        trainer.fit()
    assert trainer.step == 4
    assert latest_checkpoint(tmp_path / "checkpoints") == good
    assert (good / "model" / "model.safetensors").read_bytes() == before
    model, state = load_training_state(good)
    assert state["step"] == 4 and all(torch.isfinite(p).all() for p in model.parameters())
    assert max(r["step"] for r in records(tmp_path)) == 4
    assert not any(p.name.startswith(".") for p in (tmp_path / "checkpoints").iterdir())


def test_nan_in_one_term_is_named(graphs, tokenizer, tmp_path):
    trainer = make(tiny_config(max_steps=3), graphs, tokenizer, tmp_path)
    with torch.no_grad():
        trainer.model.sbo_head.bias.fill_(float("inf"))
    with pytest.raises(TrainingDiverged, match=r"step 1: the sbo loss .*no checkpoint was written yet"):
        trainer.fit()


def test_gradient_accumulation_matches_one_big_batch(graphs, tokenizer, tmp_path):
    no_dropout = {"dropout": 0.0, "attention_dropout": 0.0, "relation_dropout": 0.0}
    losses = []
    for bs in (8, 2, 3):
        cfg = tiny_config(max_steps=4, batch_size=bs, eval_every=100, checkpoint_every=100, model=no_dropout)
        trainer = make(cfg, graphs, tokenizer, tmp_path / str(bs))
        assert trainer.plan.accumulation_steps == -(-8 // bs)
        trainer.fit()
        losses.append([r["loss"] for r in records(tmp_path / str(bs)) if r["split"] == "train"])
    for other in losses[1:]:
        assert other == pytest.approx(losses[0], rel=1e-5)


def test_resume_refuses_a_changed_setting(graphs, tokenizer, tmp_path):
    make(tiny_config(max_steps=4, checkpoint_every=2), graphs, tokenizer, tmp_path).fit(until=2)
    with pytest.raises(CheckpointError, match="train.lr"):
        make(tiny_config(max_steps=4, checkpoint_every=2, lr=5e-4), graphs, tokenizer, tmp_path)
    with pytest.raises(CheckpointError, match="model.hidden_size"):
        make(tiny_config(max_steps=4, checkpoint_every=2, model={"hidden_size": 16}), graphs, tokenizer, tmp_path)
    fresh = make(tiny_config(max_steps=4, checkpoint_every=2, resume=False), graphs, tokenizer, tmp_path)
    assert fresh.step == 0
    # keys that do not change the updates may differ
    assert make(tiny_config(max_steps=4, checkpoint_every=2, eval_every=1), graphs, tokenizer, tmp_path).step == 2


def test_weight_decay_only_on_matrices(graphs, tokenizer, tmp_path):
    trainer = make(tiny_config(), graphs, tokenizer, tmp_path)
    decay, no_decay = parameter_groups(trainer.model, 0.01)
    names = {id(p): n for n, p in trainer.model.named_parameters()}
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    nd = {names[id(p)] for p in no_decay["params"]}
    assert any(n.endswith("bias") for n in nd) and any("norm" in n for n in nd) and "decay.p" in nd
    assert all(p.ndim >= 2 for p in decay["params"])
    assert "embeddings.word_embeddings.weight" in {names[id(p)] for p in decay["params"]}
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(trainer.model.parameters()))
    opt = trainer.optimizer
    assert opt.defaults.get("fused") or opt.defaults.get("foreach")


def test_optimizer_state_round_trips_without_pickle(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    from graphmert.config import TrainConfig

    opt = build_optimizer(model, TrainConfig(lr=1e-2))
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(5, 4)).pow(2).sum().backward()
        opt.step()
    tensors, meta = optimizer_state_tensors(opt)
    json.dumps(meta)                                              # metadata is plain JSON
    fresh = build_optimizer(model, TrainConfig(lr=1e-2))
    fresh.load_state_dict(optimizer_state_from_tensors(tensors, meta))
    a, b = opt.state_dict(), fresh.state_dict()
    assert a["param_groups"] == b["param_groups"]
    for i in a["state"]:
        for k in a["state"][i]:
            assert torch.equal(a["state"][i][k], b["state"][i][k])


def test_checkpoints_are_atomic_and_pruned(graphs, tokenizer, tmp_path, monkeypatch):
    cfg = tiny_config(max_steps=8, checkpoint_every=2, keep_checkpoints=2, eval_every=100)
    trainer = make(cfg, graphs, tokenizer, tmp_path)
    trainer.fit(until=6)
    folder = tmp_path / "checkpoints"
    assert [s for s, _ in list_checkpoints(folder)] == [4, 6]
    files = {p.name for p in (folder / "step-00000006").iterdir()}
    assert files == {"model", "optimizer.safetensors", "trainer_state.json"}
    state = json.loads((folder / "step-00000006" / "trainer_state.json").read_text())
    assert state["step"] == 6 and state["steps_per_epoch"] == trainer.plan.steps_per_epoch
    assert (state["epoch"], state["step_in_epoch"]) == trainer.plan.position(6)

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(state_mod, "save_file", broken)
    with pytest.raises(OSError, match="disk full"):
        trainer.fit(until=8)
    assert [s for s, _ in list_checkpoints(folder)] == [4, 6]      # no half-written step-8
    assert not any(p.name.startswith(".") for p in folder.iterdir())


def test_split_by_document_is_deterministic_and_keeps_documents_whole(graphs):
    train, held = split_by_document(graphs, 0.2)
    assert (train, held) == split_by_document(list(graphs), 0.2)
    assert sorted(train + held) == list(range(len(graphs)))
    assert not {graphs[i].doc_id for i in train} & {graphs[i].doc_id for i in held}
    assert held and split_by_document(graphs, 0.0)[1] == []
    assert len(split_by_document(graphs, 0.5)[1]) > len(held) / 2


def test_batch_plan_splits_the_effective_batch_over_processes():
    from graphmert.config import ConfigError, TrainConfig

    t = TrainConfig(effective_batch_size=8, batch_size=2, seed=5)
    one = BatchPlan.from_config(t, range(30))
    two = [BatchPlan.from_config(t, range(30), world_size=2, rank=r) for r in (0, 1)]
    assert one.steps_per_epoch == 3 and one.accumulation_steps == 4 and two[0].accumulation_steps == 2
    for step in range(7):
        joint = two[0].micro_batches(step) + two[1].micro_batches(step)
        assert joint == one.micro_batches(step)
    seen = [i for s in range(3) for mb in one.micro_batches(s) for _, i in mb]
    assert len(set(seen)) == 24                                     # an epoch never repeats a graph
    assert one.micro_batches(3)[0][0][0] == 1                       # step 3 is in epoch 1
    with pytest.raises(ConfigError, match="not divisible by the number of processes"):
        BatchPlan.from_config(t, range(30), world_size=3)
    with pytest.raises(ConfigError, match="exceeds the 5 training chunks"):
        BatchPlan.from_config(t, range(5))
    assert one.total_steps(TrainConfig(epochs=2.5)) == 8 and one.total_steps(TrainConfig(max_steps=4)) == 4


def test_graphs_must_match_the_graph_config(graphs, tokenizer, tmp_path):
    from graphmert.config import ConfigError

    with pytest.raises(ConfigError, match="graph.num_roots/num_leaves"):
        make(tiny_config(R=32), graphs, tokenizer, tmp_path)


def test_dataloader_workers_give_the_same_run(graphs, tokenizer, tmp_path):
    runs = []
    for workers in (0, 2):
        cfg = tiny_config(max_steps=3, num_workers=workers, eval_every=100, checkpoint_every=100)
        make(cfg, graphs, tokenizer, tmp_path / str(workers)).fit()
        runs.append(records(tmp_path / str(workers)))
    assert runs[0] == runs[1]
