"""Two gloo processes under torchrun train exactly like one process at the same effective batch
(float tolerance: the gradient all-reduce sums in a different order)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from graphmert.config import to_dict
from pipelines.stages.train import torchrun_command, train_from_spec
from train_helpers import random_graphs, tiny_config, write_inputs

REPO = Path(__file__).resolve().parents[2]
NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0, "relation_dropout": 0.0}


def _records(work: Path, split: str) -> list[dict]:
    return [r for r in map(json.loads, (work / "metrics.jsonl").read_text().splitlines()) if r["split"] == split]


def test_two_processes_equal_one(tmp_path):
    inputs = write_inputs(tmp_path / "inputs", random_graphs(40, R=16, K=3, fill=0.4, seed=11))
    cfg = tiny_config(max_steps=4, batch_size=4, effective_batch_size=8, eval_every=2, checkpoint_every=2,
                      model=NO_DROPOUT)
    spec = {"config": to_dict(cfg), **inputs, "quiet": True}

    one = train_from_spec({**spec, "work_dir": str(tmp_path / "one")})
    assert one["world_size"] == 1 and one["steps"] == 4

    spec_path = tmp_path / "launch.json"
    spec_path.write_text(json.dumps({**spec, "work_dir": str(tmp_path / "two")}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(torchrun_command(spec_path, 2), env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = json.loads((tmp_path / "two" / "result.json").read_text())
    assert two["world_size"] == 2 and two["steps"] == 4 and two["train_chunks"] == one["train_chunks"]

    a, b = _records(tmp_path / "one", "train"), _records(tmp_path / "two", "train")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b):
        assert rb["tokens"] == ra["tokens"] and rb["targets_mlm"] == ra["targets_mlm"]
        for key in ("loss", "mlm_loss", "mnm_loss", "sbo_loss", "grad_norm", "lr"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-5, abs=1e-7), (ra["step"], key)
    ea, eb = _records(tmp_path / "one", "eval"), _records(tmp_path / "two", "eval")
    assert len(ea) == len(eb) == 2
    for ra, rb in zip(ea, eb):
        assert rb["targets_mnm"] == ra["targets_mnm"]
        assert rb["loss"] == pytest.approx(ra["loss"], rel=1e-5)
    assert (tmp_path / "two" / "model" / "model.safetensors").exists()
