"""Learning-rate schedule: linear warm-up to lr, cosine down to min_lr at the last step."""

from __future__ import annotations

import math

import pytest
import torch

from graphmert.config import ConfigError, TrainConfig
from graphmert.train.schedule import CosineSchedule, lr_at


def reference(step: int, lr: float, min_lr: float, W: int, T: int) -> float:
    if step < W:
        return lr * (step + 1) / W
    progress = min(1.0, (step - W) / max(1, T - W - 1))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def test_warmup_peak_cosine_and_floor():
    cfg = TrainConfig(lr=4e-4, min_lr=1e-5, warmup_steps=10)
    s = CosineSchedule(cfg, total_steps=110)
    values = [s(i) for i in range(110)]
    assert values[0] == pytest.approx(4e-5)                 # 1/10 of the peak
    assert values[9] == pytest.approx(4e-4)                 # end of warm-up: the peak
    assert values[10] == pytest.approx(4e-4)                # first cosine step: still the peak
    assert values[60] == pytest.approx(1e-5 + 0.5 * (4e-4 - 1e-5) * (1 + math.cos(math.pi * 50 / 99)))
    assert values[-1] == pytest.approx(1e-5)                # last step: the floor
    assert all(a < b for a, b in zip(values[:10], values[1:10]))
    assert all(a >= b for a, b in zip(values[10:], values[11:]))
    for i in (0, 5, 10, 33, 77, 109, 500):
        assert s(i) == pytest.approx(reference(i, 4e-4, 1e-5, 10, 110))


def test_no_warmup_and_short_runs():
    assert lr_at(0, lr=1.0, min_lr=0.0, warmup_steps=0, total_steps=5) == 1.0
    assert lr_at(4, lr=1.0, min_lr=0.0, warmup_steps=0, total_steps=5) == pytest.approx(0.0)
    assert lr_at(0, lr=1.0, min_lr=0.5, warmup_steps=0, total_steps=1) == 1.0
    assert lr_at(3, lr=1.0, min_lr=0.1, warmup_steps=10, total_steps=4) == pytest.approx(0.4)


def test_apply_sets_every_group():
    p, q = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.AdamW([{"params": [p]}, {"params": [q], "weight_decay": 0.0}], lr=1.0)
    s = CosineSchedule(TrainConfig(lr=2e-3, min_lr=0.0, warmup_steps=4), total_steps=20)
    assert s.apply(opt, 1) == pytest.approx(1e-3)
    assert [g["lr"] for g in opt.param_groups] == [pytest.approx(1e-3)] * 2
    assert s.state_dict() == {"lr": 2e-3, "min_lr": 0.0, "warmup_steps": 4, "total_steps": 20}


def test_errors():
    with pytest.raises(ConfigError, match="train.max_steps"):
        CosineSchedule(TrainConfig(), total_steps=0)
    with pytest.raises(ConfigError, match="train.min_lr"):
        CosineSchedule(TrainConfig(lr=1e-4, min_lr=1e-3), total_steps=10)
    with pytest.raises(ValueError, match="step must be >= 0"):
        lr_at(-1, lr=1.0, min_lr=0.0, warmup_steps=0, total_steps=3)
