"""`graphmert update` killed part-way (issue #51, deliverable 5): RUN/extract is always one complete
version, and rerunning the same update finishes the job — the stages after extract end as after an
uninterrupted update.

Before the fix a kill after RUN/extract was rewritten and before the export had caught up left the
export (and report) describing the old KG for good: the rerun found the documents already removed
(or added), said "nothing changed", and ran nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.stage import output_hash

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)          # the demo config's paths are relative to the repository


def _copy(demo_run, where: Path) -> Path:
    """A copy of the demo run named ``run`` (the folder's name is the run's id: copies compared
    with each other must have the same one)."""
    run = where / "run"
    shutil.copytree(demo_run[0], run)
    return run


def _ids(run: Path, tmp: Path, n: int = 10) -> Path:
    ids = (run / "extract" / "documents.txt").read_text(encoding="utf-8").split()[-n:]
    path = tmp / "ids.txt"
    path.write_text("\n".join(ids) + "\n", encoding="utf-8")
    return path


def _manifest(run: Path, stage: str) -> dict:
    return json.loads((run / stage / "manifest.json").read_text(encoding="utf-8"))


def assert_consistent(run: Path, leftovers: bool = False) -> None:
    """Every stage folder is complete (its manifest's output hash is its content); unless
    ``leftovers`` (just after a kill), no temporary or moved-aside folder is left next to them."""
    for m in run.glob("*/manifest.json"):
        assert _manifest(run, m.parent.name)["output_hash"] == output_hash(m.parent), m.parent.name
    if not leftovers:
        assert not [p.name for p in run.glob(".*") if p.name.endswith((".tmp", ".old"))]


def _files(folder: Path) -> dict[str, bytes]:
    """The files of a stage folder but its manifest and the SPARQL store (RocksDB writes unique ids
    into its files: two builds of the same triples differ in bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json" and "store" not in p.relative_to(folder).parts}


def assert_same_outputs(a: Path, b: Path) -> None:
    """The KG, its export and the store's content are the same in both runs, and the export was made
    from the same KG."""
    assert _manifest(a, "extract")["output_hash"] == _manifest(b, "extract")["output_hash"]
    for stage in ("extract", "export"):
        assert _files(a / stage) == _files(b / stage), stage
    assert _manifest(a, "export")["input_hash"] == _manifest(b, "export")["input_hash"]
    assert _manifest(a, "export")["store"]["triples"] == _manifest(b, "export")["store"]["triples"]


@pytest.fixture(scope="module")
def reference(demo_run, tmp_path_factory):
    """The demo run after an uninterrupted `update --remove-file` of its last ten documents."""
    tmp = tmp_path_factory.mktemp("update-reference")
    run = _copy(demo_run, tmp)
    old = Path.cwd()
    try:                             # module scope: the autouse chdir fixture is not active yet
        os.chdir(ROOT)
        r = invoke("update", "--run-dir", run, "--remove-file", _ids(run, tmp))
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.output
    return run


def test_interrupted_after_the_kg_rewrite_the_rerun_brings_the_export_up_to_date(demo_run, tmp_path, monkeypatch):
    """The fast variant: the update is stopped (an exception where a kill would land) as the export
    begins, after RUN/extract was rewritten. Then an update that has nothing to do (adding documents
    the KG has: the slow variant repeats the removal instead) reruns the stages after extract only,
    and leaves each of them up to date with the new KG (a stage's output is a function of its inputs:
    the slow variant compares it with an uninterrupted update's)."""
    from pipelines import update
    from pipelines.stage import stale_reason
    from pipelines.stages import STAGES

    run = _copy(demo_run, tmp_path)
    ids = _ids(run, tmp_path)
    before = _manifest(run, "export")

    def killed(*a, **k):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(update, "run_stage", killed)
    r = invoke("update", "--run-dir", run, "--remove-file", ids)
    assert r.exit_code != 0
    assert _manifest(run, "extract")["status"] == "updated" and _manifest(run, "export") == before
    assert_consistent(run)
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    removed = set(ids.read_text(encoding="utf-8").split())
    kept = tmp_path / "kept.jsonl"
    kept.write_text("".join(x for x in (ROOT / "data/demo/corpus.jsonl").read_text(encoding="utf-8")
                            .splitlines(keepends=True) if json.loads(x)["doc_id"] not in removed))
    r = invoke("update", "--run-dir", run, "--add", kept)
    assert r.exit_code == 0, r.output
    assert "update: added 0 document(s), 50 already in the KG: the KG is unchanged; export, report " \
           "did not match it (an interrupted update?) and ran again" in r.output
    assert_consistent(run)
    cfg = update.run_config(run)
    assert [stale_reason(STAGES[s], cfg, run) for s in ("export", "report")] == [None, None]
    assert _manifest(run, "export")["input_hash"] != before["input_hash"]
    r = invoke("update", "--run-dir", run, "--remove-file", ids)     # and now there is nothing to do
    assert r.exit_code == 0 and "removed 0 document(s), 10 not in the KG: nothing changed" in r.output


def test_killed_in_the_middle_of_the_swap_the_old_kg_comes_back(demo_run, tmp_path):
    """A kill between moving the old RUN/extract aside and moving the new one in (graphmert.io's
    atomic_dir) left no RUN/extract: the next update found no KG. Now the old one is moved back, and
    the half-written new one and an old export left by a kill after its swap are removed."""
    run = _copy(demo_run, tmp_path)
    triples = (run / "extract" / "triples.jsonl").read_bytes()
    aside = run / ".extract.0123abcd.old"
    aside.mkdir()
    (run / "extract").rename(aside / "extract")
    half = run / ".extract.4567cdef.tmp"
    half.mkdir()
    (half / "triples-00000.parquet").write_bytes(b"PAR1 half")
    stale = run / ".export.89ab0123.old"              # a kill after a swap, before the old was deleted
    shutil.copytree(run / "export", stale / "export")
    r = invoke("update", "--run-dir", run, "--remove", "no-such-document")
    assert r.exit_code == 0, r.output
    assert "removed 0 document(s), 1 not in the KG" in r.output and "extract was left mid-swap" in r.output
    assert (run / "extract" / "triples.jsonl").read_bytes() == triples
    assert_consistent(run)


@pytest.mark.slow
def test_sigkill_after_the_kg_rewrite_then_rerun_gives_the_uninterrupted_result(demo_run, reference, tmp_path):
    """The real thing: `graphmert update` in a process of its own, SIGKILLed as soon as RUN/extract's
    manifest says "updated" (the downstream stages are running); the run is consistent, and the
    same command again ends with the uninterrupted update's KG and export."""
    run = _copy(demo_run, tmp_path)
    ids = _ids(run, tmp_path)
    cmd = [sys.executable, "-m", "pipelines.cli", "update", "--run-dir", str(run), "--remove-file", str(ids),
           "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    end = time.monotonic() + 300
    try:
        while _manifest(run, "extract").get("status") != "updated":
            assert proc.poll() is None, f"the update ended before the kill: {proc.stderr.read()}"
            assert time.monotonic() < end, "the KG was never rewritten"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    assert_consistent(run, leftovers=True)
    assert _manifest(run, "export")["input_hash"] != _manifest(reference, "export")["input_hash"], \
        "the export had caught up before the kill: nothing left to test"
    r = invoke("update", "--run-dir", run, "--remove-file", ids)
    assert r.exit_code == 0, r.output
    assert "10 not in the KG: the KG is unchanged; export, report did not match it" in r.output
    assert_consistent(run)
    assert_same_outputs(run, reference)
