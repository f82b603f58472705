"""One prefix map: the exporter's CURIE → IRI and the seed-KG reader's IRI → CURIE are the same map
(graphmert/prefixes.py), so an exported graph read back as a seed KG gives the same CURIEs and triples."""

from __future__ import annotations

import pytest

from graphmert.config import ExportConfig, KGConfig
from graphmert.export.kgx import read_kgx_jsonl, write_kgx
from graphmert.export.rdf import write_rdf
from graphmert.export.terms import ExportTerms
from graphmert.kg.loaders import load_kg
from graphmert.kg.rdf import CurieCompactor
from graphmert.prefixes import BUILTIN_PREFIXES, MINTED_PREFIX

from .helpers import RUN, make_triples


def test_the_export_overrides_nothing_by_default():
    assert ExportConfig().prefix_map == {}


@pytest.mark.parametrize("prefix", sorted(BUILTIN_PREFIXES))
def test_every_builtin_prefix_expands_and_compacts_back(prefix):
    terms, compact = ExportTerms(ExportConfig()), CurieCompactor()
    iri, curie = terms.entity(f"{prefix}:X0001", "x")
    assert iri == BUILTIN_PREFIXES[prefix] + "X0001"
    assert compact(iri) == curie == f"{prefix}:X0001"


def test_ncbigene_is_the_biolink_iri_both_ways():
    iri, _ = ExportTerms(ExportConfig()).entity("NCBIGene:3630", "INS")
    assert iri == "http://identifiers.org/ncbigene/3630"
    assert CurieCompactor()(iri) == "NCBIGene:3630"


def test_percent_encoded_local_parts_read_back_decoded():
    iri, curie = ExportTerms(ExportConfig()).entity("MESH:a b/c", "x")
    assert iri == "http://id.nlm.nih.gov/mesh/a%20b%2Fc"
    assert CurieCompactor()(iri) == curie == "MESH:a b/c"


def test_overrides_change_expansion_and_both_bases_still_compact():
    over = {"MESH": "https://meshb.example/"}
    assert ExportTerms(ExportConfig(prefix_map=over)).entity("MESH:D1", "x")[0] == "https://meshb.example/D1"
    compact = CurieCompactor(over, {"mesh": "http://id.nlm.nih.gov/mesh/", "ex": "http://example.org/"})
    assert compact("https://meshb.example/D1") == "MESH:D1"
    assert compact("http://id.nlm.nih.gov/mesh/D1") == "MESH:D1"     # built-in base: a synonym
    assert compact("http://example.org/a") == "ex:a"                  # the file's own prefix
    assert compact("http://id.nlm.nih.gov/mesh/") == "http://id.nlm.nih.gov/mesh/"   # a bare base


def test_exported_turtle_reads_back_as_the_same_seed_kg(tmp_path):
    """kg.ttl as kg.nodes/kg.edges gives the CURIEs, names, categories and (subject, predicate,
    object) triples of the KGX export of the same triples; association and run nodes are not edges."""
    triples = make_triples()
    terms = ExportTerms(ExportConfig())
    write_rdf(triples, tmp_path / "kg.ttl", "ttl", terms, RUN)
    write_kgx([triples], tmp_path, ExportTerms(ExportConfig()), RUN)
    kgx_nodes = {r["id"]: r for r in read_kgx_jsonl(tmp_path / "kg_nodes.jsonl")}
    kgx_edges = {(r["subject"], r["predicate"], r["object"])
                 for r in read_kgx_jsonl(tmp_path / "kg_edges.jsonl")}

    kg = load_kg(KGConfig(nodes=[str(tmp_path / "kg.ttl")], edges=[str(tmp_path / "kg.ttl")]))
    assert {n.id for n in kg.nodes.values()} == set(kgx_nodes)
    assert {"NCBIGene:6934", "MESH:D003924", "MESH:C000000"} <= set(kgx_nodes)
    for node in kg.nodes.values():
        assert (node.name, [node.category]) == (kgx_nodes[node.id]["name"], kgx_nodes[node.id]["category"])
    assert {(e.subject, e.predicate, e.object) for e in kg.edges} == kgx_edges
    assert len(kg.edges) == len(triples) and kg.skipped == {}
    assert any(n.startswith("graphmert:entity/name-") for n in kgx_nodes)   # minted ids too


def test_a_read_back_graph_exports_to_the_same_iris(tmp_path):
    """Second generation: ids read back from an export (graphmert:entity/… included) export to the
    IRIs of the first export, so seeding a run with an export does not fork entity IRIs."""
    terms = ExportTerms(ExportConfig())
    write_rdf(make_triples(), tmp_path / "kg.ttl", "ttl", terms, RUN)
    kg = load_kg(KGConfig(nodes=[str(tmp_path / "kg.ttl")], edges=[str(tmp_path / "kg.ttl")]))
    first = {terms.entity(t.head_id, t.head_name)[0] for t in make_triples()}
    again = ExportTerms(ExportConfig())
    assert {again.entity(n.id, n.name)[0] for n in kg.nodes.values()} >= first
    assert all(again.entity(n.id, n.name)[1] == n.id for n in kg.nodes.values())


def test_the_minted_namespace_is_the_export_default():
    assert BUILTIN_PREFIXES[MINTED_PREFIX] == ExportConfig().namespace
