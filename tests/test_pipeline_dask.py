"""The staged pipeline on Dask (issue #9): shard tasks, skip/rerun rules, fault tolerance, schedulers,
export parts, run directories at an fsspec URL.

Every run uses the demo data cut into small shards (12 document shards, 12 chunk shards, 6 graph
shards) so that stages really map over several tasks; outputs are compared byte for byte with a
reference run on the synchronous scheduler.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import fsspec
import pytest
from typer.testing import CliRunner

from graphmert.config import ConfigError, PipelineConfig, load_config
from graphmert.corpus.chunk import read_chunks
from graphmert.corpus.tokenizer import load_tokenizer
from graphmert.graph.builder import build_graphs
from graphmert.graph.io import graphs_equal, read_graphs
from graphmert.kg.loaders import load_kg
from pipelines.cli import app
from pipelines import store as store_mod
from pipelines.scheduler import ENV_ADDRESS, SchedulerError, Session, resolve_scheduler
from pipelines.stage import Stage, StageContext, StageError, run_stage
from pipelines.store import RunStore, ShardStore

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "configs" / "demo.yaml"
SHARDS = ["corpus.shard_size=5", "graph.shard_size=40"]
TO_GRAPHS = ("ingest", "tokenizer", "chunks", "graphs")
TINY = ["model.hidden_size=32", "model.num_layers=1", "model.num_heads=2", "model.intermediate_size=64",
        "train.max_steps=4", "train.eval_every=2", "train.checkpoint_every=2", "train.nproc=1"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def demo_args(run_dir: Path, *extra) -> list:
    return ["run", "--config", DEMO, "--run-dir", run_dir, "--to", "graphs", "--quiet", *SHARDS, *extra]


def digest(run_dir: Path, stages=TO_GRAPHS) -> dict[str, str]:
    """sha256 of every output file of ``stages`` (manifests hold timings, so they are left out)."""
    out = {}
    for s in stages:
        for p in sorted((run_dir / s).rglob("*")):
            if p.is_file() and p.name != "manifest.json":
                out[str(p.relative_to(run_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)          # the demo config's paths are relative to the repository
    monkeypatch.delenv(ENV_ADDRESS, raising=False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """Digest of an undisturbed run on the synchronous scheduler."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        r = invoke(*demo_args(run_dir, "--scheduler", "synchronous"))
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    assert manifest(run_dir, "graphs")["tasks"]["link"]["shards"] == 12
    return digest(run_dir)


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster owned by the test (its scheduler runs in this process, so a scheduler plugin
    can act at an exact task transition); runs reach it through its tcp:// address."""
    from distributed import LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                     env={"OMP_NUM_THREADS": "1"})
    yield c
    c.close()


class _OnTransition:
    """Scheduler plugin: call ``action(key)`` once, when a task whose key starts with ``prefix``
    reaches ``state``."""

    name = "graphmert-test-fault"

    def __init__(self, prefix: str, state: str, action) -> None:
        self.prefix, self.state, self.action, self.fired = prefix, state, action, None

    def transition(self, key, start, finish, *args, **kwargs):
        if self.fired is None and isinstance(key, str) and key.startswith(self.prefix) \
                and finish == self.state:
            self.fired = key
            self.action(key)


def _wait_idle(cluster, timeout: float = 60) -> None:
    """Until the scheduler holds no task and no worker is executing one."""
    from distributed import Client

    with Client(cluster, set_as_default=False) as client:
        deadline = time.time() + timeout
        while time.time() < deadline:
            busy = client.run(lambda dask_worker: len(dask_worker.state.executing))
            if not cluster.scheduler.tasks and not any(busy.values()):
                return
            time.sleep(0.2)
    raise AssertionError("the cluster did not become idle")


def _plugin(cluster, prefix, state, action):
    from distributed.diagnostics.plugin import SchedulerPlugin

    plugin = type("Fault", (_OnTransition, SchedulerPlugin), {})(prefix, state, action)
    cluster.scheduler.add_plugin(plugin, name=plugin.name)
    return plugin


# --------------------------------------------------------------------------------------------------
# Scheduler choice
# --------------------------------------------------------------------------------------------------


def test_scheduler_choice_order_and_errors(monkeypatch, tmp_path):
    cfg = PipelineConfig(scheduler="synchronous")
    assert resolve_scheduler(None, cfg) == ("synchronous", "pipeline.scheduler")
    monkeypatch.setenv(ENV_ADDRESS, "tcp://10.0.0.1:8786")
    assert resolve_scheduler(None, cfg) == ("tcp://10.0.0.1:8786", ENV_ADDRESS)
    assert resolve_scheduler("local", cfg) == ("local", "--scheduler")
    with pytest.raises(ConfigError, match="--scheduler: 'threads' is not a scheduler"):
        resolve_scheduler("threads", cfg)
    monkeypatch.setenv(ENV_ADDRESS, "10.0.0.1:8786")
    with pytest.raises(ConfigError, match=f"{ENV_ADDRESS}: '10.0.0.1:8786' is not a scheduler"):
        resolve_scheduler(None, cfg)
    r = invoke("ingest", "--run-dir", tmp_path / "run", "--scheduler", "bogus")
    assert r.exit_code == 2 and "'bogus' is not a scheduler" in r.output
    r = invoke("ingest", "--run-dir", "s3://bucket/run")
    assert r.exit_code == 2 and "--run-dir s3://bucket/run: fsspec cannot open it" in r.output
    assert "install the package for this protocol (s3fs" in r.output
    assert not (tmp_path / "run").exists() and not Path("s3:").exists()


# --------------------------------------------------------------------------------------------------
# Shard bookkeeping (a toy stage on the synchronous scheduler)
# --------------------------------------------------------------------------------------------------

CALLS: list[int] = []


def _square(item: int, shared: int, path: Path) -> dict:
    CALLS.append(item)
    path.write_text(f"{item * item + shared}\n")
    return {"value": item * item + shared}


def _toy_stage(fail_after_map: bool) -> Stage:
    def run(ctx: StageContext) -> dict:
        shards = ctx.map_shards(_square, list(range(6)), name="sq", shared=100, suffix=".txt")
        if fail_after_map:
            raise RuntimeError("killed after the map")
        return {"total": sum(s.counts["value"] for s in shards),
                "shards": [ctx.publish(s) for s in shards]}

    return Stage("toy", sections=("graph.num_roots",), upstream=(), run=run)


def test_a_shard_task_runs_with_what_the_worker_keeps_out_of_the_cycle_collectors_scans(tmp_path):
    """Inside a shard task the objects alive before it, and what worker_cache builds in it, are
    frozen (gc.freeze), so a full collection scans only the task's own; a cycle the task makes is
    still collected, and after the task, or its error, nothing stays frozen. Blocks nest."""
    import gc

    from pipelines.scheduler import frozen_heap, worker_cache
    from pipelines.stage import ShardTaskError, _run_shard

    class Cycle:
        pass

    seen = []

    def task(item, shared, tmp):
        frozen = gc.get_freeze_count()
        kept = worker_cache(("test: frozen", str(tmp_path)), lambda: [[i] for i in range(5000)])
        ids = {id(x) for x in kept}
        scanned = sum(id(o) in ids for o in gc.get_objects())       # the frozen are not among them
        cycle = Cycle()
        cycle.me = cycle
        del cycle
        gc.collect()
        seen.append((frozen, scanned, sum(isinstance(o, Cycle) for o in gc.get_objects()), len(kept)))
        if item == "fail":
            raise RuntimeError("task failed")
        tmp.write_text("ok")
        return {}

    assert gc.get_freeze_count() == 0
    _run_shard(task, "ok", str(tmp_path), "a.txt", "a", None, None)
    (frozen, scanned, cycles, kept), = seen
    assert frozen > 1000 and scanned == 0 and cycles == 0 and kept == 5000
    assert gc.get_freeze_count() == 0
    with pytest.raises(ShardTaskError, match="task failed"):
        _run_shard(task, "fail", str(tmp_path), "b.txt", "b", None, None)
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        with frozen_heap():
            pass
        assert gc.get_freeze_count() > 1000
    assert gc.get_freeze_count() == 0


def test_finished_shards_are_reused_and_broken_ones_redone(tmp_path):
    cfg = load_config(None, [])
    run_dir = tmp_path / "run"
    session = Session(PipelineConfig(scheduler="synchronous"), run_dir)
    CALLS.clear()
    with pytest.raises(RuntimeError, match="killed after the map"):
        run_stage(_toy_stage(True), cfg, run_dir, quiet=True, session=session)
    assert sorted(CALLS) == list(range(6)) and not (run_dir / "toy").exists()
    work = run_dir / "work" / "toy"
    files = sorted(p for p in work.iterdir() if p.suffix == ".txt")
    assert len(files) == 6 and all((work / f"{p.name}.json").exists() for p in files)
    # a killed write, a shard whose sidecar was never written, a shard changed after it finished
    (work / f".{files[0].name}.1234abcd.tmp").write_text("partial")
    (work / f"{files[1].name}.json").unlink()
    files[2].write_text("corrupt\n")
    CALLS.clear()
    m = run_stage(_toy_stage(False), cfg, run_dir, quiet=True, session=session)
    assert sorted(CALLS) == [1, 2]
    assert m["total"] == sum(i * i + 100 for i in range(6))
    assert m["tasks"]["sq"] == {**m["tasks"]["sq"], "shards": 6, "ran": 2, "reused": 4}
    assert [e["reused"] for e in m["shard_info"]] == [True, False, False, True, True, True]
    for e in m["shard_info"]:
        p = run_dir / "toy" / e["file"]
        assert e["file"].startswith(f"sq-{m['shard_info'].index(e):05d}-{e['id']}")
        assert hashlib.sha256(p.read_bytes()).hexdigest() == e["sha256"]
    assert m["shards"] == [e["file"] for e in m["shard_info"]]
    assert not (run_dir / "work").exists()            # removed once the stage is complete
    # unchanged: skipped; another config value: new shard ids, all recomputed
    CALLS.clear()
    assert run_stage(_toy_stage(False), cfg, run_dir, quiet=True, session=session)["status"] == "skipped"
    m2 = run_stage(_toy_stage(False), load_config(None, ["graph.num_roots=64"]), run_dir, quiet=True,
                   session=session)
    assert sorted(CALLS) == list(range(6)) and m2["tasks"]["sq"]["ran"] == 6
    assert not set(m2["shards"]) & set(m["shards"])


READ: list[int] = []                  # items a lazy input has yielded so far
READ_WHEN_RUN: dict[int, int] = {}    # item → how many items had been read when its shard ran


def _lazy(n: int):
    for i in range(n):
        READ.append(i)
        yield i


def _note_reads(item: int, shared: int, path: Path) -> dict:
    READ_WHEN_RUN[item] = len(READ)
    path.write_text(f"{item}\n")
    return {}


def test_a_lazy_input_is_read_as_the_executor_asks(tmp_path):
    """A generator's items (ingest's document batches) are read as tasks are given out, with two of
    look-ahead (to choose the driver or the cluster), never all first: in the driver, item i + 1 is
    read after shard i - 1 ran. Indices follow the items."""
    READ.clear()
    READ_WHEN_RUN.clear()

    def run(ctx: StageContext) -> dict:
        shards = ctx.map_shards(_note_reads, _lazy(5), name="n", suffix=".txt")
        return {"shards": [ctx.publish(s) for s in shards]}

    session = Session(PipelineConfig(scheduler="synchronous"), tmp_path / "run")
    m = run_stage(Stage("lazy", sections=("graph.num_roots",), upstream=(), run=run),
                  load_config(None, []), tmp_path / "run", quiet=True, session=session)
    assert READ_WHEN_RUN == {0: 2, 1: 2, 2: 3, 3: 4, 4: 5}
    assert [e["file"][:7] for e in m["shard_info"]] == [f"n-{i:05d}" for i in range(5)]
    assert m["tasks"]["n"]["ran"] == 5


def _slow_shard(item: int, shared: None, path: Path) -> dict:
    time.sleep(0.15)
    path.write_text(f"{item}\n")
    return {"item": item}


def test_a_lazy_input_on_a_cluster_holds_only_the_tasks_in_flight(tmp_path, cluster):
    """On a cluster of 2 workers the driver reads the next item only when fewer than 2 · 2 + 2
    tasks are in flight: at every read, the items read but not finished stay within that bound,
    whatever the corpus size. Every shard comes back once, in item order."""
    work = tmp_path / "run" / "work" / "lazy"
    held: list[int] = []

    def items():
        for i in range(16):
            finished = len(list(work.glob("n-*.txt.json"))) if work.is_dir() else 0
            held.append(i - finished)          # read before this one, not finished yet
            yield i

    def run(ctx: StageContext) -> dict:
        shards = ctx.map_shards(_slow_shard, items(), name="n", suffix=".txt")
        return {"shards": [ctx.publish(s) for s in shards]}

    with Session(PipelineConfig(), tmp_path / "run", cluster.scheduler_address, quiet=True) as session:
        m = run_stage(Stage("lazy", sections=("graph.num_roots",), upstream=(), run=run),
                      load_config(None, []), tmp_path / "run", quiet=True, session=session)
    assert max(held) <= 2 * 2 + 2 and len(held) == 16
    assert [e["counts"]["item"] for e in m["shard_info"]] == list(range(16))
    assert m["tasks"]["n"]["ran"] == 16


# --------------------------------------------------------------------------------------------------
# The graphs stage is build_graphs, shard by shard
# --------------------------------------------------------------------------------------------------


def test_graphs_stage_equals_build_graphs(tmp_path, monkeypatch):
    """Some documents lose their annotations, so lexicon linking runs too. Each link task hands the
    driver its candidates' digest (one row per distinct triple), not its candidate rows."""
    from graphmert.kg.digest import CandidateDigest

    digests: list[CandidateDigest] = []
    save = CandidateDigest.save
    monkeypatch.setattr(CandidateDigest, "save", lambda self, path: (digests.append(self), save(self, path)))
    lines = (ROOT / "data" / "demo" / "corpus.jsonl").read_text().splitlines()[:24]
    docs = [json.loads(x) for x in lines]
    for d in docs[1::3]:
        d["entities"] = []
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    run_dir = tmp_path / "run"
    over = [f"corpus.paths=[{corpus}]", "corpus.shard_size=4", "graph.shard_size=16", "kg.min_relation_count=2"]
    r = invoke("run", "--config", DEMO, "--run-dir", run_dir, "--to", "graphs", "--quiet", "--scheduler",
               "synchronous", *over)
    assert r.exit_code == 0, r.output
    cfg = load_config(DEMO, over)
    chunks = list(read_chunks([run_dir / "chunks" / s for s in manifest(run_dir, "chunks")["shards"]]))
    graphs, report = build_graphs(chunks, load_kg(cfg.kg), load_tokenizer(run_dir / "tokenizer" / "tokenizer.json"),
                                  cfg.kg, cfg.graph)
    m = manifest(run_dir, "graphs")
    assert report["heads"]["chunks_lexicon"] > 0 and m["tasks"]["link"]["shards"] == 6
    ours = list(read_graphs([run_dir / "graphs" / s for s in m["shards"]]))
    assert len(ours) == len(graphs) and all(graphs_equal(a, b) for a, b in zip(ours, graphs))
    saved = json.loads((run_dir / "graphs" / "injection_report.json").read_text())
    # the stage adds the hold-out counts (pipelines/holdout.py): with extract.paths empty the run's
    # own 24 documents are the extraction documents; their relations never become seed triples
    assert m["held_out_documents"] == 24 and saved.pop("corpus_documents_held_out") == 24
    assert saved == json.loads(json.dumps(report, default=str))
    assert len(digests) == 6 and sum(d.candidates for d in digests) == report["injection"]["candidates"]
    assert sum(len(d) for d in digests) < report["injection"]["candidates"]
    assert all(len(d) == len(set(d.triple.tolist())) for d in digests)
    assert [e["counts"]["graphs"] for e in m["shard_info"]] == [16] * (len(graphs) // 16) + (
        [len(graphs) % 16] if len(graphs) % 16 else [])


# --------------------------------------------------------------------------------------------------
# LocalCluster, reruns
# --------------------------------------------------------------------------------------------------


def test_local_cluster_same_bytes_and_noop_rerun(tmp_path, reference):
    run_dir = tmp_path / "run"
    r = invoke(*demo_args(run_dir, "pipeline.workers=1"))
    assert r.exit_code == 0, r.output
    assert digest(run_dir) == reference
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert log.count("dask: LocalCluster with 1 worker process;") == 1
    assert manifest(run_dir, "ingest")["tasks"]["documents"] == {
        **manifest(run_dir, "ingest")["tasks"]["documents"], "shards": 12, "ran": 12, "reused": 0}

    r = invoke(*demo_args(run_dir, "pipeline.workers=1"))
    assert r.exit_code == 0, r.output
    rerun_log = (run_dir / "logs" / "graphmert.log").read_text()[len(log):]
    assert all(f"{s}: up to date, skipped" in rerun_log for s in TO_GRAPHS)
    assert "running" not in rerun_log and "LocalCluster" not in rerun_log     # no cluster started
    assert all(manifest(run_dir, s)["status"] == "skipped" for s in TO_GRAPHS)
    assert digest(run_dir) == reference


def test_setting_change_reruns_only_downstream(tmp_path):
    """The whole pipeline (tiny model, gold configured): an unchanged rerun does no stage work; an
    extract threshold reruns extract, export and evaluate only; other abstracts train nothing."""
    gold = tmp_path / "gold.PubTator"
    gold.write_text("901|t|Metformin in type 2 diabetes\n"
                    "901|a|Metformin lowers glucose in patients with type 2 diabetes and obesity.\n"
                    "901\t0\t9\tMetformin\tChemical\tMESH:D008687\n"
                    "901\t13\t28\ttype 2 diabetes\tDisease\tMESH:D003924\n"
                    "901\t29\t38\tMetformin\tChemical\tMESH:D008687\n"
                    "901\t71\t86\ttype 2 diabetes\tDisease\tMESH:D003924\n"
                    "901\t91\t98\tobesity\tDisease\tMESH:D009765\n"
                    "901\tNegative_Correlation\tMESH:D008687\tMESH:D003924\tNo\n\n")
    run_dir = tmp_path / "run"
    args = ["run", "--config", DEMO, "--run-dir", run_dir, "--quiet", "--scheduler", "synchronous", *TINY,
            f"evaluate.gold=[{gold}]", f"extract.paths=[{gold}]", "extract.beta=0.0"]
    stages = ("ingest", "tokenizer", "chunks", "graphs", "train", "extract", "export", "report",
              "evaluate")
    r = invoke(*args, "extract.min_confidence=0.0")
    assert r.exit_code == 0, r.output
    assert all(manifest(run_dir, s)["status"] == "ran" for s in stages)
    assert manifest(run_dir, "extract")["triples"] > 0
    size = len((run_dir / "logs" / "graphmert.log").read_text())

    r = invoke(*args, "extract.min_confidence=0.0")
    assert r.exit_code == 0, r.output
    assert all(manifest(run_dir, s)["status"] == "skipped" for s in stages)
    log = (run_dir / "logs" / "graphmert.log").read_text()[size:]
    assert all(f"{s}: up to date, skipped" in log for s in stages) and "running" not in log

    r = invoke(*args, "extract.min_confidence=0.9")
    assert r.exit_code == 0, r.output
    status = {s: manifest(run_dir, s)["status"] for s in stages}
    assert status == {**{s: "skipped" for s in stages[:5]}, "extract": "ran", "export": "ran",
                      "report": "ran", "evaluate": "ran"}
    assert manifest(run_dir, "extract")["triples"] == 0

    # other abstracts to extract from, none of them in the corpus: the graphs stage holds out other
    # documents, writes the same bytes, and the model is not trained again
    other = tmp_path / "other.PubTator"
    other.write_text(gold.read_text().replace("901", "902"))
    graphs = manifest(run_dir, "graphs")["output_hash"]
    r = invoke(*args[:-3], f"evaluate.gold=[{other}]", f"extract.paths=[{other}]", "extract.beta=0.0",
               "extract.min_confidence=0.0")
    assert r.exit_code == 0, r.output
    status = {s: manifest(run_dir, s)["status"] for s in stages}
    assert status == {**{s: "skipped" for s in stages[:3]}, "graphs": "ran", "train": "skipped",
                      **{s: "ran" for s in stages[5:]}}
    assert manifest(run_dir, "graphs")["output_hash"] == graphs


# --------------------------------------------------------------------------------------------------
# Fault tolerance
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow          # the default suite keeps the killed driver's resume (next test)
def test_worker_killed_mid_graphs_run_completes_identically(tmp_path, reference, cluster):
    """SIGKILL the worker that was just given the third link task of the graphs stage."""

    def kill_worker(key):
        addr = cluster.scheduler.tasks[key].processing_on.address
        pids = [n.process.process.pid for n in cluster.workers.values() if n.worker_address == addr]
        os.kill(pids[0], signal.SIGKILL)

    plugin = _plugin(cluster, "graphs-link-00002", "processing", kill_worker)
    try:
        r = invoke(*demo_args(tmp_path / "run", "--scheduler", cluster.scheduler_address))
    finally:
        cluster.scheduler.remove_plugin(name=plugin.name)
    assert plugin.fired, "the fault was never injected"
    assert r.exit_code == 0, r.output
    assert digest(tmp_path / "run") == reference


def test_killed_run_resumes_without_recomputing_finished_shards(tmp_path, reference, cluster):
    """SIGKILL the whole `graphmert run` (driver process group) when its first ingest shard has
    finished; the rerun reuses every shard that was finished and ends byte-identical."""
    run_dir = tmp_path / "run"
    holder: dict = {}
    plugin = _plugin(cluster, "ingest-documents-", "memory",
                     lambda key: os.killpg(holder["proc"].pid, signal.SIGKILL))
    try:
        cmd = [sys.executable, "-m", "pipelines.cli", *map(str, demo_args(run_dir, "--scheduler",
                                                                           cluster.scheduler_address))]
        holder["proc"] = proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True,
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=120)
    finally:
        cluster.scheduler.remove_plugin(name=plugin.name)
    assert plugin.fired and proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    _wait_idle(cluster)                              # tasks running at the kill finish first
    work = run_dir / "work" / "ingest"
    done = {p.name[:-5]: (work / p.name[:-5]).stat().st_ino for p in work.glob("*.json")}
    assert 1 <= len(done) < 12 and not (run_dir / "ingest").exists()

    r = invoke(*demo_args(run_dir, "--scheduler", cluster.scheduler_address))
    assert r.exit_code == 0, r.output
    m = manifest(run_dir, "ingest")
    assert (m["tasks"]["documents"]["reused"], m["tasks"]["documents"]["ran"]) == (len(done), 12 - len(done))
    for name, inode in done.items():                 # the very same files, not recomputed
        assert (run_dir / "ingest" / name).stat().st_ino == inode
    assert digest(run_dir) == reference
    assert not list(run_dir.glob(".ingest.*.tmp")) and not (run_dir / "work").exists()


# --------------------------------------------------------------------------------------------------
# An existing cluster: `dask scheduler` + `dask worker`
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow          # fast variants: every test on the `cluster` fixture's scheduler address
def test_dask_scheduler_and_worker_pair(tmp_path, reference):
    dask = Path(sys.executable).with_name("dask")
    sched_file = tmp_path / "scheduler.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen([str(dask), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard", "--host", "127.0.0.1"],
                                      cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        run_dir = tmp_path / "run"
        r = invoke(*demo_args(run_dir, "--scheduler", address, "pipeline.connect_timeout=60"))
        assert r.exit_code == 0, r.output
        assert f"dask: scheduler {address} with 1 worker" in (run_dir / "logs" / "graphmert.log").read_text()
        assert digest(run_dir) == reference
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_unreachable_scheduler_fails_fast_with_a_clear_message(tmp_path, monkeypatch):
    with socket.socket() as s:                       # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    for how in ("option", "env"):
        run_dir = tmp_path / how
        extra = ["--scheduler", address] if how == "option" else []
        if how == "env":
            monkeypatch.setenv(ENV_ADDRESS, address)
        t = time.perf_counter()
        r = invoke(*demo_args(run_dir, *extra, "pipeline.connect_timeout=2"))
        elapsed = time.perf_counter() - t
        assert r.exit_code == 1                      # the command is right; the cluster is not there
        assert f"cannot reach the Dask scheduler at {address}" in r.output
        assert ("--scheduler" if how == "option" else ENV_ADDRESS) in r.output
        assert elapsed < 20, elapsed
        assert not (run_dir / "ingest").exists()


# --------------------------------------------------------------------------------------------------
# Export: one task per triple shard
# --------------------------------------------------------------------------------------------------


def test_export_maps_triple_shards_on_the_cluster(tmp_path, cluster):
    """Export parts written by cluster workers join into the bytes of the synchronous run."""
    from graphmert.extract.triples import write_triples
    from graphmert.io import atomic_write_json
    from pipelines.stages.export import EXPORT
    from tests.export.helpers import hostile_triples, make_triples

    triples = make_triples() + hostile_triples()
    outputs = {}
    for how in ("synchronous", cluster.scheduler_address):
        run_dir = tmp_path / ("sync" if how == "synchronous" else "cluster")
        (run_dir / "extract").mkdir(parents=True)
        names = [f"triples-{i:05d}.parquet" for i in range(3)]
        for i, name in enumerate(names):
            write_triples(triples[3 * i:3 * i + 3], run_dir / "extract" / name)
        atomic_write_json(run_dir / "extract" / "manifest.json",
                          {"stage": "extract", "shards": names, "config_hash": "c0", "output_hash": "o"})
        cfg = load_config(None, ["export.formats=[ttl,nt,nq,kgx]"])
        with Session(cfg.pipeline, run_dir, how, quiet=True) as session:
            m = run_stage(EXPORT, cfg, run_dir, quiet=True, session=session)
        assert m["tasks"]["part"]["shards"] == 3 and m["tasks"]["part"]["ran"] == 3
        assert m["kgx_edges"] == len(triples)
        outputs[how] = digest(run_dir, ("export",))
        assert not (run_dir / "work").exists()
    assert outputs["synchronous"] == outputs[cluster.scheduler_address]
    assert len(outputs["synchronous"]) == 7


# --------------------------------------------------------------------------------------------------
# Run directories at an fsspec URL: the driver works on a local copy, shards and stage folders go to
# the URL, workers on another host fetch what their tasks read
# --------------------------------------------------------------------------------------------------


def url_digest(url: str, stages=TO_GRAPHS) -> dict[str, str]:
    """As ``digest``, read through fsspec from the URL."""
    fs, root = fsspec.core.url_to_fs(url)
    out = {}
    for s in stages:
        for f in sorted(fs.find(f"{root}/{s}")):
            if not f.endswith("/manifest.json"):
                out[f[len(root) + 1:]] = hashlib.sha256(fs.cat_file(f)).hexdigest()
    return out


@pytest.fixture
def elsewhere(monkeypatch):
    """Shard tasks behave as on a worker on another host: they fetch the run-directory files they
    read from the URL and upload what they write, never touching the driver's working copy."""
    made = RunStore.shard_store

    def shard_store(self):
        s = made(self)
        return None if s is None else ShardStore(s.url, s.mirror, "another-host")

    monkeypatch.setattr(RunStore, "shard_store", shard_store)


def test_url_run_dir_on_a_cluster_gives_the_same_bytes_and_reruns_from_a_fresh_copy(
        tmp_path, reference, cluster, elsewhere):
    url = f"file://{tmp_path}/remote/run"
    r = invoke(*demo_args(url, "--scheduler", cluster.scheduler_address,
                          f"pipeline.mirror={tmp_path / 'copy'}"))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [url]             # --quiet: the run directory, as a URL
    assert url_digest(url) == reference
    remote = tmp_path / "remote" / "run"
    assert sorted(p.name for p in remote.iterdir()) == ["chunks", "config.yaml", "graphs", "ingest",
                                                        "link", "logs", "ner", "tokenizer"]   # no work/ left
    # another machine (a fresh working copy): every stage is pulled and skipped
    r = invoke(*demo_args(url, "--scheduler", "synchronous", f"pipeline.mirror={tmp_path / 'copy2'}"))
    assert r.exit_code == 0, r.output
    assert all(manifest(tmp_path / "copy2", s)["status"] == "skipped" for s in TO_GRAPHS)
    log = (remote / "logs" / "graphmert.log").read_text()
    assert all(f"{s}: pulled from {url}/{s}" in log for s in TO_GRAPHS)
    assert digest(tmp_path / "copy2") == reference == url_digest(url)


def test_finished_shards_at_the_url_are_reused_from_another_working_copy(tmp_path, elsewhere):
    """A run killed after its shards finished, resumed with an empty working copy."""
    cfg = load_config(None, [])
    url = f"file://{tmp_path}/remote"
    first = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "a")), url)
    CALLS.clear()
    with pytest.raises(RuntimeError, match="killed after the map"):
        run_stage(_toy_stage(True), cfg, url, quiet=True, session=first)
    work = tmp_path / "remote" / "work" / "toy"
    assert len(list(work.glob("*.txt.json"))) == 6
    (work / next(work.glob("sq-00003-*.txt.json")).name).unlink()       # one never finished
    CALLS.clear()
    second = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "b")), url)
    m = run_stage(_toy_stage(False), cfg, url, quiet=True, session=second)
    assert CALLS == [3] and m["tasks"]["sq"]["reused"] == 5
    assert m["total"] == sum(i * i + 100 for i in range(6))
    assert sorted(p.name for p in (tmp_path / "remote" / "toy").iterdir()) == sorted(
        m["shards"] + ["manifest.json"])
    assert not (tmp_path / "remote" / "work").exists()


def test_a_half_pushed_stage_folder_at_the_url_is_not_taken_as_finished(tmp_path):
    """Files without their manifest (a push killed before its last upload) make the stage run."""
    cfg = load_config(None, [])
    url = f"file://{tmp_path}/remote"
    first = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "a")), url)
    run_stage(_toy_stage(False), cfg, url, quiet=True, session=first)
    (tmp_path / "remote" / "toy" / "manifest.json").unlink()
    CALLS.clear()
    second = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "b")), url)
    m = run_stage(_toy_stage(False), cfg, url, quiet=True, session=second)
    assert m["status"] == "ran" and sorted(CALLS) == list(range(6))
    assert json.loads((tmp_path / "remote" / "toy" / "manifest.json").read_text())["output_hash"] == \
        m["output_hash"]


def test_a_shard_missing_at_the_url_after_its_task_is_a_clear_error(tmp_path, elsewhere, monkeypatch):
    monkeypatch.setattr(ShardStore, "upload", lambda self, src, dest: None)    # uploads lost
    url = f"file://{tmp_path}/remote"
    session = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "a")), url)
    with pytest.raises(StageError, match=rf"toy: shard sq-00000-\w+\.txt is not at {url}/work/toy/"):
        run_stage(_toy_stage(False), load_config(None, []), url, quiet=True, session=session)
    assert not (tmp_path / "remote" / "toy").exists() and not (tmp_path / "a" / "toy").exists()


def test_memory_url_in_process_and_refused_on_a_cluster(tmp_path):
    """memory:// lives in one process: fine for the synchronous scheduler (nothing of the run is on
    the local disk but the working copy), refused with a clear message by a LocalCluster."""
    url = f"memory://graphmert-test-{uuid.uuid4().hex[:8]}/run"
    cfg = load_config(None, [])
    session = Session(PipelineConfig(scheduler="synchronous", mirror=str(tmp_path / "copy")), url)
    m = run_stage(_toy_stage(False), cfg, url, quiet=True, session=session)
    fs, root = fsspec.core.url_to_fs(url)
    assert sorted(Path(f).name for f in fs.find(f"{root}/toy")) == sorted(m["shards"] + ["manifest.json"])
    assert fs.cat_file(f"{root}/toy/{m['shards'][2]}") == b"104\n"
    with pytest.raises(SchedulerError, match=r"cannot see the run directory memory://.*not memory://"):
        with Session(PipelineConfig(scheduler="local", workers=1,
                                    mirror=str(tmp_path / "copy2")), url) as s:
            s.executor(2)


def test_bad_urls_and_the_default_working_copy(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"--run-dir nosuchproto://x: fsspec cannot open it"):
        RunStore("nosuchproto://x")
    monkeypatch.setenv("GRAPHMERT_CACHE", str(tmp_path / "cache"))
    s = RunStore(f"file://{tmp_path}/r/")
    assert s.local.parent == tmp_path / "cache" / "runs" and s.local.is_dir()
    assert s.local == RunStore(f"file://{tmp_path}/r").local          # a trailing / is the same run
    assert RunStore(tmp_path / "local").shard_store() is None and not RunStore(tmp_path).remote
    assert store_mod.is_url("s3://b/k") and not store_mod.is_url("/a/b") and not store_mod.is_url("a:b")


def test_localize_fetches_working_copy_paths_only(tmp_path):
    remote, mirror = tmp_path / "remote", tmp_path / "mirror"
    (remote / "tokenizer").mkdir(parents=True)
    (remote / "tokenizer" / "tokenizer.json").write_text("{}")
    (remote / "train" / "model").mkdir(parents=True)
    (remote / "train" / "model" / "config.json").write_text("[1]")
    s = ShardStore(f"file://{remote}", str(mirror), "another-host")
    tok, model, other = (str(mirror / "tokenizer" / "tokenizer.json"), str(mirror / "train" / "model"),
                         str(ROOT / "configs" / "demo.yaml"))
    got = s.localize((tok, [model, 3], {"k": other}))
    assert Path(got[0]).read_text() == "{}" and not got[0].startswith(str(mirror))
    assert (Path(got[1][0]) / "config.json").read_text() == "[1]" and got[1][1] == 3
    assert got[2] == {"k": other}                                 # not in the run directory
    assert s.localize(tok) == got[0]                              # cached
    (remote / "tokenizer" / "tokenizer.json").write_text('{"v": 2}')
    assert Path(s.localize(tok)).read_text() == '{"v": 2}'        # a new version is fetched
    assert ShardStore(f"file://{remote}", str(mirror), store_mod.socket.gethostname()).localize(tok) == tok


# --------------------------------------------------------------------------------------------------
# One command per run directory; worker warnings in the run log
# --------------------------------------------------------------------------------------------------


def test_a_second_command_on_a_busy_run_directory_stops(tmp_path):
    run_dir = tmp_path / "run"
    held = RunStore(run_dir).lock()
    try:
        r = invoke("ingest", "--run-dir", run_dir, "--scheduler", "synchronous")
        assert r.exit_code == 2
        assert f"{run_dir} is in use by another graphmert command (pid {os.getpid()} on " in r.output
        assert not (run_dir / "ingest").exists()
    finally:
        held.close()
    RunStore(run_dir).lock().close()                # free again once the holder is gone


def _warn(item: int, shared: None, path: Path) -> dict:
    import logging

    logging.getLogger("graphmert.test").warning("shard %d looked odd", item)
    path.write_text(str(item))
    return {}


def test_warnings_logged_by_tasks_on_workers_reach_the_run_log(tmp_path, cluster):
    from pipelines.stage import setup_logging

    run_dir = tmp_path / "run"
    setup_logging(run_dir, quiet=True)
    stage = Stage("warny", sections=(), upstream=(),
                  run=lambda ctx: {"shards": [ctx.publish(s) for s in
                                              ctx.map_shards(_warn, [0, 1, 2], name="w", suffix=".txt")]})
    with Session(PipelineConfig(), run_dir, cluster.scheduler_address) as session:
        run_stage(stage, load_config(None, []), run_dir, quiet=True, session=session)
    deadline = time.time() + 10
    log = ""
    while time.time() < deadline and log.count("looked odd") < 3:
        time.sleep(0.2)
        log = (run_dir / "logs" / "graphmert.log").read_text()
    assert all(f"WARNING graphmert.test: shard {i} looked odd" in log for i in range(3)), log


def _failing(item: int, shared: None, path: Path) -> dict:
    """Shard 1 recurses without end (an exception whose traceback Dask cannot pickle: it reaches
    the driver as a bare Exception of its repr); shard 2 fails on a record it names in a note."""
    def deeper(n: int) -> int:
        return deeper(n + 1)

    if item == 1:
        deeper(0)
    if item == 2:
        try:
            {}["gene"]
        except KeyError as e:
            e.add_note("document 17")
            raise
    path.write_text(str(item))
    return {}


@pytest.mark.parametrize("where", ["synchronous", "cluster"])
def test_a_task_that_fails_is_named_by_its_shard_and_record(tmp_path, cluster, where):
    """A bug in a shard task reaches the command line as a ShardTaskError naming the shard file, the
    original exception and its notes, on a cluster too: a RecursionError that Dask could not ship
    with its traceback is still named (the 30k-document scale run failed with only its repr)."""
    from pipelines.stage import ShardTaskError

    for bad in (1, 2):
        stage = Stage(f"failing{bad}", sections=(), upstream=(),
                      run=lambda ctx, bad=bad: {"shards": [ctx.publish(s) for s in ctx.map_shards(
                          _failing, [0, bad, 3], name="f", suffix=".txt")]})
        address = cluster.scheduler_address if where == "cluster" else None
        cfg = PipelineConfig(scheduler="synchronous") if where == "synchronous" else PipelineConfig()
        with Session(cfg, tmp_path / "run", address, quiet=True) as session, \
                pytest.raises(Exception) as caught:
            run_stage(stage, load_config(None, []), tmp_path / "run", quiet=True, session=session)
        message = str(caught.value)
        assert "shard f-00001-" in message and ".txt: " in message
        if bad == 1:
            assert "RecursionError: maximum recursion depth exceeded" in message
        else:
            assert isinstance(caught.value, ShardTaskError)
            assert message.endswith(".txt: KeyError: 'gene' (document 17)")


class _StubExecutor:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("scheduler, released", [("local", True), ("tcp://127.0.0.1:8786", False)])
def test_training_releases_a_local_cluster_only(tmp_path, scheduler, released):
    """Before training (the driver on every core) a LocalCluster is closed and the next map opens a
    new one; a cluster the user runs is left alone."""
    session = Session(PipelineConfig(scheduler=scheduler), tmp_path / "run")
    stub = session._executor = _StubExecutor()
    session.release_local()
    assert stub.closed is released and session.opened is not released


def test_the_train_stage_releases_the_local_cluster_before_it_trains(tmp_path, monkeypatch):
    """The train stage calls Session.release_local first (above: what that does)."""
    from types import SimpleNamespace

    from pipelines.stages import train as train_stage

    calls = []

    class Stop(Exception):
        pass

    def fingerprint(ctx):
        calls.append("training work starts")
        raise Stop
    monkeypatch.setattr(train_stage, "_fingerprint", fingerprint)
    session = SimpleNamespace(release_local=lambda: calls.append("release_local"))
    with pytest.raises(Stop):
        train_stage._train(SimpleNamespace(cfg=None, session=session, run_dir=tmp_path))
    assert calls == ["release_local", "training work starts"]

def _worker_environment() -> dict:
    return {k: os.environ.get(k) for k in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")}


def test_local_cluster_workers_keep_glibc_dynamic_mmap_threshold(tmp_path):
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which turns off glibc's dynamic mmap
    threshold: every tensor over 128 KiB is then mapped and unmapped, and extraction on a worker ran
    1.9x slower than in the driver, in system time (docs/PERFORMANCE.md). Our LocalCluster unsets it."""
    from graphmert.config import PipelineConfig
    from pipelines.scheduler import open_local
    from pipelines.store import RunStore

    executor = open_local(PipelineConfig(workers=1), quiet=True, store=RunStore(tmp_path))
    try:
        env = list(executor.client.run(_worker_environment).values())
    finally:
        executor.close()
    assert env == [{"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1"}]


def _heap_trim_threshold() -> str | None:
    """The worker's own environment as glibc read it at start (/proc/self/environ is the process's
    initial environment: a variable set later in os.environ is not there)."""
    raw = Path("/proc/self/environ").read_bytes().split(b"\0")
    env = dict(kv.split(b"=", 1) for kv in raw if b"=" in kv)
    value = env.get(b"MALLOC_TRIM_THRESHOLD_")
    return value.decode() if value is not None else None


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_pipeline_malloc_trim_threshold_reaches_the_workers_at_start(tmp_path):
    """pipeline.malloc_trim_threshold bounds a worker's heap at a cost in time (docs/PERFORMANCE.md):
    glibc reads it once, at process start, so the worker must be spawned with it."""
    from graphmert.config import PipelineConfig
    from pipelines.scheduler import open_local
    from pipelines.store import RunStore

    executor = open_local(PipelineConfig(workers=1, malloc_trim_threshold=65536), quiet=True,
                          store=RunStore(tmp_path))
    try:
        started = list(executor.client.run(_heap_trim_threshold).values())
    finally:
        executor.close()
    assert started == ["65536"]
    # the nanny puts it in the driver's environment to spawn with; it does not stay for later children
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ
