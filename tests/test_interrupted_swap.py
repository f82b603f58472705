"""A folder swap cut in the middle (issue #51, deliverable 5): :func:`graphmert.io.atomic_dir` moves the
old folder aside, then the new one in; a process killed between the two left no folder at all.
:func:`graphmert.io.recover_dir` moves the old one back, and :func:`pipelines.stage.run_stage` does so
before it decides whether the stage is up to date — the stage is then skipped, not recomputed."""

from __future__ import annotations

from pathlib import Path

from graphmert.config import PipelineConfig, load_config
from graphmert.io import recover_dir
from pipelines.scheduler import Session
from pipelines.stage import Stage, StageContext, run_stage

RUNS: list[int] = []


def _killed_mid_swap(folder: Path, token: str = "0123abcd") -> Path:
    """The state a kill between atomic_dir's two renames leaves; returns the half-made new folder."""
    aside = folder.parent / f".{folder.name}.{token}.old"
    aside.mkdir()
    folder.rename(aside / folder.name)
    new = folder.parent / f".{folder.name}.{token[::-1]}.tmp"
    new.mkdir()
    (new / "half.txt").write_text("half")
    return new


def test_recover_dir_moves_the_old_folder_back(tmp_path):
    folder = tmp_path / "stage"
    folder.mkdir()
    (folder / "out.txt").write_text("old, complete")
    assert recover_dir(folder) is False                     # nothing to do while the folder is there
    _killed_mid_swap(folder)
    assert not folder.exists()
    assert recover_dir(folder) is True
    assert (folder / "out.txt").read_text() == "old, complete"
    assert not list(tmp_path.glob(".stage.*.old"))
    assert recover_dir(tmp_path / "never-written") is False


def _toy() -> Stage:
    def run(ctx: StageContext) -> dict:
        RUNS.append(1)
        (ctx.out / "out.txt").write_text("result")
        return {}

    return Stage("swapped", sections=("graph.num_roots",), upstream=(), run=run)


def test_run_stage_restores_a_stage_folder_left_mid_swap_and_skips_it(tmp_path):
    cfg, run_dir = load_config(None, []), tmp_path / "run"
    session = Session(PipelineConfig(scheduler="synchronous"), run_dir)
    RUNS.clear()
    assert run_stage(_toy(), cfg, run_dir, quiet=True, session=session)["status"] == "ran"
    _killed_mid_swap(run_dir / "swapped")
    m = run_stage(_toy(), cfg, run_dir, quiet=True, session=session)
    assert m["status"] == "skipped" and RUNS == [1]
    assert (run_dir / "swapped" / "out.txt").read_text() == "result"
    assert not [p.name for p in run_dir.glob(".swapped.*")]
