"""The extract merge's key sample (pipelines/stages/extract_merge.py): read as Arrow columns, the keys
are :func:`triple_key`'s, of the named system only, every n-th row of the parts it reads. The split
tags, and a range's merged rows with the JSON lines they keep. That the
ranged merge writes the driver merge's files is tested on a run in tests/test_pipeline_pairs.py and
by benchmarks/merge.py's smoke test."""

from __future__ import annotations

from graphmert.extract.sorted_merge import sort_run
from graphmert.extract.triples import Evidence, Triple, triple_key, write_systems
from pipelines.stage import Shard
import pipelines.stages.extract_merge as extract_merge


def _triple(i: int, name: str) -> Triple:
    ev = Evidence(doc_id="d", chunk_id="d#0", sentence="s", sentence_start=0, head_start=0, head_end=1)
    return Triple(head_id="" if i % 3 == 0 else f"X:{i % 7}", head_name=f"{name} Name  {i}", head_category="c",
                  relation=f"r{i % 2}", tail_id=f"Y:{i}" if i % 4 else "", tail_name=f"Tail {i}",
                  tail_category="c", tail_source="mention", confidence=0.5, evidence=[ev])


def _parts(tmp_path, n: int) -> tuple[list[Shard], list[list[Triple]]]:
    shards, runs = [], []
    for p in range(n):
        runs.append(sort_run([_triple(10 * p + i, "Head") for i in range(10)]))
        path = tmp_path / f"part-{p}.parquet"
        write_systems({"other": [_triple(999, "Other")], "graphmert": runs[-1]}, path)
        shards.append(Shard(index=p, file=path.name, id=str(p), path=path, sha256="", counts={}, seconds=0.0,
                            reused=False))
    return shards, runs


def test_the_sample_is_the_systems_triple_keys(tmp_path):
    shards, runs = _parts(tmp_path, 3)
    assert extract_merge._sample_keys(shards, "graphmert") == [triple_key(t) for run in runs for t in run]


def test_the_sample_takes_every_nth_key_of_the_parts_spread_over_the_run(tmp_path, monkeypatch):
    shards, runs = _parts(tmp_path, 5)
    monkeypatch.setattr(extract_merge, "SAMPLE_PARTS", 3)          # parts 0, 2 and 4
    monkeypatch.setattr(extract_merge, "SAMPLE_KEYS", 10)          # 30 rows read: every third
    assert extract_merge._sample_keys(shards, "graphmert") == \
        [triple_key(t) for p in (0, 2, 4) for t in runs[p][::3]]


def test_a_split_tags_each_triple_with_its_key_range_in_a_row_group_per_range(tmp_path):
    """The split task moves the system's triples as Arrow rows: the same triples in the same order,
    each with key_range of its triple_key, one row group per range met, which a range's reader alone
    decodes."""
    import pyarrow.parquet as pq

    from graphmert.extract.sorted_merge import key_range, split_points

    shards, runs = _parts(tmp_path, 1)
    points = split_points(map(triple_key, runs[0]), 3)
    out = tmp_path / "split.parquet"
    counts = extract_merge._split_task(str(shards[0].path), extract_merge._Split("graphmert", points), out)
    rows = pq.read_table(out).to_pylist()
    assert [Triple.from_dict(r["triple"]).to_dict() for r in rows] == [t.to_dict() for t in runs[0]]
    assert [r["range"] for r in rows] == [key_range(triple_key(t), points) for t in runs[0]]
    assert counts == {"triples": 10, "row_groups": 3} == {"triples": 10, "row_groups": pq.ParquetFile(out).num_row_groups}
    for r in range(3):
        assert [t.to_dict() for t in extract_merge._range_rows(str(out), r)] == \
            [t.to_dict() for t in runs[0] if key_range(triple_key(t), points) == r]


def test_a_ranges_merge_keeps_the_json_lines_the_driver_writes(tmp_path):
    """A range's merge task keeps each merged triple's triples.jsonl line beside its row, and the
    jsonl task writes that column: the bytes write_triples_jsonl writes for the same merged triples
    (names outside ASCII kept as written, as the driver's lines keep them)."""
    from graphmert.extract.sorted_merge import key_range, merge_sorted, split_points
    from graphmert.extract.triples import read_triples, with_run, write_triples_jsonl

    shards, runs = [], []
    for p in range(2):
        runs.append(sort_run([_triple(i + 3 * p, "β-Catenin Sjögren") for i in range(12)]))
        shards.append(tmp_path / f"part-{p}.parquet")
        write_systems({"graphmert": runs[-1]}, shards[-1])
    points = split_points((triple_key(t) for run in runs for t in run), 2)
    splits = [str(tmp_path / f"split-{p}.parquet") for p in range(2)]
    for part, split in zip(shards, splits):
        extract_merge._split_task(str(part), extract_merge._Split("graphmert", points), tmp_path / split)
    expected = list(with_run(merge_sorted(runs), "the-run"))
    lines = b""
    for r in range(len(points) + 1):
        merged = tmp_path / f"merged-{r}.parquet"
        counts = extract_merge._merge_task(r, extract_merge._Merge(splits, "the-run", True), merged)
        assert counts["triples"] == sum(key_range(triple_key(t), points) == r for t in expected)
        assert [t.to_dict() for t in read_triples(merged)] == \
            [t.to_dict() for t in expected if key_range(triple_key(t), points) == r]
        extract_merge._jsonl_task(str(merged), None, tmp_path / f"lines-{r}")
        lines += (tmp_path / f"lines-{r}").read_bytes()
    write_triples_jsonl(expected, tmp_path / "driver.jsonl")
    assert lines == (tmp_path / "driver.jsonl").read_bytes() and "Sjögren".encode() in lines


def test_write_kg_writes_the_library_writers_files_in_shards(tmp_path):
    """write_kg's shards are write_triples' files of each shard_size slice, and its triples.jsonl is
    write_triples_jsonl's, byte for byte; no triples give one empty shard."""
    from graphmert.extract.triples import write_triples, write_triples_jsonl

    triples = [_triple(i, "Head") for i in range(25)]
    kg, ref = tmp_path / "kg", tmp_path / "ref"
    kg.mkdir(), ref.mkdir()
    assert extract_merge.write_kg(iter(triples), kg, 10) == [extract_merge.shard_name(i) for i in range(3)]
    for i in range(3):
        write_triples(triples[10 * i:10 * i + 10], ref / "s.parquet")
        assert (kg / extract_merge.shard_name(i)).read_bytes() == (ref / "s.parquet").read_bytes()
    write_triples_jsonl(triples, ref / "t.jsonl")
    assert (kg / "triples.jsonl").read_bytes() == (ref / "t.jsonl").read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert extract_merge.write_kg(iter(()), empty, 10) == [extract_merge.shard_name(0)]
    write_triples([], ref / "e.parquet")
    assert (empty / extract_merge.shard_name(0)).read_bytes() == (ref / "e.parquet").read_bytes()
    assert (empty / "triples.jsonl").read_bytes() == b""


def test_write_kg_holds_no_triple_past_its_row(tmp_path):
    """A merged triple carries all its evidence, so the KG writer keeps none of the Triple objects it
    has taken from the stream (only the current row group's dicts): at every pull, the triples
    handed out before are gone but the one or two it is writing — a shard-sized buffer of triples
    would keep them."""
    import gc
    import weakref

    handed: list[weakref.ref] = []
    alive_at_pull: list[int] = []

    def stream():
        for i in range(60):
            t = _triple(i, "Head")
            gc.collect()
            alive_at_pull.append(sum(r() is not None for r in handed))
            handed.append(weakref.ref(t))
            yield t

    extract_merge.write_kg(stream(), tmp_path, 50)
    assert len(alive_at_pull) == 60 and max(alive_at_pull) <= 2      # the writer's current ones
