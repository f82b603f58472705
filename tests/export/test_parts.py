"""Export in parts: parts joined in shard order give the bytes of the streaming writers."""

from __future__ import annotations

import pytest

from graphmert.export.kgx import KGX_FILES, write_kgx
from graphmert.export.parts import join_parts, write_part
from graphmert.export.rdf import write_ntriples
from graphmert.export.terms import ExportTerms

from .helpers import RUN, config, hostile_triples, make_triples

FORMATS = ["nt", "nq", "kgx"]


def _shards():
    t = make_triples() + hostile_triples()
    return [t[:4], [], t[4:7], t[7:]]          # an empty shard too; entities repeat across shards


def _parts(tmp_path, shards, formats=FORMATS):
    cfg = config()
    out = []
    for i, shard in enumerate(shards):
        p = tmp_path / f"part-{i}"
        out.append((p, write_part(shard, p, formats, cfg, RUN)))
    return out


def test_joined_parts_equal_the_streaming_writers(tmp_path):
    shards = _shards()
    ref, got = tmp_path / "ref", tmp_path / "got"
    ref.mkdir()
    got.mkdir()
    write_ntriples(shards, ref / "kg.nt", ExportTerms(config()), RUN)
    write_ntriples(shards, ref / "kg.nq", ExportTerms(config()), RUN, quads=True)
    kgx = write_kgx(shards, ref, ExportTerms(config()), RUN)
    counts = join_parts(_parts(tmp_path, shards), got, FORMATS)
    names = ["kg.nt", "kg.nq", *KGX_FILES.values()]
    assert sorted(p.name for p in got.iterdir()) == sorted(names)
    for name in names:
        assert (got / name).read_bytes() == (ref / name).read_bytes(), name
    assert counts["kgx_nodes"] == kgx["nodes"] and counts["kgx_edges"] == kgx["edges"] == 9
    assert counts["nt"] == counts["nq"] == len((ref / "kg.nt").read_bytes().splitlines())


def test_only_the_requested_formats_are_written(tmp_path):
    got = tmp_path / "got"
    got.mkdir()
    parts = _parts(tmp_path, _shards(), ["nt", "ttl"])
    assert all(set(info["sections"]) == {"kg.nt"} for _, info in parts)
    assert set(join_parts(parts, got, ["nt", "ttl"])) == {"nt"}
    assert [p.name for p in got.iterdir()] == ["kg.nt"]
    with pytest.raises(ValueError, match=r"part-0: export part has no section 'kg_edges.tsv'"):
        join_parts(parts, got, ["kgx"])


def test_a_truncated_part_is_an_error_not_a_short_file(tmp_path):
    got = tmp_path / "got"
    got.mkdir()
    parts = _parts(tmp_path, _shards())
    path = parts[2][0]
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="part-2: export part is truncated in section 'nodes'"):
        join_parts(parts, got, FORMATS)
    assert list(got.iterdir()) == []              # nothing half-written


def test_fallback_counts_add_up_over_parts(tmp_path):
    parts = _parts(tmp_path, _shards())
    total_unmapped: dict[str, int] = {}
    total_unknown: dict[str, int] = {}
    for _, info in parts:
        for k, v in info["unmapped_relations"].items():
            total_unmapped[k] = total_unmapped.get(k, 0) + v
        for k, v in info["unknown_categories"].items():
            total_unknown[k] = total_unknown.get(k, 0) + v
    # one triple per unmapped relation; 'not-a-category' is the head of one hostile triple
    assert total_unmapped == {"Comparison_x": 1, 'rel"<>\nx': 1}
    assert total_unknown == {"not-a-category": 1}
    assert sum(info["triples"] for _, info in parts) == 9
