"""The explorer's index (graphmert/export/explorer.py), without a server: search order, an entity's
triples in both directions, highlight offsets, filters, neighbour links and the TSV view."""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import replace

import pytest

from graphmert.config import ExportConfig
from graphmert.export.explorer import VIEW_COLUMNS, ExplorerError, ExplorerIndex, write_view_tsv
from graphmert.export.kgx import kgx_edge, kgx_nodes
from graphmert.export.report import highlight_evidence
from graphmert.export.terms import ExportTerms
from graphmert.extract.triples import Evidence, sentence_spans

from .helpers import RUN, ev, make_triples


@pytest.fixture(scope="module")
def index() -> ExplorerIndex:
    return ExplorerIndex.from_triples(make_triples())


def test_entities_have_the_export_curies_names_and_degrees(index):
    terms = ExportTerms(ExportConfig())
    nodes = {n["id"]: n for t in make_triples() for n in kgx_nodes(t, terms)}
    assert {e.curie for e in index.entities.values()} == set(nodes)
    t2d = index.entity("MESH:D003924")
    assert (t2d.name, t2d.category, t2d.degree) == ("type 2 diabetes", "biolink:Disease", 3)
    assert t2d.iri == "http://id.nlm.nih.gov/mesh/D003924"
    assert index.entity("MESH:D008687").degree == 3                    # metformin: 3 triples
    minted = index.entity("name:insulin resistance")                    # no id: looked up by key
    assert minted.curie.startswith("graphmert:entity/name-") and minted.name == "Insulin resistance"
    assert index.entity(minted.curie) == minted
    assert index.entity("mesh:d003924") == t2d                          # CURIE case-insensitive
    assert index.entity("MESH:D000000") is None


def test_search_by_name_is_case_insensitive_substring(index):
    assert [e.curie for e in index.search("Type 2 DIABETES")] == ["MESH:D003924"]
    assert [e.name for e in index.search("  beta   CELL ")] == ["beta cell failure"]
    assert index.search("no such thing") == []


def test_search_by_curie_exact_first_then_prefix_by_degree(index):
    assert [e.curie for e in index.search("ncbigene:3767")] == ["NCBIGene:3767"]
    genes = [e.curie for e in index.search("NCBIGene:")]
    assert set(genes) == {"NCBIGene:6934", "NCBIGene:3767", "NCBIGene:5562"}
    # an exact CURIE beats the names and CURIEs that merely contain it
    mesh = [e.curie for e in index.search("MESH:D008687")]
    assert mesh[0] == "MESH:D008687"
    # prefix matches rank by degree (metformin and type 2 diabetes: 3 triples each, then by name)
    assert [e.curie for e in index.search("mesh:")] == ["MESH:D008687", "MESH:D003924",
                                                        "MESH:C000000"]
    ranked = index.search("mesh:")
    assert [e.degree for e in ranked] == sorted((e.degree for e in ranked), reverse=True)
    assert len(index.search("mesh:", limit=2)) == 2


def test_search_tiers_exact_name_before_prefix_before_substring():
    base = make_triples()[0]
    triples = [replace(base, head_id="NCBIGene:1", head_name="AMPK"),
               replace(base, head_id="NCBIGene:2", head_name="AMPK alpha", tail_id="MESH:D9"),
               replace(base, head_id="NCBIGene:3", head_name="anti-AMPK", tail_id="MESH:D8"),
               replace(base, head_id="NCBIGene:3", head_name="anti-AMPK", tail_id="MESH:D7")]
    idx = ExplorerIndex.from_triples(triples)
    assert idx.entity("NCBIGene:3").degree == 2
    # exact name, then prefix, then substring, even though the substring match is best connected
    assert [e.curie for e in idx.search("ampk")] == ["NCBIGene:1", "NCBIGene:2", "NCBIGene:3"]
    assert [e.curie for e in idx.search("")][0] == "NCBIGene:3"            # empty: best connected


def test_entity_triples_in_both_directions_with_neighbours(index):
    out = index.edges("MESH:D008687")                                    # metformin
    assert [(e.direction, e.relation, e.neighbour.name) for e in out] == [
        ("out", "treats", "type 2 diabetes"), ("out", "upregulates", "AMPK"),
        ("out", "Comparison_x", "sitagliptin")]                            # best confidence first
    inward = index.edges("MESH:D003924")
    assert {(e.direction, e.neighbour.curie) for e in inward} == {
        ("in", "NCBIGene:6934"), ("in", "NCBIGene:3767"), ("in", "MESH:D008687")}
    # every neighbour link leads to an entity whose own view links back
    for e in inward:
        back = index.edges(e.neighbour.curie)
        assert any(b.neighbour.curie == "MESH:D003924" and b.direction == "out" for b in back)
    tcf = next(e for e in inward if e.subject.name == "TCF7L2")
    assert (tcf.predicate, tcf.evidence_count, tcf.documents) == (
        "biolink:associated_with", 2, ["12345678", "demo:002"])
    assert tcf.publications == ["PMID:12345678", "https://w3id.org/graphmert/document/demo%3A002"]
    assert [e.predicate for e in out] == ["biolink:treats", "biolink:affects", "biolink:related_to"]
    assert out[0].stated is False and out[1].stated is True            # a lexicon tail: predicted


def test_highlight_offsets_are_the_substring_positions(index):
    seen = 0
    for t in make_triples():
        for edge in index.edges(index.entity(t.head_id or "name:" + t.head_name.lower()).curie):
            for v in edge.evidence:
                s = v.sentence
                head = edge.subject.name.lower()
                assert v.head == (s.lower().index(head), s.lower().index(head) + len(head))
                if v.tail is not None:
                    tail = edge.object.name.lower()
                    assert v.tail == (s.lower().index(tail), s.lower().index(tail) + len(tail))
                    seen += 1
                joined = "".join(p["text"] for p in v.segments())
                assert joined == s
                marks = {p["mark"]: p["text"] for p in v.segments() if p["mark"]}
                assert marks["head"].lower() == head
                seen += 1
    assert seen > 10


def test_sentence_spans_drop_absent_outside_and_overlapping_spans():
    e = ev("d", "Variants in TCF7L2 raise risk.", "TCF7L2", "Variants", offset=40)
    assert sentence_spans(e) == ((12, 18), (0, 8))
    assert sentence_spans(replace(e, tail_start=-1, tail_end=-1)) == ((12, 18), None)
    assert sentence_spans(replace(e, tail_start=50, tail_end=60)) == ((12, 18), None)  # overlaps head
    assert sentence_spans(replace(e, head_start=10, head_end=20)) == (None, (0, 8))    # before sentence
    assert sentence_spans(replace(e, tail_start=60, tail_end=99)) == ((12, 18), None)  # past its end
    emoji = Evidence(doc_id="d", chunk_id="c", sentence="🧬 TCF7L2 x", sentence_start=0,   # code points
                     head_start=2, head_end=8, tail_start=9, tail_end=10)
    assert sentence_spans(emoji) == ((2, 8), (9, 10))


def test_filters_by_relation_and_minimum_confidence(index):
    assert [e.relation for e in index.edges("MESH:D008687", relations=["treats", "upregulates"])] \
        == ["treats", "upregulates"]
    assert [e.confidence for e in index.edges("MESH:D008687", min_confidence=0.6)] == [0.88, 0.6]
    assert index.edges("MESH:D008687", relations=["causes"]) == []
    assert len(index.edges(None)) == 6 and len(index.edges(None, min_confidence=0.8)) == 2
    with pytest.raises(ExplorerError, match="'nope' is not a relation"):
        index.edges("MESH:D008687", relations=["nope"])
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ExplorerError, match="min_confidence"):
            index.edges("MESH:D008687", min_confidence=bad)
    with pytest.raises(ExplorerError, match="no entity"):
        index.edges("MESH:D000000")


def test_evidence_limit_and_duplicate_sentences():
    t = make_triples()[0]
    t = replace(t, evidence=t.evidence + [replace(t.evidence[0], chunk_id="c1")])   # overlapping chunk
    idx = ExplorerIndex.from_triples([t])
    views = idx.edges("NCBIGene:6934")[0].evidence
    assert [v.confidence for v in views] == [0.91, 0.79]                 # best first, shown once
    assert len(idx.edges("NCBIGene:6934", max_evidence=1)[0].evidence) == 1
    assert idx.edges("NCBIGene:6934", max_evidence=0)[0].evidence == []


def test_relations_list_predicates_and_counts(index):
    rels = {r["relation"]: (r["predicate"], r["triples"]) for r in index.relations()}
    assert rels["associated_with"] == ("biolink:associated_with", 2)
    assert rels["Comparison_x"] == ("biolink:related_to", 1)
    assert index.relations()[0]["relation"] == "associated_with"


def test_tsv_view_round_trips_and_matches_the_kgx_edges(index):
    buf = io.StringIO()
    n = write_view_tsv(index.edges("MESH:D003924"), buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue()), delimiter="\t"))
    assert n == len(rows) == 3 and tuple(rows[0]) == VIEW_COLUMNS
    terms = ExportTerms(ExportConfig())
    kgx = {(k["subject"], k["predicate"], k["object"]): k
           for k in (kgx_edge(t, terms, RUN) for t in make_triples())}
    for r in rows:
        k = kgx[(r["subject"], r["predicate"], r["object"])]            # same CURIEs as the export
        assert float(r["confidence"]) == k["has_confidence_score"]
        assert int(r["evidence_count"]) == k["evidence_count"]
        assert r["publications"].split("|") == k["publications"]
        assert r["object_name"] == "type 2 diabetes"


def test_tsv_cells_never_break_rows():
    t = replace(make_triples()[0], head_name="bad\tname\nwith breaks")
    buf = io.StringIO()
    write_view_tsv(ExplorerIndex.from_triples([t]).edges(None), buf)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and all(len(x.split("\t")) == len(VIEW_COLUMNS) for x in lines)
    assert lines[1].split("\t")[1] == "bad name with breaks"


def test_config_changes_the_predicates_and_curies():
    cfg = ExportConfig(predicate_map={"treats": "biolink:ameliorates_condition"},
                       namespace="https://example.org/kg/")
    idx = ExplorerIndex.from_triples(make_triples(), cfg)
    assert idx.edges("MESH:D008687", relations=["treats"])[0].predicate == \
        "biolink:ameliorates_condition"
    assert idx.entity("name:insulin resistance").iri.startswith("https://example.org/kg/entity/")


def test_spans_are_the_ones_the_report_marks():
    """The HTML report (report.highlight_evidence) marks exactly the spans sentence_spans gives (the
    explorer's), through its HTML escaping."""
    events = [e for t in make_triples() for e in t.evidence]
    events += [replace(events[0], tail_start=events[0].head_start, tail_end=events[0].head_end + 2),
               replace(events[0], head_start=-1, head_end=-1)]
    for e in events:
        marked = {m: html.unescape(x) for m, x in
                  re.findall(r'<mark class="(head|tail)">(.*?)</mark>', highlight_evidence(e))}
        head, tail = sentence_spans(e)
        mine = {m: e.sentence[s[0]:s[1]] for m, s in (("head", head), ("tail", tail)) if s}
        assert mine == marked
