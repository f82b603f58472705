"""Shared helpers for the speed and scale benchmarks: where the shared data is, table/JSON output and
FLOP counts. (The quality studies of experiments/ use these through experiments/_study.py.)"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"


def require_shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        raise SystemExit(f"needs {path} (the shared datasets folder beside the repo)")
    return path


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    if not rows:
        return
    cols = list(dict.fromkeys(k for r in rows for k in r))
    fmt = {c: max(len(c), *(len(_fmt(r.get(c, ""))) for r in rows)) for c in cols}
    print(f"\n{title}")
    print("  ".join(c.ljust(fmt[c]) for c in cols))
    print("  ".join("-" * fmt[c] for c in cols))
    for r in rows:
        print("  ".join(_fmt(r.get(c, "")).ljust(fmt[c]) for c in cols))


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.0f}"
    return str(v)


def write_json(name: str, rows: list[dict[str, Any]], out: Path | None = None, **meta: Any) -> Path:
    from graphmert.io import atomic_write_json

    path = out or RESULTS / f"{name}.json"
    atomic_write_json(path, {"benchmark": name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                             "machine": {"python": platform.python_version(),
                                         "processor": platform.processor() or platform.machine()},
                             **meta, "rows": rows})
    print(f"\nwrote {path}")
    return path


def encoder_flops(model, lengths) -> float:
    """Forward FLOPs of ``model``'s encoder over graphs of ``lengths`` real tokens each: 2·n·P for the
    backbone's P linear weights and 4·layers·n²·H for attention (QKᵀ and AV), per graph of n tokens.
    Embeddings, H-GAT and the output heads are left out (a few percent at these sizes)."""
    from torch import nn

    linear = sum(m.weight.numel() for m in model.backbone.modules() if isinstance(m, nn.Linear))
    cfg = model.config
    n = lengths.double()
    return float((2 * n * linear + 4 * cfg.num_layers * n * n * cfg.hidden_size).sum())


def matmul_flops_per_s(hidden: int, device) -> float:
    """The device's matmul rate at an encoder's widths ([4096, H] × [H, 4H]), best of 6 × 10: in fp32
    on a CPU, in bf16 on CUDA (the precisions extraction and training run in there)."""
    import torch

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(4096, hidden, device=device, dtype=dtype)
    b = torch.randn(hidden, 4 * hidden, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(6):
        sync()
        t0 = time.perf_counter()
        for _ in range(10):
            a @ b
        sync()
        best = min(best, time.perf_counter() - t0)
    return 10 * 2 * 4096 * hidden * 4 * hidden / best
