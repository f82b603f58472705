"""Wall time of the pipeline's ingest → graphs on the shared corpus on a Dask LocalCluster with 1 and
with 2 worker processes, and of a no-op rerun, in one run.

    .venv/bin/python benchmarks/pipeline.py [--config configs/shared-corpus.yaml] [--workers 1 2]
                                            [--shard-size 250] [--synchronous] [--keep DIR]
                                            [--out FILE] [section.key=value ...]

Each configuration runs ``graphmert run --to graphs`` as its own process in a fresh run directory (so
the times include interpreter start, the LocalCluster start and the worker processes' imports). The
no-op rerun repeats the last configuration in its run directory: every stage must be skipped. The
table shows wall time, each stage's time from its manifest, the number of shard tasks per stage, and
whether the outputs are byte-identical to the first configuration's. ``--synchronous`` adds a run on
the synchronous scheduler (every task in the driver process) as the baseline without Dask.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, require_shared, write_json  # noqa: E402

STAGES = ("ingest", "tokenizer", "chunks", "graphs")


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("graphmert")       # the console script users run
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pipelines.cli"]


def _digest(run_dir: Path) -> str:
    h = hashlib.sha256()
    for s in STAGES:
        for p in sorted((run_dir / s).rglob("*")):
            if p.is_file() and p.name != "manifest.json":
                h.update(str(p.relative_to(run_dir)).encode())
                h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def _run(args: list[str], run_dir: Path) -> tuple[float, dict[str, dict]]:
    t = time.perf_counter()
    proc = subprocess.run(_command() + ["run", "--run-dir", str(run_dir), "--to", "graphs", "--quiet",
                                        *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"graphmert run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return wall, {s: json.loads((run_dir / s / "manifest.json").read_text()) for s in STAGES}


def _row(name: str, workers: str, wall: float, manifests: dict[str, dict], same: str) -> dict:
    row = {"run": name, "workers": workers, "wall_s": round(wall, 2)}
    for s in STAGES:
        m = manifests[s]
        row[f"{s}_s"] = round(m["elapsed_s"], 2) if m["status"] == "ran" else "skipped"
    tasks = {s: sum(t["ran"] for t in manifests[s].get("tasks", {}).values()) for s in STAGES}
    row["tasks ingest/chunks/graphs"] = f"{tasks['ingest']}/{tasks['chunks']}/{tasks['graphs']}"
    row["same outputs"] = same
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/shared-corpus.yaml")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shard-size", type=int, default=250, help="corpus.shard_size (documents per "
                    "ingest task; chunk and link tasks follow the document shards)")
    ap.add_argument("--synchronous", action="store_true", help="also run on the synchronous scheduler")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run directories under this folder")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("overrides", nargs="*", help="extra dotted overrides")
    args = ap.parse_args()
    if args.config == "configs/shared-corpus.yaml":
        require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz")
    base = ["--config", args.config, f"corpus.shard_size={args.shard_size}", *args.overrides]
    root = args.keep or Path(tempfile.mkdtemp(prefix="graphmert-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    env_address = os.environ.pop("DASK_SCHEDULER_ADDRESS", None)
    if env_address:
        print(f"ignoring DASK_SCHEDULER_ADDRESS={env_address}: this benchmark starts LocalClusters")

    plan = [(f"{n} worker{'s' if n != 1 else ''}", str(n), ["--scheduler", "local", f"pipeline.workers={n}"])
            for n in args.workers]
    if args.synchronous:
        plan.insert(0, ("synchronous", "-", ["--scheduler", "synchronous"]))
    rows, first, last_dir = [], None, None
    try:
        for name, workers, extra in plan:
            run_dir = root / name.replace(" ", "-")
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"{name}: running ingest → graphs ...", flush=True)
            wall, manifests = _run(base + extra, run_dir)
            d = _digest(run_dir)
            first = first or d
            rows.append(_row(name, workers, wall, manifests, "yes" if d == first else f"NO ({d})"))
            last_dir, last_extra, last_workers = run_dir, extra, workers
        print("no-op rerun ...", flush=True)
        wall, manifests = _run(base + last_extra, last_dir)
        skipped = all(m["status"] == "skipped" for m in manifests.values())
        rows.append(_row("no-op rerun", last_workers, wall, manifests,
                         "yes" if _digest(last_dir) == first else "NO"))
        if not skipped:
            raise SystemExit("the no-op rerun ran a stage: " +
                             ", ".join(s for s, m in manifests.items() if m["status"] != "skipped"))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    docs = manifests["ingest"]["documents"]
    chunks = manifests["chunks"]["chunks"]
    print_table(rows, f"graphmert run --to graphs: {args.config}, {docs} documents, {chunks} chunks, "
                      f"corpus.shard_size={args.shard_size}, {os.cpu_count()} CPUs")
    write_json("pipeline", rows, args.out, config=args.config, documents=docs, chunks=chunks,
               shard_size=args.shard_size, cpus=os.cpu_count(), overrides=args.overrides)


if __name__ == "__main__":
    main()
