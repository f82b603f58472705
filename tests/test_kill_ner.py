"""SIGKILL during the ``ner`` stage (issue #51, deliverable 5): the run directory never shows a
half-written stage, the killed command's training processes die with it, and the rerun reuses the
model finished before the kill and ends with the recognizer and linker of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from ner_corpus import template_document, to_pubtator
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 6
NER = [f"ner.epochs={EPOCHS}", f"ner.patience={EPOCHS}", "ner.selection_fraction=0.2", "ner.width=32",
       "ner.separate_categories=[biolink:Gene]"]


def _wait_for(check, timeout: float, what: str, proc: subprocess.Popen | None = None):
    """Poll ``check()`` every 50 ms until it is truthy (returned); fail after ``timeout`` seconds,
    or as soon as ``proc`` exits."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the command ended (exit {proc.returncode}) before {what}:\n"
                        f"{proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_a_process_started_for_training_exits_when_its_parent_is_killed(tmp_path):
    """The fast variant: a parent starts a child that calls ``exit_with_parent`` (as every
    recognizer-training process does first), then is SIGKILLed; the child exits within seconds and
    removes its job folder."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    child = ("import sys, time; from pathlib import Path; from pipelines.lifeline import exit_with_parent; "
             "exit_with_parent(int(sys.argv[1]), Path(sys.argv[2]), every=0.1); "
             "Path(sys.argv[2], 'ready').touch(); time.sleep(60)")
    parent = ("import os, subprocess, sys, time; "
              f"c = subprocess.Popen([sys.executable, '-c', {child!r}, str(os.getpid()), sys.argv[1]]); "
              "print(c.pid, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", parent, str(job_dir)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        _wait_for(lambda: (job_dir / "ready").exists(), 60, "the child to start")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _, alive = psutil.wait_procs([psutil.Process(pid)], timeout=5)
        assert not alive, "the child outlived its SIGKILLed parent"
        assert not job_dir.exists()              # removed by the watch, which then exited
    finally:
        proc.kill()
        for p in psutil.Process().children(recursive=True):
            p.kill()


@pytest.fixture(scope="module")
def train_file(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ner-kill")
    rng = random.Random(3)
    docs = [template_document(f"{100 + i}", rng, genes=i % 3 != 0) for i in range(80)]
    (d / "train.PubTator").write_text(to_pubtator(docs), encoding="utf-8")
    return d / "train.PubTator"


def _args(run_dir: Path, train_file: Path) -> list[str]:
    return ["ner", "--config", str(ROOT / "configs/demo.yaml"), "--run-dir", str(run_dir), "--quiet", *NER,
            f"ner.paths=[{train_file}]", "--scheduler", "synchronous"]


def _first_model_done_and_second_training(run_dir: Path) -> bool:
    """One model's shard is finished (its sidecar written) and the other has logged an epoch."""
    work = run_dir / "work" / "ner"
    done = list(work.glob("model-*.spacy.json"))
    logs = [p for p in (work / "epochs").glob("part-*.jsonl") if p.stat().st_size]
    return len(done) == 1 and len(logs) == 2


@pytest.mark.slow
def test_sigkill_during_ner_then_rerun_gives_the_uninterrupted_result(train_file, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", *_args(run_dir, train_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait_for(lambda: _first_model_done_and_second_training(run_dir), 600,
                  "one model finished and the other training", proc)
        trainers = psutil.Process(proc.pid).children(recursive=True)
        assert trainers, "no training process to orphan"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # an orphan would train on: still alive after this, or it finished its epochs meanwhile
        _, alive = psutil.wait_procs(trainers, timeout=20)
        assert not alive, f"training processes outlived the killed command: {[p.pid for p in alive]}"
    finally:
        proc.kill()
    epochs = sorted(len(p.read_text().splitlines()) for p in (run_dir / "work/ner/epochs").glob("part-*.jsonl"))
    assert epochs[0] < EPOCHS == epochs[1], f"the killed model trained on after the kill: {epochs}"
    assert not [p for p in (run_dir / "work/ner").glob(".model-*.tmp") if p.stat().st_size], \
        "an orphaned training process wrote its model"
    assert not (run_dir / "ner").exists(), "a killed ner stage left a stage folder"
    assert list(run_dir.glob(".ner.*.tmp")), "the stage was killed before it wrote anything"

    r = CliRunner().invoke(app, _args(run_dir, train_file))
    assert r.exit_code == 0, r.output
    resumed = json.loads((run_dir / "ner" / "manifest.json").read_text())
    assert (resumed["tasks"]["model"]["ran"], resumed["tasks"]["model"]["reused"]) == (1, 1)
    assert not (run_dir / "work").exists() and not list(run_dir.glob(".ner.*"))
    assert [len(p["history"]) for p in resumed["parts"]] == [EPOCHS, EPOCHS]

    clean = tmp_path / "clean"
    r = CliRunner().invoke(app, _args(clean, train_file))
    assert r.exit_code == 0, r.output
    assert _recognizer_bytes(run_dir) == _recognizer_bytes(clean)
    assert not (run_dir / "ner" / "linker.json.gz").exists()      # the link stage's (test_pipeline_ner.py)


def _recognizer_bytes(run_dir: Path) -> list[bytes]:
    from graphmert.ner.recognizer import Recognizer

    return [p.nlp.to_bytes() for p in Recognizer.load(run_dir / "ner" / "recognizer").parts]
