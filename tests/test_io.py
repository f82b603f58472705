"""Atomic files and folders: a reader sees the old content or the new, never a mix; failures leave
nothing behind; outputs get the usual permissions (not mkstemp's 0600 / mkdtemp's 0700). Also the
shared Parquet shard pair and the versioned-JSON header check that every format reader relies on."""

from __future__ import annotations

import os
import stat

import pytest

from graphmert.io import (atomic_dir, atomic_write_json, atomic_write_text, check_format, input_hashes, read_parquet,
                          read_versioned_json, write_parquet)


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_atomic_dir_replaces_the_old_folder_and_leaves_no_temporaries(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with atomic_dir(final) as tmp:
        assert tmp.parent == tmp_path and tmp != final
        (tmp / "new.txt").write_text("new")
        assert (final / "old.txt").exists()           # the old folder is intact until the swap
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert _mode(final) == 0o777 & ~umask()


def test_atomic_dir_failure_keeps_the_old_folder_and_removes_the_temporary(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as tmp:
            (tmp / "half.txt").write_text("half")
            raise RuntimeError("killed")
    assert sorted(p.name for p in final.iterdir()) == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_atomic_files_get_the_umask_mode(tmp_path):
    p = atomic_write_text(tmp_path / "a.txt", "x")
    assert p.read_text() == "x" and _mode(p) == 0o666 & ~umask()


def test_usual_modes_without_touching_the_umask(tmp_path, monkeypatch):
    """The umask is process-wide and Dask workers run threads: reading it by setting it (os.umask)
    would briefly change it for every other thread. Outputs still get 0o644 / 0o755 under umask 022."""
    old = os.umask(0o022)
    try:
        def forbidden(*_):
            raise AssertionError("os.umask called: it changes the mask of every thread")

        monkeypatch.setattr(os, "umask", forbidden)
        f = atomic_write_text(tmp_path / "sub" / "a.txt", "x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "b.txt").write_text("y")
        monkeypatch.undo()
        assert _mode(f) == 0o644 and _mode(tmp_path / "d") == 0o755
    finally:
        os.umask(old)


def test_parquet_rows_round_trip_and_old_files_read_their_optional_columns_as_none(tmp_path):
    import pyarrow as pa

    old = pa.schema([("id", pa.string()), ("n", pa.int32())])
    new = pa.schema([("id", pa.string()), ("n", pa.int32()), ("tags", pa.list_(pa.string()))])
    assert write_parquet([{"id": "a", "n": 1, "tags": ["x"]}], new, tmp_path / "new.parquet") == 1
    write_parquet([{"id": "b", "n": 2}], old, tmp_path / "old.parquet")
    rows = list(read_parquet([tmp_path / "new.parquet", tmp_path / "old.parquet"], new, what="test",
                             optional={"tags"}))
    assert rows == [{"id": "a", "n": 1, "tags": ["x"]}, {"id": "b", "n": 2, "tags": None}]
    assert list(read_parquet(tmp_path / "new.parquet", old, what="test")) == [{"id": "a", "n": 1}]
    with pytest.raises(ValueError, match=r"old.parquet: not a test shard; missing columns \['tags'\]"):
        list(read_parquet(tmp_path / "old.parquet", new, what="test"))


def test_versioned_json_names_the_file_and_what_it_expected(tmp_path):
    path = atomic_write_json(tmp_path / "state.json", {"format": "f", "format_version": 2})
    assert read_versioned_json(path, format="f", version=2, what="a state", error=ValueError)["format"] == "f"
    with pytest.raises(ValueError, match=r"state.json: not a thing \(format 'g' expected\)"):
        read_versioned_json(path, format="g", version=2, what="a thing", error=ValueError)
    with pytest.raises(ValueError, match=r"state.json: format_version 2 is not supported "
                                         r"\(this library reads 3\)"):
        read_versioned_json(path, format="f", version=3, what="a state", error=ValueError)
    with pytest.raises(RuntimeError, match=r"x.json: version None is not supported \(this library reads 1\); "
                                           "redo"):
        check_format({"format": "f"}, "x.json", format="f", version=1, what="x", error=RuntimeError,
                     version_key="version", advice="; redo")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json: invalid JSON"):
        read_versioned_json(tmp_path / "bad.json", format="f", version=2, what="a state", error=ValueError)


def test_input_hashes_read_each_file_of_a_folder(tmp_path):
    """A folder input (one document per .txt file) is keyed by its files: adding or editing one
    changes the key; a plain file is keyed by its content."""
    folder, single = tmp_path / "raw", tmp_path / "one.txt"
    folder.mkdir()
    (folder / "b.txt").write_text("B")
    (folder / "a.txt").write_text("A")
    single.write_text("A")
    first = input_hashes([folder, single])
    assert list(first) == [str(folder / "a.txt"), str(folder / "b.txt"), str(single)]
    assert first[str(folder / "a.txt")] == first[str(single)]
    (folder / "c.txt").write_text("C")
    assert len(input_hashes([folder])) == 3
    (folder / "a.txt").write_text("A2")
    assert input_hashes([folder])[str(folder / "a.txt")] != first[str(folder / "a.txt")]
