"""RDF export: round trips through rdflib, streamed = in-memory, golden Turtle, unsafe input, SPARQL."""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path

import pytest
import rdflib
from rdflib import Literal, URIRef
from rdflib.namespace import PROV, RDF, RDFS
XSD = "http://www.w3.org/2001/XMLSchema#"

from graphmert.config import ExportConfig
from graphmert.export.rdf import build_graph, nt_line, triple_statements, write_ntriples, write_rdf
from graphmert.export.terms import BIOLINK, GRAPHMERT, ExportTerms, clean_text

from .helpers import HOSTILE_TEXT, RUN, hostile_triples, make_triples, sparql_from_docs

# rdflib's own TriG / N-Quads code calls its deprecated Dataset API
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib")

GOLDEN = Path(__file__).parent / "data" / "golden_small.ttl"
PARSERS = {"ttl": "turtle", "jsonld": "json-ld", "nt": "nt"}


def _write(fmt: str, triples, path: Path, cfg: ExportConfig | None = None, shards: int = 1) -> int:
    terms = ExportTerms(cfg or ExportConfig())
    if fmt in ("nt", "nq"):
        k = max(1, -(-len(triples) // shards))
        return write_ntriples([triples[i:i + k] for i in range(0, len(triples), k)], path, terms, RUN,
                              quads=fmt == "nq")
    return write_rdf(triples, path, fmt, terms, RUN)


def _parse(path: Path, fmt: str) -> rdflib.Graph:
    return rdflib.Graph().parse(path, format=PARSERS[fmt])


@pytest.mark.parametrize("fmt", ["ttl", "nt", "jsonld"])
def test_round_trip_counts(tmp_path, fmt):
    triples = make_triples()
    n = _write(fmt, triples, tmp_path / f"kg.{fmt}")
    g = _parse(tmp_path / f"kg.{fmt}", fmt)
    assert len(g) == n
    assocs = set(g.subjects(RDF.type, BIOLINK.Association))
    assert len(assocs) == len(triples)
    # every triple asserted directly, and its association points at the same three terms
    for a in assocs:
        s, p, o = g.value(a, BIOLINK.subject), g.value(a, BIOLINK.predicate), g.value(a, BIOLINK.object)
        assert (s, p, o) in g
        assert g.value(a, BIOLINK.has_confidence_score).datatype == URIRef(XSD + "double")
        assert g.value(a, BIOLINK.evidence_count).datatype == URIRef(XSD + "integer")
        assert g.value(a, PROV.wasGeneratedBy) == URIRef("https://w3id.org/graphmert/run/run-1")
    by_rel = {str(g.value(a, GRAPHMERT.relation)): a for a in assocs}
    tcf7l2 = URIRef("http://identifiers.org/ncbigene/6934")
    tcf = next(a for a in assocs if g.value(a, BIOLINK.subject) == tcf7l2)
    assert g.value(tcf, BIOLINK.has_confidence_score).toPython() == pytest.approx(0.91)
    assert int(g.value(tcf, BIOLINK.evidence_count)) == 2
    assert len(set(g.objects(tcf, BIOLINK.supporting_text))) == 2
    assert set(g.objects(tcf, BIOLINK.publications)) == {
        URIRef("http://www.ncbi.nlm.nih.gov/pubmed/12345678"),
        URIRef("https://w3id.org/graphmert/document/demo%3A002")}
    assert g.value(by_rel["upregulates"], BIOLINK.predicate) == BIOLINK.affects
    assert g.value(by_rel["Comparison_x"], BIOLINK.predicate) == BIOLINK.related_to
    # entities: 8 distinct, each typed and labelled; minted ones too
    entities = set(g.subjects(RDFS.label, None))
    assert len(entities) == 8
    assert (URIRef("http://id.nlm.nih.gov/mesh/D008687"), RDF.type, BIOLINK.ChemicalEntity) in g
    assert (URIRef("http://identifiers.org/ncbigene/5562"), RDF.type, BIOLINK.Gene) in g
    # the run activity
    run = URIRef("https://w3id.org/graphmert/run/run-1")
    assert (run, RDF.type, PROV.Activity) in g
    assert str(g.value(run, GRAPHMERT.checkpoint)) == "ckpt-a"
    assert str(g.value(run, GRAPHMERT.configHash)) == RUN.config_hash
    assert str(g.value(run, GRAPHMERT.softwareVersion)) == "0.1.0"
    assert g.value(run, PROV.startedAtTime).datatype == URIRef(XSD + "dateTime")


def test_streamed_ntriples_equal_the_in_memory_graph(tmp_path):
    triples = make_triples()
    ref = build_graph(triples, ExportTerms(ExportConfig()), RUN)
    for shards in (1, 2, 6):
        path = tmp_path / f"kg-{shards}.nt"
        lines = _write("nt", triples, path, shards=shards)
        g = _parse(path, "nt")
        assert set(g) == set(ref), f"{shards} shards"
        assert lines == len(path.read_text(encoding="utf-8").splitlines())
        assert lines >= len(ref)          # descriptions repeat once per shard, nothing is lost
    one = (tmp_path / "kg-1.nt").read_text(encoding="utf-8").splitlines()
    assert len(one) == len(set(one)) == len(ref)


def test_an_entity_with_two_names_keeps_both_when_streamed(tmp_path):
    triples = make_triples()
    triples[1].tail_name = "T2D"                       # MESH:D003924 named differently
    ref = build_graph(triples, ExportTerms(ExportConfig()), RUN)
    _write("nt", triples, tmp_path / "kg.nt", shards=2)
    g = _parse(tmp_path / "kg.nt", "nt")
    assert set(g) == set(ref)
    labels = set(g.objects(URIRef("http://id.nlm.nih.gov/mesh/D003924"), RDFS.label))
    assert labels == {Literal("type 2 diabetes"), Literal("T2D")}


def test_shard_outputs_concatenate(tmp_path):
    triples = make_triples()
    parts = []
    for i, chunk in enumerate((triples[:3], triples[3:])):
        _write("nt", chunk, tmp_path / f"part{i}.nt")
        parts.append((tmp_path / f"part{i}.nt").read_text(encoding="utf-8"))
    (tmp_path / "cat.nt").write_text("".join(parts), encoding="utf-8")
    _write("nt", triples, tmp_path / "all.nt", shards=2)
    assert set(_parse(tmp_path / "cat.nt", "nt")) == set(_parse(tmp_path / "all.nt", "nt"))


def test_named_graph_per_run(tmp_path):
    triples = make_triples()
    other = [t for t in make_triples()[:2]]
    for t in other:
        t.run_id = "run-2"
    _write("trig", triples + other, tmp_path / "kg.trig")
    _write("nq", triples + other, tmp_path / "kg.nq", shards=3)
    for path, fmt in ((tmp_path / "kg.trig", "trig"), (tmp_path / "kg.nq", "nquads")):
        ds = rdflib.Dataset()
        ds.parse(path, format=fmt)
        names = {str(g.identifier) for g in ds.graphs() if len(g)}
        assert names == {"https://w3id.org/graphmert/graph/run-1", "https://w3id.org/graphmert/graph/run-2"}
        g2 = ds.graph(URIRef("https://w3id.org/graphmert/graph/run-2"))
        assert len(set(g2.subjects(RDF.type, BIOLINK.Association))) == 2
        g1 = ds.graph(URIRef("https://w3id.org/graphmert/graph/run-1"))
        assert len(set(g1.subjects(RDF.type, BIOLINK.Association))) == len(triples)
    # the same triple in two runs: two associations, one direct statement
    terms = ExportTerms(ExportConfig())
    (_, a), (_, b) = (triple_statements(t, terms, RUN) for t in (triples[0], other[0]))
    assert a[1][0] != b[1][0] and a[0] == b[0]


def test_output_is_deterministic_and_order_only_changes_the_layout(tmp_path):
    triples = make_triples()
    shuffled = triples[:]
    random.Random(3).shuffle(shuffled)
    for fmt in ("ttl", "jsonld"):
        _write(fmt, triples, tmp_path / f"a.{fmt}")
        _write(fmt, triples, tmp_path / f"again.{fmt}")
        _write(fmt, shuffled, tmp_path / f"b.{fmt}")
        assert (tmp_path / f"a.{fmt}").read_bytes() == (tmp_path / f"again.{fmt}").read_bytes(), fmt
        assert set(_parse(tmp_path / f"a.{fmt}", fmt)) == set(_parse(tmp_path / f"b.{fmt}", fmt)), fmt
    ctx = json.loads((tmp_path / "a.jsonld").read_text(encoding="utf-8"))["@context"]
    assert ctx["biolink"] == "https://w3id.org/biolink/vocab/"
    assert ctx["MESH"] == "http://id.nlm.nih.gov/mesh/"


@pytest.mark.parametrize("fmt", ["ttl", "jsonld", "trig"])
def test_streamed_formats_equal_the_in_memory_graph(tmp_path, fmt):
    """Each statement of build_graph once: descriptions are not repeated, nothing is lost, also
    when an entity has two names, a run two checkpoints, and when ids are read ahead instead of the
    triples twice."""
    triples = make_triples()
    triples[1].tail_name = "T2D"
    triples[2].checkpoint_id = "ckpt-b"
    ref = build_graph(triples, ExportTerms(ExportConfig()), RUN)
    ids = [i for t in triples for i in (t.head_id, t.tail_id)]
    n = write_rdf(iter(triples), tmp_path / f"kg.{fmt}", fmt, ExportTerms(ExportConfig()), RUN, ids=ids)
    if fmt == "trig":
        ds = rdflib.Dataset()
        ds.parse(tmp_path / "kg.trig", format="trig")
        got = {q[:3] for q in ds.quads((None, None, None, None))}
    else:
        got = set(_parse(tmp_path / f"kg.{fmt}", fmt))
    assert got == set(ref) and n == len(ref)
    text = (tmp_path / f"kg.{fmt}").read_text(encoding="utf-8")
    assert "NCBIGene" in text and "MESH" in text           # the entities' prefixes are declared
    with pytest.raises(TypeError, match="ids"):
        write_rdf(iter(triples), tmp_path / "x.ttl", "ttl", ExportTerms(ExportConfig()), RUN)
    assert not (tmp_path / "x.ttl").exists()


def test_write_rdf_streams(tmp_path):
    """The file is written while the triples are still being drawn: it never waits for them all."""
    base = make_triples()
    sizes = []

    def triples():
        for k in range(60):
            for t in base:
                t = copy.deepcopy(t)
                t.head_id, t.head_name = "", f"{t.head_name} {k}"
                yield t
        sizes.append(max(p.stat().st_size for p in tmp_path.iterdir()))

    n = write_rdf(triples(), tmp_path / "kg.ttl", "ttl", ExportTerms(ExportConfig()), RUN, ids=[])
    final = (tmp_path / "kg.ttl").stat().st_size
    assert n > 1000 and sizes and sizes[0] > final // 2


def test_golden_turtle(tmp_path):
    """Pins the Turtle of the fixed input. Regenerate after an intended change with
    GRAPHMERT_UPDATE_GOLDEN=1 pytest tests/export/test_rdf.py -k golden (and review the diff)."""
    _write("ttl", make_triples(), tmp_path / "kg.ttl")
    text = (tmp_path / "kg.ttl").read_text(encoding="utf-8")
    if os.environ.get("GRAPHMERT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
        pytest.skip("golden file rewritten")
    assert text == GOLDEN.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["ttl", "nt", "jsonld", "trig", "nq"])
def test_unsafe_input_stays_valid_and_inside_the_folder(tmp_path, fmt):
    out = tmp_path / "out"
    out.mkdir()
    triples = hostile_triples()
    _write(fmt, triples, out / f"kg.{fmt}", shards=2)
    assert [p.name for p in tmp_path.rglob("*")] == ["out", f"kg.{fmt}"]
    if fmt in ("trig", "nq"):
        ds = rdflib.Dataset()
        ds.parse(out / f"kg.{fmt}", format="trig" if fmt == "trig" else "nquads")
        g = rdflib.Graph()
        for quad in ds.quads((None, None, None, None)):
            g.add(quad[:3])
    else:
        g = _parse(out / f"kg.{fmt}", fmt)
    assert len(set(g.subjects(RDF.type, BIOLINK.Association))) == len(triples)
    texts = {str(o) for o in g.objects(None, BIOLINK.supporting_text)}
    assert clean_text(HOSTILE_TEXT).strip() in texts          # quotes, \, newlines, <>, é 中文 🧬 intact
    assert not any(ch in t for t in texts for ch in "\x00\x07\x1b\x7f\x85")
    labels = {str(o) for o in g.objects(None, RDFS.label)}
    assert 'Name "quoted" <b>\\' in labels and "tailname" in labels
    assert {str(o) for o in g.objects(None, GRAPHMERT.relation)} >= {'rel"<>\nx'}
    for s, p, o in g:
        for term in (s, p, o):
            if isinstance(term, URIRef):
                assert " " not in term and "/../" not in term and "<" not in term, term


def test_nt_writer_refuses_unsafe_iris():
    assert nt_line(("http://a/b", "http://a/p", "http://a/o")) == "<http://a/b> <http://a/p> <http://a/o> .\n"
    for bad in ("http://a/b c", "http://a/<b>", 'http://a/"', "relative", "http://a/\n"):
        with pytest.raises(ValueError, match="unsafe IRI"):
            nt_line((bad, "http://a/p", "http://a/o"))


def test_supporting_text_is_capped_and_distinct(tmp_path):
    t = make_triples()[0]
    t.evidence = t.evidence + t.evidence + [t.evidence[0]]
    stmts = triple_statements(t, ExportTerms(ExportConfig(max_supporting_text=5)), RUN)[1]
    assert sum(p == str(BIOLINK.supporting_text) for _, p, _ in stmts) == 2
    stmts = triple_statements(t, ExportTerms(ExportConfig(max_supporting_text=1)), RUN)[1]
    assert sum(p == str(BIOLINK.supporting_text) for _, p, _ in stmts) == 1


def test_readme_sparql_query_returns_the_t2d_genes(tmp_path):
    _write("ttl", make_triples(), tmp_path / "kg.ttl")
    g = _parse(tmp_path / "kg.ttl", "ttl")
    rows = list(g.query(sparql_from_docs()))
    assert [str(r.name) for r in rows] == ["TCF7L2", "KCNJ11"]            # by confidence
    assert [float(r.confidence) for r in rows] == [0.91, 0.75]
    assert all(r.predicate == BIOLINK.associated_with for r in rows)
    tcf = rows[0]
    assert "TCF7L2 is associated with type 2 diabetes in Europeans." in str(tcf.evidence)
    assert "Variants in TCF7L2 raise the risk of type 2 diabetes." in str(tcf.evidence)
    assert set(str(tcf.publications).split()) == {"http://www.ncbi.nlm.nih.gov/pubmed/12345678",
                                                  "https://w3id.org/graphmert/document/demo%3A002"}
    # the same query over the N-Triples export gives the same rows
    _write("nt", make_triples(), tmp_path / "kg.nt", shards=3)
    rows_nt = list(_parse(tmp_path / "kg.nt", "nt").query(sparql_from_docs()))
    def key(rs):
        return [(str(r.gene), float(r.confidence)) for r in rs]

    assert key(rows_nt) == key(rows)


def test_literal_types():
    t = make_triples()[0]
    t.confidence = float("nan")
    stmts = triple_statements(t, ExportTerms(ExportConfig()), RUN)[1]
    conf = [o for _, p, o in stmts if p == str(BIOLINK.has_confidence_score)][0]
    assert conf.value == "NaN" and conf.datatype == str(URIRef(XSD + "double"))
    t.confidence = 1e-5
    stmts = triple_statements(t, ExportTerms(ExportConfig()), RUN)[1]
    conf = [o for _, p, o in stmts if p == str(BIOLINK.has_confidence_score)][0]
    assert Literal(conf.value, datatype=URIRef(XSD + "double")).toPython() == 1e-5
