"""The decay bias lookup: one gather from the broadcast table (``DistanceDecay.lookup``) against
``F.embedding`` into [B, L, L, h] and a permuting copy (the code before commit 6caa5d5), forward and
forward + backward, on one packed-extraction-sized batch.

    .venv/bin/python benchmarks/decay_lookup.py [--batch 64] [--length 250] [--heads 4] [--threads 2]

Distances are those of random leafy chain graphs (:func:`graphmert.graph.batch.graph_distance`);
both formulations are checked to give the same values before they are timed (best of 5).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from graphmert.graph.batch import graph_distance  # noqa: E402
from graphmert.model.decay import build_decay  # noqa: E402


def embedding_lookup(decay, dist: torch.Tensor) -> torch.Tensor:
    """The former formulation: [B, L, L, h] rows, then a copy to [B, h, L, L]."""
    table = decay.table(dist.shape[-1] + 1)                                    # [h, D]
    return F.embedding(dist, table.t()).permute(0, 3, 1, 2).contiguous()       # [B, h, L, L]


def best_ms(fn, repeat: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    B, L = a.batch, a.length
    root = torch.randint(0, L // 2, (B, L), generator=gen).sort(-1).values
    slot = torch.where(torch.rand(B, L, generator=gen) < 0.3, torch.randint(0, 7, (B, L), generator=gen), -1)
    dist = graph_distance(root, slot)                                          # [B, L, L]
    decay = build_decay("log_bias", a.heads, 0.6, 1.0)
    if not torch.equal(decay.lookup(dist), embedding_lookup(decay, dist)):
        raise SystemExit("the two formulations disagree")
    rows = []
    for name, fn in (("F.embedding + permute (before)", embedding_lookup),
                     ("gather (DistanceDecay.lookup)", lambda d, x: d.lookup(x))):
        with torch.no_grad():
            fwd = best_ms(lambda: fn(decay, dist))

        def step():
            decay.zero_grad()
            fn(decay, dist).sum().backward()
        rows.append({"lookup": name, "forward_ms": round(fwd, 1), "forward_backward_ms": round(best_ms(step), 1)})
    for r in rows:
        r["speedup_forward"] = round(rows[0]["forward_ms"] / r["forward_ms"], 2)
        r["speedup_forward_backward"] = round(rows[0]["forward_backward_ms"] / r["forward_backward_ms"], 2)
    print_table(rows, f"decay bias [B={B}, h={a.heads}, L={L}, L], {a.threads} thread(s)")
    write_json("decay_lookup", rows, a.out, batch=B, length=L, heads=a.heads, threads=a.threads)


if __name__ == "__main__":
    main()
