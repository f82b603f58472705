"""Where a run directory lives: a local path, or any fsspec URL (``s3://…``, ``gs://…``, ``file://…``).

The library reads and writes local files (Parquet, safetensors, atomic renames), so a run directory
given as a URL is worked on through a local *working copy* on the driver (``pipeline.mirror``, by
default ``~/.cache/graphmert/runs/<hash of the URL>``), and the URL holds the truth:

* before a stage runs, the driver pulls the stage folders it reads (and its own previous output)
  from the URL whenever the URL's ``manifest.json`` names other outputs than the working copy's;
* after a stage completes — or is found up to date — the driver pushes its folder to the URL: the
  old manifest is removed first, every file is uploaded under a temporary name and moved, and the
  manifest goes last, so a half-pushed folder never looks finished; ``config.yaml`` and the log follow;
* shard tasks (:func:`pipelines.stage._run_shard`) upload each finished shard to
  ``URL/work/<stage>/`` (temporary name, then moved, then its sidecar), so a rerun — on any machine —
  finds the finished shards there; a worker on another host fetches the run-directory files its task
  reads from the URL into a local cache (:meth:`ShardStore.localize`).

A local run directory is used in place: :class:`RunStore` is then a no-op. fsspec finds credentials
the usual way (environment, ``~/.config/fsspec``, the cloud SDK's files); the protocol's package
(``s3fs``, ``gcsfs``, ``adlfs``…) must be installed where the driver and the workers run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import socket
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmert.config import ConfigError
from graphmert.errors import GraphmertError
from graphmert.io import atomic_dir, atomic_path

__all__ = ["RunStore", "ShardStore", "RunDirBusy", "RunDirLock", "is_url", "default_mirror"]

log = logging.getLogger("graphmert.pipeline")

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
MANIFEST = "manifest.json"
LOCK_FILE = ".graphmert.lock"


class RunDirBusy(GraphmertError, RuntimeError):
    """Another graphmert command holds the run directory's lock."""


class RunDirLock:
    """The run directory's lock while one command holds it (:meth:`RunStore.lock`)."""

    def __init__(self, lock, owner: Path) -> None:
        self._lock, self._owner = lock, owner

    def close(self) -> None:
        """Release the lock (idempotent); the holder file goes first, while the lock is still ours."""
        if self._lock.is_locked:
            self._owner.unlink(missing_ok=True)
            self._lock.release()


def is_url(run_dir: str | Path) -> bool:
    return bool(_URL.match(str(run_dir)))


def default_mirror(url: str) -> Path:
    """``$GRAPHMERT_CACHE`` (else ``~/.cache/graphmert``) ``/runs/<16 hex of the URL>``."""
    base = Path(os.environ.get("GRAPHMERT_CACHE") or Path.home() / ".cache" / "graphmert")
    return base / "runs" / hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]


def _filesystem(url: str):
    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(url.rstrip("/"))
    except (ImportError, ValueError) as e:
        raise ConfigError(f"--run-dir {url}: fsspec cannot open it ({e}); install the package for this "
                         f"protocol (s3fs, gcsfs, adlfs…) or give a local path") from None
    return fs, root


def _upload(fs, local: Path, remote: str) -> None:
    """``local`` → ``remote`` under a temporary name, then moved: never a partial file at ``remote``."""
    tmp = f"{remote.rsplit('/', 1)[0]}/.{remote.rsplit('/', 1)[-1]}.{uuid.uuid4().hex[:8]}.tmp"
    fs.put_file(str(local), tmp)
    try:
        fs.mv(tmp, remote)
    except BaseException:
        try:
            fs.rm(tmp)
        except FileNotFoundError:
            pass
        raise


def _download(fs, remote: str, local: Path) -> None:
    """``remote`` → ``local`` atomically (temporary file, then renamed)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(local) as tmp:
        fs.get_file(remote, str(tmp))


@dataclass(frozen=True)
class ShardStore:
    """What a shard task needs to use a run directory at a URL (small, picklable)."""

    url: str
    mirror: str            # the driver's working copy: the paths tasks are given start with it
    host: str              # the driver's host name: a worker there reads the working copy directly

    @property
    def same_host(self) -> bool:
        return socket.gethostname() == self.host

    def remote(self, local: str | Path) -> str:
        """The URL path of a file in the working copy."""
        rel = Path(local).resolve().relative_to(Path(self.mirror))
        return f"{_filesystem(self.url)[1]}/{rel.as_posix()}"

    def upload(self, src: Path, dest: str | Path) -> None:
        """Upload the local file ``src`` to the URL path of the working-copy path ``dest``."""
        fs, _ = _filesystem(self.url)
        remote = self.remote(dest)
        fs.makedirs(remote.rsplit("/", 1)[0], exist_ok=True)
        _upload(fs, src, remote)

    def localize(self, obj: Any) -> Any:
        """``obj`` with every working-copy path (a ``str`` under :attr:`mirror`, inside tuples, lists,
        dicts and the ``str`` fields of a dataclass) replaced by a local copy fetched from the URL —
        unless this worker runs on the driver's host, where the working copy is read in place."""
        if self.same_host:
            return obj
        return self._walk(obj, top=True)

    def _walk(self, obj: Any, top: bool = False) -> Any:
        if isinstance(obj, str):
            return self._fetch(obj) if obj.startswith(self.mirror + os.sep) else obj
        if isinstance(obj, tuple):
            return tuple(self._walk(x) for x in obj)
        if isinstance(obj, list):
            return [self._walk(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self._walk(v) for k, v in obj.items()}
        if top and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes = {f.name: self._fetch(v) for f in dataclasses.fields(obj)
                       if isinstance(v := getattr(obj, f.name), str) and v.startswith(self.mirror + os.sep)}
            return dataclasses.replace(obj, **changes) if changes else obj
        return obj

    def _fetch(self, path: str) -> str:
        """A local copy of the working-copy file or folder ``path``, cached per worker by the URL
        object's fsspec ``ukey`` (content version)."""
        fs, _ = _filesystem(self.url)
        remote = self.remote(path)
        if fs.isdir(remote):
            files = sorted(fs.find(remote))
            key = hashlib.sha256(json.dumps([[f, fs.ukey(f)] for f in files]).encode()).hexdigest()[:20]
        else:
            files, key = [remote], hashlib.sha256(f"{remote}\0{fs.ukey(remote)}".encode()).hexdigest()[:20]
        dest = Path(tempfile.gettempdir()) / "graphmert-fetch" / key / Path(path).name
        if dest.exists():
            return str(dest)
        if len(files) == 1 and files[0] == remote:
            _download(fs, remote, dest)
        else:
            with atomic_dir(dest) as tmp:
                for f in files:
                    _download(fs, f, tmp / f[len(remote) + 1:])
        return str(dest)


class RunStore:
    """The run directory of one command: :attr:`local` is where stages read and write; for a URL,
    :meth:`pull` / :meth:`push` keep it and the URL in step (module docstring)."""

    def __init__(self, run_dir: str | Path, mirror: str | Path | None = None) -> None:
        self.url: str | None = str(run_dir).rstrip("/") if is_url(run_dir) else None
        if self.url is None:
            self.local = Path(run_dir).resolve()
            self.fs = self.root = None
            return
        self.fs, self.root = _filesystem(self.url)
        self.local = Path(mirror).expanduser().resolve() if mirror else default_mirror(self.url)
        self.local.mkdir(parents=True, exist_ok=True)
        log_file = self.local / "logs" / "graphmert.log"
        if not log_file.exists() and self.fs.exists(self._path("logs", "graphmert.log")):
            _download(self.fs, self._path("logs", "graphmert.log"), log_file)   # keep its history

    @property
    def remote(self) -> bool:
        return self.url is not None

    @property
    def name(self) -> str:
        """The run's name, its ``run_id`` in triples and exported IRIs: the last part of the URL, or of
        the local path (never the working copy's hashed folder)."""
        return self.url.rsplit("/", 1)[-1] if self.url else self.local.name

    def display(self, *parts: str) -> str:
        """How to name a run-directory path to the user: the URL when there is one."""
        if self.url is None:
            return str(self.local.joinpath(*parts))
        return "/".join([self.url, *parts])

    def shard_store(self) -> ShardStore | None:
        return ShardStore(self.url, str(self.local), socket.gethostname()) if self.url else None

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _manifest(self, stage: str) -> dict | None:
        raw = self._manifest_bytes(stage)
        return None if raw is None else json.loads(raw)

    def _manifest_bytes(self, stage: str) -> bytes | None:
        try:
            return self.fs.cat_file(self._path(stage, MANIFEST))
        except FileNotFoundError:
            return None

    def lock(self) -> "RunDirLock":
        """Hold ``RUN/.graphmert.lock`` (of the working copy) for one command: a second command on
        the same run directory stops with :class:`RunDirBusy`, naming the holder, instead of racing
        the first. A ``filelock.FileLock`` (``flock`` on POSIX, ``msvcrt`` on Windows): released
        when :meth:`RunDirLock.close` is called, or by the OS when the process dies, so a killed
        command never leaves the run directory locked. The holder is written to a separate file,
        ``RUN/.graphmert.lock.owner``, which contenders only read."""
        from filelock import FileLock, Timeout

        self.local.mkdir(parents=True, exist_ok=True)
        path = self.local / LOCK_FILE
        lock = FileLock(path, timeout=0, thread_local=False)
        owner = path.with_name(path.name + ".owner")
        try:
            lock.acquire()
        except Timeout:
            try:
                who = owner.read_text(encoding="utf-8").strip()
            except OSError:
                who = ""
            raise RunDirBusy(f"{self.display()} is in use by another graphmert command "
                             f"({who or 'unknown process'}); wait for it to finish, or use another "
                             f"--run-dir") from None
        try:
            with atomic_path(owner) as tmp:
                tmp.write_text(f"pid {os.getpid()} on {socket.gethostname()}\n", encoding="utf-8")
        except BaseException:
            lock.release()
            raise
        return RunDirLock(lock, owner)

    def touch(self, rel: str) -> None:
        """Create the empty file ``RUN/<rel>`` (at the URL when there is one)."""
        if self.url is None:
            self.local.mkdir(parents=True, exist_ok=True)
            (self.local / rel).touch()
        else:
            self.fs.makedirs(self.root, exist_ok=True)
            self.fs.pipe_file(self._path(rel), b"")

    def unlink(self, rel: str) -> None:
        if self.url is None:
            (self.local / rel).unlink(missing_ok=True)
        elif self.fs.exists(self._path(rel)):
            self.fs.rm(self._path(rel))

    # ------------------------------------------------------------------ stage folders
    def pull(self, stage: str) -> None:
        """Make the working copy of ``RUN/<stage>`` what the URL holds, when the URL has a complete
        stage folder whose outputs differ from the working copy's."""
        if self.url is None:
            return
        raw = self._manifest_bytes(stage)
        if raw is None:
            return
        remote = json.loads(raw)
        mp = self.local / stage / MANIFEST
        mine = json.loads(mp.read_text(encoding="utf-8")) if mp.exists() else None
        if mine is not None and mine.get("output_hash") == remote.get("output_hash") \
                and mine.get("input_hash") == remote.get("input_hash"):
            return
        base = self._path(stage)
        with atomic_dir(self.local / stage) as tmp:
            for f in sorted(self.fs.find(base)):
                name = f[len(base) + 1:]
                if name != MANIFEST and not Path(name).name.startswith("."):
                    _download(self.fs, f, tmp / name)
            (tmp / MANIFEST).write_bytes(raw)
        log.info("%s: pulled from %s", stage, self.display(stage))

    def push(self, stage: str) -> None:
        """Upload the working copy's ``RUN/<stage>`` to the URL (manifest last). When the URL already
        holds the same outputs, only the manifest is replaced."""
        if self.url is None:
            return
        folder = self.local / stage
        mine = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        remote = self._manifest(stage)
        base = self._path(stage)
        same = remote is not None and remote.get("output_hash") == mine.get("output_hash") \
            and remote.get("input_hash") == mine.get("input_hash")
        if not same:
            if remote is not None:
                self.fs.rm(self._path(stage, MANIFEST))
            files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
            keep = {p.relative_to(folder).as_posix() for p in files}
            if self.fs.exists(base):
                for f in self.fs.find(base):
                    if f[len(base) + 1:] not in keep:
                        self.fs.rm(f)
            for p in files:
                dest = f"{base}/{p.relative_to(folder).as_posix()}"
                self.fs.makedirs(dest.rsplit("/", 1)[0], exist_ok=True)
                _upload(self.fs, p, dest)
        self.fs.makedirs(base, exist_ok=True)
        _upload(self.fs, folder / MANIFEST, f"{base}/{MANIFEST}")
        if not same:
            log.info("%s: pushed to %s", stage, self.display(stage))

    def push_file(self, rel: str) -> None:
        """Upload one file of the working copy (``config.yaml``, ``logs/graphmert.log``) if it exists."""
        if self.url is None or not (self.local / rel).is_file():
            return
        dest = self._path(rel)
        self.fs.makedirs(dest.rsplit("/", 1)[0], exist_ok=True)
        _upload(self.fs, self.local / rel, dest)

    # ------------------------------------------------------------------ shard work folders
    def fetch_finished(self, work_rel: str, file: str, local: Path) -> dict | None:
        """A shard that a task finished at ``URL/<work_rel>/<file>`` (its sidecar present), copied into
        the working copy at ``local`` with its sidecar; returns the sidecar record, else None."""
        if self.url is None:
            return None
        side = self._path(work_rel, file + ".json")
        try:
            rec = json.loads(self.fs.cat_file(side))
        except (FileNotFoundError, ValueError):
            return None
        try:
            _download(self.fs, self._path(work_rel, file), local)
        except FileNotFoundError:
            return None
        with atomic_path(local.with_name(file + ".json")) as tmp:
            tmp.write_text(json.dumps(rec), encoding="utf-8")
        return rec

    def names(self, rel: str) -> set[str]:
        """File names in the folder ``URL/<rel>`` (empty when it does not exist, or no URL)."""
        if self.url is None:
            return set()
        try:
            return {p.rsplit("/", 1)[-1] for p in self.fs.ls(self._path(rel), detail=False)}
        except FileNotFoundError:
            return set()

    def remove(self, rel: str) -> None:
        """Remove ``URL/<rel>`` (a work folder of a finished stage) if it exists, and its parent
        folder when that is left empty."""
        if self.url is None:
            return
        if self.fs.exists(self._path(rel)):
            self.fs.rm(self._path(rel), recursive=True)
        parent = self._path(*rel.split("/")[:-1])
        try:
            if parent != self.root and not self.fs.ls(parent):
                self.fs.rmdir(parent)
        except (FileNotFoundError, OSError):
            pass

