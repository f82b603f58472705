"""`graphmert update` on the demo (issue #17, deliverable 4): the demo's 60 documents split 40 + 20 —
extracting 40 and then adding 20 gives the KG of extracting all 60 at once; adding again changes
nothing; removing the 20 gives the KG of the 40 back; the export names both activities."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import rdflib
from typer.testing import CliRunner

from graphmert.config import ExportConfig
from graphmert.export.terms import ExportTerms
from graphmert.extract.triples import read_triples_jsonl
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
PROV = rdflib.Namespace("http://www.w3.org/ns/prov#")


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)          # the demo config's paths are relative to the repository


@pytest.fixture(scope="module")
def split(demo_run, tmp_path_factory):
    """A copy of the demo run whose KG was extracted from the first 40 documents (kept as ``forty``),
    and then had the last 20 added by `graphmert update`."""
    base, _ = demo_run
    tmp = tmp_path_factory.mktemp("update")
    lines = (ROOT / "data/demo/corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first, last = tmp / "first40.jsonl", tmp / "last20.jsonl"
    first.write_text("".join(lines[:40]), encoding="utf-8")
    last.write_text("".join(lines[40:]), encoding="utf-8")
    run = tmp / "run"
    shutil.copytree(base, run)
    old = Path.cwd()
    try:                             # module scope: the autouse chdir fixture is not active yet
        os.chdir(ROOT)
        r = invoke("extract", "--config", ROOT / "configs/demo.yaml", "--run-dir", run, "--quiet",
                   f"extract.paths=[{first}]")
        assert r.exit_code == 0, r.output
        forty = _records(run)
        r = invoke("export", "--config", ROOT / "configs/demo.yaml", "--run-dir", run, "--quiet")
        assert r.exit_code == 0, r.output            # the export of the 40, which the update must change
        export_before = (run / "export" / "kg_edges.jsonl").read_text(encoding="utf-8")
        r = invoke("update", "--run-dir", run, "--add", last)
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.output
    return SimpleNamespace(base=base, run=run, first=first, last=last, forty=forty, output=r.output,
                           export_before=export_before,
                           last_ids={json.loads(x)["doc_id"] for x in lines[40:]})


def _records(run: Path) -> list[dict]:
    """The KG's triples without what names the run or the activity (a copy of a run has another
    name; the activity is what an update adds by design)."""
    out = []
    for t in read_triples_jsonl(run / "extract" / "triples.jsonl"):
        d = t.to_dict()
        d.pop("run_id")
        for e in d["evidence"]:
            e.pop("activity")
        out.append(d)
    return out


def _same_kg(a: list[dict], b: list[dict]) -> None:
    """Equal records; confidences to float32 round-off (the model sees other batches)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for rec in (x, y):
            rec["_conf"] = (rec.pop("confidence"), rec.pop("confidence_mean"),
                            [e.pop("confidence") for e in rec["evidence"]])
        cx, cy = x.pop("_conf"), y.pop("_conf")
        assert x == y
        assert cx[0] == pytest.approx(cy[0], rel=1e-5, abs=1e-7)
        assert cx[1] == pytest.approx(cy[1], rel=1e-5, abs=1e-7)
        assert cx[2] == pytest.approx(cy[2], rel=1e-5, abs=1e-7)


def test_extracting_40_then_adding_20_equals_extracting_60(split):
    _same_kg(_records(split.run), _records(split.base))
    m = json.loads((split.run / "extract" / "manifest.json").read_text())
    assert m["documents"] == 60 and m["status"] == "updated"
    (rec,) = m["updates"]
    assert rec["activity"] == "update-1" and rec["added"] == 20 and rec["already_in_kg"] == 0
    assert "update-1: added 20 document(s), 0 already in the KG" in split.output


def test_new_evidence_names_the_update_and_the_export_names_both_activities(split):
    triples = list(read_triples_jsonl(split.run / "extract" / "triples.jsonl"))
    for t in triples:
        for e in t.evidence:
            assert e.activity == ("update-1" if e.doc_id in split.last_ids else "")
    both = [t for t in triples if {e.activity for e in t.evidence} == {"", "update-1"}]
    assert both, "no edge has evidence from both the run and the update"
    g = rdflib.Graph().parse(split.run / "export" / "kg.nt", format="nt")
    activities = {str(o) for _, _, o in g.triples((None, PROV.wasGeneratedBy, None))}
    assert any(a.endswith("/update-1") for a in activities) and len(activities) >= 2
    assert (split.run / "export" / "kg_edges.jsonl").read_text(encoding="utf-8") != split.export_before


def test_adding_documents_already_in_the_kg_changes_nothing(split, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(split.run, run)
    before = {p.name: p.read_bytes() for p in (run / "extract").iterdir()}
    export = (run / "export" / "manifest.json").read_bytes()
    r = invoke("update", "--run-dir", run, "--add", split.last, "--add", split.first)
    assert r.exit_code == 0, r.output
    assert "added 0 document(s), 60 already in the KG: nothing changed" in r.output
    assert {p.name: p.read_bytes() for p in (run / "extract").iterdir()} == before
    assert (run / "export" / "manifest.json").read_bytes() == export


def test_a_folder_of_abstracts_is_read_as_extract_paths_reads_one(split, tmp_path):
    """``--add`` takes a folder of .txt abstracts, as ``extract.paths`` does: each file's name is its
    document's id (here two already in the KG: nothing to extract, nothing changed)."""
    run = tmp_path / "run"
    shutil.copytree(split.run, run)
    folder = tmp_path / "abstracts"
    folder.mkdir()
    for doc_id in sorted(split.last_ids)[:2]:
        (folder / f"{doc_id}.txt").write_text("Metformin lowers glucose.\n", encoding="utf-8")
    r = invoke("update", "--run-dir", run, "--add", folder)
    assert r.exit_code == 0, r.output
    assert "added 0 document(s), 2 already in the KG: nothing changed" in r.output


def test_removing_the_20_gives_the_kg_of_the_40_back(split, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(split.run, run)
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(sorted(split.last_ids)) + "\n", encoding="utf-8")
    r = invoke("update", "--run-dir", run, "--remove-file", ids, "--remove", "no-such-doc")
    assert r.exit_code == 0, r.output
    assert "update-2: removed 20 document(s), 1 not in the KG" in r.output
    _same_kg(_records(run), split.forty)
    m = json.loads((run / "extract" / "manifest.json").read_text())
    assert m["documents"] == 40 and [u["activity"] for u in m["updates"]] == ["update-1", "update-2"]
    edges = [json.loads(x) for x in (run / "export" / "kg_edges.jsonl").read_text().splitlines()]
    assert len(edges) == m["triples"]
    terms = ExportTerms(ExportConfig())
    removed = {terms.document(i)[1] for i in split.last_ids}
    kept = {p for e in edges for p in e["publications"]}
    assert kept and not kept & removed


def test_update_errors_name_the_problem(tmp_path):
    r = invoke("update", "--run-dir", tmp_path / "run")
    assert r.exit_code == 2 and "nothing to do; give --add PATH, --remove ID" in r.output
    r = invoke("update", "--run-dir", tmp_path / "run", "--remove", "1")
    assert r.exit_code == 2 and "not a run directory (no config.yaml)" in r.output
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("{}\n", encoding="utf-8")
    r = invoke("update", "--run-dir", run, "--remove", "1")
    assert r.exit_code == 2 and "the run has no extracted knowledge graph" in r.output
    assert "run `graphmert extract --run-dir RUN` first" in r.output
    r = invoke("update", "--run-dir", run, "--remove-file", tmp_path / "missing.txt")
    assert r.exit_code == 2 and "missing.txt: cannot read it" in r.output
    r = invoke("update", "--run-dir", "s3://bucket/run", "--remove", "1")
    assert r.exit_code == 2 and "updates work on a local run directory" in r.output
