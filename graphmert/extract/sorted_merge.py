"""Merging per-chunk triples that do not fit in memory: an external merge sort by triple key.

:func:`~graphmert.extract.triples.merge_triples` groups every triple of a corpus by its key, so it
holds them all. The extract stage instead has each part write its triples sorted by key
(:func:`sort_run`), and merges the parts' sorted runs as streams:

* :func:`merge_sorted` walks the runs with a k-way heap merge (``heapq.merge``, stable: of equal keys,
  the earlier run's triple first, each run's own order kept) and merges each key's group as soon as
  it is complete. The groups are then the ones :func:`merge_triples` forms over the runs
  concatenated, their triples in the same order, so the output is the same, triple for triple, in
  the same key order; only one group and one decoded batch per run are in memory.
* :func:`merge_runs` bounds the number of runs open at once (``fan_in``): while there are more, it
  merges consecutive groups of ``fan_in`` runs into one sorted run on disk (the triples unmerged, so
  the final groups stay the same), as the passes of an external merge sort do.
* :func:`split_points` and :func:`key_range` cut the key space into ranges of about equal counts
  from a sample of keys (the ranges of a sample sort): every triple of a key falls in one range and
  the ranges follow key order, so merging each range on its own and joining the outputs in range
  order gives :func:`merge_sorted` over everything (``pipelines/stages/extract_merge.py`` merges a
  corpus's ranges as parallel tasks).

Written here rather than taken from a library: the merge is a few lines over ``heapq.merge`` and
``itertools.groupby``, and a dataframe engine's group-by would lose the evidence order that the
merged record's "first name met" and tail source depend on.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from graphmert.extract.triples import Triple, merge_triples, read_triples, triple_key, write_triples

__all__ = ["sort_run", "merge_sorted", "merge_runs", "split_points", "key_range", "FAN_IN"]

#: runs read at once by :func:`merge_runs` (each holds one decoded batch and one open file)
FAN_IN = 64
#: triples decoded at a time from each run while merging
BATCH = 64

Run = Callable[[], Iterable[Triple]]      # opens one sorted run as a stream
Key = tuple[str, str, str]                 # a triple_key


def sort_run(triples: Iterable[Triple]) -> list[Triple]:
    """The triples sorted by :func:`~graphmert.extract.triples.triple_key`, stably (triples of one
    key keep their order): a run :func:`merge_sorted` can merge."""
    return sorted(triples, key=triple_key)


def merge_sorted(runs: Iterable[Iterable[Triple]]) -> Iterator[Triple]:
    """``merge_triples(concatenation of runs)``, each run sorted by :func:`sort_run`, as a stream:
    one merged triple per key, in key order."""
    for _, group in itertools.groupby(heapq.merge(*runs, key=triple_key), key=triple_key):
        yield from merge_triples(group)


def merge_runs(runs: Sequence[Run], scratch: Path, fan_in: int | None = None) -> Iterator[Triple]:
    """:func:`merge_sorted` over ``runs`` (callables opening each sorted run) with at most ``fan_in``
    (default :data:`FAN_IN`) open at once: while there are more, each consecutive group of ``fan_in``
    is merged, unmerged, into one run in ``scratch`` (``pass<p>-<i>.parquet``, which the caller
    removes). The order of the runs is kept, so the output equals that of one :func:`merge_sorted`
    over all of them."""
    fan_in = FAN_IN if fan_in is None else fan_in
    if fan_in < 2:
        raise ValueError(f"merge_runs: fan_in must be at least 2, not {fan_in}")
    runs, level = list(runs), 0
    while len(runs) > fan_in:
        level, merged = level + 1, []
        for i in range(0, len(runs), fan_in):
            path = Path(scratch) / f"pass{level}-{i // fan_in:05d}.parquet"
            write_triples(heapq.merge(*(open_run() for open_run in runs[i:i + fan_in]), key=triple_key), path)
            merged.append(lambda path=path: read_triples(path, batch_size=BATCH))
        runs = merged
    return merge_sorted(open_run() for open_run in runs)


def split_points(sample: Iterable[Key], ranges: int) -> list[Key]:
    """At most ``ranges - 1`` increasing keys that cut the sorted ``sample`` into ``ranges`` runs of
    about equal size: point i is the sample's quantile (i + 1) / ranges. Repeated keys give one
    point and no point is the smallest key, so fewer ranges may come back but none is empty of the
    sample. :func:`key_range` places a key among them."""
    if ranges < 1:
        raise ValueError(f"split_points: ranges must be at least 1, not {ranges}")
    keys = sorted(sample)
    points: list[Key] = []
    for i in range(1, ranges):
        point = keys[len(keys) * i // ranges] if keys else None
        if point is not None and (not points or point > points[-1]) and point > keys[0]:
            points.append(point)
    return points


def key_range(key: Key, points: Sequence[Key]) -> int:
    """The range of ``key`` among the :func:`split_points` ``points``: 0 below the first point, i for
    points[i - 1] <= key < points[i], len(points) from the last point up."""
    return bisect.bisect_right(points, key)
