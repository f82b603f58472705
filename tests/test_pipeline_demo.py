"""The demo pipeline through the CLI, ingest → tokenizer → chunks → graphs (training is tested in
tests/train)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from graphmert.corpus.chunk import read_chunks
from graphmert.graph.io import read_graphs
from graphmert.kg.graph import load_relation_map
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
COUNT_KEYS = ("graphs", "chunks_with_leaves", "injections", "injections_per_relation",
              "tokens_dense", "tokens_packed")
STAGES = ("ingest", "tokenizer", "chunks", "graphs")


def _status(run_dir: Path) -> dict[str, str]:
    return {s: json.loads((run_dir / s / "manifest.json").read_text())["status"] for s in STAGES}


def test_demo_builds_graphs_and_reruns_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)          # the demo config's paths are relative to the repository
    run_dir = tmp_path / "demo"
    args = ["run", "--config", "configs/demo.yaml", "--run-dir", str(run_dir), "--to", "graphs",
            "--quiet", "--scheduler", "synchronous"]    # LocalCluster runs: tests/test_pipeline_dask.py
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    m = json.loads((run_dir / "graphs" / "manifest.json").read_text())
    for k in COUNT_KEYS:
        assert k in m
    chunks = json.loads((run_dir / "chunks" / "manifest.json").read_text())
    assert m["graphs"] == chunks["chunks"]
    written = list(read_chunks(run_dir / "chunks" / s for s in chunks["shards"]))   # counted as written
    assert (chunks["chunks"], chunks["documents"], chunks["root_tokens"], chunks["chunk_mentions"]) == (
        len(written), len({c.doc_id for c in written}), sum(c.num_roots for c in written),
        sum(len(c.mentions) for c in written))
    assert 0 < m["chunks_with_leaves"] <= m["graphs"]
    assert sum(m["injections_per_relation"].values()) == m["injections"]
    assert m["tokens_packed"] < m["tokens_dense"] / 4
    relmap = load_relation_map(run_dir / "graphs" / "relation_map.json")
    assert set(m["injections_per_relation"]) <= set(relmap)
    graphs = list(read_graphs(sorted((run_dir / "graphs").glob("graphs-*.parquet"))))
    assert len(graphs) == m["graphs"]
    assert sum(g.num_filled_leaves for g in graphs) + sum(g.num_roots for g in graphs) == m["tokens_packed"]
    report = json.loads((run_dir / "graphs" / "injection_report.json").read_text())
    assert report["injections"] == m["injections"]

    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [str(run_dir)]          # --quiet: the output path only
    assert _status(run_dir) == dict.fromkeys(STAGES, "skipped")
    # a KG setting reruns the graphs stage only
    r = CliRunner().invoke(app, args + ["kg.alpha=0.2"])
    assert r.exit_code == 0, r.output
    assert _status(run_dir) == {**dict.fromkeys(STAGES, "skipped"), "graphs": "ran"}
