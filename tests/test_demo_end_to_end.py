"""The whole demo pipeline, as `make demo` runs it: train the demo model, extract, export, report —
then the README's SPARQL query against the demo export returns rows, and every file parses back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rdflib

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)          # the demo config's paths are relative to the repository


def test_demo_extracts_triples_and_prints_where_outputs_are(demo_run):
    run_dir, output = demo_run
    m = json.loads((run_dir / "extract" / "manifest.json").read_text())
    assert m["triples"] > 20 and m["documents"] == 60
    assert str(run_dir / "export" / "kg.ttl") in output
    assert str(run_dir / "report" / "report.html") in output
    assert not (run_dir / "evaluate").exists()           # no gold configured: evaluate is not run


def test_readme_sparql_query_returns_rows_on_the_demo_export(demo_run):
    from export.helpers import sparql_from_docs

    run_dir, _ = demo_run
    g = rdflib.Graph().parse(run_dir / "export" / "kg.ttl")
    rows = list(g.query(sparql_from_docs()))
    assert rows, "no gene associated with type 2 diabetes in the demo export"
    assert all(float(r.confidence) > 0 for r in rows)
    assert any(str(r.evidence) for r in rows)


@pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib")   # its JSON-LD parser, not our code
def test_every_demo_export_parses_back(demo_run):
    run_dir, _ = demo_run
    triples = json.loads((run_dir / "extract" / "manifest.json").read_text())["triples"]
    n_ttl = len(rdflib.Graph().parse(run_dir / "export" / "kg.ttl"))
    n_nt = len(rdflib.Graph().parse(run_dir / "export" / "kg.nt", format="nt"))
    n_jsonld = len(rdflib.Graph().parse(run_dir / "export" / "kg.jsonld", format="json-ld"))
    assert n_ttl == n_nt == n_jsonld > triples
    edges = (run_dir / "export" / "kg_edges.tsv").read_text().splitlines()
    assert len(edges) - 1 == triples


def test_examples_query_is_the_readme_query():
    from export.helpers import sparql_from_docs

    text = (ROOT / "examples" / "genes-t2d.rq").read_text(encoding="utf-8")
    assert text.split("PREFIX", 1)[1] == sparql_from_docs().split("PREFIX", 1)[1]


def test_run_ends_with_how_to_query_and_browse_and_that_query_works(demo_run, tmp_path):
    """What `make demo` ends with: a `graphmert query` line that runs as printed, and a `serve` line."""
    import shlex
    import shutil

    from typer.testing import CliRunner

    from pipelines.cli import app

    run_dir = tmp_path / "run"
    shutil.copytree(demo_run[0], run_dir)
    r = CliRunner().invoke(app, ["run", "--config", str(ROOT / "configs/demo.yaml"), "--run-dir",
                                 str(run_dir), "--from", "export"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    query = next(x for x in lines if x.startswith("query it:"))
    assert next(x for x in lines if x.startswith("browse it:")).split()[3:6] == \
        ["serve", "--run-dir", str(run_dir)]
    args = shlex.split(query.split(":", 1)[1].split("(")[0])
    assert args[:4] == ["graphmert", "query", "--run-dir", str(run_dir)]
    q = CliRunner().invoke(app, args[1:])
    assert q.exit_code == 0, q.output
    assert "TCF7L2" in q.output or "rows)" in q.output
    assert int(q.output.strip().splitlines()[-1].strip("()").split()[0]) > 0


def test_demo_facts_sorts_every_triple_of_the_demo_run(demo_run):
    """experiments/demo_facts.py (where the README's demo counts come from) reads the 14 held-out
    facts by node name, none of them a seed edge, and sorts every triple of the run at the demo's
    threshold into exactly one kind; stricter thresholds keep fewer."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_facts", ROOT / "experiments" / "demo_facts.py")
    facts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(facts)
    from graphmert.extract.triples import read_triples

    run_dir = demo_run[0]
    m = json.loads((run_dir / "extract" / "manifest.json").read_text())
    triples = list(read_triples([run_dir / "extract" / s for s in m["shards"]]))
    seed, held = facts.demo_facts()
    assert len(held) == 14 and not seed & held
    rows = facts.tally(triples, seed, held)
    assert rows[0]["min confidence"] == 0.3 and rows[0]["triples"] == m["triples"]
    assert all(r["seed facts"] + r["held-out facts found"] + r["other"] == r["triples"] for r in rows)
    assert [r["triples"] for r in rows] == sorted((r["triples"] for r in rows), reverse=True)
    assert rows[0]["seed facts"] > 0
