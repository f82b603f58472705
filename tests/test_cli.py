"""The `graphmert` CLI and the run-directory contract (DESIGN §10) on a tiny corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()

DOCS = [
    {"doc_id": "1", "title": "Metformin in type 2 diabetes.",
     "abstract": "Metformin lowers glucose in type 2 diabetes (T2D) patients. Insulin was unchanged.",
     "entities": [{"start": 0, "end": 9, "text": "Metformin", "type": "Chemical", "id": "D008687"},
                  {"start": 13, "end": 28, "text": "type 2 diabetes", "type": "Disease", "id": "D003924"}]},
    {"doc_id": "2", "title": "", "abstract": "Obesity raises TNF and IL6 levels. Weight loss lowers them.",
     "entities": [{"start": 15, "end": 18, "text": "TNF", "type": "Gene", "id": "7124"}]},
]


@pytest.fixture()
def corpus(tmp_path) -> Path:
    p = tmp_path / "docs.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    return p


def _invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def _args(corpus, run_dir):
    return ["--run-dir", run_dir, "--to", "chunks", f"corpus.paths=[{corpus}]", "tokenizer.vocab_size=120",
            "tokenizer.min_frequency=1", "graph.num_roots=16", "corpus.chunk_overlap=2", "--quiet"]


def test_ingest_tokenizer_chunks_and_skip(tmp_path, corpus):
    run_dir = tmp_path / "run"
    r = _invoke("run", *_args(corpus, run_dir))
    assert r.exit_code == 0, r.output
    ing = json.loads((run_dir / "ingest" / "manifest.json").read_text())
    assert (ing["documents"], ing["mentions"], ing["relations"]) == (2, 3, 0)
    assert ing["status"] == "ran" and ing["abbreviations"] == 1 and ing["sentences"] >= 4
    assert ing["source_files"][0]["documents"] == 2
    tok = json.loads((run_dir / "tokenizer" / "manifest.json").read_text())
    assert tok["vocab_size"] <= 120 and (run_dir / "tokenizer" / "tokenizer.json").exists()
    ch = json.loads((run_dir / "chunks" / "manifest.json").read_text())
    assert ch["chunks"] >= 3 and ch["documents"] == 2
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["graph"]["num_roots"] == 16 and saved["corpus"]["paths"] == [str(corpus)]
    assert (run_dir / "logs" / "graphmert.log").read_text().count("ingest: running") == 1

    # unchanged rerun: every stage skipped, outputs untouched
    shard = run_dir / "chunks" / ch["shards"][0]       # chunks-00000-<content id>.parquet
    before = shard.stat().st_mtime_ns
    r = _invoke("run", *_args(corpus, run_dir))
    assert r.exit_code == 0, r.output
    for stage in ("ingest", "tokenizer", "chunks"):
        assert json.loads((run_dir / stage / "manifest.json").read_text())["status"] == "skipped"
    assert shard.stat().st_mtime_ns == before

    # a chunking setting reruns chunks only
    r = _invoke("run", *_args(corpus, run_dir), "graph.num_roots=20")
    assert r.exit_code == 0, r.output
    status = {s: json.loads((run_dir / s / "manifest.json").read_text())["status"]
              for s in ("ingest", "tokenizer", "chunks")}
    assert status == {"ingest": "skipped", "tokenizer": "skipped", "chunks": "ran"}


def test_stage_needs_upstream(tmp_path):
    r = _invoke("chunks", "--run-dir", tmp_path / "empty")
    assert r.exit_code == 2
    assert "needs the output of stage 'ingest'" in r.output


def test_bad_override_and_config_errors(tmp_path, corpus):
    r = _invoke("ingest", "--run-dir", tmp_path / "r", "model.hiden_size=3")
    assert r.exit_code == 2 and "model.hiden_size: unknown key" in r.output
    r = _invoke("ingest", "--run-dir", tmp_path / "r")
    assert r.exit_code == 2 and "corpus.paths: no input given" in r.output
    r = _invoke("run", "--run-dir", tmp_path / "r", "--from", "nope")
    assert r.exit_code == 2 and "unknown stage 'nope'" in r.output


def test_bad_input_leaves_no_stage_folder(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DOCS[0]) + "\n{broken json\n")
    run_dir = tmp_path / "run"
    r = _invoke("ingest", "--run-dir", run_dir, f"corpus.paths=[{bad}]", "--quiet")
    assert r.exit_code == 2
    assert "bad.jsonl" in r.output and "line 2" in r.output
    assert not (run_dir / "ingest").exists()
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".ingest")]
    r = _invoke("ingest", "--run-dir", run_dir, f"corpus.paths=[{bad}]", "--skip-bad-records", "--quiet")
    assert r.exit_code == 0, r.output
    m = json.loads((run_dir / "ingest" / "manifest.json").read_text())
    assert m["documents"] == 1 and m["skipped_records"] == 1


def test_info_and_help():
    r = _invoke("info", "--json", "model.hidden_size=64", "model.num_heads=4")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["config"]["model"]["hidden_size"] == 64 and "torch" in data["versions"]
    p = data["parameters"]
    assert p["total"] == p["embeddings"] + p["encoder"] + p["relations"] + p["heads"]
    assert p["num_relations"] == 0 and p["relations"] == 0 and p["per_relation"] == 64 * 64 + 2 * 64


def test_info_parameters_of_the_paper_config(tmp_path):
    root = Path(__file__).resolve().parents[1]
    r = _invoke("info", "--json", "--config", root / "configs" / "graphmert-80m.yaml",
                f"kg.nodes=[{root / 'data/demo/kg_nodes.tsv'}]", f"kg.edges=[{root / 'data/demo/kg_edges.tsv'}]")
    assert r.exit_code == 0, r.output
    p = json.loads(r.output)["parameters"]
    assert p["vocab_size"] == 30522 and p["num_relations"] == 8
    assert p["relations"] == 8 * p["per_relation"] == 8 * (512 * 512 + 2 * 512)
    # 12 post-LN layers of hidden 512 / FFN 2048 (+ one decay p per head)
    layer = 4 * (512 * 512 + 512) + 2 * 512 + (512 * 2048 + 2048) + (2048 * 512 + 512) + 2 * 512
    assert p["encoder"] == 12 * layer + 8
    assert 55e6 < p["total"] < 60e6
    for cmd in ("ingest", "tokenizer", "chunks", "run", "info"):
        h = _invoke(cmd, "--help")
        assert h.exit_code == 0 and "--config" in h.output
