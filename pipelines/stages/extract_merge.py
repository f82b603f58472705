"""The extract stage's merge: the parts' sorted triples → one merged triple per key, as the KG's files.

Every part shard holds its triples sorted by key (:func:`~graphmert.extract.sorted_merge.sort_run`).
The merge is :func:`~graphmert.extract.triples.merge_triples` over all of them, and it runs one of two
ways, with the same output:

* **In the driver** (one key range): a k-way stream over the parts
  (:func:`~graphmert.extract.sorted_merge.merge_runs`), one key's group in memory at a time.
* **As a sample sort over key ranges** (``pipeline.merge_partitions``), so that no serial pass decodes
  every triple:

  1. *Ranges.* Every n-th key of up to :data:`SAMPLE_PARTS` parts spread evenly over the run (each
     part is a sample of the corpus's documents), about :data:`SAMPLE_KEYS` in all, read as Arrow
     columns, give the split points
     (:func:`~graphmert.extract.sorted_merge.split_points`).
  2. *Split.* One task per part (map ``split-<system>``) writes its triples with their range index
     (:func:`~graphmert.extract.sorted_merge.key_range`), one Parquet row group per range, so a
     reader of one range skips the others by their statistics.
  3. *Merge.* One task per range (map ``merge-<system>``) merges that range's rows of every split
     file (:func:`~graphmert.extract.sorted_merge.merge_runs`), names this run, writes one sorted
     file and returns its counts. For the KG each row also keeps the triple's ``triples.jsonl`` line,
     made from the same dict as the row, so the triples are decoded into Python once after the split.
  4. *Write.* The driver cuts the ranges' files, in range order, into the KG's shards as Arrow
     batches (:func:`graphmert.io.cut_parquet`: the same rows and row groups as the driver's writer,
     without the line column), and one task per range (map ``jsonl-<system>``) writes that range's
     line column as ``triples.jsonl`` lines, which the driver joins byte for byte.

  Each key's triples fall in one range and the ranges follow key order, so the files are the ones
  the driver merge writes (``tests/test_pipeline_pairs.py``, ``benchmarks/merge.py``); only the time
  and the memory differ.
  Every task is a :meth:`~pipelines.stage.StageContext.map_shards` shard, so a killed merge resumes
  with the ranges it finished.

Written here rather than with a dataframe engine's sort or group-by: those would lose the evidence
order that the merged record's first names and tail source depend on (:mod:`graphmert.extract.sorted_merge`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphmert.config.pipeline import MERGE_RANGE_TRIPLES
from graphmert.extract.sorted_merge import BATCH, Key, key_range, merge_runs, split_points
from graphmert.extract.triples import (SCHEMA, Triple, entity_key, json_line, read_system,
                                       with_run, write_triples)
from graphmert.io import atomic_path, cut_parquet, write_parquet_stream
from pipelines.stage import Shard, StageContext

__all__ = ["KGTally", "merge_ranges", "merge_kg", "merge_file", "write_kg", "merged", "SAMPLE_PARTS"]

#: parts whose keys choose the split points
SAMPLE_PARTS = 64
#: keys read from them, about
SAMPLE_KEYS = 16384
#: the triple fields a key is made of (graphmert.extract.triples.triple_key)
KEY_FIELDS = ("head_id", "head_name", "relation", "tail_id", "tail_name")
#: triples files are Snappy-compressed (graphmert.extract.triples.write_triples)
COMPRESSION = "snappy"


class KGTally:
    """Counts of the merged triples as they stream to the files: total, per relation, per tail source."""

    def __init__(self) -> None:
        self.triples = 0
        self.relations: Counter = Counter()
        self.tail_sources: Counter = Counter()

    def count(self, triples: Iterable[Triple]) -> Iterator[Triple]:
        for t in triples:
            self.triples += 1
            self.relations[t.relation] += 1
            self.tail_sources[t.tail_source] += 1
            yield t

    def record(self) -> dict:
        return {"triples": self.triples, "relations": dict(self.relations),
                "tail_sources": dict(self.tail_sources)}

    def add(self, record: dict) -> None:
        """Add the counts of another tally's :meth:`record` (a range merged elsewhere)."""
        self.triples += record["triples"]
        self.relations.update(record["relations"])
        self.tail_sources.update(record["tail_sources"])


def merge_ranges(ctx: StageContext, per_chunk_triples: int) -> int:
    """How many key ranges the merge is cut into: ``pipeline.merge_partitions``, or when that is 0
    one per :data:`~graphmert.config.pipeline.MERGE_RANGE_TRIPLES` per-chunk triples (so 1, the
    driver, below that)."""
    asked = ctx.cfg.pipeline.merge_partitions
    return asked if asked else max(1, math.ceil(per_chunk_triples / MERGE_RANGE_TRIPLES))


def merge_kg(ctx: StageContext, done: list[Shard], system: str, ranges: int) -> tuple[KGTally, list[str]]:
    """The merged triples of ``system`` in the part shards ``done`` as the KG's files in ``ctx.out``
    (:func:`write_kg`'s shards and ``triples.jsonl``), over ``ranges`` key ranges (module docstring);
    returns their counts and the shard names."""
    if ranges == 1:
        tally = KGTally()
        return tally, write_kg(tally.count(merged(ctx, done, system)), ctx.out, ctx.cfg.extract.shard_size)
    files, tally = _merge_by_range(ctx, done, system, ranges, lines=True)
    paths = cut_parquet([s.path for s in files], SCHEMA, ctx.cfg.extract.shard_size,
                        lambda i: ctx.out / shard_name(i), compression=COMPRESSION)
    lines = ctx.map_shards(_jsonl_task, [str(s.path) for s in files], name=f"jsonl-{system}",
                           key=lambda i, _: [files[i].id], suffix=".jsonl")
    with atomic_path(ctx.out / "triples.jsonl") as tmp, open(tmp, "wb") as out:
        for piece in lines:
            with open(piece.path, "rb") as f:
                shutil.copyfileobj(f, out)
    return tally, [p.name for p in paths]


def merge_file(ctx: StageContext, done: list[Shard], system: str, ranges: int, path: Path) -> int:
    """The merged triples of ``system`` in ``done`` as one triples file at ``path`` (a control's),
    over ``ranges`` key ranges; returns their number."""
    if ranges == 1:
        return write_triples(merged(ctx, done, system), path)
    files, tally = _merge_by_range(ctx, done, system, ranges, lines=False)
    cut_parquet([s.path for s in files], SCHEMA, None, lambda _: path, compression=COMPRESSION)
    return tally.triples


def shard_name(i: int) -> str:
    return f"triples-{i:05d}.parquet"


def write_kg(triples: Iterable[Triple], folder: Path, shard_size: int) -> list[str]:
    """The KG's files in an extract folder from a stream of merged triples: ``triples-NNNNN.parquet``
    shards of ``shard_size`` triples (one, empty, when there are none) and ``triples.jsonl``, written
    in one pass; returns the shard names. The same files as :func:`write_triples` per shard and
    :func:`write_triples_jsonl`.

    Each triple becomes its dict once, written as its JSON line at once and held only until its row
    group is written (:func:`write_parquet_stream`'s rows), so memory is one row group of triples,
    not a shard: a merged triple carries all its evidence, and a corpus that states a fact often
    makes each triple large (docs/PERFORMANCE.md, "Corpus scale")."""
    stream = iter(triples)
    shards: list[str] = []
    with atomic_path(folder / "triples.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as lines:
        def rows(shard: Iterable[Triple]) -> Iterator[dict]:
            for t in shard:
                d = t.to_dict()
                lines.write(json_line(d))
                yield d

        first = next(stream, None)
        while first is not None or not shards:
            shard = (itertools.chain([first], itertools.islice(stream, shard_size - 1))
                     if first is not None else ())
            shards.append(shard_name(len(shards)))
            write_parquet_stream(rows(shard), SCHEMA, folder / shards[-1], compression=COMPRESSION)
            first = next(stream, None)
    return shards


def merged(ctx: StageContext, done: list[Shard], system: str) -> Iterator[Triple]:
    """The merged triples of ``system`` in the part shards ``done``, each naming this run (a part a
    copied run finished names its old run), as one stream in the driver
    (:func:`~graphmert.extract.sorted_merge.merge_runs`, its passes in a scratch folder under the
    stage's work folder)."""
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="merge-", dir=ctx.work_dir) as scratch:
        runs = [lambda p=s.path: read_system(p, system, batch_size=BATCH) for s in done]
        yield from with_run(merge_runs(runs, Path(scratch)), ctx.run_id)


# --------------------------------------------------------------------------------------------------
# The sample sort's steps
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Split:
    """What every split task is given: the system to read and the ranges' split points."""

    system: str
    points: list[Key]


@dataclass(frozen=True)
class _Merge:
    """What every range's merge task is given: the split files, the run the triples name, and
    whether to keep each triple's JSON line (the KG's ``triples.jsonl``; a control has none)."""

    paths: list[str]
    run_id: str
    lines: bool


def _merge_by_range(ctx: StageContext, done: list[Shard], system: str, ranges: int, lines: bool
                    ) -> tuple[list[Shard], KGTally]:
    """Steps 1–3 of the module docstring: the merged, sorted file of each key range (in range order,
    with each triple's JSON line when ``lines``) and their counts summed."""
    points = split_points(_sample_keys(done, system), ranges)
    digest = hashlib.sha256(json.dumps([system, points]).encode()).hexdigest()
    split = ctx.map_shards(_split_task, [str(s.path) for s in done], name=f"split-{system}",
                           shared=_Split(system, points), key=lambda i, _: [done[i].id, digest])
    paths = [str(s.path) for s in split]
    files = ctx.map_shards(_merge_task, range(len(points) + 1), name=f"merge-{system}",
                           shared=_Merge(paths, ctx.run_id, lines),
                           key=lambda i, _: [i, ctx.run_id, lines, [s.id for s in split]])
    tally = KGTally()
    for f in files:
        tally.add(f.counts)
    return files, tally


def _sample_keys(done: list[Shard], system: str) -> list[Key]:
    """About :data:`SAMPLE_KEYS` keys of ``system``, every n-th row of up to :data:`SAMPLE_PARTS`
    parts spread evenly over ``done`` (each sorted, so these are its quantiles), read as the key
    columns alone."""
    n, m = len(done), min(len(done), SAMPLE_PARTS)
    picks = sorted({i * (n - 1) // max(m - 1, 1) for i in range(m)})
    tables = [_key_columns(done[i].path, system) for i in picks]
    stride = max(1, sum(t.num_rows for t in tables) // SAMPLE_KEYS)
    taken = [t.take(list(range(0, t.num_rows, stride))) for t in tables]
    return [k for t in taken for k in _keys([t[f].to_pylist() for f in KEY_FIELDS])]


def _key_columns(path: Path, system: str) -> pa.Table:
    """The columns :func:`~graphmert.extract.triples.triple_key` reads, of ``system``'s rows in one
    part shard."""
    table = pq.read_table(path, columns=["system", *(f"triple.{c}" for c in KEY_FIELDS)])
    return table.filter(pc.equal(table["system"], system))


def _split_task(part: str, spec: _Split, path: Path) -> dict:
    """Shard task: one part's triples of ``spec.system`` with their key range, a row group per range
    (the part is sorted, so each range's rows are consecutive). The triples move as Arrow rows; only
    their key fields are read into Python."""
    table = pq.read_table(part, columns=["system", "triple"])
    triples = table.filter(pc.equal(table["system"], spec.system))["triple"]
    ranges = [key_range(k, spec.points) for k in _keys([pc.struct_field(triples, f).to_pylist() for f in KEY_FIELDS])]
    start, groups = 0, 0
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, RANGED, compression=COMPRESSION) as writer:
        for r, rows in itertools.groupby(ranges):
            n = len(list(rows))
            writer.write_table(pa.table({"range": pa.array([r] * n, pa.int32()),
                                         "triple": triples.slice(start, n)}, schema=RANGED))
            start, groups = start + n, groups + 1
        if not ranges:
            writer.write_table(RANGED.empty_table())
    return {"triples": len(ranges), "row_groups": groups}


def _keys(fields: list[list]) -> list[Key]:
    """:func:`~graphmert.extract.triples.triple_key` from the columns of :data:`KEY_FIELDS`."""
    return [(entity_key(hid, hname), rel, entity_key(tid, tname)) for hid, hname, rel, tid, tname in zip(*fields)]


def _range_rows(path: str, r: int) -> Iterator[Triple]:
    """The triples of range ``r`` in one split file, decoding only the row groups whose statistics
    admit ``r``."""
    f = pq.ParquetFile(path)
    groups = [g for g in range(f.num_row_groups) if _may_hold(f.metadata.row_group(g).column(0).statistics, r)]
    for batch in f.iter_batches(batch_size=BATCH, row_groups=groups) if groups else ():
        for row in batch.to_pylist():
            if row["range"] == r:
                yield Triple.from_dict(row["triple"])


def _may_hold(stats, r: int) -> bool:
    return stats is None or not stats.has_min_max or stats.min <= r <= stats.max


def _merge_task(r: int, spec: _Merge, path: Path) -> dict:
    """Shard task: range ``r`` of every split file merged (:func:`merge_runs`, its passes in a scratch
    folder beside ``path``), named for the run, as one sorted triples file; returns its counts. With
    ``spec.lines`` each row also carries the triple's ``triples.jsonl`` line (:data:`MERGED`), made
    from the dict the row is written from, so no later step decodes the triples again."""
    tally = KGTally()
    with tempfile.TemporaryDirectory(prefix="merge-", dir=path.parent) as scratch:
        runs = [lambda p=p: _range_rows(p, r) for p in spec.paths]
        rows = (t.to_dict() for t in tally.count(with_run(merge_runs(runs, Path(scratch)), spec.run_id)))
        if spec.lines:
            rows = ({**d, LINE: json_line(d)} for d in rows)
        write_parquet_stream(rows, MERGED if spec.lines else SCHEMA, path, compression=COMPRESSION)
    return tally.record()


def _jsonl_task(merged_file: str, _: None, path: Path) -> dict:
    """Shard task: one range's ``triples.jsonl`` lines, read from its merged file's line column."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for batch in pq.ParquetFile(merged_file).iter_batches(batch_size=BATCH, columns=[LINE]):
            lines = batch.column(0).to_pylist()
            out.write("".join(lines))
            n += len(lines)
    return {"triples": n}


#: a split file's rows: the key range and the triple
RANGED = pa.schema([("range", pa.int32()), ("triple", pa.struct(list(SCHEMA)))])
#: the column of a range's merged file that holds each triple's ``triples.jsonl`` line
LINE = "jsonl_line"
#: a range's merged file for the KG: the triple's fields and its line (:func:`_merge_task`)
MERGED = pa.schema([*SCHEMA, (LINE, pa.string())])
