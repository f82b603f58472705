"""Atomic file output: write to a temporary name in the same folder, then rename.

A killed process therefore never leaves a partial file under its final name, and a reader sees either
the old file or the new one. Used for every shard, manifest and report the library writes.

Also the two file conventions the library's formats share: Parquet shards of one fixed schema
(:func:`write_parquet` / :func:`read_parquet`: documents, chunks, graphs, triples) and JSON files whose
header names their format and version (:func:`read_versioned_json` / :func:`check_format`:
checkpoint configs, trainer states, entity linkers). And the guards against what a killed or
interrupted writer leaves: :func:`recover_dir` (a folder swap cut in the middle) and
:func:`file_sizes` / :func:`check_file_sizes` (a folder whose files must all be whole, such as the
SPARQL store or the recognizer, checked on reading).
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
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")

__all__ = ["atomic_path", "atomic_dir", "recover_dir", "atomic_write_text", "atomic_write_json",
           "file_sha256", "input_hashes", "read_json", "write_shards", "as_paths", "write_parquet", "write_parquet_stream", "read_parquet",
           "read_versioned_json", "check_format", "file_sizes", "check_file_sizes"]


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


def recover_dir(path: str | Path) -> bool:
    """Undo the one unfinished state :func:`atomic_dir` can leave: a process killed between moving
    the old folder aside and moving the new one in leaves no ``path``, the old folder complete at
    ``.<name>.<random>.old/<name>`` and the new one (perhaps incomplete) at ``.<name>.<random>.tmp``.
    The old folder is moved back, so the reader sees what it saw before the interrupted swap.
    Returns whether a folder was restored; call it before reading ``path`` or clearing leftovers."""
    path = Path(path)
    if path.exists():
        return False
    olds = sorted((p / path.name for p in path.parent.glob(f".{path.name}.*.old") if (p / path.name).is_dir()),
                  key=lambda p: p.stat().st_mtime)
    if not olds:
        return False
    os.replace(olds[-1], path)
    shutil.rmtree(olds[-1].parent, ignore_errors=True)
    return True


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


def input_hashes(paths: Iterable[str | Path]) -> dict[str, str]:
    """Path → SHA-256 of each input file, for cache keys. A folder (the plain-text reader's input:
    one document per file) contributes every file directly inside it, sorted by name, so adding,
    removing or editing one of its documents changes the key."""
    out: dict[str, str] = {}
    for raw in paths:
        p = Path(raw)
        for f in sorted(x for x in p.iterdir() if x.is_file()) if p.is_dir() else [p]:
            out[str(f)] = file_sha256(f)
    return out


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


# --------------------------------------------------------------------------------------------------
# Parquet shards of one schema
# --------------------------------------------------------------------------------------------------


def as_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """One path or several, as a list (the readers take either)."""
    if isinstance(paths, (str, Path)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def write_parquet(rows: list[dict], schema: "pa.Schema", path: str | Path,
                  compression: str = "zstd") -> int:
    """Write ``rows`` (dicts keyed by the schema's column names) as one Parquet file, atomically.

    The table is built against ``schema`` so every shard of a format has the same column types, even
    an empty one. Returns the number of rows written.
    """
    import pyarrow as pa                    # here, not at the top: most users of this module need none
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression=compression)
    return table.num_rows


def write_parquet_stream(rows: Iterable[dict], schema: "pa.Schema", path: str | Path,
                         compression: str = "zstd", batch_rows: int = 4096) -> int:
    """:func:`write_parquet` for a stream: ``rows`` are converted and written ``batch_rows`` at a
    time (one row group each), so they never have to fit in memory at once; atomic the same way. A
    stream of at most ``batch_rows`` rows gives the same file as :func:`write_parquet`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression=compression) as writer:
        batch: list[dict] = []
        for row in rows:
            batch.append(row)
            if len(batch) == batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                n, batch = n + len(batch), []
        if batch or not n:                          # an empty stream still writes the schema
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


def cut_parquet(sources: Iterable[str | Path], schema: "pa.Schema", rows_per_file: int | None,
                target: Callable[[int], Path], compression: str = "zstd", batch_rows: int = 4096) -> list[Path]:
    """The rows of the Parquet files ``sources``, in order, cut into files of ``rows_per_file`` rows
    (None: one file) at ``target(0)``, ``target(1)``, …: as :func:`write_parquet_stream` would write
    the same rows from Python (row groups of ``batch_rows`` from each file's start, one empty file
    when there are none), but moved as Arrow batches, never decoded to Python objects. Each file is
    written atomically; returns their paths. Each row group is written as soon as its rows are read,
    so about two row groups are held, whatever the files' size."""
    import pyarrow.parquet as pq

    rows = _ArrowRows(sources, schema, batch_rows)
    out: list[Path] = []
    while not out or not rows.exhausted():
        out.append(target(len(out)))
        with atomic_path(out[-1]) as tmp, pq.ParquetWriter(tmp, schema, compression=compression) as writer:
            written = 0
            while True:
                group = rows.take(batch_rows if rows_per_file is None else min(batch_rows, rows_per_file - written))
                writer.write_table(group)
                written += group.num_rows
                if written == rows_per_file or rows.exhausted():
                    break
    return out


class _ArrowRows:
    """The rows of Parquet files as one Arrow stream, taken ``n`` at a time (:func:`cut_parquet`)."""

    def __init__(self, sources: Iterable[str | Path], schema: "pa.Schema", batch_rows: int) -> None:
        import pyarrow.parquet as pq

        self.schema = schema
        self.pending = schema.empty_table()             # rows read, not yet taken
        self.batches = (b.cast(schema) for p in as_paths(list(sources))
                        for b in pq.ParquetFile(p).iter_batches(batch_size=batch_rows, columns=schema.names))

    def _read(self, n: int) -> None:
        """Read until ``n`` rows are pending or the files end."""
        import pyarrow as pa

        more = []
        held = self.pending.num_rows
        for batch in self.batches if held < n else ():
            more.append(batch)
            held += batch.num_rows
            if held >= n:
                break
        if more:
            self.pending = pa.concat_tables([self.pending, pa.Table.from_batches(more, schema=self.schema)])

    def take(self, n: int) -> "pa.Table":
        """The next ``n`` rows (fewer only at the end), as one contiguous table."""
        self._read(n)
        taken, self.pending = self.pending.slice(0, n), self.pending.slice(n)
        return taken.combine_chunks()

    def exhausted(self) -> bool:
        self._read(1)
        return self.pending.num_rows == 0


def read_parquet(paths: str | Path | Iterable[str | Path], schema: "pa.Schema", *, what: str,
                 optional: Iterable[str] = (), batch_size: int = 512) -> Iterator[dict]:
    """The rows of one or more Parquet files, in order, as dicts of the schema's columns.

    Streams ``batch_size`` rows at a time, so a shard never has to fit in memory as Python objects.
    A file lacking a column of ``schema`` is rejected with a ``ValueError`` naming the file and the
    columns (``"<file>: not a <what> shard; missing columns [...]"``), unless each missing column is
    in ``optional`` (columns added after files were written): those read as ``None``. Columns the
    file has beyond the schema are not read.
    """
    import pyarrow.parquet as pq

    optional = set(optional)
    for p in as_paths(paths):
        f = pq.ParquetFile(p)
        present = set(f.schema_arrow.names)
        missing = [n for n in schema.names if n not in present]
        if set(missing) - optional:
            raise ValueError(f"{p}: not a {what} shard; missing columns {missing}")
        columns = [n for n in schema.names if n in present]
        absent = dict.fromkeys(missing)
        for batch in f.iter_batches(batch_size=batch_size, columns=columns):
            for row in batch.to_pylist():
                row.update(absent)
                yield row


# --------------------------------------------------------------------------------------------------
# JSON files with a format header
# --------------------------------------------------------------------------------------------------


def read_versioned_json(path: str | Path, *, format: str, version: int, what: str,
                        error: type[Exception]) -> dict:
    """Read a JSON file whose ``format``/``format_version`` header must be ``format``/``version``.

    Invalid JSON and a wrong header raise ``error`` naming the file (:func:`check_format`); a missing
    file raises ``FileNotFoundError`` for the caller to word.
    """
    try:
        data = read_json(path)
    except json.JSONDecodeError as e:
        raise error(f"{path}: invalid JSON: {e}") from None
    return check_format(data, path, format=format, version=version, what=what, error=error)


def check_format(data: Any, path: str | Path, *, format: str, version: int, what: str,
                 error: type[Exception], version_key: str = "format_version", advice: str = "") -> dict:
    """Return ``data`` if it is a mapping whose header says ``format`` at ``version``; else raise
    ``error`` naming the file: ``"<file>: not <what> (format 'F' expected)"`` or ``"<file>:
    <version_key> V is not supported (this library reads N)<advice>"``.

    A file of another format, or of a version this code cannot read, is refused before any of its
    content is interpreted, so the message says what the file is rather than which key is missing.
    """
    if not isinstance(data, dict) or data.get("format") != format:
        raise error(f"{path}: not {what} (format {format!r} expected)")
    if data.get(version_key) != version:
        raise error(f"{path}: {version_key} {data.get(version_key)!r} is not supported "
                    f"(this library reads {version}){advice}")
    return data


# --------------------------------------------------------------------------------------------------
# Folders whose files must all be whole: their sizes, recorded when written
# --------------------------------------------------------------------------------------------------


def file_sizes(folder: str | Path, skip: Callable[[str], bool] = lambda name: False) -> dict[str, int]:
    """``{path relative to folder: size in bytes}`` of every file under ``folder`` (sorted), less
    those whose relative path ``skip`` accepts: what :func:`check_file_sizes` later compares."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*"))
            if p.is_file() and not skip(p.relative_to(folder).as_posix())}


def check_file_sizes(folder: str | Path, recorded: dict[str, int], *, what: str,
                     error: type[Exception], advice: str = "") -> None:
    """Raise ``error`` naming the first file of ``recorded`` (:func:`file_sizes` when ``folder`` was
    written) that is missing under ``folder`` or whose size changed — a truncated or half-copied
    file — before a library reads it and fails in its own words (or, worse, silently reads less):
    ``"<file>: truncated or changed: N bytes, M when <what> was written<advice>"``."""
    folder = Path(folder)
    for name, size in recorded.items():
        path = folder / name
        try:
            now = path.stat().st_size
        except FileNotFoundError:
            raise error(f"{path}: missing from {what}{advice}") from None
        if now != size:
            raise error(f"{path}: truncated or changed: {now} bytes, {size} when {what} was "
                        f"written{advice}")
