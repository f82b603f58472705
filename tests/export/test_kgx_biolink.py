"""KGX files against the pinned Biolink model (tests/export/biolink_kgx.py): the closed vocabulary, a
small export, deliberately broken rows, and the demo run's KGX files."""

from __future__ import annotations

import copy
import json
import tomllib

import pytest

from graphmert.config import ExportConfig
from graphmert.export.kgx import EDGE_COLUMNS, KGX_FILES, NODE_COLUMNS, kgx_edge, kgx_nodes, write_kgx
from graphmert.export.terms import CATEGORIES, PREDICATES, QUALIFIERS, ExportTerms

from .biolink_kgx import BIOLINK_VERSION, biolink, validate, validate_folder
from .helpers import ROOT, RUN, make_triples

LOCAL = {"graphmert": ExportConfig().namespace}       # the export's own prefix (see the docstring)
QUALIFIER_COLUMNS = tuple(QUALIFIERS)


def test_the_pinned_model_is_the_one_installed_and_in_the_test_extra():
    assert biolink().version == BIOLINK_VERSION
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert f"biolink-model=={BIOLINK_VERSION}" in [d.split("#")[0].strip() for d in extra]


def test_every_term_the_exporter_may_write_is_valid_in_the_pinned_model():
    model = biolink()
    assert sorted(p for p in PREDICATES if p not in model.predicates) == []
    assert sorted(c for c in CATEGORIES if c not in model.classes) == []
    assert sorted(c for c in EDGE_COLUMNS + NODE_COLUMNS if c not in model.slots) == []
    for slot, allowed in QUALIFIERS.items():
        if slot == "qualified_predicate":
            assert all(v.removeprefix("biolink:") in model.predicates for v in allowed)
        else:
            assert set(allowed) <= model.enums[slot], slot
    cfg = ExportConfig()
    assert {p.removeprefix("biolink:") for p in cfg.predicate_map.values()} <= model.predicates
    for rel, quals in cfg.predicate_qualifiers.items():
        assert not validate([(1, {"id": "X:1", "category": ["biolink:Gene"]})],
                            [(1, {"subject": "X:1", "predicate": "biolink:affects", "object": "X:1",
                                  "knowledge_level": "prediction", "agent_type": "text_mining_agent",
                                  "primary_knowledge_source": cfg.knowledge_source, **quals})],
                            {"X": "http://x/"}), rel


def test_a_small_export_is_valid(tmp_path):
    write_kgx([make_triples()], tmp_path, ExportTerms(ExportConfig()), RUN)
    assert validate_folder(tmp_path, LOCAL) == []
    assert validate_folder(tmp_path, {}) != []            # graphmert: ids need the declared prefix


def _valid_records():
    terms = ExportTerms(ExportConfig())
    triples = make_triples()
    nodes = {n["id"]: n for t in triples for n in kgx_nodes(t, terms)}
    edges = [kgx_edge(t, terms, RUN) for t in triples]
    return list(nodes.values()), edges


@pytest.mark.parametrize("change, column", [
    ({"predicate": "biolink:treatz"}, "predicate"),
    ({"predicate": "biolink:Gene"}, "predicate"),
    ({"predicate": "biolink:interacts_with"}, "predicate"),          # a mixin
    ({"predicate": "biolink:contributor"}, "predicate"),             # abstract
    ({"qualified_predicate": "biolink:increases"}, "qualified_predicate"),
    ({"object_direction_qualifier": "up"}, "object_direction_qualifier"),
    ({"object_direction_qualifier": ""}, "object_direction_qualifier"),
    ({"object_aspect_qualifier": "mood"}, "object_aspect_qualifier"),
    ({"knowledge_level": "assertion"}, "knowledge_level"),
    ({"agent_type": "robot"}, "agent_type"),
    ({"primary_knowledge_source": "graphmert"}, "primary_knowledge_source"),
    ({"primary_knowledge_source": "infores:Graph MERT"}, "primary_knowledge_source"),
    ({"subject": "FOO:1"}, "subject"),
    ({"object": "MESH:D000001"}, "object"),                          # not a node
    ({"publications": "PMID:1"}, "publications"),                    # not a list
    ({"has_confidence_score": "high"}, "has_confidence_score"),
    ({"evidence_count": 1.5}, "evidence_count"),
    ({"tail_source": "mention"}, "tail_source"),                     # not a Biolink slot
    ({"knowledge_level": None}, "knowledge_level"),                  # None: the column removed
])
def test_a_broken_edge_is_reported(change, column):
    nodes, edges = _valid_records()
    assert validate(enumerate(nodes, 1), enumerate(edges, 1), LOCAL) == []
    bad = copy.deepcopy(edges)
    target = next(e for e in bad if e["original_predicate"] == "upregulates")
    for k, v in change.items():
        if v is None:
            del target[k]
        else:
            target[k] = v
    errors = validate(enumerate(nodes, 1), enumerate(bad, 1), LOCAL)
    where = f"edges:{bad.index(target) + 1}: {column}: "
    assert errors and all(e.startswith(where) for e in errors), errors


@pytest.mark.parametrize("category", ["biolink:GeneOrGeneProduct", "biolink:Association", "Gene"])
def test_a_node_category_outside_named_thing_is_reported(category):
    nodes, edges = _valid_records()
    nodes[0]["category"] = [category]
    errors = validate(enumerate(nodes, 1), enumerate(edges, 1), LOCAL)
    assert len(errors) == 1 and errors[0].startswith("nodes:1: category: "), errors


def test_broken_tsv_files_are_reported(tmp_path):
    write_kgx([make_triples()], tmp_path, ExportTerms(ExportConfig()), RUN)
    path = tmp_path / KGX_FILES["edges_tsv"]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0] = lines[0].rstrip("\n") + "\tgraphmert_note\n"           # a column, empty in every row
    lines[1:] = [ln.rstrip("\n") + "\t\n" for ln in lines[1:]]
    lines[2] = lines[2].replace("\tprediction\t", "\tguess\t")
    path.write_text("".join(lines), encoding="utf-8")
    errors = validate_folder(tmp_path, LOCAL)
    assert errors == ["kg_edges.tsv:1: graphmert_note: not a Biolink slot",
                      "kg_edges.tsv:3: knowledge_level: 'guess' is not in KnowledgeLevelEnum "
                      + str(sorted(biolink().enums["knowledge_level"]))]


def test_the_demo_kgx_files_are_valid_biolink(demo_run):
    """The demo's KGX TSV and JSON Lines pass every check against Biolink 4.4.6; minted ids use the
    ``graphmert:`` prefix, which is not a Biolink prefix but is declared in the export's JSON-LD
    context; direction survives as qualifiers."""
    export = demo_run[0] / "export"
    context = json.loads((export / "kg.jsonld").read_text(encoding="utf-8"))["@context"]
    assert "graphmert" not in biolink().prefixes and context["graphmert"] == LOCAL["graphmert"]
    assert validate_folder(export, {"graphmert": context["graphmert"]}) == []
    edges = [json.loads(line) for line in open(export / KGX_FILES["edges_jsonl"], encoding="utf-8")]
    assert edges and {e["knowledge_level"] for e in edges} == {"prediction"}
    direction = {"upregulates": "increased", "downregulates": "decreased"}
    for e in edges:
        quals = tuple(e.get(q) for q in QUALIFIER_COLUMNS)
        if e["original_predicate"] in direction:
            assert e["predicate"] == "biolink:affects"
            assert quals == ("biolink:causes", "activity_or_abundance", direction[e["original_predicate"]])
        else:
            assert quals == (None, None, None), e
