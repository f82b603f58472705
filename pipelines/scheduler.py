"""Where shard tasks run: a Dask ``LocalCluster``, an existing Dask cluster, or the driver process.

One :class:`Session` serves one ``graphmert`` command. Its scheduler is chosen by, first match wins:

1. ``--scheduler`` on the command line;
2. the ``DASK_SCHEDULER_ADDRESS`` environment variable;
3. ``pipeline.scheduler`` in the config (default ``local``).

``local``
    a ``distributed.LocalCluster`` of ``pipeline.workers`` single-threaded worker *processes* (0: one
    per core), started on first use and closed at the end of the command; its dashboard link is
    logged (when bokeh is installed, which serves the dashboard).
``synchronous``
    every task runs in the driver process, one after another, so ``pdb`` and tracebacks work.
``tcp://host:port`` (or ``tls://``, ``ws://``, ``wss://``, ``ucx://``)
    an existing cluster (``dask scheduler`` + ``dask worker``). Reaching it and finding a worker is
    bounded by ``pipeline.connect_timeout`` seconds; every worker must run the same graphmert code
    (:func:`pipelines.fingerprint.package_fingerprint`) and see the run directory (a shared
    filesystem), both checked on connect.

The cluster is opened lazily, the first time a stage has at least two shard tasks to run: a rerun
that skips everything, and a stage with a single pending shard, never start one (the single task runs
in the driver — with a LocalCluster always, as its workers share the driver's machine). Failed tasks are retried ``pipeline.retries`` times (Dask's ``retries`` for a task that
raised; the scheduler's ``allowed-failures`` for a task whose worker died, set on a LocalCluster).

:func:`worker_cache` keeps expensive per-worker objects (a model, a spaCy pipeline) for the life of
the worker process, so a stage loads them once per worker, not once per shard.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import uuid
import warnings
from collections import OrderedDict
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

from graphmert import __version__
from graphmert.config import ConfigError, PipelineConfig
from graphmert.errors import GraphmertError
from pipelines.fingerprint import package_fingerprint
from pipelines.store import RunStore, is_url

__all__ = ["ENV_ADDRESS", "SchedulerError", "Executor", "InlineExecutor", "DaskExecutor", "Session",
           "resolve_scheduler", "worker_cache"]

log = logging.getLogger("graphmert.pipeline")

ENV_ADDRESS = "DASK_SCHEDULER_ADDRESS"
ADDRESS_SCHEMES = ("tcp://", "tls://", "ws://", "wss://", "ucx://")
NAMED = ("local", "synchronous")


class SchedulerError(GraphmertError, RuntimeError):
    """The scheduler cannot be reached or used (no workers, other code, no shared run dir)."""


# --------------------------------------------------------------------------------------------------
# Choosing the scheduler
# --------------------------------------------------------------------------------------------------


def resolve_scheduler(option: str | None, cfg: PipelineConfig) -> tuple[str, str]:
    """``(scheduler, where it came from)``: ``--scheduler``, then ``DASK_SCHEDULER_ADDRESS``, then
    ``pipeline.scheduler``. Raises :class:`ConfigError` naming the source for an unknown value."""
    for value, source in ((option, "--scheduler"), (os.environ.get(ENV_ADDRESS), ENV_ADDRESS),
                          (cfg.scheduler, "pipeline.scheduler")):
        if value:
            value = value.strip()
            if value in NAMED or value.startswith(ADDRESS_SCHEMES):
                return value, source
            raise ConfigError(f"{source}: {value!r} is not a scheduler; use 'local', 'synchronous' or "
                              f"an address like tcp://host:8786")
    return "local", "default"


# --------------------------------------------------------------------------------------------------
# Worker-local cache
# --------------------------------------------------------------------------------------------------

_CACHE: OrderedDict[Any, Any] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHE_ENTRIES = 4


def worker_cache(key: Any, factory: Callable[[], Any]) -> Any:
    """``factory()`` once per process and ``key`` (hashable; e.g. a checkpoint hash); the
    :data:`CACHE_ENTRIES` most recently used values are kept. On a Dask worker this is "once per
    worker"; with the synchronous scheduler, once per driver."""
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    value = factory()
    with _CACHE_LOCK:
        _CACHE[key] = value
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    with _FROZEN_LOCK:                  # inside a shard's frozen_heap: what the worker keeps, frozen too
        if _frozen_blocks:
            gc.freeze()
    return value


_FROZEN_LOCK = threading.Lock()
_frozen_blocks = 0                          # frozen_heap blocks open in this process


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Python's cycle collector leaves alone, inside the block, every object alive when it starts
    (``gc.freeze``; ``gc.unfreeze`` when the outermost such block ends), and what
    :func:`worker_cache` builds inside it: the seed KG, models and tokenizer a worker keeps for every
    shard. Every shard task runs in one (``pipelines.stage``). A full collection scans every
    tracked object, and a shard's own work (rows, tuples, records by the hundred thousand) triggers
    them often: with the BioRED seed KG loaded they took 5.7 s of an 18 s ``build-graphs``
    (``benchmarks/gc_pauses.py``; docs/PERFORMANCE.md, "The cycle collector"). Objects that become
    garbage while frozen are reclaimed by their reference counts as ever; frozen cycles wait for the
    unfreeze, and only objects made since the last freeze are collected meanwhile. Blocks nest and
    may overlap across a worker's threads (a count under a lock). Results do not depend on it."""
    global _frozen_blocks
    with _FROZEN_LOCK:
        gc.freeze()
        _frozen_blocks += 1
    try:
        yield
    finally:
        with _FROZEN_LOCK:
            _frozen_blocks -= 1
            if not _frozen_blocks:
                gc.unfreeze()


# --------------------------------------------------------------------------------------------------
# Executors
# --------------------------------------------------------------------------------------------------

Task = tuple[int, str, tuple]          # (index, readable task name, args of fn after `shared`)


class Executor(Protocol):
    description: str
    workers: int

    def run(self, fn: Callable[..., Any], tasks: Iterable[Task], shared: Any = None
            ) -> Iterator[tuple[int, Any]]:
        """``fn(*args, shared)`` per task; yields ``(index, result)`` in completion order."""
        ...

    def close(self) -> None: ...


class InlineExecutor:
    """Runs each task in the driver process, in order (the ``synchronous`` scheduler)."""

    workers = 1

    def __init__(self, description: str = "synchronous, in the driver") -> None:
        self.description = description

    def run(self, fn, tasks, shared=None):
        for index, _, args in tasks:
            yield index, fn(*args, shared)

    def close(self) -> None:
        pass


class DaskExecutor:
    """Tasks as Dask futures on a ``distributed.Client`` (one future per shard, a bounded number in
    flight, retried ``retries`` times); ``shared`` travels once per worker, as the result of one
    task that every shard task depends on."""

    def __init__(self, client, retries: int, description: str, cluster=None) -> None:
        self.client, self.retries, self.description, self.cluster = client, retries, description, cluster

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def run(self, fn, tasks, shared=None):
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        token = uuid.uuid4().hex[:8]        # keys unique to this map: no sharing with other runs
        shared_f = None
        if shared is not None:
            # a task that returns `shared`, not scattered data: if every worker holding it dies,
            # the scheduler recomputes it from the task instead of failing the map
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*Large object", category=UserWarning)
                warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
                shared_f = self.client.submit(_identity, shared, key=f"shared-{token}", pure=False,
                                              retries=self.retries)
        window = 2 * self.workers + 2
        tasks = iter(tasks)
        ac = as_completed(loop=self.client.loop)
        live: dict[str, tuple[int, Any]] = {}

        def fill() -> None:
            while len(live) < window:
                try:
                    index, name, args = next(tasks)
                except StopIteration:
                    return
                fut = self.client.submit(fn, *args, shared_f, key=f"{name}-{token}",
                                         retries=self.retries, pure=False)
                live[fut.key] = (index, fut)
                ac.add(fut)

        try:
            fill()
            for fut in ac:
                index, _ = live.pop(fut.key)
                try:
                    result = fut.result()
                except KilledWorker as e:
                    raise SchedulerError(
                        f"task {fut.key}: its worker died more than pipeline.retries times "
                        f"({self.retries}); see the worker logs ({e})") from None
                except CancelledError:
                    raise SchedulerError(f"task {fut.key} was cancelled: the Dask scheduler "
                                         f"({self.description}) went away or restarted") from None
                fut.release()
                yield index, result
                fill()
        finally:
            for _, f in live.values():
                f.cancel()
            if shared_f is not None:
                shared_f.release()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _identity(x: Any) -> Any:
    return x


def _probe(run_dir: str, marker: str) -> dict:
    """Runs on each worker: its graphmert version and code fingerprint, and whether it sees the run
    dir (a path, or a URL through fsspec)."""
    from graphmert import __version__ as version
    from pipelines.fingerprint import package_fingerprint

    if is_url(run_dir):
        import fsspec

        fs, root = fsspec.core.url_to_fs(run_dir)
        sees = fs.exists(f"{root}/{marker}")
    else:
        sees = (Path(run_dir) / marker).exists()
    return {"version": version, "code": package_fingerprint(), "sees_run_dir": sees,
            "cwd": os.getcwd()}


def check_workers(client, store: RunStore, what: str) -> int:
    """Every worker of ``client`` runs the driver's graphmert code (same package fingerprint) and sees
    the run directory (a marker written there is found); returns the number of workers, else raises
    :class:`SchedulerError`."""
    marker = f".probe-{uuid.uuid4().hex}"
    where = store.url or str(store.local)
    store.touch(marker)
    try:
        seen = client.run(_probe, where, marker)
    except Exception as e:   # a worker that cannot unpickle the probe cannot import graphmert
        raise SchedulerError(f"the workers of {what} cannot run graphmert code ({e}); install "
                             f"this project (the same checkout) where the workers run") from None
    finally:
        store.unlink(marker)
    code = package_fingerprint()
    for worker, info in sorted(seen.items()):
        if info.get("code") != code:
            raise SchedulerError(f"worker {worker} runs other graphmert code (version "
                                 f"{info['version']}, code fingerprint {info.get('code')}) than the "
                                 f"driver ({__version__}, {code}); shard names include the code "
                                 f"fingerprint, so every worker must run the same code: install the "
                                 f"driver's checkout where the workers run")
        if not info["sees_run_dir"]:
            need = ("a URL every worker can open with fsspec (not memory://, which is per process)"
                    if store.url else "a shared filesystem at the same path")
            raise SchedulerError(f"worker {worker} (cwd {info['cwd']}) cannot see the run directory "
                                 f"{where}; Dask workers need it on {need}")
    return len(seen)


def _dashboard_link(client) -> str | None:
    try:
        import bokeh  # noqa: F401  (distributed serves the dashboard only with bokeh)
    except ImportError:
        return None
    return client.dashboard_link


def open_local(cfg: PipelineConfig, quiet: bool, store: RunStore) -> DaskExecutor:
    """A LocalCluster of ``cfg.workers`` single-threaded processes (0: one per core)."""
    import dask
    from distributed import Client, LocalCluster

    try:
        import bokeh  # noqa: F401
        dashboard = ":8787"            # another port is picked when 8787 is taken
    except ImportError:
        dashboard = ":0"               # the scheduler's HTTP endpoints, on any free port
    env = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    # The nanny's default MALLOC_TRIM_THRESHOLD_ turns off glibc's dynamic mmap threshold: every
    # tensor over 128 KiB is then mapped and unmapped per use, and extraction on a worker ran 1.9x
    # slower than in the driver, all of it system time (docs/PERFORMANCE.md). None unsets it; a
    # nanny started earlier in this process (another cluster) has also put it in os.environ, which
    # workers inherit, so it goes from there too. pipeline.malloc_trim_threshold sets it again, for
    # a smaller worker at that cost (the dynamic threshold lets a worker's heap fragment). glibc
    # reads it when the process starts, so it must be a pre-spawn variable, not one of `env`.
    os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    with dask.config.set({"distributed.scheduler.allowed-failures": cfg.retries,
                          "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_":
                              cfg.malloc_trim_threshold}):
        cluster = LocalCluster(n_workers=cfg.workers or None, threads_per_worker=1, processes=True,
                               dashboard_address=dashboard, env=env,
                               silence_logs=logging.ERROR if quiet else logging.WARNING)
    os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)      # the nanny set it here too, for children
    client = Client(cluster, set_as_default=False)
    client.forward_logging("graphmert", level=logging.WARNING)   # task warnings reach RUN/logs
    n = len(cluster.workers)
    if store.url:                       # a URL run directory: the workers must reach it too
        try:
            check_workers(client, store, "the LocalCluster")
        except BaseException:
            client.close()
            cluster.close()
            raise
    link = _dashboard_link(client)
    log.info("dask: LocalCluster with %d worker process%s; dashboard %s", n, "es" if n != 1 else "",
             link or "not served (install bokeh for it)")
    return DaskExecutor(client, cfg.retries, f"LocalCluster, {n} worker{'s' if n != 1 else ''}",
                        cluster=cluster)


def connect(address: str, cfg: PipelineConfig, store: RunStore, source: str) -> DaskExecutor:
    """A client of the scheduler at ``address``; every failure within ``connect_timeout`` seconds is
    a :class:`SchedulerError` saying what to do."""
    from distributed import Client

    t = cfg.connect_timeout
    try:
        client = Client(address, timeout=t, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise SchedulerError(f"cannot reach the Dask scheduler at {address} (from {source}) within "
                             f"{t:g} s: {e}. Start one (`dask scheduler`, `dask worker ADDRESS`), fix the "
                             f"address, or run with --scheduler local") from None
    try:
        try:
            client.wait_for_workers(1, timeout=t)
        except (TimeoutError, OSError):
            raise SchedulerError(f"the Dask scheduler at {address} has no workers (waited {t:g} s); "
                                 f"start one with `dask worker {address}`") from None
        n = check_workers(client, store, address)
        client.forward_logging("graphmert", level=logging.WARNING)   # task warnings reach RUN/logs
    except BaseException:
        client.close()
        raise
    link = _dashboard_link(client)
    log.info("dask: scheduler %s with %d worker%s%s", address, n, "s" if n != 1 else "",
             f"; dashboard {link}" if link else "")
    return DaskExecutor(client, cfg.retries, f"{address}, {n} worker{'s' if n != 1 else ''}")


class Session:
    """The scheduler of one command (module docstring): resolved now, opened on first real use."""

    def __init__(self, cfg: PipelineConfig, run_dir: str | Path, option: str | None = None,
                 quiet: bool = False) -> None:
        self.cfg, self.quiet = cfg, quiet
        self.store = RunStore(run_dir, cfg.mirror or None)
        self.run_dir = self.store.local
        self.scheduler, self.source = resolve_scheduler(option, cfg)
        self._executor: Executor | None = None
        self._lock = None                       # the run directory's lock file while entered
        self.inline = InlineExecutor("a single task, in the driver")

    @property
    def opened(self) -> bool:
        return self._executor is not None

    def executor(self, tasks: int) -> Executor:
        """The executor for a map with ``tasks`` pending tasks: the driver for a single task while no
        cluster is open — or always with a LocalCluster, whose single-threaded workers share the
        driver's machine (the driver uses all its cores) — else the session's scheduler (opened now
        if needed)."""
        if tasks <= 1 and (self._executor is None or self.scheduler == "local"):
            return self.inline
        if self._executor is None:
            if self.scheduler == "synchronous":
                self._executor = InlineExecutor()
            elif self.scheduler == "local":
                self._executor = open_local(self.cfg, self.quiet, self.store)
            else:
                self._executor = connect(self.scheduler, self.cfg, self.store, self.source)
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    def release_local(self) -> None:
        """Close a LocalCluster before work that runs in the driver on every core (training): its
        idle workers would share those cores, and their heartbeats time out against a scheduler
        starved for half an hour. The next map opens a fresh one; an existing cluster stays."""
        if self.scheduler == "local":
            self.close()

    def __enter__(self) -> "Session":
        """Takes the run directory's lock (:meth:`RunStore.lock`) for the life of the session."""
        self._lock = self.store.lock()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.close()
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None
