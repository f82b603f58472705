"""A stage's output hash counts its shards by content and position, not by their ids
(:func:`pipelines.stage.output_hash`): a shard stage that reruns under a changed setting and writes the
same bytes under new shard ids keeps its output hash, so the stages it feeds stay up to date; a
changed byte still reruns them; and a manifest written before (shard ids in the hash) is still
taken as intact, so an older run's stages do not rerun for that alone."""

from __future__ import annotations

import json
from pathlib import Path

from graphmert.config import PipelineConfig, load_config
from pipelines.scheduler import Session
from pipelines.stage import Stage, StageContext, _legacy_output_hash, output_hash, output_intact, run_stage

RUNS: list[str] = []


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_shard_counts_by_content_and_position_not_by_its_id(tmp_path):
    a = _folder(tmp_path / "a", {"g-00000-0123456789abcdef.parquet": "x", "g-00001-00000000000000aa.parquet": "y",
                                 "report.json": "{}"})
    b = _folder(tmp_path / "b", {"g-00000-fedcba9876543210.parquet": "x", "g-00001-11111111111111bb.parquet": "y",
                                 "report.json": "{}"})
    assert output_hash(a) == output_hash(b) and _legacy_output_hash(a) != _legacy_output_hash(b)
    swapped = _folder(tmp_path / "c", {"g-00000-fedcba9876543210.parquet": "y", "g-00001-11111111111111bb.parquet": "x",
                                       "report.json": "{}"})
    assert output_hash(swapped) != output_hash(a)                          # positions count
    (b / "report.json").write_text('{"n": 1}')
    assert output_hash(b) != output_hash(a)                                # any other byte counts
    (b / "report.json").rename(b / "summary.json")
    assert output_hash(b) != output_hash(_folder(tmp_path / "d", {"report.json": '{"n": 1}'}))


def test_two_files_that_differ_only_in_their_ids_both_count(tmp_path):
    one = _folder(tmp_path / "one", {"g-00000-0123456789abcdef.parquet": "x", "g-00000-fedcba9876543210.parquet": "y"})
    for k, changed in enumerate(({"g-00000-0123456789abcdef.parquet": "z", "g-00000-fedcba9876543210.parquet": "y"},
                                 {"g-00000-0123456789abcdef.parquet": "x", "g-00000-fedcba9876543210.parquet": "z"})):
        assert output_hash(one) != output_hash(_folder(tmp_path / f"changed{k}", changed)), k


def test_output_intact_takes_the_current_and_the_legacy_hash_only(tmp_path):
    a = _folder(tmp_path / "a", {"g-00000-0123456789abcdef.parquet": "x"})
    assert output_intact(output_hash(a), a) and output_intact(_legacy_output_hash(a), a)
    assert not output_intact("0" * 16, a) and not output_intact(None, a)


def write_shard(item: str, shared, path: Path) -> dict:
    Path(path).write_text(item)
    return {"bytes": len(item)}


def _shards() -> Stage:
    """Shards whose bytes depend on graph.num_roots only; graph.num_leaves is declared (it renames the
    shards) but writes nothing different."""
    def run(ctx: StageContext) -> dict:
        RUNS.append("shards")
        items = [f"roots {ctx.cfg.graph.num_roots}", "second"]
        return {"shards": [ctx.publish(s) for s in ctx.map_shards(write_shard, items, name="part", suffix=".txt")]}

    return Stage("shards", sections=("graph.num_roots", "graph.num_leaves"), upstream=(), run=run)


def _reader() -> Stage:
    def run(ctx: StageContext) -> dict:
        RUNS.append("reader")
        text = "".join((ctx.stage_dir("shards") / s).read_text() for s in ctx.upstream["shards"]["shards"])
        (ctx.out / "joined.txt").write_text(text)
        return {}

    return Stage("reader", sections=(), upstream=("shards",), run=run)


def _run(run_dir: Path, *overrides: str) -> dict[str, str]:
    cfg = load_config(None, list(overrides))
    session = Session(PipelineConfig(scheduler="synchronous"), run_dir)
    return {s.name: run_stage(s, cfg, run_dir, quiet=True, session=session)["status"] for s in (_shards(), _reader())}


def test_the_same_bytes_under_new_shard_ids_leave_the_next_stage_up_to_date(tmp_path):
    run_dir = tmp_path / "run"
    RUNS.clear()
    assert _run(run_dir) == {"shards": "ran", "reader": "ran"}
    names = json.loads((run_dir / "shards" / "manifest.json").read_text())["shards"]
    assert _run(run_dir, "graph.num_leaves=3") == {"shards": "ran", "reader": "skipped"}
    renamed = json.loads((run_dir / "shards" / "manifest.json").read_text())["shards"]
    assert not set(renamed) & set(names)                                   # new ids, the same bytes
    assert _run(run_dir, "graph.num_leaves=3", "graph.num_roots=64") == {"shards": "ran", "reader": "ran"}
    assert (run_dir / "reader" / "joined.txt").read_text() == "roots 64second"
    assert RUNS == ["shards", "reader", "shards", "shards", "reader"]


def test_a_run_written_with_the_legacy_hash_is_up_to_date(tmp_path, monkeypatch):
    """Manifests that a version before this one wrote (shard ids in every output hash, and so in the
    next stage's input hash) still hold: nothing reruns."""
    import pipelines.stage

    run_dir = tmp_path / "run"
    with monkeypatch.context() as m:
        m.setattr(pipelines.stage, "output_hash", _legacy_output_hash)
        _run(run_dir)
    recorded = json.loads((run_dir / "shards" / "manifest.json").read_text())["output_hash"]
    assert recorded == _legacy_output_hash(run_dir / "shards") != output_hash(run_dir / "shards")
    RUNS.clear()
    assert _run(run_dir) == {"shards": "skipped", "reader": "skipped"} and RUNS == []
