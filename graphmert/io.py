"""Atomic file output: write to a temporary name in the same folder, then rename.

A killed process therefore never leaves a partial file under its final name, and a reader sees either
the old file or the new one. Used for every shard, manifest and report the library writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

__all__ = ["atomic_path", "atomic_dir", "atomic_write_text", "atomic_write_json", "file_sha256", "read_json",
           "write_shards"]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it to ``path``, else delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = _new_temporary(path, os.open, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary folder next to ``path`` (``.<name>.<random>.tmp``); on success it replaces
    ``path`` — a reader sees the old folder or the new one, never a mix — and on failure it is
    removed. The old folder is moved aside (``.<name>.<random>.old``) before the swap and deleted
    after; such leftovers of a killed process can be found by those name patterns."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_temporary(path, os.mkdir, 0o777)
    try:
        yield tmp
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / path.name)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _new_temporary(path: Path, create: Callable[..., Any], *args: int) -> Path:
    """Create ``.<name>.<random>.tmp`` next to ``path`` with ``create(tmp, *args)`` (``os.open`` with
    O_EXCL and mode 0o666, or ``os.mkdir`` with 0o777); return it.

    Why not mkstemp/mkdtemp: they create 0600 files and 0700 folders, and a stage's outputs must get
    the usual permissions (0644 / 0755 under umask 022) so other users and workers can read them.
    Fixing that with chmod needs the umask, which POSIX only lets a process read by *setting* it —
    a process-wide change that the other threads of a Dask worker would see mid-flight. Creating
    the entry with the full mode lets the kernel apply the umask itself, as for any ``open``.
    """
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = create(tmp, *args)
        except FileExistsError:
            continue
        if isinstance(fd, int):
            os.close(fd)
        return tmp
    raise FileExistsError(f"{path.parent}: no unused temporary name for {path.name} after 100 tries")


def atomic_write_text(path: str | Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def atomic_write_json(path: str | Path, data: Any) -> Path:
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_shards(items: Iterable[T], folder: str | Path, prefix: str, shard_size: int,
                 write: Callable[[list[T], Path], Any]) -> list[Path]:
    """Write ``folder/{prefix}-00000.parquet``, … with ``shard_size`` items each (``write`` writes
    one shard atomically); always at least one shard. Returns the shard paths in order."""
    folder = Path(folder)
    paths: list[Path] = []
    buf: list[T] = []

    def flush() -> None:
        path = folder / f"{prefix}-{len(paths):05d}.parquet"
        write(buf, path)
        paths.append(path)
        buf.clear()

    for item in items:
        buf.append(item)
        if len(buf) == shard_size:
            flush()
    if buf or not paths:
        flush()
    return paths
