"""How close a float32 result can honestly be asked to be — the one place tests take that rule from.

float32 keeps 24 significant bits: ``F32_EPS`` = 2⁻²³ ≈ 1.19e-7 is the spacing of float32 numbers at
1, so a value of magnitude m is only resolved to about m · F32_EPS (at 12 that is ≈ 1e-6). A result
that went through a few roundings (an exp, a GELU, a product) or through a sum (matmul, softmax,
any reduction, whose order depends on the CPU's SIMD path and thread count) is off by a few units of
the *largest* terms involved. An absolute tolerance below that asks for more than float32 holds and
fails on some machines; exact equality of two float32 results is only a fair demand when both come
from the same operations on the same inputs in the same order.

Hence :func:`assert_close_f32`: |got − want| ≤ ulps · F32_EPS · scale, where scale is the largest
magnitude compared (or a magnitude the caller knows the terms had). The default 16 units leaves a
margin of ~10× over the errors measured on this suite's float32 comparisons, and is still ~10⁵ times
tighter than any real mistake those comparisons look for.

Where a formula can be checked in float64 (the module or function runs in float64), do that with a
float64 tolerance and use this helper only for the float32 path.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

__all__ = ["F32_EPS", "F32_ULPS", "f32_tolerance", "assert_close_f32"]

F32_EPS = float(torch.finfo(torch.float32).eps)     # 2**-23
F32_ULPS = 16                                       # units of F32_EPS · scale allowed by default


def _as_f64(x) -> torch.Tensor:
    if torch.is_tensor(x):
        return x.detach().to("cpu", torch.float64)
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def f32_tolerance(want, ulps: float = F32_ULPS, scale: Optional[float] = None) -> float:
    """The absolute tolerance ulps · F32_EPS · scale (scale: max |want| unless given)."""
    if scale is None:
        w = _as_f64(want)
        scale = float(w.abs().max()) if w.numel() else 0.0
    return ulps * F32_EPS * scale


def assert_close_f32(got, want, *, ulps: float = F32_ULPS, scale: Optional[float] = None,
                     msg: str = "") -> None:
    """Assert that a float32 result ``got`` equals ``want`` up to float32 resolution.

    Both are compared in float64 elementwise (same shape required; expand ``want`` first):
    |got − want| ≤ ulps · F32_EPS · scale, scale = max |want| unless given. Pass ``scale`` when the
    result is small only because large terms cancelled (the error follows the terms, not the result).
    """
    g, w = _as_f64(got), _as_f64(want)
    if g.shape != w.shape:
        raise AssertionError(f"{msg}: shape {tuple(g.shape)} != {tuple(w.shape)}".lstrip(": "))
    tol = f32_tolerance(w, ulps, scale)
    err = (g - w).abs()
    if err.numel() and not bool((err <= tol).all()):
        worst = int(err.argmax())
        idx = np.unravel_index(worst, tuple(g.shape)) if g.dim() else ()
        raise AssertionError(
            f"{msg + ': ' if msg else ''}float32 mismatch: max |got − want| = {float(err.max()):.3g} > "
            f"{tol:.3g} (= {ulps} × eps_f32 × {tol / (ulps * F32_EPS):.3g}) at index "
            f"{tuple(int(i) for i in idx)}: got {float(g.reshape(-1)[worst])!r}, "
            f"want {float(w.reshape(-1)[worst])!r}; {int((err > tol).sum())} of {err.numel()} off")
