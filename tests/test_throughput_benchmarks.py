"""Every speed and scale benchmark in benchmarks/ still runs end to end on a few documents and steps,
and its rows hold what docs/PERFORMANCE.md quotes. (They had broken silently once: the biored
config's relation typer was added to extraction, and ``benchmarks/extract.py`` never fitted it; the
biored variant that guards it is ``slow``.)
Speeds are not asserted: they belong to the benchmarks themselves. The ones that take more than a
few seconds here (a model per subprocess, a Dask cluster, the shared seed KG) are marked ``slow``:
``make test-all`` runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"


def _bench(script: str, tmp_path: Path, *args: str) -> tuple[str, list[dict]]:
    out = tmp_path / f"{Path(script).stem}.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args, "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout, json.loads(out.read_text())["rows"]


# the demo's extractor; the biored one (the shared seed KG, its relation typer fitted on BioRED train:
# about 45 s) is the slow variant
EXTRACTORS = [pytest.param("demo", id="demo"),
              pytest.param("biored", id="biored-with-typer", marks=[pytest.mark.slow, pytest.mark.skipif(
                  not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")])]


@pytest.mark.parametrize("config", EXTRACTORS)
def test_extract_benchmark_runs_the_configs_extractor(config, tmp_path):
    stdout, rows = _bench("extract.py", tmp_path, "--configs", config, "--docs", "3", "--threads", "1",
                          "--batch-size", "8", "--repeat", "2")
    (row,) = rows
    assert row["config"] == config and row["batch"] == 8 and row["documents"] == 3
    assert (row["models"], row["pair_heads"]) == {"demo": (1, 0), "biored": (2, 1)}[config]   # as the stage runs
    assert row["forwards"] >= row["graphs"] / 8 and row["queries"] > 0 and row["triples"] > 0
    phases = sum(row[f"{k}_s"] for k in ("questions", "forward", "other", "decide", "write"))
    assert row["seconds"] == pytest.approx(phases, abs=0.05)
    assert row["host_s"] == pytest.approx(row["questions_s"] + row["other_s"] + row["decide_s"], abs=0.02)
    assert row["host_median_s"] >= row["host_s"] - 0.03        # a run's host work >= the phases' fastest
    assert row["forward_share"] == pytest.approx(row["forward_s"] / row["seconds"], abs=0.01)
    assert row["repeat_agreement"] == 1.0                      # the two runs found the same triples
    assert 0 < row["achieved/limit"] <= 1.0
    assert row["fit_typer_s"] >= 0 and row["fit_heads_s"] >= 0      # timed apart from the extraction
    assert (row["fit_typer_s"] > 0) == (config == "biored")             # the demo config fits no typer
    if config == "biored":                    # the relatedness head's rows, summed per pair on the device
        assert row["pair_rows"] > row["pair_sums"] > 0
    else:
        assert row["pair_rows"] == row["pair_sums"] == 0
    assert "extraction (CPU, 1 thread(s))" in stdout


def test_extract_benchmark_caps_blas_threads_here_and_in_each_process(tmp_path):
    """--blas-threads 1: the one-process row and each --processes child run with their BLAS pools at
    one thread (as each process reads its own pools), and the title says so; uncapped, a process
    sees the libraries' default, here one per core."""
    import os

    stdout, rows = _bench("extract.py", tmp_path, "--configs", "demo", "--docs", "4", "--threads", "2",
                          "--batch-size", "8", "--processes", "2", "--blas-threads", "1")   # not --threads' 2
    assert "BLAS capped at 1 thread(s)" in stdout and len(rows) == 2
    assert [r["blas_threads"] for r in rows] == [1, 1] and rows[1]["agreement"] == 1.0
    if (os.cpu_count() or 1) > 1 and not any(os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                                         "OMP_NUM_THREADS")):
        _, (free,) = _bench("extract.py", tmp_path, "--configs", "demo", "--docs", "2", "--threads", "1")
        assert free["blas_threads"] > 1


def test_extract_benchmark_splits_the_documents_over_processes(tmp_path):
    """--processes 2: each process extracts its share; together they ask the one process's questions
    and find its triples, and documents/s is every document over the wall time."""
    _, rows = _bench("extract.py", tmp_path, "--configs", "demo", "--docs", "5", "--threads", "1",
                     "--batch-size", "8", "--repeat", "2", "--processes", "2")
    one, two = rows
    assert (one["mode"], two["mode"], two["processes"], two["documents"]) == ("packed", "packed, 2 processes", 2, 5)
    for key in ("queries", "graphs", "tokens", "triples"):
        assert two[key] == one[key], key                    # the shares partition the documents
    assert two["agreement"] == 1.0
    assert two["documents_per_s"] == pytest.approx(5 * 2 / two["wall_s"], rel=0.02)
    assert two["host_s"] == pytest.approx(two["questions_s"] + two["other_s"] + two["decide_s"], abs=0.02)
    for phase in ("questions", "forward", "other", "decide", "write"):   # a median run is no faster than the fastest
        assert two[f"{phase}_median_s"] >= two[f"{phase}_s"] - 0.011, phase
    assert two["median_s"] >= two["seconds"] - 0.03
    assert 0 < two["busy_share"] <= 1.0                     # the runs fit inside the wall time


def test_train_benchmark_reports_mfu_workers_and_a_profile(tmp_path):
    stdout, rows = _bench("train.py", tmp_path, "--configs", "tiny", "--layouts", "packed", "--steps", "2",
                          "--warmup", "1", "--num-workers", "1", "--profile", "4")
    (row,) = rows
    assert row["config"] == "tiny" and row["steps"] == 2 and row["num_workers"] == 1
    assert row["compiled"] is False and 0 < row["MFU"] < 1 and row["tokens_per_s"] > 0
    assert "operators by self_cpu_time_total over 3 steps" in stdout


def test_train_benchmark_runs_copies_at_once_as_ensemble_members_train(tmp_path):
    """--at-once 2: two processes of the measurement together, a row each, and their steps/s in all."""
    stdout, rows = _bench("train.py", tmp_path, "--configs", "tiny", "--layouts", "packed", "--steps", "2",
                          "--warmup", "1", "--at-once", "2")
    assert [r["process"] for r in rows] == [0, 1] and all(r["steps"] == 2 for r in rows)
    each = sum(r["s_per_step"] for r in rows) / 2
    assert f"tiny / packed: 2 processes of 1 thread(s) at once, {each:.3f} s a step each: {2 / each:.3f} steps/s" \
        in stdout


def test_export_benchmark_streams_the_same_graph_rdflib_builds(tmp_path):
    stdout, rows = _bench("export.py", tmp_path, "--triples", "2000", "--shard-size", "500",
                          "--modes", "stream nt", "graph nt")
    assert [r["mode"] for r in rows] == ["stream nt", "graph nt"]
    assert "stream nt distinct lines" in stdout and ": same" in stdout


def test_query_benchmark_gives_both_engines_the_same_rows(tmp_path):
    """Oxigraph loads the file in 16 KB pieces here (``--piece-mb``), and still answers as rdflib."""
    stdout, rows = _bench("query.py", tmp_path, "--sizes", "2000", "--repeats", "1",
                          "--piece-mb", "0.015625")
    assert {r["engine"] for r in rows} == {"oxigraph", "rdflib"}
    assert {r["triples"] for r in rows} == {2000}
    assert next(r for r in rows if r["engine"] == "oxigraph")["piece MB"] == 0.015625
    assert "same row counts for both engines: {'2000': True}" in stdout


@pytest.mark.slow
def test_ingest_benchmark_times_every_phase_on_the_demo_corpus(tmp_path):
    _, rows = _bench("ingest.py", tmp_path, "--corpus", "data/demo/corpus.jsonl", "--limit", "20",
                     "--vocab-size", "500")
    assert rows and all(r["seconds"] >= 0 for r in rows if isinstance(r.get("seconds"), float))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")
def test_graphs_benchmark_builds_and_collates_graphs(tmp_path):
    stdout, rows = _bench("graphs.py", tmp_path, "--limit", "60", "--vocab-size", "2000", "--alpha", "0.05",
                          "--min-relation-count", "1", "--batch-size", "8")
    assert any(r["phase"] == "build_graphs" for r in rows)


@pytest.mark.slow
def test_backbones_benchmark_runs_a_tiny_step_per_backbone(tmp_path):
    _, rows = _bench("backbones.py", tmp_path, "--variants", "roberta", "neobert", "--hidden-size", "32",
                     "--num-layers", "2", "--num-heads", "2", "--intermediate-size", "64", "--batch-size", "1",
                     "--steps", "1", "--warmup", "0", "--threads", "1")
    assert [r["variant"] for r in rows] == ["roberta", "neobert"] and all(r["tokens_per_sec"] > 0 for r in rows)


@pytest.mark.slow
def test_encoder_benchmark_runs_one_graphmert_layout_against_hf(tmp_path):
    stdout, rows = _bench("encoder.py", tmp_path, "--steps", "1", "--warmup", "0", "--batch-size", "1",
                          "--layouts", "packed", "--decays", "log_bias", "--kernels", "sdpa", "--threads", "1")
    assert len(rows) >= 2 and "HF(sdpa)" in stdout


@pytest.mark.slow
def test_pipeline_benchmark_reruns_nothing_on_the_demo_config(tmp_path):
    stdout, rows = _bench("pipeline.py", tmp_path, "--config", "configs/demo.yaml", "--workers", "1",
                          "--shard-size", "20")
    assert [r["run"] for r in rows] == ["1 worker", "no-op rerun"]
    assert all(r["same outputs"] == "yes" for r in rows) and rows[1]["graphs_s"] == "skipped"


@pytest.mark.slow
def test_extract_scale_benchmark_on_the_demo_run(demo_run, tmp_path):
    _, rows = _bench("extract_scale.py", tmp_path, "--config", "configs/demo.yaml", "--run-dir", str(demo_run[0]),
                     "--workers", "1", "--no-real-cluster", "--part-documents", "30")
    assert len(rows) == 2 and not rows[1]["same triples"].startswith("NO")


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")
def test_linker_benchmark_builds_with_and_without_the_vocabularies(tmp_path):
    _, rows = _bench("linker.py", tmp_path, "--documents", "5", "--passes", "2")
    without, with_ = rows
    assert without["vocabularies"] == 0 and with_["vocabularies"] > 0
    assert with_["file MB"] > without["file MB"] and with_["mentions"] == without["mentions"] > 0
    assert all(r["mentions/s"] > 0 and r["build s"] > 0 for r in rows)


def test_merge_benchmark_merges_in_the_driver_and_over_key_ranges_to_the_same_files(tmp_path):
    """benchmarks/merge.py: synthetic parts merged with 1 and 3 key ranges (the benchmark exits
    non-zero when the files differ); every row counts the same merged triples, and only the ranged
    merge has task seconds."""
    stdout, rows = _bench("merge.py", tmp_path, "--parts", "4", "--triples-per-part", "60", "--entities", "6",
                          "--sentence-chars", "40", "--ranges", "1", "3", "--scheduler", "synchronous",
                          "--work", str(tmp_path / "work"))
    assert [r["ranges"] for r in rows] == [1, 3] and "| ranges | wall s |" in stdout
    assert rows[0]["triples"] == rows[1]["triples"] < 240                    # keys repeat and merge
    assert rows[0]["task_s"] == 0 and rows[1]["task_s"] > 0
    assert all(r["driver_peak_mb"] > 0 and r["driver_mb_before"] > 0 for r in rows)
    lines = (tmp_path / "work" / "ranges-1" / "run" / "extract" / "triples.jsonl").read_text().splitlines()
    assert {len(e["sentence"]) for line in lines for e in json.loads(line)["evidence"]} == {40}


def test_gc_pauses_counts_the_collections_of_one_command(tmp_path):
    out = tmp_path / "gc.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gc_pauses.py"), "--longest", "2", "--out",
                          str(out), "--", "ingest", "--config", str(ROOT / "configs" / "demo.yaml"), "--run-dir",
                          str(tmp_path / "run"), "--scheduler", "synchronous", "--quiet"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert row["command"] == "ingest" and row["wall_s"] > 0 and row["gen0_collections"] > 0
    assert 0 <= row["full_share"] < 1 and (tmp_path / "run" / "ingest" / "manifest.json").is_file()
    listed = [line for line in res.stdout.splitlines() if line.startswith("  full collection")]
    assert len(listed) == min(2, row["gen2_collections"])
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gc_pauses.py")], capture_output=True, text=True)
    assert res.returncode == 2 and "give the graphmert command after --" in res.stderr
