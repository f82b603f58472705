"""The extract stage's streamed merge equals merging every per-chunk triple at once: the reference is
:func:`merge_triples` over the parts' triples concatenated, compared record for record (names met
first, evidence order, tail source, confidence mean to the bit), with one pass and with several."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmert.extract.sorted_merge import key_range, merge_runs, merge_sorted, sort_run, split_points
from graphmert.extract.triples import (Evidence, Triple, merge_triples, read_system, read_triples, triple_key,
                                       write_systems)
from graphmert.io import cut_parquet, write_parquet, write_parquet_stream

# one id under two spellings (the merged record keeps the first met), and an unlinked name
ENTITIES = [("X:1", "alpha"), ("X:1", "Alpha"), ("X:2", "beta"), ("", "gamma chain"), ("", "Gamma  chain")]


def _event(doc: int, start: int, head: int, tail: int, relation: str, source: str, conf: float) -> Triple:
    (hid, hname), (tid, tname) = ENTITIES[head], ENTITIES[tail]
    ev = Evidence(doc_id=f"d{doc}", chunk_id=f"d{doc}#0", sentence="s", sentence_start=0, head_start=start,
                  head_end=start + 3, confidence=conf)
    return Triple(head_id=hid, head_name=hname, head_category="c", relation=relation, tail_id=tid,
                  tail_name=tname, tail_category="c", tail_source=source, confidence=conf,
                  confidence_mean=conf, evidence_count=1, documents=[f"d{doc}"], evidence=[ev])


events = st.lists(st.builds(_event, st.integers(0, 5), st.integers(0, 3), st.integers(0, 4), st.integers(0, 4),
                            st.sampled_from(["r", "s"]), st.sampled_from(["mention", "lexicon", ""]),
                            st.floats(0.01, 1.0)), max_size=40)


def _parts(raw: list[Triple], cuts: list[int]) -> list[list[Triple]]:
    bounds = [0, *sorted(min(c, len(raw)) for c in cuts), len(raw)]
    return [raw[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=80, deadline=None)
@given(events, st.lists(st.integers(0, 40), max_size=6))
def test_merging_sorted_runs_equals_merging_at_once(raw, cuts):
    runs = [sort_run(p) for p in _parts(raw, cuts)]
    expected = [t.to_dict() for t in merge_triples(raw)]
    assert [t.to_dict() for t in merge_sorted(runs)] == expected


@settings(max_examples=25, deadline=None)
@given(events, st.lists(st.integers(0, 40), min_size=3, max_size=9), st.sampled_from([2, 3, 64]))
def test_merge_runs_from_part_files_with_bounded_fan_in(tmp_path_factory, raw, cuts, fan_in):
    """Part shards as the stage writes them (systems files, each system sorted); fan_in 2 and 3 take
    several passes through scratch files, 64 one."""
    folder = tmp_path_factory.mktemp("parts")
    paths = []
    for i, part in enumerate(_parts(raw, cuts)):
        paths.append(folder / f"part-{i}.parquet")
        write_systems({"graphmert": sort_run(part), "other": sort_run(part[:1])}, paths[-1])
    runs = [lambda p=p: read_system(p, "graphmert", batch_size=2) for p in paths]
    got = [t.to_dict() for t in merge_runs(runs, folder, fan_in=fan_in)]
    assert got == [t.to_dict() for t in merge_triples(raw)]
    passes = sorted(p.name for p in folder.glob("pass*.parquet"))
    assert bool(passes) == (len(paths) > fan_in)              # scratch runs only when too many are open
    if passes:              # a scratch run holds its parts' triples unmerged, sorted
        keys = [triple_key(t) for t in read_triples(folder / passes[0])]
        assert keys == sorted(keys)


def test_merge_runs_refuses_a_fan_in_below_two(tmp_path):
    with pytest.raises(ValueError, match="fan_in must be at least 2"):
        merge_runs([], tmp_path, fan_in=1)


def test_a_parquet_stream_is_the_same_file_as_one_table_and_round_trips_in_batches(tmp_path):
    from graphmert.extract.triples import SCHEMA

    triples = [_event(i % 3, i, i % 5, (i + 1) % 5, "r", "mention", 0.5) for i in range(25)]
    rows = [t.to_dict() for t in triples]
    write_parquet(rows, SCHEMA, tmp_path / "table.parquet", compression="snappy")
    assert write_parquet_stream(iter(rows), SCHEMA, tmp_path / "stream.parquet", compression="snappy") == 25
    assert (tmp_path / "table.parquet").read_bytes() == (tmp_path / "stream.parquet").read_bytes()
    assert write_parquet_stream(iter(rows), SCHEMA, tmp_path / "batched.parquet", batch_rows=4) == 25
    assert [t.to_dict() for t in read_triples(tmp_path / "batched.parquet")] == rows
    assert write_parquet_stream(iter([]), SCHEMA, tmp_path / "empty.parquet") == 0
    assert list(read_triples(tmp_path / "empty.parquet")) == []


def test_a_failed_stream_leaves_no_file(tmp_path):
    from graphmert.extract.triples import SCHEMA

    def rows():
        yield _event(0, 0, 0, 1, "r", "mention", 0.5).to_dict()
        raise RuntimeError("reader failed")

    with pytest.raises(RuntimeError, match="reader failed"):
        write_parquet_stream(rows(), SCHEMA, tmp_path / "out.parquet", batch_rows=1)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=80, deadline=None)
@given(events, events, st.integers(1, 6))
def test_key_ranges_merged_one_by_one_and_joined_equal_one_merge(sample, raw, ranges):
    """Split points from one sample (``sample``) cut another set of triples (``raw``): merging each
    range alone and joining the ranges in order gives the merge of everything, so no key's group is
    cut and the ranges follow key order. Every range holds some of the sample."""
    points = split_points(map(triple_key, sample), ranges)
    assert len(points) < ranges and points == sorted(set(points))
    placed = {key_range(triple_key(t), points) for t in sample}
    assert placed == set(range(len(points) + 1)) or not sample
    by_range: dict[int, list[Triple]] = {}
    for t in raw:
        by_range.setdefault(key_range(triple_key(t), points), []).append(t)
    joined = [t.to_dict() for r in sorted(by_range) for t in merge_triples(by_range[r])]
    assert joined == [t.to_dict() for t in merge_triples(raw)]


def test_split_points_quantiles_a_heavy_key_and_errors():
    keys = [("a", "r", str(i)) for i in range(10)]
    assert split_points(keys, 2) == [("a", "r", "5")]
    assert split_points(keys, 5) == [("a", "r", str(i)) for i in (2, 4, 6, 8)]
    assert split_points([("a", "r", "x")] * 9 + [("b", "r", "y")], 4) == []     # one key is most
    assert split_points([("a", "r", "x")] * 5 + [("b", "r", "y")] * 5, 3) == [("b", "r", "y")]
    assert split_points([], 3) == [] and split_points(keys, 1) == []
    assert [key_range(k, [("a", "r", "5")]) for k in (keys[4], keys[5], keys[9])] == [0, 1, 1]
    with pytest.raises(ValueError, match="ranges must be at least 1"):
        split_points(keys, 0)


@pytest.mark.parametrize("per_file", [None, 1, 7, 25, 40])
def test_cut_parquet_writes_the_files_a_python_stream_writes(tmp_path, per_file):
    """Rows moved as Arrow batches from several files, cut into files of ``per_file`` rows: the same
    bytes as writing each file's rows from Python (row groups of 4 here), one empty file for none."""
    from graphmert.extract.triples import SCHEMA

    rows = [_event(i % 3, i, i % 5, (i + 1) % 5, "r", "mention", 0.5).to_dict() for i in range(25)]
    sources = []
    for i, (a, b) in enumerate([(0, 3), (3, 3), (3, 20), (20, 25)]):       # an empty source too
        sources.append(tmp_path / f"in-{i}.parquet")
        write_parquet_stream(iter(rows[a:b]), SCHEMA, sources[-1], batch_rows=3)
    out = cut_parquet(sources, SCHEMA, per_file, lambda i: tmp_path / f"out-{i}.parquet", batch_rows=4)
    size = per_file or len(rows)
    assert len(out) == -(-len(rows) // size)
    for i, path in enumerate(out):
        write_parquet_stream(iter(rows[i * size:(i + 1) * size]), SCHEMA, tmp_path / "ref.parquet", batch_rows=4)
        assert path.read_bytes() == (tmp_path / "ref.parquet").read_bytes(), path.name
    empty = cut_parquet(sources[1:2], SCHEMA, per_file, lambda i: tmp_path / f"none-{i}.parquet")
    write_parquet_stream(iter([]), SCHEMA, tmp_path / "ref-empty.parquet")
    assert [p.read_bytes() for p in empty] == [(tmp_path / "ref-empty.parquet").read_bytes()]


def test_cut_parquet_holds_a_few_row_groups_not_the_file(tmp_path, monkeypatch):
    """One output file of 60,000 rows (a control's file): while it is written, Arrow holds about two
    row groups of 1,000 rows, not the file's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    sources = []
    for k in range(6):
        sources.append(tmp_path / f"in-{k}.parquet")
        rows = range(k * 10_000, (k + 1) * 10_000)
        pq.write_table(pa.table({"i": list(rows), "s": [f"name {i:08d}" for i in rows]}, schema=schema),
                       sources[-1], row_group_size=1000)
    whole = pa.concat_tables([pq.read_table(p) for p in sources]).combine_chunks().nbytes
    held = []
    write_table = pq.ParquetWriter.write_table
    monkeypatch.setattr(pq.ParquetWriter, "write_table",
                        lambda self, table, *a, **k: (held.append(pa.total_allocated_bytes()),
                                                      write_table(self, table, *a, **k))[1])
    base = pa.total_allocated_bytes()
    (out,) = cut_parquet(sources, schema, None, lambda i: tmp_path / "out.parquet", batch_rows=1000)
    assert pq.read_table(out).num_rows == 60_000 and len(held) == 60
    assert max(held) - base < whole / 5, (max(held) - base, whole)
