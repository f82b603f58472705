"""Stage execution and the run-directory contract (DESIGN §10).

A stage reads what earlier stages wrote in the same run directory and writes its own folder
``RUN/<stage>/`` with a ``manifest.json``. Each stage is a pure function of (its inputs, its config
sections, its code): its manifest records an ``input_hash`` (the upstream manifests' output hashes,
or the source files' hashes for ingest), a ``config_hash`` (its resolved config sections + its code
fingerprint, also recorded as ``code_fingerprint``, with each module's own digest as ``code_modules``
so that a rerun's log names the modules that changed: :mod:`pipelines.fingerprint`) and an
``output_hash``; a stage whose outputs embed the run's name (``Stage.names_run``) also records it as
``run_id`` and is stale in a copied or renamed run directory. Running a stage whose recorded hashes
match does no work and records ``"status": "skipped"``; otherwise the stage writes into a temporary folder next to ``RUN/<stage>``
and swaps it in only when complete, so an interrupted stage never leaves a folder that looks finished.

Shard-parallel stages call :meth:`StageContext.map_shards` with a module-level per-shard function:
one Dask task per shard (:mod:`pipelines.scheduler` decides where it runs). Each shard file is named
``{name}-{index:05d}-{id}{suffix}`` where ``id`` hashes (stage, config hash with the code fingerprint,
the shard's inputs), is written under a temporary name and renamed in ``RUN/work/<stage>/``, and then a
sidecar ``<file>.json`` (sha256, counts, seconds) marks it finished. A rerun after a crash or a kill
reuses every finished shard (sha256 checked) and computes only the rest; shards of the previous
complete output with the same name are reused too. :meth:`StageContext.publish` hard-links a shard
into the stage folder; the manifest lists the published shards under ``shard_info`` (file, id,
sha256, counts, seconds, reused) next to ``shards`` (the file names, in order) and per map the
number of shards run and reused under ``tasks``. ``RUN/work/<stage>`` is removed once the stage is
complete.

A run directory at an fsspec URL is worked on through a local copy (:mod:`pipelines.store`):
``run_stage`` pulls the upstream folders first and pushes the finished stage folder; shard tasks
upload each shard, then its sidecar, to ``URL/work/<stage>/``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from graphmert import __version__
from graphmert.config import Config, save_config, section_hash
from graphmert.errors import GraphmertError, described
from graphmert.io import atomic_dir, atomic_write_json, file_sha256, input_hashes, read_json, recover_dir
from graphmert.progress import progress_bar
from pipelines import fingerprint
from pipelines.scheduler import Executor, Session, Task, frozen_heap
from pipelines.stages import CATALOG
from pipelines.store import RunStore, ShardStore

__all__ = ["Stage", "StageContext", "StageError", "UpstreamMissing", "ShardTaskError", "Shard",
           "run_stage", "output_hash", "setup_logging", "log_file", "manifest_path", "stale_reason",
           "check_inputs", "WORK_ROOT"]

WORK_ROOT = "work"          # RUN/work/<stage>/: shards of a stage that has not finished yet
log = logging.getLogger("graphmert.pipeline")


class StageError(GraphmertError, RuntimeError):
    """A stage failed on its input (the message says what to fix)."""


class UpstreamMissing(StageError):
    """A stage's upstream stage has not run in this run directory: the commands were given in the
    wrong order (the CLI reports it as a usage error)."""


class ShardTaskError(Exception):
    """A shard task raised something no library error class describes (a bug): the message names the
    shard, the original exception and its notes (the record it was at, where the task adds one), and
    the original is its ``__cause__`` on the worker. Not a :class:`GraphmertError`, so the command line
    keeps the traceback. Raised in its place because a worker's exception reaches the driver only
    pickled, and some (a ``RecursionError``'s) arrive as a bare ``Exception`` of their repr."""


@dataclass(frozen=True)
class Shard:
    """One finished shard of a :meth:`StageContext.map_shards` call."""

    index: int
    file: str                  # file name: {name}-{index:05d}-{id}{suffix}
    id: str                    # hash of (stage, map name, config hash + code fingerprint, inputs)
    path: Path                 # where it is now (RUN/work/<stage>/, or the previous stage folder)
    sha256: str
    counts: dict               # what the shard function returned
    seconds: float             # time the shard function took when it ran
    reused: bool               # finished by an earlier, interrupted or complete, run

    def record(self) -> dict:
        return {"file": self.file, "id": self.id, "sha256": self.sha256, "counts": self.counts,
                "seconds": self.seconds, "reused": self.reused}


@dataclass(frozen=True)
class _Planned:
    """One shard of a :meth:`StageContext.map_shards` call as planned before anything runs."""

    index: int
    file: str                  # file name: {name}-{index:05d}-{id}{suffix}
    id: str                    # hash of (stage, map name, config hash + code fingerprint, inputs)
    item: Any                  # what the shard function is given


class _Plan:
    """``items`` planned one at a time as they are read (``planned(index, item)``); ``count`` is how
    many were read so far, so after the last one, how many there were."""

    def __init__(self, items: Iterable[Any], planned: Callable[[int, Any], _Planned]) -> None:
        self._items, self._planned, self.count = items, planned, 0

    def __iter__(self) -> Iterator[_Planned]:
        for i, item in enumerate(self._items):
            self.count = i + 1
            yield self._planned(i, item)


def _run_shard(fn: Callable, item: Any, work_dir: str, file: str, shard_id: str,
               store: ShardStore | None, shared: Any) -> dict:
    """The body of every shard task (runs on a worker): ``fn(item, shared, tmp)`` writes ``tmp``,
    which is renamed to ``work_dir/file``; then the sidecar ``file.json`` marks the shard finished.

    With a run directory at a URL (``store``) the shard and then its sidecar are also uploaded to
    ``URL/work/<stage>/``; a worker on another host than the driver fetches the working-copy files
    its task reads and writes the shard in a scratch folder instead of ``work_dir``."""
    t0 = time.perf_counter()
    final = Path(work_dir) / file
    elsewhere = store is not None and not store.same_host
    scratch = Path(tempfile.mkdtemp(prefix="graphmert-shard-")) if elsewhere else None
    here = scratch / file if scratch is not None else final
    tmp = here.with_name(f".{file}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if store is not None:
            item, shared = store.localize(item), store.localize(shared)
        try:
            with frozen_heap():         # the worker's KG and models out of the cycle collector's scans
                counts = fn(item, shared, tmp)
        except GraphmertError:
            raise
        except Exception as e:              # noqa: BLE001 - a bug: name the shard, keep the cause
            raise ShardTaskError(f"shard {file}: {type(e).__name__}: {described(e)}") from e
        if not tmp.is_file():
            raise StageError(f"shard {file}: {getattr(fn, '__qualname__', fn)} wrote no file")
        sha = file_sha256(tmp)
        os.replace(tmp, here)
        rec = {"file": file, "id": shard_id, "sha256": sha, "counts": dict(counts or {}),
               "seconds": round(time.perf_counter() - t0, 4)}
        atomic_write_json(here.with_name(file + ".json"), rec)
        if store is not None:
            store.upload(here, final)
            store.upload(here.with_name(file + ".json"), final.with_name(file + ".json"))
    finally:
        tmp.unlink(missing_ok=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return rec


@dataclass
class StageContext:
    cfg: Config
    run_dir: Path
    out: Path                     # the (temporary) folder this stage writes into
    quiet: bool = False
    upstream: dict[str, dict] = field(default_factory=dict)   # name → manifest
    stage: str = ""
    input_hash: str = ""
    config_hash: str = ""
    session: Session | None = None
    store: RunStore | None = None    # where the run directory lives (None: run_dir itself)
    previous: dict | None = None  # this stage's last complete manifest (its shards can be reused)
    shard_info: list[dict] = field(default_factory=list)      # published shards, for the manifest
    tasks: dict[str, dict] = field(default_factory=dict)      # per map: shards run / reused

    def stage_dir(self, name: str) -> Path:
        return self.run_dir / name

    @property
    def run_id(self) -> str:
        """The name of the run being written (:attr:`pipelines.store.RunStore.name`): what triples
        and exported IRIs name the run by. A stage whose outputs embed it sets ``Stage.names_run``."""
        return self.store.name if self.store is not None else self.run_dir.resolve().name

    @property
    def work_dir(self) -> Path:
        return self.run_dir / WORK_ROOT / self.stage

    def progress(self, iterable=None, **kw):
        """A tqdm progress bar that ``--quiet`` silences (:func:`graphmert.progress.progress_bar`)."""
        return progress_bar(iterable, quiet=self.quiet, **kw)

    # ------------------------------------------------------------------ shards
    def map_shards(self, fn: Callable[[Any, Any, Path], dict | None], items: Iterable[Any], *,
                   name: str, shared: Any = None, key: Callable[[int, Any], Any] | None = None,
                   suffix: str = ".parquet") -> list[Shard]:
        """Run ``fn(item, shared, path)`` for every item not finished before; return all shards in
        item order.

        ``fn`` must be a module-level function (Dask ships it by reference): it writes one file at
        ``path`` (any writer; the runner renames it) and returns JSON-serialisable counts. ``items``
        may be a lazy iterable (ingest's document batches): it is read as the executor asks for
        work, so the driver holds the items of the tasks in flight (a bounded number:
        :class:`pipelines.scheduler.DaskExecutor`), never the corpus, and the cluster never waits
        for a batch to drain (the first two items are read ahead to choose the driver or the
        cluster). Each item is pickled to the worker.
        ``shared`` is sent once to every worker (e.g. a fitted scorer). ``key(index, item)``
        describes the item's inputs (JSON-serialisable); by default the stage's input hash and the
        index, which is exact whenever the items are a deterministic function of the stage's
        inputs and config.

        As items are read: plan each one's shard (:meth:`_plan`), take it if an earlier run finished
        it (:meth:`_reuse`), else hand it to the executor (:meth:`_run_missing`), which collects
        shards as they complete; then record the map (:meth:`_record_map`).
        """
        if self.session is None:
            raise StageError(f"{self.stage}: map_shards needs a scheduler session (run_stage gives one)")
        if name in self.tasks:
            raise StageError(f"{self.stage}: two shard maps named {name!r}; shard files would collide")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        bar = self.progress(total=len(items) if isinstance(items, Sized) else None,
                            desc=f"{self.stage}: {name}", unit="shard")
        t0 = time.perf_counter()
        shards: dict[int, Shard] = {}
        planned = 0
        try:
            plan = self._plan(items, name, key, suffix)
            missing = self._reuse(plan, shards, bar)
            ahead = list(itertools.islice(missing, 2))   # a single missing shard runs in the driver
            ex = self.session.executor(len(ahead)) if ahead else self.session.inline
            computed = self._run_missing(ex, fn, name, itertools.chain(_drain(ahead), missing), shared, bar)
            shards.update(computed)
            planned = plan.count
        finally:
            bar.close()
        if len(shards) != planned:
            raise StageError(f"{self.stage}: {name}: {planned - len(shards)} shard(s) missing")
        out = [shards[i] for i in range(planned)]
        self._record_map(name, out, len(computed), ex, time.perf_counter() - t0)
        return out

    def _plan(self, items: Iterable[Any], name: str, key: Callable[[int, Any], Any] | None,
              suffix: str) -> "_Plan":
        """The shards of ``items``, planned lazily in item order (:class:`_Plan`). A shard's id
        hashes (stage, map name, config hash with the code fingerprint, the item's inputs:
        ``key(index, item)``, by default the stage's input hash and the index); its file is
        ``{name}-{index:05d}-{id}{suffix}``."""
        def planned(i: int, item: Any) -> _Planned:
            inputs = key(i, item) if key is not None else [self.input_hash, i]
            sid = _hash_json({"stage": self.stage, "map": name, "config": self.config_hash,
                              "inputs": inputs})
            return _Planned(i, f"{name}-{i:05d}-{sid}{suffix}", sid, item)

        return _Plan(items, planned)

    def _reuse(self, plan: Iterable[_Planned], found: dict[int, Shard], bar) -> Iterator[_Planned]:
        """The planned shards no earlier run finished, lazily; each one an earlier run finished
        (:meth:`_finished_before`) goes into ``found`` by index instead and advances the progress
        bar."""
        previous = {e["file"]: e for e in (self.previous or {}).get("shard_info", [])}
        at_url = self.store.names(f"{WORK_ROOT}/{self.stage}") if self.store is not None else set()
        for p in plan:
            shard = self._finished_before(p, at_url, previous)
            if shard is None:
                yield p
            else:
                found[p.index] = shard
                bar.update(1)

    def _finished_before(self, p: _Planned, at_url: set[str], previous: dict) -> Shard | None:
        """Shard ``p`` as an earlier run finished it, else None. The places tried, in turn:

        1. ``RUN/work/<stage>/`` of the working copy (a killed or failed run of this stage);
        2. ``URL/work/<stage>/``, when the shard's sidecar is listed there (``at_url``): a worker's
           upload, or a run from another working copy; the shard is copied into the working copy;
        3. this stage's last complete output (``previous``: file name → its ``shard_info`` entry).
        """
        shard = self._finished(self.work_dir, p.file, p.id, p.index)
        if shard is None and f"{p.file}.json" in at_url:
            shard = self._fetched(p.file, p.id, p.index)
        if shard is None:
            shard = self._previous(self.stage_dir(self.stage), previous, p.file, p.id, p.index)
        return shard

    def _run_missing(self, ex: Executor, fn: Callable, name: str, missing: Iterable[_Planned],
                     shared: Any, bar) -> dict[int, Shard]:
        """Submit one task (:func:`_run_shard`) per missing shard to ``ex`` as it asks for work (it
        retries them and keeps a bounded number in flight) and collect each shard as its task
        completes, by index; each one advances the progress bar. Only the tasks in flight keep
        their items here."""
        store = self.store.shard_store() if self.store is not None else None
        work = str(self.work_dir)
        in_flight: dict[int, _Planned] = {}

        def tasks() -> Iterator[Task]:
            for p in missing:
                in_flight[p.index] = p
                yield p.index, f"{self.stage}-{name}-{p.index:05d}", (fn, p.item, work, p.file, p.id, store)

        done: dict[int, Shard] = {}
        for i, rec in ex.run(_run_shard, tasks(), shared):
            done[i] = self._computed(in_flight.pop(i), rec, uploaded=store is not None)
            bar.update(1)
        return done

    def _computed(self, p: _Planned, rec: dict, uploaded: bool) -> Shard:
        """The shard a task just finished (``rec``: its sidecar). With a run directory at a URL
        (``uploaded``), a shard that a worker on another host wrote is fetched into the working
        copy; one that is at neither place is an error."""
        if uploaded and self._finished(self.work_dir, p.file, p.id, p.index) is None:
            if self._fetched(p.file, p.id, p.index) is None:   # the task uploaded it, then it vanished
                raise StageError(f"{self.stage}: shard {p.file} is not at "
                                 f"{self.store.display(WORK_ROOT, self.stage, p.file)}")
        return Shard(p.index, p.file, p.id, self.work_dir / p.file, rec["sha256"], rec["counts"],
                     rec["seconds"], False)

    def _record_map(self, name: str, out: list[Shard], ran: int, ex: Executor, wall: float) -> None:
        """The map's line in the manifest's ``tasks`` (shards run and reused, wall and task seconds)
        and in the log."""
        reused = len(out) - ran
        self.tasks[name] = {"shards": len(out), "ran": ran, "reused": reused,
                            "seconds": round(wall, 3),
                            "task_seconds": round(sum(s.seconds for s in out if not s.reused), 3)}
        log.info("%s: %s: %d shard(s): %d run%s, %d reused from an earlier run, %.1fs", self.stage,
                 name, len(out), ran, f" ({ex.description})" if ran else "", reused, wall)

    def _finished(self, work: Path, file: str, sid: str, i: int) -> Shard | None:
        """A shard finished in ``work`` (sidecar present, content as recorded), else None."""
        path, side = work / file, work / f"{file}.json"
        if not (path.is_file() and side.is_file()):
            return None
        try:
            rec = read_json(side)
        except (OSError, ValueError):
            return None
        if rec.get("id") != sid or file_sha256(path) != rec.get("sha256"):
            return None
        return Shard(i, file, sid, path, rec["sha256"], rec.get("counts", {}), rec.get("seconds", 0.0),
                     True)

    def _fetched(self, file: str, sid: str, i: int) -> Shard | None:
        """A shard finished at the run directory's URL (by a worker, or an earlier run elsewhere),
        copied into the working copy; else None."""
        if self.store is None or not self.store.remote:
            return None
        rec = self.store.fetch_finished(f"{WORK_ROOT}/{self.stage}", file, self.work_dir / file)
        if rec is None:
            return None
        return self._finished(self.work_dir, file, sid, i)

    def _previous(self, folder: Path, prev: dict, file: str, sid: str, i: int) -> Shard | None:
        """The same shard in this stage's last complete output, else None."""
        e = prev.get(file)
        path = folder / file
        if e is None or e.get("id") != sid or not path.is_file() or file_sha256(path) != e.get("sha256"):
            return None
        return Shard(i, file, sid, path, e["sha256"], e.get("counts", {}), e.get("seconds", 0.0), True)

    def publish(self, shard: Shard) -> str:
        """Hard-link (or copy) ``shard`` into the stage folder and list it in the manifest's
        ``shard_info``; returns its file name (for the manifest's ``shards``)."""
        dst = self.out / shard.file
        try:
            os.link(shard.path, dst)
        except OSError:
            shutil.copy2(shard.path, dst)
        self.shard_info.append(shard.record())
        return shard.file


@dataclass
class Stage:
    name: str
    sections: tuple[str, ...]               # config sections or dotted keys the stage depends on
    upstream: tuple[str, ...]               # stages whose outputs it reads
    run: Callable[[StageContext], dict]     # does the work; returns the manifest body (counts…)
    source_files: Callable[[Config], list[Path]] | None = None   # raw inputs (ingest, KG files)
    help: str = ""                          # default: the stage's pipelines.stages.CATALOG entry
    command: str = ""                       # CLI command name when it differs from ``name`` (same)
    #: its outputs embed the run's name (``run_id``): the manifest records it, and a run directory
    #: copied or renamed since makes the stage stale (:func:`_stale`)
    names_run: bool = False
    #: what the stage reads of keys it does not declare in :attr:`sections`, computed from the config
    #: and the files it names and hashed as one of its inputs ("its inputs changed"): the ner and link
    #: stages depend on which of their training documents ``extract.paths`` and ``evaluate.gold`` hold
    #: out, not on those keys
    derived: Callable[[Config], Any] | None = None

    def __post_init__(self) -> None:
        entry = CATALOG.get(self.name)      # the one copy of the help text, read by the CLI too
        if entry is not None:
            self.help = self.help or entry.help
            self.command = self.command or entry.command

    @property
    def cli_name(self) -> str:
        return self.command or self.name

    @property
    def code_fingerprint(self) -> str:
        """Hash of the source of the module defining :attr:`run` and of every library module it
        imports (:mod:`pipelines.fingerprint`): a code change reruns the stage and, through its new
        outputs, everything downstream."""
        return fingerprint.module_fingerprint(self.run.__module__)

    @property
    def code_modules(self) -> dict[str, str]:
        """Each module of :attr:`code_fingerprint` with its own digest: recorded in the manifest so
        that a rerun's log names the modules that changed."""
        return fingerprint.module_digests(self.run.__module__)

    def settings_hash(self, cfg: Config) -> str:
        """Hash of the config sections the stage reads, without its code: what a published graph
        cites as the settings that made it (``gm:configHash``), so refactoring the code leaves the
        published bytes alone."""
        return section_hash(*self._settings(cfg))

    def config_hash(self, cfg: Config) -> str:
        """The manifest's ``config_hash``: the stage's settings and :attr:`code_fingerprint`."""
        return section_hash(*self._settings(cfg), self.code_fingerprint)

    def _settings(self, cfg: Config) -> list[Any]:
        return [_config_part(cfg, s) for s in self.sections]


def manifest_path(run_dir: Path, stage: str) -> Path:
    return Path(run_dir) / stage / "manifest.json"


def _to_console(record: logging.LogRecord) -> bool:
    return getattr(record, "console", True)


def setup_logging(run_dir: Path, quiet: bool = False) -> None:
    """Log to ``RUN/logs/graphmert.log`` (always) and to stderr (warnings only when quiet). A record
    logged with ``extra={"console": False}`` (the CLI's tracebacks, errors it prints itself) goes
    to the file only."""
    run_dir.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("graphmert")
    root.setLevel(logging.INFO)
    for h in list(root.handlers):
        if getattr(h, "_graphmert", False):
            root.removeHandler(h)
            h.close()
    (run_dir / "logs").mkdir(exist_ok=True)
    fh = logging.FileHandler(run_dir / "logs" / "graphmert.log", encoding="utf-8")
    fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    sh = logging.StreamHandler()
    sh.setLevel(logging.WARNING if quiet else logging.INFO)
    sh.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    sh.addFilter(_to_console)
    for h in (fh, sh):
        h._graphmert = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.propagate = False


def log_file() -> Path | None:
    """The file :func:`setup_logging` logs to in this process, or None before it was called."""
    for h in logging.getLogger("graphmert").handlers:
        if getattr(h, "_graphmert", False) and isinstance(h, logging.FileHandler):
            return Path(h.baseFilename)
    return None


def _config_part(cfg: Config, dotted: str) -> Any:
    """A config section (``"graph"``) or one key of it (``"graph.num_roots"``), tagged by name."""
    obj: Any = cfg
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return {dotted: dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj}


def _drain(items: list[Any]) -> Iterator[Any]:
    """``items`` from the first, each dropped from the list as it is given out."""
    while items:
        yield items.pop(0)


def _hash_json(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def check_inputs(stage: Stage, cfg: Config) -> list[Path]:
    """The raw input files ``cfg`` gives ``stage`` (its ``source_files``), after checking that each
    exists: a mistyped path stops the stage, or a whole run before its first stage, with the path
    named and nothing written."""
    files = stage.source_files(cfg) if stage.source_files is not None else []
    missing = next((p for p in files if not Path(p).exists()), None)
    if missing is not None:
        raise StageError(f"input not found: {missing} (a path the config gives this stage; "
                         f"a relative path is read from {Path.cwd()})")
    return files


def _input_hash(stage: Stage, cfg: Config, upstream: dict[str, dict]) -> str:
    parts: dict[str, Any] = {name: m.get("output_hash") for name, m in upstream.items()}
    if stage.source_files is not None:
        parts["files"] = input_hashes(check_inputs(stage, cfg))
    if stage.derived is not None:
        parts["derived"] = stage.derived(cfg)
    return _hash_json(parts)


# a shard's file name, {name}-{index:05d}-{id}{suffix}: the id (16 hex digits, :meth:`StageContext._plan`)
_SHARD_ID = re.compile(r"^(?P<head>.+-\d{5})-[0-9a-f]{16}(?P<suffix>(?:\.[^./]+)*)$")


def _digests(out: Path) -> list[tuple[str, str]]:
    """(path relative to ``out``, SHA-256) of every file in a stage folder but its manifest, sorted."""
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    return [(str(p.relative_to(out)), file_sha256(p)) for p in files]


def _hash_digests(digests: list[tuple[str, str]]) -> str:
    """:func:`output_hash` of a folder's :func:`_digests`."""
    stable = [_SHARD_ID.sub(r"\g<head>\g<suffix>", name) for name, _ in digests]
    twice = {k for k, n in Counter(stable).items() if n > 1}
    return _hash_json({(name if key in twice else key): sha for (name, sha), key in zip(digests, stable)})


def output_hash(out: Path) -> str:
    """Hash of every file in a stage folder but its manifest: names and contents, a shard by its name
    without its id (``{name}-{index:05d}{suffix}``). The id is the key under which a rerun may reuse
    the shard (it hashes the config with the code fingerprint, and the inputs), not a part of the
    output: a stage that reruns and writes the same bytes keeps its output hash, so the stages it
    feeds stay up to date (a setting that moves no byte of the graphs, say, trains nothing again).
    Two files that differ only in their ids keep their full names."""
    return _hash_digests(_digests(out))


def _legacy_hash_digests(digests: list[tuple[str, str]]) -> str:
    """:func:`output_hash` as manifests written before shard ids left it (2026-12-05) recorded it, of
    a folder's :func:`_digests`: every file by its full name."""
    return _hash_json(dict(digests))


def _legacy_output_hash(out: Path) -> str:
    """:func:`_legacy_hash_digests` of the stage folder ``out``."""
    return _legacy_hash_digests(_digests(out))


def output_intact(recorded: str | None, out: Path) -> bool:
    """Whether the stage folder ``out`` holds what its manifest's ``recorded`` output hash says:
    :func:`output_hash`, or the legacy hash of a manifest written before shard ids left it (so an
    older run's stages are not rerun for that alone). Every file is read once."""
    digests = _digests(out)
    return recorded is not None and recorded in (_hash_digests(digests), _legacy_hash_digests(digests))


def _run_into(stage: Stage, out: Path, run_dir: Path, cfg: Config, quiet: bool, upstream: dict,
              hashes: dict[str, str], session: Session, previous: dict | None, t0: float) -> dict:
    """Run ``stage`` into the folder ``out`` and write its manifest there; return the manifest."""
    ctx = StageContext(cfg=cfg, run_dir=run_dir.resolve(), out=out, quiet=quiet, upstream=upstream,
                       stage=stage.name, input_hash=hashes["input_hash"],
                       config_hash=hashes["config_hash"], session=session, store=session.store,
                       previous=previous)
    body = stage.run(ctx)
    extra = {}
    if ctx.shard_info:
        extra["shard_info"] = ctx.shard_info
    if ctx.tasks:
        extra["tasks"] = ctx.tasks
    manifest = {"stage": stage.name, "status": "ran", **body, **extra, **hashes,
                "output_hash": output_hash(out), "elapsed_s": round(time.time() - t0, 3),
                "version": __version__}
    atomic_write_json(out / "manifest.json", manifest)
    return manifest


def run_stage(stage: Stage, cfg: Config, run_dir: str | Path, quiet: bool = False,
              force: bool = False, session: Session | None = None) -> dict:
    """Run (or skip) one stage and return its manifest.

    ``run_dir`` is a path or an fsspec URL (:mod:`pipelines.store`). ``session`` provides the
    scheduler for shard tasks and the run directory's store; without one a session for
    ``cfg.pipeline`` is opened for this stage alone. ``force`` recomputes every shard too.
    """
    if session is None:
        with Session(cfg.pipeline, run_dir, quiet=quiet) as own:
            return run_stage(stage, cfg, run_dir, quiet, force, own)
    store = session.store
    run_dir = store.local
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.yaml")
    upstream = _read_upstream(stage, store)
    store.pull(stage.name)
    hashes = {"input_hash": _input_hash(stage, cfg, upstream), "config_hash": stage.config_hash(cfg),
              "code_fingerprint": stage.code_fingerprint, "code_modules": stage.code_modules}
    if stage.names_run:
        hashes["run_id"] = store.name
    final = run_dir / stage.name
    recover_dir(final)                # a kill in the middle of the last swap: the old folder back
    for stale in [*run_dir.glob(f".{stage.name}.*.tmp"), *run_dir.glob(f".{stage.name}.*.old")]:
        shutil.rmtree(stale, ignore_errors=True)       # left by a killed run of this stage
    mp = manifest_path(run_dir, stage.name)
    old = read_json(mp) if mp.exists() else None
    reason = "forced" if force else _stale(old, hashes, final)
    if reason is None:
        old["status"] = "skipped"
        atomic_write_json(mp, old)
        log.info("%s: up to date, skipped", stage.name)
        _publish(store, stage.name)
        return old
    work = run_dir / WORK_ROOT / stage.name
    if force and work.exists():
        shutil.rmtree(work)
    if force:
        store.remove(f"{WORK_ROOT}/{stage.name}")
    t0 = time.time()
    log.info("%s: running (%s)", stage.name, reason)
    try:
        with atomic_dir(final) as tmp:
            manifest = _run_into(stage, tmp, run_dir, cfg, quiet, upstream, hashes, session,
                                 None if force else old, t0)
    except BaseException:
        _drop_if_empty(work)
        raise
    shutil.rmtree(work, ignore_errors=True)
    _drop_if_empty(work.parent)
    log.info("%s: done in %.1fs", stage.name, manifest["elapsed_s"])
    _publish(store, stage.name)
    store.remove(f"{WORK_ROOT}/{stage.name}")
    return manifest


def stale_reason(stage: Stage, cfg: Config, run_dir: Path) -> str | None:
    """Why ``stage`` would run again in the local run directory ``run_dir`` (:func:`_stale`'s
    reasons), or None when its output is up to date — what :func:`run_stage` decides, without
    running or touching anything."""
    run_dir = Path(run_dir)
    mp = manifest_path(run_dir, stage.name)
    if not mp.is_file():
        return "no earlier output"
    upstream = {}
    for name in stage.upstream:
        up = manifest_path(run_dir, name)
        if not up.is_file():
            return f"stage '{name}' has no output"
        upstream[name] = read_json(up)
    hashes = {"input_hash": _input_hash(stage, cfg, upstream), "config_hash": stage.config_hash(cfg),
              "code_fingerprint": stage.code_fingerprint, "code_modules": stage.code_modules}
    return _stale(read_json(mp), hashes, run_dir / stage.name)


def _read_upstream(stage: Stage, store: RunStore) -> dict[str, dict]:
    """The manifests of the stages ``stage`` reads, pulled from the run directory's store."""
    upstream = {}
    for name in stage.upstream:
        store.pull(name)
        mp = manifest_path(store.local, name)
        if not mp.exists():
            raise UpstreamMissing(f"stage '{stage.name}' needs the output of stage '{name}', but "
                                  f"{store.display(name, 'manifest.json')} does not exist; run "
                                  f"`graphmert {name}` (or `graphmert run`) first")
        upstream[name] = read_json(mp)
    return upstream


def _changed(old: dict | None, new: dict | None) -> str:
    """``" in a, b, c and 2 more"``: the modules whose source changed, when both manifests list them."""
    names = fingerprint.changed_modules(old, new) if old and new else []
    if not names:
        return ""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f" in {', '.join(names[:3])}{more}"


def _stale(old: dict | None, hashes: dict, folder: Path) -> str | None:
    """Why a stage whose last manifest is ``old`` must run again (for the log), or None when it is
    up to date. The code fingerprint is part of the config hash; it is compared first only to name
    the reason."""
    if old is None:
        return "no earlier output"
    if old.get("code_fingerprint") != hashes["code_fingerprint"]:
        return "its code changed" + _changed(old.get("code_modules"), hashes.get("code_modules"))
    if old.get("config_hash") != hashes["config_hash"]:
        return "its config changed"
    if old.get("input_hash") != hashes["input_hash"]:
        return "its inputs changed"
    if "run_id" in hashes and old.get("run_id") != hashes["run_id"]:
        return (f"its output names the run {old.get('run_id')!r}, not this run {hashes['run_id']!r} "
                f"(a copied or renamed run directory)")
    if not output_intact(old.get("output_hash"), folder):
        return "its output folder was changed"
    return None


def _publish(store: RunStore, stage: str) -> None:
    """A run directory at a URL: the stage folder, the config and the log go there (no-op else)."""
    store.push(stage)
    store.push_file("config.yaml")
    store.push_file("logs/graphmert.log")


def _drop_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
