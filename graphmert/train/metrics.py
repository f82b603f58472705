"""Training metrics: one JSON object per line (``metrics.jsonl``) and a loss/accuracy plot (PNG).

Records carry ``"split": "train"`` (one per optimizer step: step, epoch, lr, loss and per-term
losses/accuracies, grad norm, tokens, tokens/s) or ``"split": "eval"`` (held-out losses and
accuracies, and the majority-token baseline for leaves). On resume the log is cut back to the
records at or before the resumed step, so it reads as one uninterrupted run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Union

from graphmert.io import atomic_path, atomic_write_text

__all__ = ["MetricsLog", "plot_curves"]


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLog:
    """Append-only JSONL log (``path``), flushed per record."""

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)

    def append(self, record: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({k: _clean(v) for k, v in record.items()}, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()

    def read(self) -> list[dict]:
        """All complete records (a torn last line from a crash is ignored)."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def truncate_after(self, step: int) -> None:
        """Keep only records with ``step`` <= ``step`` (rewritten atomically)."""
        kept = [r for r in self.read() if int(r.get("step", 0)) <= step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))


def _series(records: Iterable[Mapping[str, Any]], split: str, key: str) -> tuple[list, list]:
    xs, ys = [], []
    for r in records:
        if r.get("split") == split and r.get(key) is not None:
            xs.append(r["step"])
            ys.append(r[key])
    return xs, ys


def plot_curves(records: list[Mapping[str, Any]], path: Union[str, Path]) -> Path:
    """Loss (train and held-out, per term) and held-out accuracy (roots, leaves, leaf baseline)
    against the step, as a PNG written atomically (matplotlib's Agg backend; no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    ax_loss, ax_acc = fig.subplots(1, 2)
    for split, style in (("train", "-"), ("eval", "o-")):
        for key, color in (("loss", "black"), ("mlm_loss", "tab:blue"), ("mnm_loss", "tab:orange"),
                           ("sbo_loss", "tab:green")):
            xs, ys = _series(records, split, key)
            if xs:
                ax_loss.plot(xs, ys, style, color=color, label=f"{split} {key}",
                             alpha=0.5 if split == "train" else 1.0, markersize=3)
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("cross-entropy")
    ax_loss.set_title("loss")
    for key, color, label in (("mlm_acc", "tab:blue", "roots (MLM)"), ("mnm_acc", "tab:orange", "leaves (MNM)"),
                              ("leaf_majority_acc", "tab:gray", "leaf majority-token baseline")):
        xs, ys = _series(records, "eval", key)
        if xs:
            ax_acc.plot(xs, ys, "o-", color=color, label=f"held-out {label}", markersize=3)
    ax_acc.set_xlabel("step")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_title("held-out accuracy")
    for ax in (ax_loss, ax_acc):
        if ax.has_data():
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    return Path(path)
