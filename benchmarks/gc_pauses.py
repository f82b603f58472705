"""Python's cycle collector during one graphmert command: how many collections of each generation
ran, and the seconds they took (``gc.callbacks``), beside the command's wall time.

    .venv/bin/python benchmarks/gc_pauses.py [--longest N] -- build-graphs --run-dir RUN --force \\
        --scheduler synchronous [overrides …]

The command runs in this process, so pass ``--scheduler synchronous``: the collections of a
LocalCluster's worker processes are not seen here. ``--longest N`` also lists the N longest full
collections (generation 2) with the graphmert code that triggered each (the innermost frames of
``graphmert/`` and ``pipelines/``). docs/PERFORMANCE.md, "The cycle collector", quotes it.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import write_json  # noqa: E402


class CollectorClock:
    """Counts and times every collection while installed (``gc.callbacks``); keeps the ``longest``
    full collections with where they were triggered."""

    def __init__(self, longest: int = 0) -> None:
        self.count, self.seconds, self.full = [0, 0, 0], [0.0, 0.0, 0.0], []
        self.longest, self._start = longest, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            return
        took, g = time.perf_counter() - self._start, info["generation"]
        self.count[g] += 1
        self.seconds[g] += took
        if g == 2 and self.longest:
            where = [f"{f.filename.removeprefix(f'{ROOT}/')}:{f.lineno} {f.name}" for f in traceback.extract_stack()
                     if f.filename.startswith((f"{ROOT}/graphmert/", f"{ROOT}/pipelines/"))]
            self.full = sorted(self.full + [(took, " <- ".join(reversed(where[-3:])))], reverse=True)[:self.longest]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--longest", type=int, default=0, metavar="N", help="list the N longest full collections")
    ap.add_argument("--out", type=Path, default=None)
    cut = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)    # this script's options, then the command
    args, argv = ap.parse_args(sys.argv[1:cut]), sys.argv[cut + 1:]
    if not argv:
        ap.error("give the graphmert command after --, e.g. -- build-graphs --run-dir RUN --force")
    from pipelines.cli import app

    clock = CollectorClock(args.longest)
    gc.callbacks.append(clock)
    t0 = time.perf_counter()
    try:
        app(args=argv, prog_name="graphmert", standalone_mode=False)
    finally:
        gc.callbacks.remove(clock)
    wall = time.perf_counter() - t0
    row = {"command": " ".join(argv[:1]), "wall_s": round(wall, 2),
           **{f"gen{g}_collections": clock.count[g] for g in range(3)},
           **{f"gen{g}_s": round(clock.seconds[g], 3) for g in range(3)},
           "full_share": round(clock.seconds[2] / wall, 3) if wall else 0.0}
    print(" ".join(f"{k}={v}" for k, v in row.items()))
    for took, where in clock.full:
        print(f"  full collection {took:.3f} s  {where}")
    write_json("gc_pauses", [row], args.out)


if __name__ == "__main__":
    main()
