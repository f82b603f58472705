"""The throughput benchmarks still run end to end on a few documents and steps, and their rows hold
what docs/PERFORMANCE.md quotes. (They had broken silently once: the biored config's relation typer
was added to extraction, and ``benchmarks/extract.py`` never fitted it.) Speeds are not asserted:
they belong to the benchmarks themselves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"


def _bench(script: str, tmp_path: Path, *args: str) -> tuple[str, list[dict]]:
    out = tmp_path / "rows.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args, "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout, json.loads(out.read_text())["rows"]


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")
def test_extract_benchmark_runs_the_biored_extractor_with_its_typer(tmp_path):
    stdout, rows = _bench("extract.py", tmp_path, "--configs", "biored", "--docs", "3", "--threads", "1",
                          "--batch-size", "8")
    (row,) = rows
    assert row["config"] == "biored" and row["batch"] == 8 and row["documents"] == 3
    assert row["forwards"] >= row["graphs"] / 8 and row["queries"] > 0 and row["triples"] > 0
    phases = sum(row[f"{k}_s"] for k in ("questions", "forward", "other", "decide", "write"))
    assert row["seconds"] == pytest.approx(phases, abs=0.05)
    assert 0 < row["achieved/limit"] <= 1.0
    assert "extraction (CPU, 1 thread(s))" in stdout


def test_train_benchmark_reports_mfu_workers_and_a_profile(tmp_path):
    stdout, rows = _bench("train.py", tmp_path, "--configs", "tiny", "--layouts", "packed", "--steps", "2",
                          "--warmup", "1", "--num-workers", "1", "--profile", "4")
    (row,) = rows
    assert row["config"] == "tiny" and row["steps"] == 2 and row["num_workers"] == 1
    assert row["compiled"] is False and 0 < row["MFU"] < 1 and row["tokens_per_s"] > 0
    assert "operators by self_cpu_time_total over 3 steps" in stdout
