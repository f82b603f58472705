"""The train stage: outputs and manifest, skip when up to date, resume after a crash from
RUN/train-work, start over when the config changes."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from graphmert.config import ConfigError
from graphmert.io import atomic_write_json
from graphmert.train.trainer import Trainer
from pipelines.stage import StageError, run_stage
from pipelines.stages import STAGES
from pipelines.stages.train import TRAIN
from train_helpers import random_graphs, tiny_config, write_inputs

VOLATILE = {"step_s", "tokens_per_s"}


def make_run(run: Path) -> Path:
    """A run directory whose tokenizer and graphs stages look finished."""
    inputs = write_inputs(run / "_in", random_graphs(40, R=16, K=3, fill=0.4, seed=5))
    (run / "tokenizer").mkdir(parents=True)
    shutil.copy(inputs["tokenizer"], run / "tokenizer" / "tokenizer.json")
    atomic_write_json(run / "tokenizer" / "manifest.json", {"stage": "tokenizer", "output_hash": "tok1"})
    (run / "graphs").mkdir()
    for p in inputs["graphs"]:
        shutil.copy(p, run / "graphs" / Path(p).name)
    shutil.copy(inputs["relation_map"], run / "graphs" / "relation_map.json")
    atomic_write_json(run / "graphs" / "manifest.json", {
        "stage": "graphs", "output_hash": "graphs1", "shards": [Path(p).name for p in inputs["graphs"]]})
    return run


def train_records(folder: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in VOLATILE}
            for line in (folder / "metrics.jsonl").read_text().splitlines()]


CFG = dict(max_steps=6, checkpoint_every=2, eval_every=3)


def test_the_held_out_line_names_candidate_accuracy_only_where_there_is_one(caplog):
    """A model without a candidate head (or no held-out question) has a NaN candidate accuracy: the
    step's log line leaves it out rather than print "candidates nan"."""
    from types import SimpleNamespace

    from graphmert.train.trainer import Trainer
    record = {"loss": 2.0, "mlm_loss": 1.0, "mnm_loss": 1.0, "mlm_acc": 0.5, "mnm_tail_acc": 0.25,
              "leaf_majority_acc": 0.125}
    for cand, shown in ((float("nan"), None), (0.75, ", candidates 0.7500")):
        caplog.clear()
        stub = SimpleNamespace(evaluate=lambda: {**record, "cand_acc": cand}, dist=SimpleNamespace(is_main=True),
                               metrics=[], step=7, last_eval=None)
        with caplog.at_level(logging.INFO, logger="graphmert.train"):
            Trainer._evaluate_and_log(stub)
        assert caplog.text.rstrip().endswith("(majority-token baseline 0.1250)" + (shown or ""))
        assert "nan" not in caplog.text and stub.metrics and stub.last_eval["cand_acc"] is cand


def test_registered_after_graphs():
    names = list(STAGES)
    assert STAGES["train"] is TRAIN and names.index("train") == names.index("graphs") + 1


def test_stage_writes_outputs_and_skips_when_up_to_date(tmp_path, caplog):
    run = make_run(tmp_path / "run")
    with caplog.at_level(logging.INFO):
        m = run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    assert m["status"] == "ran" and m["steps"] == m["total_steps"] == 6
    assert isinstance(m["train_chunks"], int) and isinstance(m["eval_chunks"], int) and m["eval_chunks"] > 0
    assert 0.0 <= m["leaf_majority_acc"] <= 1.0 and m["final_eval"]["mnm_acc"] == m["leaf_acc"]
    out = run / "train"
    assert {p.name for p in out.iterdir()} == {"model", "checkpoints", "metrics.jsonl", "curves.png",
                                               "manifest.json"}
    assert (out / "model" / "model.safetensors").exists()
    assert [p.name for p in sorted((out / "checkpoints").iterdir())] == ["step-00000004", "step-00000006"]
    assert json.loads((run / "train-work" / "run.json").read_text())["finished"] is True
    assert "step 6: held-out loss" in caplog.text and "nan" not in caplog.text
    assert run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)["status"] == "skipped"
    # train.resume does not change what is trained: still up to date
    assert run_stage(TRAIN, tiny_config(**CFG, resume=False), run, quiet=True)["status"] == "skipped"
    assert run_stage(TRAIN, tiny_config(**{**CFG, "lr": 5e-4}), run, quiet=True)["status"] == "ran"


def test_crash_then_rerun_resumes_from_train_work(tmp_path, monkeypatch):
    reference = make_run(tmp_path / "ref")
    run_stage(TRAIN, tiny_config(**CFG), reference, quiet=True)

    run = make_run(tmp_path / "run")
    original = Trainer.save_checkpoint

    def crash_after_step_4(self):
        path = original(self)
        if self.step >= 4:
            raise RuntimeError("simulated crash")
        return path

    monkeypatch.setattr(Trainer, "save_checkpoint", crash_after_step_4)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    monkeypatch.undo()
    assert not (run / "train").exists()
    work = run / "train-work"
    assert sorted(p.name for p in (work / "checkpoints").iterdir()) == ["step-00000002", "step-00000004"]

    restored = []
    real_restore = Trainer._restore
    monkeypatch.setattr(Trainer, "_restore", lambda self, d: (restored.append(d.name), real_restore(self, d)))
    m = run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    assert restored == ["step-00000004"]
    assert m["status"] == "ran" and m["steps"] == 6
    assert train_records(run / "train") == train_records(reference / "train")   # as if never interrupted


def test_changed_config_or_resume_false_starts_over(tmp_path, monkeypatch):
    run = make_run(tmp_path / "run")
    original = Trainer.save_checkpoint

    def crash(self):
        original(self)
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(Trainer, "save_checkpoint", crash)
    with pytest.raises(RuntimeError):
        run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    monkeypatch.undo()
    seen = []
    monkeypatch.setattr(Trainer, "_restore", lambda self, d: seen.append(d))
    run_stage(TRAIN, tiny_config(**CFG, resume=False), run, quiet=True)
    assert seen == []                                  # started over
    assert [r["step"] for r in train_records(run / "train") if r["split"] == "train"] == list(range(1, 7))


def test_a_code_change_does_not_resume_the_old_work_dir(tmp_path, monkeypatch):
    """An unfinished run in train-work was trained by other code: after a code change (a new code
    fingerprint of the train stage) training starts over instead of continuing its checkpoints."""
    from pipelines.stage import Stage

    run = make_run(tmp_path / "run")
    original = Trainer.save_checkpoint

    def crash_after_step_4(self):
        path = original(self)
        if self.step >= 4:
            raise RuntimeError("simulated crash")
        return path

    monkeypatch.setattr(Trainer, "save_checkpoint", crash_after_step_4)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    monkeypatch.undo()
    assert (run / "train-work" / "checkpoints" / "step-00000004").exists()
    old_fingerprint = json.loads((run / "train-work" / "run.json").read_text())["fingerprint"]

    real = Stage.code_fingerprint.fget
    monkeypatch.setattr(Stage, "code_fingerprint",      # as if graphmert/train/ had been edited
                        property(lambda self: "edited" if self.name == "train" else real(self)))
    seen = []
    monkeypatch.setattr(Trainer, "_restore", lambda self, d: seen.append(d))
    m = run_stage(TRAIN, tiny_config(**CFG), run, quiet=True)
    assert seen == []                                  # nothing restored: started over
    assert m["status"] == "ran" and m["code_fingerprint"] == "edited"
    assert [r["step"] for r in train_records(run / "train") if r["split"] == "train"] == list(range(1, 7))
    assert json.loads((run / "train-work" / "run.json").read_text())["fingerprint"] != old_fingerprint


def test_an_ensemble_trains_each_member_with_its_seed_and_keeps_finished_members(tmp_path, monkeypatch):
    """train.ensemble_size 2: member 0 is exactly the single model (same folders, same updates),
    member 1 trains with seed + 1 in member-1/; after a crash in member 1 the rerun trains member 1
    only, resuming its own checkpoints."""
    fixed = {"leaf_query": "fixed"}
    single = make_run(tmp_path / "single")
    run_stage(TRAIN, tiny_config(**CFG, model=fixed), single, quiet=True)

    run = make_run(tmp_path / "run")
    cfg = tiny_config(**CFG, ensemble_size=2, model=fixed)
    original = Trainer.save_checkpoint

    def crash_in_member_1(self):
        path = original(self)
        if self.cfg.train.seed == 1 and self.step >= 4:
            raise RuntimeError("simulated crash")
        return path

    monkeypatch.setattr(Trainer, "save_checkpoint", crash_in_member_1)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_stage(TRAIN, cfg, run, quiet=True)
    monkeypatch.undo()
    work = run / "train-work"
    assert (work / "result.json").exists() and (work / "model").exists()          # member 0 finished
    assert sorted(p.name for p in (work / "member-1" / "checkpoints").iterdir()) == \
        ["step-00000002", "step-00000004"]

    seeds = []
    real_init = Trainer.__init__
    monkeypatch.setattr(Trainer, "__init__",
                        lambda self, c, *a, **k: (seeds.append(c.train.seed), real_init(self, c, *a, **k))[1])
    restored = []
    real_restore = Trainer._restore
    monkeypatch.setattr(Trainer, "_restore", lambda self, d: (restored.append(d.name), real_restore(self, d)))
    m = run_stage(TRAIN, cfg, run, quiet=True)
    assert seeds == [1] and restored == ["step-00000004"]        # member 0 kept, member 1 resumed
    assert m["ensemble_size"] == 2 and [x["seed"] for x in m["members"]] == [0, 1]
    assert [x["folder"] for x in m["members"]] == [".", "member-1"]
    out = run / "train"
    assert {p.name for p in (out / "member-1").iterdir()} == {"model", "checkpoints", "metrics.jsonl",
                                                             "curves.png"}
    assert train_records(out) == train_records(single / "train")        # member 0 = the single model
    assert train_records(out / "member-1") != train_records(out)
    assert run_stage(TRAIN, cfg, run, quiet=True)["status"] == "skipped"


def test_members_trained_at_once_make_the_updates_they_make_one_after_another(tmp_path):
    """train.member_processes 2: both members train at once, each in a process of its own, with the
    same updates, held-out figures and weights as one after another in the stage's process (1
    thread each, so the same float order), and the same manifest; both log into the run's log,
    each line naming its member."""
    fixed = {"leaf_query": "fixed"}
    runs = {}
    for at_once in (1, 2):
        runs[at_once] = make_run(tmp_path / f"at-once-{at_once}")
        cfg = tiny_config(**CFG, ensemble_size=2, threads=1, member_processes=at_once, model=fixed)
        m = run_stage(TRAIN, cfg, runs[at_once], quiet=True)
        assert m["status"] == "ran" and [x["seed"] for x in m["members"]] == [0, 1]
    one, two = (runs[k] / "train" for k in (1, 2))
    for member in (".", "member-1"):
        assert train_records(two / member) == train_records(one / member)
        assert (two / member / "model" / "model.safetensors").read_bytes() == \
            (one / member / "model" / "model.safetensors").read_bytes()
    assert train_records(two / "member-1") != train_records(two)
    manifests = [json.loads((r / "manifest.json").read_text()) for r in (one, two)]
    assert [m["members"] for m in manifests] == [manifests[0]["members"]] * 2
    assert (runs[2] / "train-work" / "member-1" / "launch.json").exists()
    log = (runs[2] / "logs" / "graphmert.log").read_text()           # one log, each line its member's
    assert all(f"train member {k}: step 6: held-out loss" in log for k in (1, 2))


def test_a_member_that_fails_stops_the_others_and_the_stage_with_its_error(tmp_path, monkeypatch):
    """A member's process that exits non-zero: the stage fails naming the member, its exit code and
    the end of its stderr; the other member's process is stopped, not left running."""
    import subprocess
    import sys

    import pipelines.stages.train as train_stage

    run = make_run(tmp_path / "run")
    started = []
    script = "import sys, time\nif sys.argv[1].endswith('member-1/launch.json'):\n" \
             "    sys.stderr.write('simulated failure'); sys.exit(3)\ntime.sleep(60)"
    real_popen = subprocess.Popen
    monkeypatch.setattr(train_stage, "member_command", lambda spec: [sys.executable, "-c", script, str(spec)])
    monkeypatch.setattr(train_stage.subprocess, "Popen",
                        lambda *a, **k: started.append(real_popen(*a, **k)) or started[-1])
    cfg = tiny_config(**CFG, ensemble_size=2, member_processes=2, model={"leaf_query": "fixed"})
    with pytest.raises(StageError, match=r"train: ensemble member 2 \(\S+member-1\) failed \(exit code 3\):\n"
                                         r"simulated failure"):
        run_stage(TRAIN, cfg, run, quiet=True)
    assert len(started) == 2 and started[0].poll() is not None        # member 0 stopped


def test_a_member_that_reports_an_error_fails_the_stage_with_it_and_writes_no_train_folder(tmp_path, monkeypatch):
    """A member's process that records its error in result.json (as worker_main does for a diverged
    training): the stage's error is that message, and RUN/train is not written."""
    import sys

    import pipelines.stages.train as train_stage

    run = make_run(tmp_path / "run")
    script = ("import json, sys, time\nfrom pathlib import Path\nspec = Path(sys.argv[1])\n"
              "if spec.parent.name == 'member-1':\n"
              "    (spec.parent / 'result.json').write_text(json.dumps({'error': 'loss diverged at step 3'}))\n"
              "    sys.exit(1)\ntime.sleep(60)")
    monkeypatch.setattr(train_stage, "member_command", lambda spec: [sys.executable, "-c", script, str(spec)])
    cfg = tiny_config(**CFG, ensemble_size=2, member_processes=2, model={"leaf_query": "fixed"})
    with pytest.raises(StageError, match=r"ensemble member 2 \(\S+member-1\) failed \(exit code 1\): "
                                         r"loss diverged at step 3$"):
        run_stage(TRAIN, cfg, run, quiet=True)
    assert not (run / "train").exists()


def test_members_at_once_and_torchrun_processes_do_not_mix():
    with pytest.raises(ConfigError, match="train.member_processes: 2 members at once cannot each run on "
                                          "train.nproc 2 processes"):
        tiny_config(**CFG, ensemble_size=2, member_processes=2, nproc=2, model={"leaf_query": "fixed"})


def test_an_ensemble_needs_query_group_models():
    with pytest.raises(ConfigError, match="train.ensemble_size: 2 models need model.leaf_query 'fixed'"):
        tiny_config(**CFG, ensemble_size=2)


def test_training_into_a_log_file_draws_its_bar_a_few_times_not_once_a_step(tmp_path, capfd):
    """stderr here is a pipe, as in ``graphmert run > run.log 2>&1``: the bar is drawn when it opens
    and closes, not at every step (each step's loss used to force a redraw: a line per step)."""
    run = make_run(tmp_path / "run")
    capfd.readouterr()
    assert run_stage(TRAIN, tiny_config(max_steps=40, checkpoint_every=40, eval_every=40), run,
                     quiet=False)["status"] == "ran"
    draws = capfd.readouterr().err.count("step/s")
    assert 1 <= draws <= 4, draws
