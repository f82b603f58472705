"""Export vocabulary: closed Biolink namespace, config validation, CURIE expansion, minted IRIs."""

from __future__ import annotations

import pytest

from graphmert.config import ConfigError, ExportConfig, load_config
from graphmert.export.terms import (BIOLINK, CATEGORIES, GRAPHMERT, PREDICATES, ExportTerms,
                                    check_formats, clean_text, encode_local, is_pmid, is_safe_iri)
from graphmert.kg.rdf import CurieCompactor
from graphmert.prefixes import BUILTIN_PREFIXES

from .helpers import hostile_triples


def test_biolink_namespace_is_closed():
    assert str(BIOLINK.treats) == "https://w3id.org/biolink/vocab/treats"
    assert str(BIOLINK["Gene"]) == "https://w3id.org/biolink/vocab/Gene"
    for bad in ("treat", "gene", "upregulates"):
        with pytest.raises(AttributeError, match="not in namespace"):
            getattr(BIOLINK, bad)
    with pytest.raises(AttributeError):
        GRAPHMERT.unknown_term
    assert "Association" not in CATEGORIES and "NamedThing" in CATEGORIES
    assert "treats" in PREDICATES and "subject" not in PREDICATES and "Gene" not in PREDICATES
    assert not {"primary_knowledge_source", "qualified_predicate", "object_direction_qualifier"} \
        & set(PREDICATES)


def test_default_config_is_valid_and_maps_every_known_relation():
    v = ExportTerms(ExportConfig())
    demo = ["associated_with", "treats", "binds", "upregulates", "downregulates", "presents", "isa",
            "causes"]
    shared = ["associates", "includes", "palliates", "resembles"]
    biored = ["Association", "Positive_Correlation", "Negative_Correlation", "Bind", "Cotreatment",
              "Comparison", "Drug_Interaction", "Conversion"]
    for rel in demo + shared + biored:
        assert str(v.predicate(rel)).startswith(str(BIOLINK._NS)), rel
    assert not v.unmapped_relations
    assert v.predicate("made_up") == BIOLINK.related_to
    assert v.unmapped_relations == {"made_up": 1}


@pytest.mark.parametrize("override, message", [
    ({"predicate_map": {"treats": "biolink:treatz"}},
     "export.predicate_map.treats: 'biolink:treatz' is not a known Biolink predicate"),
    ({"predicate_map": {"treats": "treats"}}, "export.predicate_map.treats"),
    ({"predicate_map": {"treats": "biolink:Gene"}}, "export.predicate_map.treats"),
    ({"default_predicate": "ex:related"}, "export.default_predicate"),
    ({"category_map": {"Chem": "biolink:Chemical"}},
     "export.category_map.Chem: 'biolink:Chemical' is not a known Biolink category"),
    ({"prefix_map": {"X": "not an iri"}}, "export.prefix_map.X"),
    ({"prefix_map": {"X": "http://a/<b>"}}, "export.prefix_map.X"),
    ({"prefix_map": {"1x": "http://a/"}}, "export.prefix_map.1x: not a valid prefix name"),
    ({"namespace": "https://example.org/kg"}, "export.namespace: .* must end with '/' or '#'"),
    ({"namespace": "relative/"}, "export.namespace"),
    ({"pmid_base": "https://pubmed ncbi/"}, "export.pmid_base"),
    ({"predicate_qualifiers": {"upregulates": {"object_direction_qualifier": "up"}}},
     "export.predicate_qualifiers.upregulates.object_direction_qualifier: 'up' is not allowed"),
    ({"predicate_qualifiers": {"upregulates": {"object_aspect_qualifier": "increased"}}},
     "export.predicate_qualifiers.upregulates.object_aspect_qualifier: 'increased' is not allowed"),
    ({"predicate_qualifiers": {"x": {"subject_mood_qualifier": "up"}}},
     "export.predicate_qualifiers.x.subject_mood_qualifier: not an allowed Biolink qualifier"),
    ({"predicate_qualifiers": {"x": {"qualified_predicate": "biolink:Gene"}}},
     "export.predicate_qualifiers.x.qualified_predicate: 'biolink:Gene' is not a known Biolink predicate"),
    ({"knowledge_source": "graphmert"}, "export.knowledge_source: 'graphmert' is not an infores: CURIE"),
    ({"knowledge_source": "infores:Graph MERT"}, "export.knowledge_source"),
    ({"knowledge_source": "https://w3id.org/infores/x"}, "export.knowledge_source"),
])
def test_bad_config_names_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        ExportTerms(ExportConfig(**override))


def test_qualifiers_come_in_slot_order_and_load_from_overrides():
    v = ExportTerms(ExportConfig())
    assert v.qualifiers("downregulates") == (("qualified_predicate", "biolink:causes"),
                                             ("object_aspect_qualifier", "activity_or_abundance"),
                                             ("object_direction_qualifier", "decreased"))
    assert v.qualifiers("treats") == ()
    cfg = load_config(None, ["export.predicate_qualifiers={binds: {object_direction_qualifier: "
                             "increased, object_aspect_qualifier: activity}}",
                             "export.knowledge_source=infores:my-kg"])
    v = ExportTerms(cfg.export)
    assert v.qualifiers("binds") == (("object_aspect_qualifier", "activity"),
                                     ("object_direction_qualifier", "increased"))
    assert v.qualifiers("upregulates") == () and cfg.export.knowledge_source == "infores:my-kg"
    with pytest.raises(ConfigError, match=r"export.predicate_qualifiers.binds: expected a mapping"):
        load_config(None, ["export.predicate_qualifiers={binds: increased}"])


def test_formats_are_checked():
    assert check_formats(["ttl", "nt", "ttl", "kgx"]) == ["ttl", "nt", "kgx"]
    with pytest.raises(ConfigError, match=r"export.formats\[1\]: 'rdfxml' is not allowed"):
        check_formats(["ttl", "rdfxml"])


def test_export_section_loads_from_overrides():
    cfg = load_config(None, ["export.formats=[nt,kgx]",
                             "export.predicate_map={treats: biolink:ameliorates_condition}"])
    assert cfg.export.formats == ["nt", "kgx"]
    assert ExportTerms(cfg.export).predicate("treats") == BIOLINK.ameliorates_condition


def test_curie_expansion():
    v = ExportTerms(ExportConfig())
    assert v.entity("MESH:D003924", "t2d") == ("http://id.nlm.nih.gov/mesh/D003924", "MESH:D003924")
    assert v.entity("NCBIGene:3630", "INS") == ("http://identifiers.org/ncbigene/3630", "NCBIGene:3630")
    assert v.entity("NCBITaxon:9606", "human")[0] == "http://purl.obolibrary.org/obo/NCBITaxon_9606"
    assert v.used_prefixes == {"MESH", "NCBIGene", "NCBITaxon"}
    # config prefixes override the built-in map and add new ones
    v2 = ExportTerms(ExportConfig(prefix_map={"MESH": "https://meshb.example/",
                                             "tmVar": "https://tmvar.example/"}))
    assert v2.entity("MESH:D1", "x")[0] == "https://meshb.example/D1"
    # the local part "c|SUB|G|1234|A" is composite-looking: minted, not expanded
    assert v2.entity("tmVar:c|SUB|G|1234|A", "v")[0] == \
        "https://w3id.org/graphmert/entity/tmVar%3Ac%7CSUB%7CG%7C1234%7CA"
    assert v2.entity("tmVar:p.V600E", "v") == ("https://tmvar.example/p.V600E", "tmVar:p.V600E")


def test_minted_iris():
    v = ExportTerms(ExportConfig())
    ns = "https://w3id.org/graphmert/"
    # unknown prefix, composite, spaces, path traversal: percent-encoded under NS entity/
    assert v.entity("tmVar:c|SUB|G|1234|A", "v") == (ns + "entity/tmVar%3Ac%7CSUB%7CG%7C1234%7CA",
                                                     "graphmert:entity/tmVar%3Ac%7CSUB%7CG%7C1234%7CA")
    assert v.entity("MESH:D017180|MESH:D014693", "c")[0] == ns + "entity/MESH%3AD017180%7CMESH%3AD014693"
    assert v.entity("../../etc/passwd", "p")[0] == ns + "entity/..%2F..%2Fetc%2Fpasswd"
    assert v.entity("..", "p")[0] == ns + "entity/%2E%2E"
    assert v.entity("a b", "p")[0] == ns + "entity/a%20b"
    assert v.entity("MESH:D1 ", "p")[0] == ns + "entity/MESH%3AD1%20"
    # no id: a stable hash of the normalised name
    a, b = v.entity("", "Type 2  Diabetes"), v.entity("", " type 2 diabetes")
    assert a == b and a[0].startswith(ns + "entity/name-") and a[1].startswith("graphmert:entity/name-")
    assert v.entity("", "type 1 diabetes") != a
    # full IRIs are kept only when safe
    assert v.entity("https://ok.example/x", "x")[0] == "https://ok.example/x"
    assert v.entity("http://example.org/a b", "x")[0] == ns + "entity/http%3A%2F%2Fexample.org%2Fa%20b"
    assert v.entity("http://example.org/../x", "x")[0].startswith(ns + "entity/")


def test_document_iris():
    v = ExportTerms(ExportConfig())
    assert v.document("12345678") == ("http://www.ncbi.nlm.nih.gov/pubmed/12345678", "PMID:12345678")
    assert v.document("PMID: 42")[1] == "PMID:42"
    assert v.document("demo:001")[0] == "https://w3id.org/graphmert/document/demo%3A001"
    assert v.document("../../x")[0] == "https://w3id.org/graphmert/document/..%2F..%2Fx"
    assert is_pmid("pmid:7") == "7" and is_pmid("7a") is None and is_pmid("") is None


def test_every_iri_from_hostile_input_is_safe():
    v = ExportTerms(ExportConfig())
    for t in hostile_triples():
        for eid, name in ((t.head_id, t.head_name), (t.tail_id, t.tail_name)):
            iri, curie = v.entity(eid, name)
            assert is_safe_iri(iri), iri
            assert "/../" not in iri and not iri.endswith("/..") and " " not in curie
        for d in t.documents:
            assert is_safe_iri(v.document(d)[0])
        key = v.run_key(t.run_id, t.checkpoint_id, "h")
        assert is_safe_iri(v.run(key)) and is_safe_iri(v.graph(key)) and "/" not in key


def test_encode_local_and_clean_text():
    assert encode_local("D003924") == "D003924"
    assert encode_local("a/b?c#d e") == "a%2Fb%3Fc%23d%20e"
    assert encode_local(".") == "%2E" and encode_local("...") == "%2E%2E%2E" and encode_local("a..") == "a.."
    assert clean_text("a\x00b\x07c\x1b\x7f\x85d\te\nf\rg\ud800h") == "abcd\te\nf\rgh"
    assert clean_text("é 中文 🧬 \"q\" \\ <x>") == "é 中文 🧬 \"q\" \\ <x>"


def test_shared_prefix_map_still_compacts_for_the_seed_kg_reader():
    compact = CurieCompactor()
    assert compact(BUILTIN_PREFIXES["MESH"] + "D003924") == "MESH:D003924"
    assert compact("http://identifiers.org/ncbigene/3630") == "NCBIGene:3630"
