"""The extract stage on Dask: documents/s in the driver, on a LocalCluster of 1 and 2 workers, and on a
real ``dask scheduler`` with 2 ``dask worker`` processes on 127.0.0.1, in one table.

    .venv/bin/python benchmarks/extract_scale.py --config configs/demo.yaml --run-dir runs/demo \\
        [--part-documents 15] [--workers 1 2] [--no-real-cluster] [--out FILE] [section.key=value ...]

``RUN`` is a finished run (``make demo``, or ``graphmert run --config configs/biored.yaml``). Each
configuration reruns only its ``extract`` stage (``--force``), as its own ``graphmert`` process, in a
copy of ``RUN`` without its extract folder, with ``extract.part_documents`` set so that the documents
split into several part tasks; the ``extract.controls`` are left out (they rerun the same questions).
Every worker loads the model once (``pipelines.scheduler.worker_cache``). The table shows wall time
(process start to exit), the stage's own time, the part tasks' time, documents/s over the stage time,
and how the triples compare with the first configuration's: byte-identical, or the same triples with
confidences that differ in the last float32 digits (the driver's torch uses every core, a worker one
thread, and matrix products summed in another order round differently).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, write_json  # noqa: E402
from pipeline import _command  # noqa: E402


# What docs/PIPELINE.md asks of hand-started workers: keep glibc's dynamic mmap threshold (the
# nanny's default MALLOC_TRIM_THRESHOLD_ turns it off, and extraction then runs 1.9x slower).
WORKER_CONFIG = """distributed:
  nanny:
    pre-spawn-environ:
      MALLOC_TRIM_THRESHOLD_: null
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def real_cluster(workers: int, logs: Path):
    """``dask scheduler`` and ``workers`` × ``dask worker`` (one thread each) as separate processes."""
    dask = str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    (logs / "dask.yaml").write_text(WORKER_CONFIG)
    env = {**os.environ, "DASK_CONFIG": str(logs), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], cwd=ROOT, env=env, stdout=open(logs / "scheduler.log", "w"),
                              stderr=subprocess.STDOUT)]
    for i in range(workers):
        procs.append(subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-dashboard",
                                       "--name", f"bench-{i}"], cwd=ROOT, env=env,
                                      stdout=open(logs / f"worker-{i}.log", "w"), stderr=subprocess.STDOUT))
    try:
        _wait_for_workers(address, workers)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _wait_for_workers(address: str, n: int, timeout: float = 60.0) -> None:
    from distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(n, timeout=timeout)


def _triples(folder: Path) -> tuple[str, dict]:
    """(digest of the Parquet bytes, triple key → confidence) of an extract folder."""
    from graphmert.extract.triples import read_triples, triple_key

    paths = sorted(folder.glob("triples-*.parquet"))
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16], {triple_key(t): t.confidence for t in read_triples(paths)}


def _same(first: tuple[str, dict], now: tuple[str, dict]) -> str:
    """How the triples compare with the first configuration's: bytes, else keys and confidences."""
    if now[0] == first[0]:
        return "yes, byte-identical"
    if now[1].keys() != first[1].keys():
        return f"NO: {len(now[1].keys() ^ first[1].keys())} triples differ"
    return f"same triples, confidences within {max(abs(now[1][k] - first[1][k]) for k in now[1]):.1e}"


def _run(run_dir: Path, base: list[str], extra: list[str]) -> tuple[float, dict]:
    t = time.perf_counter()
    proc = subprocess.run(_command() + ["extract", "--run-dir", str(run_dir), "--force", "--quiet", *base, *extra],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"graphmert extract failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return wall, json.loads((run_dir / "extract" / "manifest.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--run-dir", required=True, type=Path, help="a finished run of --config")
    ap.add_argument("--part-documents", type=int, default=15, help="extract.part_documents")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-real-cluster", action="store_true", help="skip the dask scheduler + workers run")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("overrides", nargs="*", help="extra dotted overrides (the run's own, if any)")
    a = ap.parse_args()
    if not (a.run_dir / "train" / "model").exists():
        raise SystemExit(f"{a.run_dir}: not a finished run (no train/model); run the config first")
    base = ["--config", a.config, f"extract.part_documents={a.part_documents}", "extract.controls=[]",
            *a.overrides]
    os.environ.pop("DASK_SCHEDULER_ADDRESS", None)
    plan = [("driver (synchronous)", "-", ["--scheduler", "synchronous"])]
    plan += [(f"LocalCluster, {n} worker{'s' if n > 1 else ''}", str(n),
              ["--scheduler", "local", f"pipeline.workers={n}"]) for n in a.workers]
    if not a.no_real_cluster:                          # None: the scheduler address, once it is up
        plan.append(("dask scheduler + 2 dask workers, 127.0.0.1", "2", None))
    rows, first = [], None
    with tempfile.TemporaryDirectory(prefix="graphmert-extract-scale-") as tmp:
        for name, workers, extra in plan:
            run_dir = Path(tmp) / "run"
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.copytree(a.run_dir, run_dir, ignore=shutil.ignore_patterns("extract", ".graphmert.lock"))
            print(f"{name}: extracting ...", flush=True)
            with real_cluster(2, Path(tmp)) if extra is None else nullcontext() as address:
                wall, m = _run(run_dir, base, extra or ["--scheduler", address])
            got = _triples(run_dir / "extract")
            first = first or got
            part = m["tasks"]["part"]
            rows.append({"run": name, "workers": workers, "parts": part["shards"], "wall_s": round(wall, 1),
                         "stage_s": round(m["elapsed_s"], 1), "parts_s": round(part["seconds"], 1),
                         "documents": m["documents"], "documents_per_s": round(m["documents"] / m["elapsed_s"], 2),
                         "triples": m["triples"], "same triples": _same(first, got)})
    print_table(rows, f"graphmert extract: {a.config}, {rows[0]['documents']} documents, "
                      f"extract.part_documents={a.part_documents}, {os.cpu_count()} CPUs")
    write_json("extract_scale", rows, a.out, config=a.config, run_dir=str(a.run_dir),
               part_documents=a.part_documents)


if __name__ == "__main__":
    main()
