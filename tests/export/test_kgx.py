"""KGX export: TSV tables load back with the seed-KG reader, JSON Lines round trip, unsafe text."""

from __future__ import annotations

import csv
import json

import pytest

from graphmert.config import ExportConfig
from graphmert.export.kgx import EDGE_COLUMNS, KGX_FILES, NODE_COLUMNS, read_kgx_jsonl, write_kgx
from graphmert.export.terms import ExportTerms
from graphmert.kg.tsv import read_kgx_tsv

from .helpers import HOSTILE_TEXT, RUN, hostile_triples, make_triples


def _export(folder, triples, shards=2, **cfg):
    k = max(1, -(-len(triples) // shards))
    return write_kgx([triples[i:i + k] for i in range(0, len(triples), k)], folder,
                     ExportTerms(ExportConfig(**cfg)), RUN)


def _tsv_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_tsv_loads_back_with_the_seed_kg_reader(tmp_path):
    triples = make_triples()
    counts = _export(tmp_path, triples)
    assert counts == {"nodes": 8, "edges": len(triples)}
    kg = read_kgx_tsv([tmp_path / KGX_FILES["nodes_tsv"]], [tmp_path / KGX_FILES["edges_tsv"]])
    assert len(kg.nodes) == 8 and len(kg.edges) == len(triples) and kg.duplicate_edges == 0
    assert kg.nodes["MESH:D003924"].name == "type 2 diabetes"
    assert kg.nodes["MESH:D003924"].category == "biolink:Disease"
    assert kg.nodes["MESH:D008687"].category == "biolink:ChemicalEntity"     # "Chemical" mapped
    minted = [n for n in kg.nodes if n.startswith("graphmert:entity/name-")]
    assert len(minted) == 2 and all(kg.nodes[n].category == "biolink:NamedThing" for n in minted)
    e = next(e for e in kg.edges if e.subject == "NCBIGene:6934")
    assert (e.predicate, e.object) == ("biolink:associated_with", "MESH:D003924")
    lexicon = next(e for e in kg.edges if e.subject == "MESH:D008687" and e.predicate == "biolink:treats")
    # every edge is a model's prediction, whether the text names the tail (e) or not (lexicon)
    assert e.provenance["knowledge_level"] == lexicon.provenance["knowledge_level"] == "prediction"
    assert "object_direction_qualifier" not in e.provenance         # an empty TSV cell: no qualifier
    assert e.provenance["agent_type"] == "text_mining_agent"
    assert e.provenance["primary_knowledge_source"] == "infores:graphmert"
    assert e.provenance["publications"].split("|") == [
        "PMID:12345678", "https://w3id.org/graphmert/document/demo%3A002"]
    assert float(e.provenance["has_confidence_score"]) == 0.91
    assert e.provenance["evidence_count"] == "2"
    assert len(e.provenance["supporting_text"].split("|")) == 2
    assert e.provenance["id"].startswith("graphmert:association/")
    rows = _tsv_rows(tmp_path / KGX_FILES["edges_tsv"])
    assert tuple(rows[0]) == EDGE_COLUMNS and all(len(r) == len(EDGE_COLUMNS) for r in rows)
    assert tuple(_tsv_rows(tmp_path / KGX_FILES["nodes_tsv"])[0]) == NODE_COLUMNS


def test_jsonl_round_trip(tmp_path):
    triples = make_triples()
    _export(tmp_path, triples, shards=3)
    nodes = list(read_kgx_jsonl(tmp_path / KGX_FILES["nodes_jsonl"]))
    edges = list(read_kgx_jsonl(tmp_path / KGX_FILES["edges_jsonl"]))
    assert len(nodes) == 8 and [n["id"] for n in nodes] == sorted(n["id"] for n in nodes)
    assert len(edges) == len(triples)
    assert {e["original_predicate"] for e in edges} == {t.relation for t in triples}
    up = next(e for e in edges if e["original_predicate"] == "upregulates")
    assert up["predicate"] == "biolink:affects" and up["subject"] == "MESH:D008687"
    assert (up["qualified_predicate"], up["object_aspect_qualifier"], up["object_direction_qualifier"]) \
        == ("biolink:causes", "activity_or_abundance", "increased")
    assert up["object"] == "NCBIGene:5562" and up["has_confidence_score"] == 0.6
    assert up["publications"] == ["PMID:34567890"] and up["supporting_text"] == [
        "Metformin activates AMPK in hepatocytes."]
    # JSON lines carry the qualifiers only where they apply; every other column always
    quals = {"qualified_predicate", "object_aspect_qualifier", "object_direction_qualifier"}
    assert all(set(EDGE_COLUMNS) - quals <= set(e) <= set(EDGE_COLUMNS) for e in edges)
    assert [e["original_predicate"] for e in edges if quals <= set(e)] == ["upregulates"]
    assert all(isinstance(n["category"], list) for n in nodes)
    # the TSV and JSON Lines describe the same edges
    tsv = {r[0]: r for r in _tsv_rows(tmp_path / KGX_FILES["edges_tsv"])[1:]}
    assert set(tsv) == {e["id"] for e in edges}
    for e in edges:
        row = dict(zip(EDGE_COLUMNS, tsv[e["id"]]))
        assert all(row[q] == e.get(q, "") for q in quals), e["id"]
    # edge ids are the RDF association IRIs
    assert all(e["id"].startswith("graphmert:association/") for e in edges)


def test_formats_can_be_written_separately(tmp_path):
    write_kgx([make_triples()], tmp_path, ExportTerms(ExportConfig()), RUN, tsv=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kg_edges.jsonl", "kg_nodes.jsonl"]


def test_unsafe_text_keeps_tsv_rows_intact(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    triples = hostile_triples()
    counts = _export(out, triples)
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["out", *KGX_FILES.values()])
    for name, cols in (("edges_tsv", EDGE_COLUMNS), ("nodes_tsv", NODE_COLUMNS)):
        rows = _tsv_rows(out / KGX_FILES[name])
        assert all(len(r) == len(cols) for r in rows), name
    edges = _tsv_rows(out / KGX_FILES["edges_tsv"])[1:]
    assert len(edges) == counts["edges"] == len(triples)
    texts = edges[0][EDGE_COLUMNS.index("supporting_text")].split("|")
    assert len(texts) == 2 and "\u00a6" in texts[0] and "\n" not in texts[0] and "\x00" not in texts[0]
    jl = list(read_kgx_jsonl(out / KGX_FILES["edges_jsonl"]))
    assert jl[0]["supporting_text"][0] == HOSTILE_TEXT.replace("\x00", "").replace("\x07", "") \
        .replace("\x1b", "").replace("\x7f", "").replace("\x85", "").strip()
    ids = [r[0] for r in _tsv_rows(out / KGX_FILES["nodes_tsv"])[1:]]
    assert all(" " not in i and "/../" not in i for i in ids)
    kg = read_kgx_tsv([out / KGX_FILES["nodes_tsv"]], [out / KGX_FILES["edges_tsv"]])
    assert len(kg.edges) == len(triples)


def test_bad_jsonl_line_names_file_and_line(tmp_path):
    p = tmp_path / "kg_edges.jsonl"
    p.write_text(json.dumps({"id": "a"}) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"kg_edges.jsonl: line 2: not JSON"):
        list(read_kgx_jsonl(p))
    p.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: expected a JSON object"):
        list(read_kgx_jsonl(p))


def test_entity_xrefs_are_written_on_the_nodes(tmp_path):
    """RunInfo.xrefs (a linked mention's other ids): the KGX ``xref`` of the node in both forms, and
    ``biolink:xref`` in RDF; nodes without any have none."""
    from dataclasses import replace

    from graphmert.export.rdf import triple_statements
    from graphmert.export.terms import BIOLINK

    from .biolink_kgx import validate_folder

    run = replace(RUN, xrefs={"MESH:D003924": ("DOID:9352", "UMLS:C0011860")})
    triples = make_triples()
    write_kgx([triples], tmp_path, ExportTerms(ExportConfig()), run)
    nodes = {n["id"]: n for n in read_kgx_jsonl(tmp_path / KGX_FILES["nodes_jsonl"])}
    assert nodes["MESH:D003924"]["xref"] == ["DOID:9352", "UMLS:C0011860"]
    assert [i for i, n in nodes.items() if "xref" in n] == ["MESH:D003924"]
    rows = {r[0]: dict(zip(NODE_COLUMNS, r)) for r in _tsv_rows(tmp_path / KGX_FILES["nodes_tsv"])[1:]}
    assert rows["MESH:D003924"]["xref"] == "DOID:9352|UMLS:C0011860"
    assert all(r["xref"] == "" for i, r in rows.items() if i != "MESH:D003924")
    assert validate_folder(tmp_path, {"graphmert": ExportConfig().namespace}) == []
    t = next(t for t in triples if "MESH:D003924" in (t.head_id, t.tail_id))
    terms, xref = ExportTerms(ExportConfig()), str(BIOLINK.xref)
    assert [o.value for _, p, o in triple_statements(t, terms, run)[1] if p == xref] == ["DOID:9352", "UMLS:C0011860"]
    assert not [p for _, p, _ in triple_statements(t, terms, RUN)[1] if p == xref]
