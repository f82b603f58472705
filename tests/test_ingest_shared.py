"""`graphmert ingest` on every data file of the shared corpora: counts match their READMEs;
the shared corpus (its first 300 abstracts, or all with ``-m slow``) and seed KG up to graphs.

Skips with a reason when ../shared/datasets is absent.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"

pytestmark = [pytest.mark.shared,
              pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")]

# file → (documents, mentions, relations, offset mismatches), from each folder's README
EXPECTED = {
    "biored/Train.PubTator": (400, 13351, 4178, 0),
    "biored/Train.BioC.XML.gz": (400, 13351, 4178, 0),
    "biored/Dev.PubTator": (100, 3533, 1162, 0),
    "biored/Dev.BioC.XML.gz": (100, 3533, 1162, 0),
    "biored/Dev.BioC.JSON.gz": (100, 3533, 1162, 0),
    "bc5cdr/CDR_TrainingSet.PubTator.txt": (490, 9137, 1022, 0),
    "bc5cdr/CDR_DevelopmentSet.PubTator.txt": (489, 9334, 992, 0),
    "bc5cdr/CDR_TestSet.PubTator.txt": (487, 9498, 1036, 0),
    "biomed_abstracts_corpus/abstracts.jsonl.gz": (3165, None, 0, 1),
}


def test_every_data_file_is_covered():
    data_files = {str(p.relative_to(SHARED)) for d in ("biored", "bc5cdr", "biomed_abstracts_corpus")
                  for p in (SHARED / d).iterdir() if p.name != "README.md"}
    assert data_files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ingest_counts(tmp_path, name):
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["ingest", "--config", str(ROOT / "configs" / "demo.yaml"),
                                      "--run-dir", str(run_dir), f"corpus.paths=[{SHARED / name}]",
                                      "--quiet", "--scheduler", "synchronous"])   # half the time of a LocalCluster
    assert result.exit_code == 0, result.output
    m = json.loads((run_dir / "ingest" / "manifest.json").read_text())
    docs, mentions, relations, mismatches = EXPECTED[name]
    assert m["documents"] == docs
    if mentions is not None:
        assert m["mentions"] == mentions
    assert m["relations"] == relations
    assert m["offset_mismatches"] == mismatches
    assert m["skipped_records"] == 0
    assert m["sentences"] >= docs and m["status"] == "ran"
    assert m["source_files"][0]["documents"] == docs


def _first_documents(n: int, out: Path) -> Path:
    """The first ``n`` records of the shared abstracts, as a corpus file of their own."""
    src = SHARED / "biomed_abstracts_corpus" / "abstracts.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(out, "wt", encoding="utf-8") as g:
        g.writelines(itertools.islice(f, n))
    return out


# (documents, least chunks with leaves, least injections, relations injected at least once);
# None: the whole corpus (slow, about 2 minutes)
GRAPH_RUNS = [pytest.param(300, 100, 100, {"associated_with", "isa"}, id="300-documents"),
              pytest.param(None, 1000, 1000, {"associated_with", "binds", "treats", "isa"},
                           id="whole-corpus", marks=pytest.mark.slow)]


@pytest.mark.parametrize("documents, chunks_with_leaves, injections, relations", GRAPH_RUNS)
def test_build_graphs_on_shared_corpus_and_kg(tmp_path, monkeypatch, documents, chunks_with_leaves,
                                              injections, relations):
    """The shared abstracts (the first 300, or all: ``-m slow``) + the whole shared seed KG
    (Hetionet + DisGeNET + MeSH isa), end to end."""
    run_dir = tmp_path / "run"
    monkeypatch.chdir(ROOT)  # the config's paths are relative to the repository
    corpus = [] if documents is None else [
        f"corpus.paths=[{_first_documents(documents, tmp_path / 'abstracts.jsonl.gz')}]"]
    result = CliRunner().invoke(app, ["run", "--config", "configs/shared-corpus.yaml",
                                      "--run-dir", str(run_dir), "--to", "graphs", "--quiet",
                                      "--scheduler", "synchronous", *corpus])
    assert result.exit_code == 0, result.output
    m = json.loads((run_dir / "graphs" / "manifest.json").read_text())
    assert m["graphs"] == json.loads((run_dir / "chunks" / "manifest.json").read_text())["chunks"]
    assert m["chunks_with_leaves"] > chunks_with_leaves and m["injections"] > injections
    assert relations <= set(m["injections_per_relation"])
    assert m["kg"]["nodes"] > 43000 and m["kg"]["edges"] > 90000
    assert 0.08 < m["tokens_packed"] / m["tokens_dense"] < 0.2   # ~87% of the dense layout is pad
