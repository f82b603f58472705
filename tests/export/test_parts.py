"""Export in parts: parts joined in shard order give the bytes of the streaming writers (N-Triples,
N-Quads, KGX) or their graph, each statement once (Turtle, TriG, JSON-LD)."""

from __future__ import annotations

import dataclasses
import json

import pyoxigraph as ox
import pytest

from graphmert.export.kgx import KGX_FILES, write_kgx
from graphmert.export.parts import join_parts, write_part
from graphmert.export.rdf import jsonld_context, turtle_prefixes, write_ntriples, write_rdf
from graphmert.export.terms import ExportTerms

from .helpers import RUN, config, hostile_triples, make_triples

FORMATS = ["nt", "nq", "kgx"]
RDF = {"ttl": ox.RdfFormat.TURTLE, "trig": ox.RdfFormat.TRIG, "jsonld": ox.RdfFormat.JSON_LD}


def _shards():
    t = make_triples() + hostile_triples()
    return [t[:4], [], t[4:7], t[7:]]          # an empty shard too; entities repeat across shards


def _terms(shards):
    """The driver's terms: every entity id seen, so the prefixes are those of the whole file."""
    terms = ExportTerms(config())
    for t in (t for s in shards for t in s):
        for i in (t.head_id, t.tail_id):
            if i:
                terms.entity(i, "")
    return terms


def _parts(tmp_path, shards, formats=FORMATS):
    cfg, prefixes = config(), turtle_prefixes(_terms(shards))
    out = []
    for i, shard in enumerate(shards):
        p = tmp_path / f"part-{i}"
        out.append((p, write_part(shard, p, formats, cfg, RUN, prefixes)))
    return out


def _statements(path, fmt):
    """Every statement of the file as written (a repeat is listed twice), as N-Quads text."""
    return [str(q) for q in ox.parse(path=str(path), format=RDF[fmt])]


def _two_runs_and_an_update():
    """The shards, plus a second run's copies of three triples (one also supported by a `graphmert
    update`), in a shard of their own and beside a new first-run triple in another: the entities and
    both runs are described in several parts, and TriG's graphs alternate within a part."""
    shards = _shards()
    a, b, c = make_triples()[:3]
    update = dataclasses.replace(b.evidence[0], activity="update-1")
    later = [dataclasses.replace(a, run_id="run-2"),
             dataclasses.replace(b, run_id="run-2", evidence=[*b.evidence, update])]
    mixed = [dataclasses.replace(a, relation="causes"), dataclasses.replace(c, run_id="run-2")]
    return [*shards, later, mixed]


@pytest.mark.parametrize("fmt", ["ttl", "trig", "jsonld"])
def test_joined_rdf_parts_hold_the_streaming_writers_graph_each_statement_once(tmp_path, fmt):
    shards = _two_runs_and_an_update()
    ref = tmp_path / f"ref.{fmt}"
    n = write_rdf([t for s in shards for t in s], ref, fmt, ExportTerms(config()), RUN)
    got = tmp_path / "got"
    got.mkdir()
    counts = join_parts(_parts(tmp_path, shards, [fmt]), got, [fmt], turtle_prefixes(_terms(shards)),
                        jsonld_context(_terms(shards)))
    written, expected = _statements(got / f"kg.{fmt}", fmt), _statements(ref, fmt)
    assert sorted(written) == sorted(expected)      # the same statements, each as often as there
    assert counts == {fmt: n} and len(written) == n
    text = (got / f"kg.{fmt}").read_text(encoding="utf-8")
    if fmt == "jsonld":
        assert json.loads(text)["@context"] == jsonld_context(_terms(shards))
    else:
        assert text.count("@prefix biolink:") == 1 and text.startswith("@prefix ")


def test_rdf_parts_of_empty_shards_join_into_valid_files(tmp_path):
    got = tmp_path / "got"
    got.mkdir()
    parts = _parts(tmp_path, [[], []], ["ttl", "trig", "jsonld"])
    assert join_parts(parts, got, ["ttl", "trig", "jsonld"], {}, {}) == {"ttl": 0, "trig": 0, "jsonld": 0}
    assert (got / "kg.ttl").read_bytes() == (got / "kg.trig").read_bytes() == b""
    assert json.loads((got / "kg.jsonld").read_text()) == {"@context": {}, "@graph": []}


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
    parts = _parts(tmp_path, _shards(), ["nt", "jsonld"])
    assert all(set(info["sections"]) == {"kg.nt", "kg.jsonld", "descriptions"} for _, info in parts)
    assert set(join_parts(parts, got, ["nt"])) == {"nt"}
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
    parts = _parts(tmp_path, _shards(), ["ttl", "jsonld"])
    path = parts[3][0]
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="part-3: export part is truncated in section 'descriptions'"):
        join_parts(parts, got, ["ttl", "jsonld"], {}, {})
    assert list(got.iterdir()) == []
    parts = _parts(tmp_path, _shards(), ["jsonld"])      # the part starts with its JSON-LD array
    path = parts[0][0]
    path.write_bytes(b"{" + path.read_bytes()[1:])
    with pytest.raises(ValueError, match="part-0: export part's kg.jsonld section is not a JSON array"):
        join_parts(parts, got, ["jsonld"], {}, {})
    assert list(got.iterdir()) == []


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
