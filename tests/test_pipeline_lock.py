"""One graphmert command per run directory (``RUN/.graphmert.lock``, a ``filelock.FileLock``): a
holder in another process is named in the refusal, and its death frees the run directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.store import RunDirBusy, RunStore

ROOT = Path(__file__).resolve().parents[1]

HOLD = """
import sys, time
from pipelines.store import RunStore
lock = RunStore(sys.argv[1]).lock()
print("held", flush=True)
time.sleep(120)
"""


def test_a_lock_held_by_another_process_is_named_and_freed_when_it_dies(tmp_path):
    run_dir = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        r = CliRunner().invoke(app, ["ingest", "--run-dir", str(run_dir), "--scheduler", "synchronous"])
        assert r.exit_code == 2
        assert f"{run_dir} is in use by another graphmert command (pid {child.pid} on " in r.output
        with pytest.raises(RunDirBusy, match=f"pid {child.pid} on "):
            RunStore(run_dir).lock()
    finally:
        os.kill(child.pid, signal.SIGKILL)          # no cleanup in the holder: the OS frees the lock
        child.wait()
    deadline = time.time() + 10
    while True:
        try:
            lock = RunStore(run_dir).lock()
            break
        except RunDirBusy:
            assert time.time() < deadline, "the lock of a killed process was not freed"
            time.sleep(0.1)
    assert (run_dir / ".graphmert.lock.owner").read_text().startswith(f"pid {os.getpid()} on ")
    lock.close()
    lock.close()                                    # idempotent
    assert not (run_dir / ".graphmert.lock.owner").exists()
    RunStore(run_dir).lock().close()
