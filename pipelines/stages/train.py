"""Train stage: leafy chain graphs → a trained GraphMERT model (DESIGN §6).

Writes ``RUN/train/``: ``model/`` (the final model checkpoint), ``checkpoints/step-*/`` (the last
training checkpoints), ``metrics.jsonl``, ``curves.png`` and the manifest (steps, final train and
held-out losses/accuracies, the majority-token baseline for leaves).

Resume. The stage runner swaps ``RUN/train`` in only when the stage completes, so the trainer works
in a stable folder, ``RUN/train-work/``, that survives a crash: checkpoints land there as they are
written. ``train-work/run.json`` records a fingerprint of everything that decides the updates (the
upstream outputs, the stage's code fingerprint — so a resumed run never continues across a code
change —, ``model``, ``graph``, and the ``train`` keys that are not in
:data:`~graphmert.train.trainer.RESUME_FREE_KEYS`). When the stage runs again:

* same fingerprint, ``train.resume`` true (the default) and an unfinished run → the trainer continues
  from the latest checkpoint in ``train-work`` (bit-identical on CPU);
* different fingerprint, ``train.resume=false``, or a finished run → ``train-work`` is cleared and
  training starts over.

When training finishes the outputs are hard-linked (no copy) into the stage folder, and
``train-work`` is marked finished. ``train.resume`` is not part of the stage's config hash.

Ensembles. With ``train.ensemble_size`` N > 1 the stage trains N models one after another on the
same graphs, member i with ``train.seed`` + i (member 0 is the single model of N = 1, in the same
folders); members i ≥ 1 work in ``train-work/member-<i>/`` and land in ``RUN/train/member-<i>/``
with the same files. The manifest is member 0's, plus ``ensemble_size`` and a ``members`` list
(seed, folder, held-out leaf and candidate accuracy); extract averages the members' answers. A
member that finished before an interruption is kept when the stage runs again.

Members at once. With ``train.member_processes`` P > 1 the members train P at a time, each in a
``python`` process of its own over :func:`worker_main` (:func:`member_command`) with
``train.threads`` torch threads, from its ``launch.json`` to its ``result.json`` (its stderr in
``stderr.log`` when quiet). Small models use the cores better this way: on 2 cores two 1-thread
members take 1.94 s a step each where one 2-thread member takes 1.16 s (docs/PERFORMANCE.md).

Multi-process. With ``train.nproc`` > 1 the stage runs ``python -m torch.distributed.run
--standalone --nproc-per-node N`` over :func:`worker_main` (:func:`torchrun_command`; gloo on CPU,
NCCL on CUDA); the launch spec is ``train-work/launch.json`` and process 0 writes
``train-work/result.json``. With one process the trainer runs in the stage's own process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from graphmert.config import ConfigError, TrainConfig, from_dict, to_dict
from graphmert.graph.io import read_graphs
from graphmert.io import atomic_write_json, read_json
from graphmert.train.trainer import RESUME_FREE_KEYS, Trainer, TrainingDiverged
from pipelines.stage import Stage, StageContext, StageError

log = logging.getLogger("graphmert.pipeline")

WORK_DIR = "train-work"
LINKED = ("model", "checkpoints", "curves.png")
COPIED = ("metrics.jsonl",)
REPO_ROOT = Path(__file__).resolve().parents[2]


def _fingerprint(ctx: StageContext) -> str:
    cfg = ctx.cfg
    train = {k: v for k, v in dataclasses.asdict(cfg.train).items() if k not in RESUME_FREE_KEYS}
    payload = {"inputs": {n: ctx.upstream[n].get("output_hash") for n in sorted(ctx.upstream)},
               "model": dataclasses.asdict(cfg.model), "graph": dataclasses.asdict(cfg.graph),
               "train": train, "code": TRAIN.code_fingerprint}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _prepare_work(work: Path, fingerprint: str, resume: bool) -> None:
    """Reuse ``work`` only for an unfinished run with the same fingerprint; else clear it."""
    meta = work / "run.json"
    keep = False
    if resume and meta.exists():
        try:
            old = read_json(meta)
            keep = old.get("fingerprint") == fingerprint and not old.get("finished", False)
        except (OSError, json.JSONDecodeError):
            keep = False
    if work.exists() and not keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    if keep:
        log.info("train: continuing the unfinished run in %s", work)
    atomic_write_json(meta, {"fingerprint": fingerprint, "finished": False})


def _link_tree(src: Path, dst: Path) -> None:
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    if src.is_dir():
        shutil.copytree(src, dst, copy_function=link)
    else:
        link(str(src), str(dst))


def train_from_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the trainer described by a launch spec (config, graph shards, tokenizer, relation map,
    work dir, quiet, the progress bar's label and line); process 0 writes and returns the result
    summary."""
    cfg = from_dict(spec["config"])
    work = Path(spec["work_dir"])
    graphs = list(read_graphs([Path(p) for p in spec["graphs"]]))
    threads = torch.get_num_threads()
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    try:
        trainer = Trainer(cfg, graphs, spec["tokenizer"], read_json(spec["relation_map"]), work,
                          quiet=spec.get("quiet", False), progress=tuple(spec.get("progress", ("train", 0))))
        result = trainer.fit()
    finally:
        torch.set_num_threads(threads)
    body = {"steps": result.step, "total_steps": result.total_steps,
            "train_chunks": len(trainer.train_indices), "eval_chunks": len(trainer.eval_indices),
            "parameters": sum(p.numel() for p in trainer.model.parameters()),
            "world_size": trainer.dist.world_size, "final_train": result.train,
            "final_eval": {**result.eval, "majority_leaf_token": trainer.majority_leaf},
            "leaf_acc": result.eval.get("mnm_tail_acc"),
            "leaf_acc_no_copy": result.eval.get("mnm_tail_acc_no_copy"),
            "leaf_majority_acc": result.eval.get("leaf_majority_acc"),
            "heldout_masked_leaves": result.eval.get("heldout_masked_leaves"),
            "candidate_acc": result.eval.get("cand_acc")}
    if trainer.dist.is_main:
        atomic_write_json(work / "result.json", body)
    return body


def torchrun_command(spec_path: Path, nproc: int) -> list[str]:
    """``python -m torch.distributed.run … python -c <worker> SPEC`` (no second import of this
    module as ``__main__``)."""
    code = "import sys; from pipelines.stages.train import worker_main; sys.exit(worker_main(sys.argv[1]))"
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "--no-python", sys.executable, "-c", code, str(spec_path)]


def _launch(spec_path: Path, nproc: int, threads: int, quiet: bool) -> None:
    cmd = torchrun_command(spec_path, nproc)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["OMP_NUM_THREADS"] = str(threads or 1)        # torchrun's default, without its banner
    log.info("train: launching %d processes: %s", nproc, " ".join(cmd))
    quiet_pipe = subprocess.PIPE if quiet else None
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL if quiet else None, stderr=quiet_pipe,
                          text=True)
    result_path = spec_path.parent / "result.json"
    error = read_json(result_path).get("error") if result_path.exists() else None
    if proc.returncode or error:
        detail = f": {error}" if error else (f":\n{proc.stderr[-3000:]}" if proc.stderr else "; see the output above")
        raise StageError(f"torchrun with {nproc} processes failed (exit code {proc.returncode}){detail}")


def member_name(index: int) -> str:
    """The folder of ensemble member ``index`` ≥ 1 under ``train-work/`` and ``RUN/train/``
    (member 0 is the stage folder itself)."""
    return f"member-{index}"


def member_models(train_dir: Path, manifest: dict) -> list[Path]:
    """The model folders of the ensemble members ≥ 1 that a train stage folder holds (its manifest's
    ``ensemble_size``); [] for a single model."""
    return [train_dir / member_name(i) / "model" for i in range(1, manifest.get("ensemble_size", 1))]


def _train(ctx: StageContext) -> dict:
    """Train ``train.ensemble_size`` models, member i with seed train.seed + i in ``train-work/``
    (i = 0) or ``train-work/member-<i>/``: one after another, or ``train.member_processes`` at once
    (:func:`_train_at_once`); a member that finished in an interrupted run of the same fingerprint
    is not trained again."""
    cfg = ctx.cfg
    if ctx.session is not None:
        ctx.session.release_local()          # training takes the cores; the workers come back later
    work = ctx.run_dir / WORK_DIR
    fingerprint = _fingerprint(ctx)
    _prepare_work(work, fingerprint, cfg.train.resume)
    n = cfg.train.ensemble_size
    members = [(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seed=cfg.train.seed + i)),
                work / member_name(i) if i else work) for i in range(n)]
    if n > 1 and cfg.train.member_processes > 1:
        bodies = _train_at_once(ctx, members)
    else:
        bodies = []
        for i, (member, member_work) in enumerate(members):
            if n > 1:
                log.info("train: ensemble member %d of %d (train.seed %d)", i + 1, n, member.train.seed)
            bodies.append(_train_member(ctx, member, member_work))
    for i, (_, member_work) in enumerate(members):
        out = ctx.out / member_name(i) if i else ctx.out
        out.mkdir(exist_ok=True)
        for name in LINKED + COPIED:
            src = member_work / name
            if not src.exists():
                raise StageError(f"train: the trainer did not write {src}")
            (_link_tree if name in LINKED else shutil.copy2)(src, out / name)
    atomic_write_json(work / "run.json", {"fingerprint": fingerprint, "finished": True})
    body = {**bodies[0], "ensemble_size": n}
    if n > 1:
        body["members"] = [{"seed": cfg.train.seed + i, "folder": member_name(i) if i else ".",
                            "leaf_acc": b.get("leaf_acc"), "leaf_acc_no_copy": b.get("leaf_acc_no_copy"),
                            "candidate_acc": b.get("candidate_acc")}
                           for i, b in enumerate(bodies)]
    return body


def _finished_member(work: Path) -> dict | None:
    """The result summary of a member that finished in ``work`` in an earlier attempt, else None."""
    result = work / "result.json"
    if result.exists() and (work / "model").exists():
        body = read_json(result)
        if "error" not in body:
            log.info("train: %s finished in an earlier attempt; kept", work)
            return body
    return None


def _member_spec(ctx: StageContext, cfg, work: Path, progress: tuple[str, int] = ("train", 0)) -> dict:
    """The launch spec of one member (read by :func:`train_from_spec`); clears its old result."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "result.json").unlink(missing_ok=True)
    graphs_dir = ctx.stage_dir("graphs")
    return {"config": to_dict(cfg), "graphs": [str(graphs_dir / s) for s in ctx.upstream["graphs"]["shards"]],
            "tokenizer": str(ctx.stage_dir("tokenizer") / "tokenizer.json"),
            "relation_map": str(graphs_dir / "relation_map.json"), "work_dir": str(work),
            "run_dir": str(ctx.run_dir), "quiet": ctx.quiet, "progress": list(progress)}


def _train_member(ctx: StageContext, cfg, work: Path) -> dict:
    """One model in ``work``: the result summary of a finished run there, else train (resuming from
    the latest checkpoint of ``work``) and return it."""
    body = _finished_member(work)
    if body is not None:
        return body
    spec = _member_spec(ctx, cfg, work)
    try:
        if cfg.train.nproc > 1:
            spec_path = atomic_write_json(work / "launch.json", spec)
            _launch(spec_path, cfg.train.nproc, cfg.train.threads, ctx.quiet)
            return read_json(work / "result.json")
        return train_from_spec(spec)
    except TrainingDiverged as e:
        raise StageError(str(e)) from None


def _train_at_once(ctx: StageContext, members: list[tuple[Any, Path]]) -> list[dict]:
    """The members, ``train.member_processes`` at a time, each in a process of its own
    (:func:`member_command`) with ``train.threads`` torch threads (0: the cores shared out among the
    processes), its progress bar on a line of its own; returns their result summaries in member
    order. Members share nothing while they train, so each one's updates are those it would make in
    the stage's process with the same threads (tests/train/test_stage.py). The first member that
    fails stops the others (their checkpoints stay for a rerun) and the stage, with its error."""
    t = ctx.cfg.train
    at_once = min(t.member_processes, len(members))
    threads = t.threads or max(1, (os.cpu_count() or 1) // at_once)
    bodies = {i: _finished_member(work) for i, (_, work) in enumerate(members)}
    waiting = [i for i, body in bodies.items() if body is None]
    if waiting:
        log.info("train: ensemble members %s of %d, %d at a time in processes of %d thread(s)",
                 ", ".join(str(i + 1) for i in waiting), len(members), at_once, threads)
    running: dict[int, subprocess.Popen] = {}
    lines: dict[int, int] = {}                     # member -> its progress bar's terminal line
    try:
        while waiting or running:
            while waiting and len(running) < at_once:
                i = waiting.pop(0)
                cfg, work = members[i]
                cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, threads=threads))
                lines[i] = min(set(range(at_once)) - {lines[j] for j in running})
                spec = _member_spec(ctx, cfg, work, (f"train member {i + 1}", lines[i]))
                running[i] = _start_member(atomic_write_json(work / "launch.json", spec), threads, ctx.quiet)
            i = _wait_any(running)
            bodies[i] = _member_result(i, members[i][1], running.pop(i))
    finally:
        for proc in running.values():
            proc.terminate()
            proc.wait()
    return [bodies[i] for i in range(len(members))]


def member_command(spec_path: Path) -> list[str]:
    """``python -c <worker> SPEC``: one member trained by :func:`worker_main` in a process of its own."""
    code = "import sys; from pipelines.stages.train import worker_main; sys.exit(worker_main(sys.argv[1]))"
    return [sys.executable, "-c", code, str(spec_path)]


def _start_member(spec_path: Path, threads: int, quiet: bool) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["OMP_NUM_THREADS"] = str(threads)
    if not quiet:
        return subprocess.Popen(member_command(spec_path), env=env)
    with open(spec_path.parent / "stderr.log", "w") as err:       # the child keeps its own descriptor
        return subprocess.Popen(member_command(spec_path), env=env, stdout=subprocess.DEVNULL, stderr=err)


def _wait_any(running: dict[int, subprocess.Popen]) -> int:
    """The first of the running members to exit (polled once a second)."""
    while True:
        for i, proc in running.items():
            if proc.poll() is not None:
                return i
        time.sleep(1.0)


def _member_result(i: int, work: Path, proc: subprocess.Popen) -> dict:
    """The result summary of member ``i``'s process, which exited; :class:`StageError` with its error."""
    result = work / "result.json"
    body = read_json(result) if result.exists() else {}
    if proc.returncode or "error" in body or not body:
        err = work / "stderr.log"
        tail = err.read_text(errors="replace")[-3000:] if err.exists() else ""
        detail = f": {body['error']}" if "error" in body else (f":\n{tail}" if tail else "; see the output above")
        raise StageError(f"train: ensemble member {i + 1} ({work}) failed (exit code {proc.returncode}){detail}")
    return body


def worker_main(spec_path: str) -> int:
    """Entry point of each torchrun process (:func:`torchrun_command`) and of each member trained at
    once with others (:func:`member_command`)."""
    from pipelines.stage import setup_logging

    spec = read_json(spec_path)
    rank = int(os.environ.get("RANK", "0"))
    work = Path(spec["work_dir"])
    if rank == 0:
        setup_logging(Path(spec.get("run_dir", work.parent)), spec.get("quiet", False))
    label = spec.get("progress", ["train"])[0]
    if label != "train":                  # members at once log into one file: say whose line it is
        logging.getLogger("graphmert.train").addFilter(_Prefix(label))
    try:
        train_from_spec(spec)
    except (TrainingDiverged, ConfigError, ValueError) as e:
        if rank == 0:
            atomic_write_json(work / "result.json", {"error": str(e)})
        logging.getLogger("graphmert.train").error("%s", e)
        return 1
    finally:
        import torch.distributed as tdist

        if tdist.is_initialized():
            tdist.destroy_process_group()
    return 0


class _Prefix(logging.Filter):
    """Prefixes each record of a logger with a label ("train member 2: step 500: …")."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"{self.label}: {record.msg}"
        return True


_SECTIONS = ("model", "graph.num_roots", "graph.num_leaves", "graph.layout",
             *(f"train.{f.name}" for f in dataclasses.fields(TrainConfig) if f.name != "resume"))

TRAIN = Stage("train", sections=_SECTIONS, upstream=("tokenizer", "graphs"), run=_train)
