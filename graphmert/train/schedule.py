"""Learning-rate schedule: linear warm-up, then cosine decay to ``min_lr`` (DESIGN §6).

For optimizer update s = 0 … T−1 (T total steps, W warm-up steps, peak η = ``train.lr``,
floor η_min = ``train.min_lr``):

    η(s) = η · (s + 1) / W                                       s < W
    η(s) = η_min + (η − η_min) · ½ (1 + cos(π · min(1, (s − W) / max(1, T − W − 1))))   s ≥ W

so the first update after warm-up uses η and the last one η_min. The schedule is a pure function of
the step: its state is the step counter, which the training state stores.
"""

from __future__ import annotations

import math

from graphmert.config import ConfigError, TrainConfig

__all__ = ["lr_at", "CosineSchedule"]


def lr_at(step: int, *, lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """η(step) of the module docstring."""
    if step < 0:
        raise ValueError(f"learning-rate schedule: step must be >= 0, got {step}")
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps - 1))
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


class CosineSchedule:
    """η(step) for one run: ``schedule(step)``; sets an optimizer's learning rate with :meth:`apply`."""

    def __init__(self, train: TrainConfig, total_steps: int) -> None:
        if total_steps < 1:
            raise ConfigError(f"train.max_steps: a run needs at least one step, got {total_steps}")
        if train.min_lr > train.lr:
            raise ConfigError(f"train.min_lr: {train.min_lr} must not exceed train.lr ({train.lr})")
        self.lr, self.min_lr = train.lr, train.min_lr
        self.warmup_steps, self.total_steps = train.warmup_steps, total_steps

    def __call__(self, step: int) -> float:
        return lr_at(step, lr=self.lr, min_lr=self.min_lr, warmup_steps=self.warmup_steps,
                     total_steps=self.total_steps)

    def apply(self, optimizer, step: int) -> float:
        """Set every parameter group's learning rate to η(step); return it."""
        value = self(step)
        for group in optimizer.param_groups:
            group["lr"] = value
        return value

    def state_dict(self) -> dict:
        return {"lr": self.lr, "min_lr": self.min_lr, "warmup_steps": self.warmup_steps,
                "total_steps": self.total_steps}
