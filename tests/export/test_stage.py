"""The export and report stages over a run directory whose extract stage is faked (Parquet shards +
manifest), so no model is needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import rdflib

from graphmert.config import ConfigError, load_config
from graphmert.extract.triples import write_triples
from graphmert.io import atomic_write_json
from pipelines.stage import StageError, run_stage
from pipelines.stages import STAGES
from pipelines.stages.export import EXPORT, FORMAT_FILES, REPORT

from .helpers import hostile_triples, make_triples

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib")
ALL = ["ttl", "nt", "jsonld", "trig", "nq", "kgx"]
# in the driver: a LocalCluster costs about 17 s to start on 2 slow cores, and the first test below
# runs the stage on one (the default) already
SYNC = "pipeline.scheduler=synchronous"


def _fake_extract(run_dir, triples, shards=("triples-00000.parquet", "triples-00001.parquet")):
    ex = run_dir / "extract"
    ex.mkdir(parents=True)
    half = len(triples) // 2
    write_triples(triples[:half], ex / shards[0])
    write_triples(triples[half:], ex / shards[1])
    atomic_write_json(ex / "manifest.json", {"stage": "extract", "status": "ran", "triples": len(triples),
                                             "shards": list(shards), "config_hash": "cafe0123",
                                             "output_hash": "o1"})


def test_export_writes_every_format_and_reruns_nothing(tmp_path):
    run_dir = tmp_path / "run"
    triples = make_triples()
    _fake_extract(run_dir, triples)
    cfg = load_config(None, [f"export.formats=[{','.join(ALL)}]"])
    m = run_stage(EXPORT, cfg, run_dir, quiet=True)
    files = [f for fmt in ALL for f in FORMAT_FILES[fmt]]
    settings = STAGES["extract"].settings_hash(cfg)      # the extract settings, not the manifest's hash
    assert m["files"] == files and m["triples"] == len(triples)
    assert sorted(p.name for p in (run_dir / "export").iterdir()) == sorted(files + ["manifest.json"])
    assert m["kgx_edges"] == len(triples) and m["kgx_nodes"] == 8
    assert m["unmapped_relations"] == {"Comparison_x": 1} and m["unknown_categories"] == {}
    for fmt, parser in (("ttl", "turtle"), ("nt", "nt"), ("jsonld", "json-ld")):
        g = rdflib.Graph().parse(run_dir / "export" / f"kg.{fmt}", format=parser)
        assert len(g) == m["statements"]["ttl"] == m["statements"]["jsonld"]
        run = rdflib.URIRef("https://w3id.org/graphmert/run/run-1")
        assert str(g.value(run, rdflib.URIRef("https://w3id.org/graphmert/vocab/configHash"))) == settings
    for fmt, parser in (("trig", "trig"), ("nq", "nquads")):
        ds = rdflib.Dataset()
        ds.parse(run_dir / "export" / f"kg.{fmt}", format=parser)
        names = {str(g.identifier) for g in ds.graphs() if len(g)}
        assert names == {"https://w3id.org/graphmert/graph/run-1"}
    # nt / nq count lines: each of the 2 shards describes its entities and run once
    assert m["statements"]["nq"] == m["statements"]["nt"] > m["statements"]["trig"] == m["statements"]["ttl"]
    again = run_stage(EXPORT, cfg, run_dir, quiet=True)
    assert again["status"] == "skipped"


def test_export_cites_the_recorded_extract_settings_without_importing_torch(tmp_path):
    """The extract manifest records its settings hash, so export (a fresh process here) cites it and
    never imports the extract module, and torch with it."""
    run_dir = tmp_path / "run"
    _fake_extract(run_dir, make_triples())
    manifest = run_dir / "extract" / "manifest.json"
    atomic_write_json(manifest, {**json.loads(manifest.read_text()), "settings_hash": "feedbeef"})
    code = ("import sys; from graphmert.config import load_config; from pipelines.stage import run_stage; "
            "from pipelines.stages.export import EXPORT; "
            f"run_stage(EXPORT, load_config(None, ['export.formats=[nt]', '{SYNC}']), {str(run_dir)!r}, "
            "quiet=True); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
    g = rdflib.Graph().parse(run_dir / "export" / "kg.nt", format="nt")
    cited = g.objects(None, rdflib.URIRef("https://w3id.org/graphmert/vocab/configHash"))
    assert {str(o) for o in cited} == {"feedbeef"}


def test_the_graph_cites_the_extract_settings_not_the_code(tmp_path, monkeypatch):
    """gm:configHash follows the extract stage's config and ignores its code, so a refactor that
    keeps the triples keeps the published graph byte for byte."""
    extract = STAGES["extract"]
    cfg = load_config(None, [])
    base = extract.settings_hash(cfg)
    assert extract.settings_hash(load_config(None, ["extract.tails_per_query=7"])) != base
    assert extract.settings_hash(load_config(None, ["train.epochs=9"])) == base   # not an extract setting
    _fake_extract(tmp_path / "a", make_triples())
    run_stage(EXPORT, load_config(None, ["export.formats=[nt]", SYNC]), tmp_path / "a", quiet=True)
    monkeypatch.setattr(type(extract), "code_fingerprint", property(lambda self: "other code"))
    assert extract.settings_hash(cfg) == base
    _fake_extract(tmp_path / "b", make_triples())
    run_stage(EXPORT, load_config(None, ["export.formats=[nt]", SYNC]), tmp_path / "b", quiet=True)
    a, b = ((tmp_path / d / "export" / "kg.nt").read_bytes() for d in "ab")
    assert a == b and base.encode() in a


def test_hostile_triples_stay_inside_the_run_directory(tmp_path):
    run_dir = tmp_path / "run"
    triples = [t for t in hostile_triples()]
    triples[0].evidence[0].sentence = triples[0].evidence[0].sentence.replace("\ud800", "")
    _fake_extract(run_dir, triples)
    before = {p for p in tmp_path.rglob("*")}
    cfg = load_config(None, [f"export.formats=[{','.join(ALL)}]", SYNC])
    m = run_stage(EXPORT, cfg, run_dir, quiet=True)
    created = {p for p in tmp_path.rglob("*")} - before
    assert all(p.is_relative_to(run_dir) for p in created)
    assert {p.name for p in (run_dir / "export").iterdir()} == set(m["files"]) | {"manifest.json"}
    g = rdflib.Graph().parse(run_dir / "export" / "kg.ttl", format="turtle")
    assert len(g) == m["statements"]["ttl"]


def test_bad_format_and_escaping_shard_names_are_errors(tmp_path):
    run_dir = tmp_path / "run"
    _fake_extract(run_dir, make_triples())
    with pytest.raises(ConfigError, match=r"export.formats\[0\]: 'owl'"):
        run_stage(EXPORT, load_config(None, ["export.formats=[owl]"]), run_dir, quiet=True)
    m = json.loads((run_dir / "extract" / "manifest.json").read_text())
    m["shards"] = ["../../outside.parquet"]
    atomic_write_json(run_dir / "extract" / "manifest.json", m)
    with pytest.raises(StageError, match="is not a file in"):
        run_stage(EXPORT, load_config(None, []), run_dir, quiet=True)


def test_report_stage(tmp_path):
    run_dir = tmp_path / "run"
    _fake_extract(run_dir, make_triples())
    cfg = load_config(None, [])
    m = run_stage(REPORT, cfg, run_dir, quiet=True)
    assert m["files"] == ["report.html"] and m["training_curves"] is False and m["plots"] == 4
    html = (run_dir / "report" / "report.html").read_text(encoding="utf-8")
    assert 'id="plot-training"' not in html and 'id="table-samples"' in html
    (run_dir / "train").mkdir()
    (run_dir / "train" / "metrics.jsonl").write_text(
        json.dumps({"split": "train", "step": 1, "loss": 3.0}) + "\n"
        + json.dumps({"split": "eval", "step": 1, "loss": 3.5, "mnm_acc": 0.2}) + "\n{torn", encoding="utf-8")
    m = run_stage(REPORT, cfg, run_dir, quiet=True, force=True)
    assert m["training_curves"] is True and m["plots"] == 5
    assert 'id="plot-training"' in (run_dir / "report" / "report.html").read_text(encoding="utf-8")
