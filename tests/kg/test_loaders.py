"""Seed-KG readers: KGX TSV (plain, gzipped), RDF (Turtle, N-Triples), the shared folder layout,
format resolution, and bad-input errors that name the file, the line and the problem."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from graphmert.config import ConfigError, build
from graphmert.kg.graph import KGError, load_relation_map, save_relation_map
from graphmert.kg.loaders import load_kg, resolve_format

SHARED_KG = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets" / "seed_kg_hetionet_disgenet_mesh"

NODES = (
    "id\tname\tcategory\tsynonyms\n"
    "MESH:D003924\tType 2 diabetes mellitus\tbiolink:Disease\tT2DM|NIDDM\n"
    "MESH:D008687\tMetformin\tbiolink:ChemicalEntity\t\n"
    "NCBIGene:3630\tINS\tbiolink:Gene\tinsulin\n"
)
EDGES = (
    "subject\tpredicate\tobject\tprimary_knowledge_source\tpublications\n"
    "MESH:D008687\ttreats\tMESH:D003924\tinfores:ctd\tPMID:1|PMID:2\n"
    "NCBIGene:3630\tassociated_with\tMESH:D003924\t\t\n"
    "MESH:D008687\ttreats\tMESH:D003924\tinfores:other\t\n"
)


def write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def kg_cfg(**kw):
    return build({"kg": kw}).kg


@pytest.mark.parametrize("suffix", [".tsv", ".tsv.gz"])
def test_kgx_tsv(tmp_path, suffix):
    n = write(tmp_path / f"nodes{suffix}", NODES)
    e = write(tmp_path / f"edges{suffix}", EDGES)
    kg = load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    assert len(kg.nodes) == 3 and len(kg.edges) == 2 and kg.duplicate_edges == 1
    t2d = kg.nodes["MESH:D003924"]
    assert t2d.name == "Type 2 diabetes mellitus" and t2d.category == "biolink:Disease"
    assert t2d.synonyms == ("T2DM", "NIDDM")
    assert kg.nodes["MESH:D008687"].synonyms == ()
    first = kg.edges[0]
    assert first.key == ("MESH:D008687", "treats", "MESH:D003924")
    assert first.provenance == {"primary_knowledge_source": "infores:ctd", "publications": "PMID:1|PMID:2"}
    assert kg.relations == ["associated_with", "treats"]
    assert kg.relation_map == {"associated_with": 0, "treats": 1}
    assert kg.edges_from("MESH:D008687") == [0] and kg.edges_from("MESH:D003924") == []


def test_columns_in_any_order_and_optional_columns(tmp_path):
    n = write(tmp_path / "n.tsv", "name\tid\nMetformin\tX:1\nDiabetes\tX:2\n")
    e = write(tmp_path / "e.tsv", "object\tsubject\tpredicate\nX:2\tX:1\ttreats\n")
    kg = load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    assert kg.nodes["X:1"].category == "" and kg.edges[0].key == ("X:1", "treats", "X:2")


def test_relation_map_round_trip(tmp_path):
    n = write(tmp_path / "n.tsv", NODES)
    e = write(tmp_path / "e.tsv", EDGES)
    kg = load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    p = save_relation_map(kg, tmp_path / "relation_map.json")
    assert load_relation_map(p) == kg.relation_map
    (tmp_path / "bad.json").write_text('{"b": 0, "a": 1}')
    with pytest.raises(KGError, match="sorted name order"):
        load_relation_map(tmp_path / "bad.json")


def test_missing_columns_name_file_and_columns(tmp_path):
    n = write(tmp_path / "n.tsv", "id\tlabel\nX:1\tfoo\n")
    e = write(tmp_path / "e.tsv", EDGES)
    with pytest.raises(KGError) as ei:
        load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    msg = str(ei.value)
    assert str(n) in msg and "line 1" in msg and "missing column(s) ['name']" in msg
    n2 = write(tmp_path / "n2.tsv", NODES)
    e2 = write(tmp_path / "e2.tsv", "subject\trelation\tobject\nX\tr\tY\n")
    with pytest.raises(KGError, match=r"e2.tsv: line 1: missing column\(s\) \['predicate'\]"):
        load_kg(kg_cfg(nodes=[str(n2)], edges=[str(e2)]))


def test_edge_ids_not_nodes_error_or_counted_skip(tmp_path):
    n = write(tmp_path / "n.tsv", NODES)
    e = write(tmp_path / "e.tsv", EDGES + "MESH:D008687\ttreats\tMESH:D999999\t\t\n")
    with pytest.raises(KGError) as ei:
        load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    assert f"{e}: line 5" in str(ei.value) and "'MESH:D999999'" in str(ei.value)
    kg = load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)], skip_bad_records=True))
    assert len(kg.edges) == 2 and kg.skipped == {"edge_node_unknown": 1}


def test_wrong_field_count_names_line(tmp_path):
    n = write(tmp_path / "n.tsv", NODES + "X:9\tonly name\tbiolink:Gene\n")
    e = write(tmp_path / "e.tsv", EDGES)
    with pytest.raises(KGError, match=r"n.tsv: line 5: expected 4 tab-separated fields, found 3"):
        load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    kg = load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)], skip_bad_records=True))
    assert kg.skipped == {"wrong_field_count": 1} and len(kg.nodes) == 3


def test_empty_kg(tmp_path):
    n = write(tmp_path / "n.tsv", "id\tname\n")
    e = write(tmp_path / "e.tsv", "subject\tpredicate\tobject\n")
    with pytest.raises(KGError, match="has no nodes"):
        load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    n = write(tmp_path / "n.tsv", NODES)
    with pytest.raises(KGError, match="has no edges"):
        load_kg(kg_cfg(nodes=[str(n)], edges=[str(e)]))
    empty = write(tmp_path / "empty.tsv", "")
    with pytest.raises(KGError, match="empty.tsv: line 1: empty file"):
        load_kg(kg_cfg(nodes=[str(empty)], edges=[str(e)]))


def test_missing_file(tmp_path):
    with pytest.raises(KGError, match="not found"):
        load_kg(kg_cfg(nodes=[str(tmp_path / "nope.tsv")], edges=[str(tmp_path / "e.tsv")]))


TURTLE = """
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix biolink: <https://w3id.org/biolink/vocab/> .
@prefix mesh: <http://id.nlm.nih.gov/mesh/> .
@prefix ex: <http://example.org/kg/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .

mesh:D003924 rdfs:label "Type 2 diabetes mellitus" ; skos:altLabel "T2DM", "NIDDM" ;
    biolink:category biolink:Disease ; a owl:Class .
mesh:D008687 skos:prefLabel "Metformin" ; rdfs:label "metformin hydrochloride" ;
    a biolink:ChemicalEntity ;
    biolink:treats mesh:D003924 ;
    ex:note "a literal, not an edge" .
ex:gene1 rdfs:label "INS" ; a biolink:Gene ; ex:associated_with mesh:D003924 .
"""


def _rdf_to_ntriples(tmp_path: Path) -> Path:
    import rdflib

    g = rdflib.Graph()
    g.parse(data=TURTLE, format="turtle")
    p = tmp_path / "kg.nt"
    p.write_text(g.serialize(format="nt"), encoding="utf-8")
    return p


@pytest.mark.parametrize("kind", ["ttl", "nt", "ttl.gz"])
def test_rdf(tmp_path, kind):
    if kind == "nt":
        path = _rdf_to_ntriples(tmp_path)
    else:
        path = write(tmp_path / f"kg.{kind}", TURTLE)
    cfg = kg_cfg(nodes=[str(path)], prefix_map={"EX": "http://example.org/kg/"})
    assert resolve_format(cfg) == "rdf"
    kg = load_kg(cfg)
    assert set(kg.nodes) == {"MESH:D003924", "MESH:D008687", "EX:gene1"}
    t2d = kg.nodes["MESH:D003924"]
    assert (t2d.name, t2d.category, t2d.synonyms) == ("Type 2 diabetes mellitus", "biolink:Disease",
                                                      ("NIDDM", "T2DM"))
    met = kg.nodes["MESH:D008687"]
    assert met.name == "Metformin" and met.synonyms == ("metformin hydrochloride",)
    assert met.category == "biolink:ChemicalEntity"
    assert sorted(e.key for e in kg.edges) == [
        ("EX:gene1", "EX:associated_with", "MESH:D003924"),
        ("MESH:D008687", "biolink:treats", "MESH:D003924"),
    ]
    assert kg.relations == ["EX:associated_with", "biolink:treats"]


def test_rdf_without_config_prefix_uses_file_prefix(tmp_path):
    kg = load_kg(kg_cfg(nodes=[str(write(tmp_path / "kg.ttl", TURTLE))]))
    assert "ex:gene1" in kg.nodes


def test_rdf_edge_to_unlabelled_iri(tmp_path):
    bad = TURTLE + "\nmesh:D008687 biolink:treats mesh:D000001 .\n"
    p = write(tmp_path / "kg.ttl", bad)
    with pytest.raises(KGError) as ei:
        load_kg(kg_cfg(nodes=[str(p)]))
    assert str(p) in str(ei.value) and "'MESH:D000001'" in str(ei.value)
    kg = load_kg(kg_cfg(nodes=[str(p)], skip_bad_records=True))
    assert kg.skipped == {"edge_node_unknown": 1}


def test_rdf_syntax_error_names_file(tmp_path):
    p = write(tmp_path / "kg.ttl", "this is not turtle .")
    with pytest.raises(KGError, match="kg.ttl: cannot parse as turtle"):
        load_kg(kg_cfg(nodes=[str(p)]))


def test_format_resolution(tmp_path):
    assert resolve_format(kg_cfg(nodes=["a.tsv.gz"], edges=["b.tsv"])) == "kgx_tsv"
    assert resolve_format(kg_cfg(nodes=["a.nt"])) == "rdf"
    with pytest.raises(ConfigError, match="kg.format: the seed-KG files mix formats"):
        resolve_format(kg_cfg(nodes=["a.tsv"], edges=["b.ttl"]))
    with pytest.raises(ConfigError, match="kg.format: unknown seed-KG reader 'csv'"):
        load_kg(kg_cfg(format="csv", nodes=["a.tsv"]))
    with pytest.raises(ConfigError, match="kg.path: .* is not a known seed-KG folder"):
        resolve_format(kg_cfg(path=str(tmp_path)))
    with pytest.raises(ConfigError, match="no seed KG given"):
        resolve_format(kg_cfg())


def test_hetionet_layout_on_a_tiny_folder(tmp_path):
    write(tmp_path / "nodes.tsv.gz", "id\tname\tkind\tsource\txref_mesh\n"
          "MESH:D1\tDiabetes\tMeSH Disease descriptor\ts\t\nNCBIGene:1\tA1BG\tGene\ts\t\n"
          "MESH:C2\t\tMeSH descriptor (other tree)\ts\t\nMESH:D3\tAspirin\tMeSH Chemical descriptor\ts\t\n")
    header = "subject\tpredicate\tobject\tmetaedge\tsource\tlicense\tpmids\n"
    write(tmp_path / "edges_hetionet_mesh_harmonized.tsv.gz", header + "MESH:D3\ttreats\tMESH:D1\tCtD\tx\tCC0\t\n")
    write(tmp_path / "edges_disgenet_curated.tsv.gz",
          header + "NCBIGene:1\tassociated_with\tMESH:D1\tGDA\tx\tODbL\t\n"
          "NCBIGene:1\tassociated_with\tMESH:C2\tGDA\tx\tODbL\t\n")
    write(tmp_path / "edges_mesh_isa.tsv.gz", header + "MESH:D3\tisa\tMESH:D1\tMeSH_tree\tx\tNLM\t\n")
    cfg = kg_cfg(path=str(tmp_path))
    assert resolve_format(cfg) == "hetionet_disgenet_mesh"
    kg = load_kg(cfg)
    assert kg.relations == ["associated_with", "treats"]
    assert kg.nodes["NCBIGene:1"].category == "biolink:Gene"
    assert kg.nodes["MESH:D3"].category == "biolink:ChemicalEntity"
    assert kg.skipped == {"node_without_name": 1, "edge_to_nameless_node": 1}
    assert kg.edges[0].provenance["metaedge"] == "CtD"
    assert load_kg(kg_cfg(path=str(tmp_path), include_isa=True)).relations == ["associated_with", "isa", "treats"]


@pytest.mark.shared
@pytest.mark.skipif(not SHARED_KG.is_dir(), reason=f"shared seed KG not found at {SHARED_KG}")
def test_shared_seed_kg_counts():
    """Counts from the dataset's README: 43,106 nodes; 44,952 harmonised Hetionet + 26,522 DisGeNET
    edges; 20,214 MeSH isa edges; 22,198 genes. 52 nodes have no name (skipped with their edges)."""
    kg = load_kg(kg_cfg(path=str(SHARED_KG)))
    assert len(kg.nodes) + kg.skipped["node_without_name"] == 43_106
    assert len(kg.edges) + kg.duplicate_edges + kg.skipped["edge_to_nameless_node"] == 44_952 + 26_522
    assert sum(1 for n in kg.nodes.values() if n.category == "biolink:Gene") == 22_198
    assert kg.relations == ["associated_with", "associates", "binds", "downregulates", "includes",
                            "palliates", "presents", "resembles", "treats", "upregulates"]
    counts = kg.relation_counts()
    assert counts["associates"] == 15_036 and counts["binds"] == 6_812   # harmonised file counts
    # the README's diabetes example: T2D = MESH:D003924 has associates genes, treats drugs, DisGeNET genes
    t2d_in = {kg.edges[j].predicate for j, e in enumerate(kg.edges) if e.object == "MESH:D003924"}
    assert {"associated_with", "treats"} <= t2d_in
    assert kg.nodes["MESH:D003924"].name.lower().startswith("diabetes mellitus, type 2")
    isa = load_kg(kg_cfg(path=str(SHARED_KG), include_isa=True))
    assert len(isa.edges) == len(kg.edges) + 20_214


def test_nodes_repeated_across_files_are_merged(tmp_path):
    n1 = write(tmp_path / "n1.tsv", NODES)
    n2 = write(tmp_path / "n2.tsv", "id\tname\tcategory\tsynonyms\nMESH:D008687\tGlucophage\t\tmetformin HCl\n")
    e = write(tmp_path / "e.tsv", EDGES)
    kg = load_kg(kg_cfg(nodes=[str(n1), str(n2)], edges=[str(e)]))
    met = kg.nodes["MESH:D008687"]
    assert (met.name, met.category, met.synonyms) == ("Metformin", "biolink:ChemicalEntity",
                                                      ("Glucophage", "metformin HCl"))


DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


@pytest.mark.skipif(not (DEMO / "kg_edges.tsv").is_file(), reason="demo seed KG not written yet")
def test_demo_seed_kg_reads_cleanly():
    nodes, edges = DEMO / "kg_nodes.tsv", DEMO / "kg_edges.tsv"
    kg = load_kg(kg_cfg(nodes=[str(nodes)], edges=[str(edges)]))
    n_rows = sum(1 for line in nodes.read_text().splitlines()[1:] if line.strip())
    e_rows = sum(1 for line in edges.read_text().splitlines()[1:] if line.strip())
    assert len(kg.nodes) == n_rows and len(kg.edges) + kg.duplicate_edges == e_rows and not kg.skipped
    assert all(e.provenance.get("primary_knowledge_source") for e in kg.edges)
