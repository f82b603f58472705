"""The embedded SPARQL store (graphmert/export/store.py), `graphmert load` / `graphmert query` and the
export stage's ``store`` format: the README query gives rdflib's rows, every output format parses
back, and bad input is a clear error that leaves nothing behind."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
import rdflib
from typer.testing import CliRunner

from graphmert.config import ExportConfig, load_config
from graphmert.export import store as kgstore
from graphmert.export.rdf import write_ntriples, write_rdf
from graphmert.export.store import (QueryError, QueryResult, StoreError, build_store, format_result,
                                    open_store, run_query)
from graphmert.export.terms import ExportTerms, check_formats
from graphmert.extract.triples import write_triples
from graphmert.io import atomic_write_json
from pipelines.cli import app
from pipelines.stage import output_hash, run_stage
from pipelines.stages.export import EXPORT

from .helpers import RUN, make_triples, sparql_from_docs

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib")
runner = CliRunner()


def _nt(path: Path, shards: int = 2) -> Path:
    triples = make_triples()
    k = -(-len(triples) // shards)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_ntriples([triples[i:i + k] for i in range(0, len(triples), k)], path,
                   ExportTerms(ExportConfig()), RUN)
    return path


def _ttl(path: Path) -> Path:
    write_rdf(make_triples(), path, "ttl", ExportTerms(ExportConfig()), RUN)
    return path


def _key(gene, name, predicate, confidence, evidence, publications) -> tuple:
    """A README-query row as comparable values (GROUP_CONCAT's order is not defined)."""
    return (str(gene), str(name), str(predicate), float(confidence),
            frozenset(str(evidence).split(" | ")), frozenset(str(publications).split()))


def _rdflib_rows(path: Path, fmt: str) -> set[tuple]:
    g = rdflib.Graph().parse(path, format=fmt)
    return {_key(*row) for row in g.query(sparql_from_docs())}


@pytest.fixture()
def store(tmp_path):
    build_store([_nt(tmp_path / "kg.nt")], tmp_path / "store")
    return open_store(tmp_path / "store")


# -- the README query and the round trip -----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["nt", "ttl"])
def test_readme_query_gives_rdflibs_rows(tmp_path, fmt):
    src = _nt(tmp_path / "kg.nt") if fmt == "nt" else _ttl(tmp_path / "kg.ttl")
    build_store([src], tmp_path / "store")
    result = run_query(open_store(tmp_path / "store"), sparql_from_docs())
    assert result.kind == "select"
    assert result.columns == ["gene", "name", "predicate", "confidence", "evidence", "publications"]
    assert [r[1] for r in result.rows] == ["TCF7L2", "KCNJ11"]           # ORDER BY DESC(?confidence)
    assert {_key(*r) for r in result.rows} == _rdflib_rows(src, "nt" if fmt == "nt" else "turtle")


def test_store_holds_what_rdflib_parses(tmp_path):
    nt = _nt(tmp_path / "kg.nt", shards=3)             # entities described once per shard: repeats
    info = build_store(nt, tmp_path / "store")
    n = len(rdflib.Graph().parse(nt, format="nt"))
    assert info["triples"] == n and info["sources"] == ["kg.nt"] and info["seconds"] >= 0
    count = run_query(open_store(tmp_path / "store"), "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert count.rows == [[str(n)]]


def test_nquads_are_queried_as_the_union_of_their_graphs(tmp_path):
    nq = tmp_path / "kg.nq"
    write_ntriples([make_triples()], nq, ExportTerms(ExportConfig()), RUN, quads=True)
    build_store([nq], tmp_path / "store")
    s = open_store(tmp_path / "store")
    assert {_key(*r) for r in run_query(s, sparql_from_docs()).rows} == _rdflib_rows(
        _nt(tmp_path / "kg.nt"), "nt")
    graphs = run_query(s, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert graphs.rows == [["https://w3id.org/graphmert/graph/run-1"]]


def test_ask_and_construct(store):
    ask = run_query(store, "ASK { ?s a <https://w3id.org/biolink/vocab/Gene> }")
    assert ask.kind == "ask" and ask.boolean is True
    assert format_result(ask, "table") == "true\n"
    assert json.loads(format_result(ask, "json")) == {"head": {}, "boolean": True}
    graph = run_query(store, "CONSTRUCT { ?s a ?c } WHERE { ?s a ?c } LIMIT 3")
    assert graph.kind == "construct" and graph.columns == ["subject", "predicate", "object"]
    assert len(graph.rows) == 3


# -- output formats --------------------------------------------------------------------------------


def test_every_format_parses_back_to_the_rows(store):
    result = run_query(store, sparql_from_docs())
    want = [[v or "" for v in row] for row in result.rows]
    csv_rows = list(csv.reader(io.StringIO(format_result(result, "csv"), newline="")))
    assert csv_rows == [result.columns, *want]
    tsv_rows = list(csv.reader(io.StringIO(format_result(result, "tsv"), newline=""), delimiter="\t"))
    assert tsv_rows == [result.columns, *want]
    data = json.loads(format_result(result, "json"))
    assert data["head"]["vars"] == result.columns
    got = [[b[c]["value"] for c in result.columns] for b in data["results"]["bindings"]]
    assert got == want
    first = data["results"]["bindings"][0]
    assert first["gene"]["type"] == "uri"
    assert first["confidence"] == {"type": "literal", "value": "0.91",
                                   "datatype": "http://www.w3.org/2001/XMLSchema#double"}
    table = format_result(result, "table").splitlines()
    assert table[0].split() == result.columns and set(table[1]) <= {"-", " "}
    assert table[-1] == "(2 rows)" and "TCF7L2" in table[2]


def test_table_keeps_unbound_cells_and_cuts_long_ones():
    result = QueryResult(kind="select", columns=["a", "b"], rows=[["x" * 200, None], ["one\nline", "y"]])
    lines = format_result(result, "table").splitlines()
    assert lines[2].endswith("…") and len(lines[2]) == 80 and lines[3].startswith("one line")
    assert lines[-1] == "(2 rows)"
    assert json.loads(format_result(result, "json"))["results"]["bindings"][0] == {
        "a": {"type": "literal", "value": "x" * 200}}


def test_unknown_format_lists_the_choices(store):
    with pytest.raises(QueryError, match=r"'xml'.*'table', 'csv', 'tsv', 'json'"):
        format_result(run_query(store, "ASK { ?s ?p ?o }"), "xml")


# -- errors ----------------------------------------------------------------------------------------


def test_malformed_query_quotes_the_parser(store):
    with pytest.raises(QueryError) as e:
        run_query(store, "PREFIX ex: <http://example.org/>\nSELECT ?x WHERE { ?x ?y }")
    msg = str(e.value)
    assert msg.startswith("malformed SPARQL query: error at 2:") and "line 2: 'SELECT ?x" in msg
    assert "\n" not in msg and len(msg) < 500
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("update", ["INSERT DATA { <http://a/x> <http://a/p> <http://a/y> }",
                                    "PREFIX a: <http://a/>\n# a comment\nDELETE WHERE { ?s ?p ?o }",
                                    "LOAD <http://example.org/kg.ttl>", "CLEAR ALL"])
def test_updates_are_refused(store, update):
    with pytest.raises(QueryError, match="SPARQL Update .* refused: the store is read-only"):
        run_query(store, update)
    assert run_query(store, "ASK { ?s ?p ?o }").boolean is True


def test_missing_or_foreign_store(tmp_path):
    with pytest.raises(StoreError, match=r"no SPARQL store here; run `graphmert load"):
        open_store(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="not an Oxigraph store"):
        open_store(tmp_path / "empty")


def test_malformed_source_names_file_and_line_and_leaves_nothing(tmp_path):
    good = _nt(tmp_path / "good.nt")
    bad = tmp_path / "bad.nt"
    bad.write_text('<http://a/x> <http://a/p> "1" .\n<http://a/x> <http://a/p> oops .\n')
    with pytest.raises(StoreError, match=r"bad\.nt, line 2: not valid nt"):
        build_store([good, bad], tmp_path / "store")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.nt", "good.nt"]   # no store, no temp
    with pytest.raises(StoreError, match="missing.nt: no such file"):
        build_store([tmp_path / "missing.nt"], tmp_path / "store")
    with pytest.raises(StoreError, match="cannot load a .csv file"):
        build_store([tmp_path / "kg.csv"], tmp_path / "store")


def _statements(path: Path) -> set[str]:
    store = open_store(path)
    return {str(q) for q in store}


def test_line_based_sources_load_in_pieces_to_the_same_store(tmp_path):
    """N-Triples and N-Quads go to Oxigraph in pieces that end at line ends (the loader's memory
    follows what one call gives it): a piece of 200 bytes, a few lines, gives the whole file's store."""
    nt = _nt(tmp_path / "kg.nt")
    whole = build_store([nt], tmp_path / "whole", piece_bytes=1 << 30)
    pieces = build_store([nt], tmp_path / "pieces", piece_bytes=200)
    with open(nt, "rb") as f:
        pieces_read = list(kgstore._line_pieces(f, 200))
    data = nt.read_bytes()
    assert len(pieces_read) > 10 and all(p.endswith(b"\n") for _, _, p in pieces_read)
    assert b"".join(p for _, _, p in pieces_read) == data
    assert all(data[offset:offset + len(p)] == p and data[:offset].count(b"\n") == lines
               for lines, offset, p in pieces_read)
    assert pieces["triples"] == whole["triples"] > 0
    assert _statements(tmp_path / "pieces") == _statements(tmp_path / "whole")


def test_a_syntax_error_in_a_later_piece_names_the_files_line(tmp_path):
    good = "".join(f'<http://a/x{i}> <http://a/p> "{i}" .\n' for i in range(40))
    bad = tmp_path / "bad.nt"
    bad.write_text(good + "<http://a/x> <http://a/p> oops .\n")
    with pytest.raises(StoreError, match=r"bad\.nt, line 41: not valid nt \(Parser error at line 41 "):
        build_store([bad], tmp_path / "store", piece_bytes=100)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("lead", [0, 40])
def test_blank_nodes_are_not_cut_apart(tmp_path, lead):
    """A blank-node label names one node within one parser call: from the first piece that holds a
    blank node (the first line, or after several pieces), the rest of the file goes in one call."""
    filler = "".join(f'<http://a/x{i}> <http://a/p> "{i}" .\n' for i in range(40))
    src = tmp_path / "blank.nt"
    before = "".join(f'<http://a/y{i}> <http://a/p> "{i}" .\n' for i in range(lead))
    src.write_text(before + '_:b <http://a/p> "first" .\n' + filler + '_:b <http://a/q> "last" .\n')
    info = build_store([src], tmp_path / "store", piece_bytes=100)
    rows = run_query(open_store(tmp_path / "store"),
                     'SELECT ?s WHERE { ?s <http://a/p> "first" . ?s <http://a/q> "last" }').rows
    assert len(rows) == 1
    assert info["triples"] == lead + 42


def test_a_piece_size_below_one_byte_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="piece_bytes must be at least 1 byte, not 0"):
        build_store([_nt(tmp_path / "kg.nt")], tmp_path / "store", piece_bytes=0)


def test_a_failed_rebuild_keeps_the_old_store(tmp_path):
    build_store([_nt(tmp_path / "kg.nt")], tmp_path / "store")
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <http://a/> .\n:x :p .\n")
    with pytest.raises(StoreError, match=r"bad\.ttl"):
        build_store([bad], tmp_path / "store")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert run_query(open_store(tmp_path / "store"), "ASK { ?s ?p ?o }").boolean is True


def test_reading_a_store_changes_no_file(tmp_path):
    build_store([_nt(tmp_path / "kg.nt")], tmp_path / "store")
    before = output_hash(tmp_path / "store")
    s = open_store(tmp_path / "store")
    run_query(s, sparql_from_docs())
    run_query(s, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    del s
    assert output_hash(tmp_path / "store") == before


# -- the command line ------------------------------------------------------------------------------


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    _nt(run / "export" / "kg.nt")
    return run


def _query_file(tmp_path: Path) -> Path:
    path = tmp_path / "genes-t2d.rq"
    path.write_text(sparql_from_docs(), encoding="utf-8")
    return path


def test_cli_load_then_query_every_format(tmp_path):
    run = _run_dir(tmp_path)
    r = runner.invoke(app, ["load", "--run-dir", str(run)])
    assert r.exit_code == 0, r.output
    assert "triples from kg.nt" in r.output and (run / "export" / "store" / "CURRENT").is_file()
    rq = _query_file(tmp_path)
    r = runner.invoke(app, ["query", "--run-dir", str(run), str(rq)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1] == "(2 rows)" and "TCF7L2" in r.stdout
    r = runner.invoke(app, ["query", "-r", str(run), str(rq), "--format", "json"])
    rows = {_key(*(b[c]["value"] for c in ("gene", "name", "predicate", "confidence", "evidence",
                                          "publications")))
            for b in json.loads(r.stdout)["results"]["bindings"]}
    assert rows == _rdflib_rows(run / "export" / "kg.nt", "nt")
    r = runner.invoke(app, ["query", "-r", str(run), "-", "-f", "csv"],
                      input="SELECT ?name WHERE { ?g a <https://w3id.org/biolink/vocab/Gene> ; "
                            "<http://www.w3.org/2000/01/rdf-schema#label> ?name } ORDER BY ?name")
    assert r.exit_code == 0 and r.stdout.split() == ["name", "AMPK", "KCNJ11", "TCF7L2"]


def test_cli_query_builds_a_missing_store_first(tmp_path):
    run = _run_dir(tmp_path)
    r = runner.invoke(app, ["query", "-r", str(run), "-", "-f", "tsv"], input="ASK { ?s ?p ?o }")
    assert r.exit_code == 0, r.output
    assert "no SPARQL store" in r.stderr and r.stdout == "boolean\ntrue\n"
    assert (run / "export" / "store" / "CURRENT").is_file()


def test_cli_errors(tmp_path):
    run = _run_dir(tmp_path)
    rq = _query_file(tmp_path)
    empty = tmp_path / "empty-run"
    empty.mkdir()
    for args in (["load", "-r", str(empty)], ["query", "-r", str(empty), str(rq)]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "run `graphmert export --run-dir" in r.stderr, r.output
        assert "Traceback" not in r.output
    assert not (empty / "export").exists()
    r = runner.invoke(app, ["query", "-r", str(run), "-"], input="SELECT ?x WHERE {")
    assert r.exit_code == 1 and "error: query: malformed SPARQL query: error at 1:" in r.stderr
    r = runner.invoke(app, ["query", "-r", str(run), "-"], input="DROP ALL")
    assert r.exit_code == 1 and "read-only" in r.stderr
    r = runner.invoke(app, ["query", "-r", str(run), str(tmp_path / "nope.rq")])
    assert r.exit_code == 2 and "nope.rq: cannot read the SPARQL file" in r.stderr
    r = runner.invoke(app, ["query", "-r", str(run), str(rq), "-f", "xml"])
    assert r.exit_code == 2 and "choose from ['table', 'csv', 'tsv', 'json']" in r.stderr
    assert "Traceback" not in r.output


# -- the export stage ------------------------------------------------------------------------------


def _fake_extract(run_dir: Path) -> None:
    ex = run_dir / "extract"
    ex.mkdir(parents=True)
    triples = make_triples()
    write_triples(triples[:3], ex / "triples-00000.parquet")
    write_triples(triples[3:], ex / "triples-00001.parquet")
    atomic_write_json(ex / "manifest.json", {"stage": "extract", "status": "ran", "triples": 6,
                                             "shards": ["triples-00000.parquet", "triples-00001.parquet"],
                                             "config_hash": "cafe0123", "output_hash": "o1"})


@pytest.mark.parametrize("formats,source", [("ttl,nt,store", "kg.nt"), ("nq,store", "kg.nq"),
                                            ("ttl,store", "kg.nt (temporary)")])
def test_export_stage_builds_the_store(tmp_path, formats, source):
    run = tmp_path / "run"
    _fake_extract(run)
    cfg = load_config(None, [f"export.formats=[{formats}]", "pipeline.scheduler=synchronous"])
    m = run_stage(EXPORT, cfg, run, quiet=True)
    folder = run / "export"
    expected = {f"kg.{f}" for f in formats.split(",") if f != "store"} | {"store", "manifest.json"}
    assert {p.name for p in folder.iterdir()} == expected          # no temporary N-Triples left
    assert m["files"][-1] == "store" and m["store"]["source"] == source
    ref = rdflib.Dataset(default_union=True)         # the stage's own RDF, as rdflib reads it
    for name, fmt in (("kg.nq", "nquads"), ("kg.nt", "nt"), ("kg.ttl", "turtle")):
        if (folder / name).is_file():
            ref.parse(folder / name, format=fmt)
            break
    n = sum(1 for _ in ref.quads((None, None, None, None)))
    assert m["store"]["triples"] == m["statements"]["store"] == n and m["store"]["load_seconds"] >= 0
    rows = {_key(*r) for r in run_query(open_store(folder / "store"), sparql_from_docs()).rows}
    assert len(rows) == 2 and rows == {_key(*r) for r in ref.query(sparql_from_docs())}
    assert run_stage(EXPORT, cfg, run, quiet=True)["status"] == "skipped"   # reading changed nothing


def test_load_keeps_the_export_stage_up_to_date(tmp_path):
    run = tmp_path / "run"
    _fake_extract(run)
    cfg = load_config(None, ["export.formats=[nt]", "pipeline.scheduler=synchronous"])
    run_stage(EXPORT, cfg, run, quiet=True)
    r = runner.invoke(app, ["load", "-r", str(run), "--quiet"])
    assert r.exit_code == 0 and r.stdout.strip() == str(run / "export" / "store")
    m = json.loads((run / "export" / "manifest.json").read_text())
    assert m["files"] == ["kg.nt", "store"] and m["store"]["source"] == "kg.nt"
    assert run_stage(EXPORT, cfg, run, quiet=True)["status"] == "skipped"


def test_store_is_a_default_export_format():
    assert "store" in check_formats(ExportConfig().formats)
    assert kgstore.STORE_DIR == "store"


# -- the demo run (trains the demo once per session, shared: tests/conftest.py) --------------------


def test_readme_query_on_the_demo_run_matches_rdflib(demo_run, tmp_path):
    run_dir, _ = demo_run
    assert (run_dir / "export" / "store" / "CURRENT").is_file()          # built by the export stage
    rq = _query_file(tmp_path)
    r = runner.invoke(app, ["query", "--run-dir", str(run_dir), str(rq), "--format", "json"])
    assert r.exit_code == 0, r.output
    cols = ("gene", "name", "predicate", "confidence", "evidence", "publications")
    got = {_key(*(b[c]["value"] for c in cols)) for b in json.loads(r.stdout)["results"]["bindings"]}
    assert got and got == _rdflib_rows(run_dir / "export" / "kg.nt", "nt")     # the store's source
    # kg.ttl: the same rows; rdflib's Turtle writer keeps 7 significant digits of a double
    ttl = _rdflib_rows(run_dir / "export" / "kg.ttl", "turtle")

    def order(rows):
        return sorted(rows, key=lambda k: (k[:3], k[3], sorted(k[4]), sorted(k[5])))

    assert len(ttl) == len(got)
    for a, b in zip(order(got), order(ttl)):
        assert a[:3] + a[4:] == b[:3] + b[4:] and math.isclose(a[3], b[3], rel_tol=1e-6)
    assert "Traceback" not in r.output
