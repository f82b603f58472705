"""Contract tests for the embedded demo data in data/demo/ (format described in data/README.md).

Pure standard library: the files are checked against the documented format on their own, and the
generator (data/demo/build_demo.py) must reproduce them byte for byte.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"

NODE_HEADER = ["id", "name", "category", "synonyms"]
EDGE_HEADER = ["subject", "predicate", "object", "primary_knowledge_source", "publications"]
ENTITY_KEYS = ["start", "end", "text", "type", "id"]
CATEGORY_TYPE = {
    "biolink:Disease": "Disease",
    "biolink:PhenotypicFeature": "Phenotype",
    "biolink:Drug": "Chemical",
    "biolink:ChemicalEntity": "Chemical",
    "biolink:Gene": "Gene",
}
# predicate -> allowed (subject type, object type)
SCHEMA = {
    "associated_with": {("Gene", "Disease")},
    "treats": {("Chemical", "Disease")},
    "binds": {("Chemical", "Gene")},
    "upregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "downregulates": {("Disease", "Gene"), ("Chemical", "Gene")},
    "presents": {("Disease", "Phenotype")},
    "isa": {("Disease", "Disease"), ("Chemical", "Chemical")},
    "causes": {("Disease", "Disease")},
}
CURIE = re.compile(r"^(MESH:[CD]\d{6,9}|NCBIGene:[1-9]\d*)$")
MIN_EDGES_PER_PREDICATE = 25


@cache
def documents() -> list[dict]:
    with open(DEMO / "corpus.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@cache
def _table(name: str) -> tuple[list[str], list[list[str]]]:
    with open(DEMO / name, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[0], rows[1:]


@cache
def nodes() -> dict[str, dict[str, str]]:
    header, rows = _table("kg_nodes.tsv")
    return {r[0]: dict(zip(header, r)) for r in rows}


@cache
def edges() -> list[dict[str, str]]:
    header, rows = _table("kg_edges.tsv")
    return [dict(zip(header, r)) for r in rows]


def text_of(doc: dict) -> str:
    return doc["title"] + " " + doc["abstract"]


def node_type(node_id: str) -> str:
    return CATEGORY_TYPE[nodes()[node_id]["category"]]


# --------------------------------------------------------------------------------------------------
# corpus.jsonl
# --------------------------------------------------------------------------------------------------


def test_every_corpus_line_is_a_document_object():
    raw = (DEMO / "corpus.jsonl").read_text(encoding="utf-8")
    assert raw.endswith("\n") and "\r" not in raw
    for lineno, line in enumerate(raw.splitlines(), 1):
        doc = json.loads(line)
        assert list(doc) == ["doc_id", "title", "abstract", "entities"], f"line {lineno}"
        assert re.fullmatch(r"demo:\d{3}", doc["doc_id"]), f"line {lineno}: {doc['doc_id']!r}"
        assert doc["title"].strip() and doc["abstract"].strip(), f"line {lineno}: empty text"
        for ent in doc["entities"]:
            assert list(ent) == ENTITY_KEYS, f"line {lineno}: {ent}"
            assert ent["type"] in set(CATEGORY_TYPE.values()), f"line {lineno}: {ent}"
            assert CURIE.match(ent["id"]), f"line {lineno}: bad id {ent['id']!r}"


def test_doc_ids_are_unique_and_there_are_at_least_40_documents():
    ids = [d["doc_id"] for d in documents()]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids), [i for i, c in Counter(ids).items() if c > 1]


def test_documents_are_abstract_sized():
    for doc in documents():
        n_words = len(text_of(doc).split())
        assert 120 <= n_words <= 250, f"{doc['doc_id']}: {n_words} words"


def test_entity_text_equals_the_text_at_its_offsets():
    for doc in documents():
        text = text_of(doc)
        for ent in doc["entities"]:
            assert 0 <= ent["start"] < ent["end"] <= len(text), f"{doc['doc_id']}: {ent}"
            assert text[ent["start"]:ent["end"]] == ent["text"], f"{doc['doc_id']}: {ent}"


def test_entities_are_sorted_and_do_not_overlap():
    for doc in documents():
        spans = [(e["start"], e["end"]) for e in doc["entities"]]
        assert spans == sorted(spans), doc["doc_id"]
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start, f"{doc['doc_id']}: overlapping mentions at {start}"


def test_every_entity_id_is_a_kg_node_of_the_same_type():
    kg = nodes()
    for doc in documents():
        for ent in doc["entities"]:
            assert ent["id"] in kg, f"{doc['doc_id']}: {ent['id']} is not in kg_nodes.tsv"
            assert node_type(ent["id"]) == ent["type"], f"{doc['doc_id']}: {ent}"


def test_every_occurrence_of_a_node_name_or_synonym_is_annotated():
    """The documented lexicon rule: forms with an upper-case letter match exactly, others ignore
    case; a match may not touch a word character or a hyphen. Each occurrence must lie inside an
    annotated mention, and a mention covering exactly that span must carry that node's id."""
    forms = []
    for node_id, row in nodes().items():
        for form in [row["name"], *filter(None, row["synonyms"].split("|"))]:
            flags = 0 if any(ch.isupper() for ch in form) else re.IGNORECASE
            forms.append((re.compile(r"(?<![\w-])" + re.escape(form) + r"(?![\w-])", flags), node_id))
    for doc in documents():
        text = text_of(doc)
        by_span = {(e["start"], e["end"]): e["id"] for e in doc["entities"]}
        for pattern, node_id in forms:
            for m in pattern.finditer(text):
                covering = [span for span in by_span if span[0] <= m.start() and m.end() <= span[1]]
                assert covering, f"{doc['doc_id']}: {m.group()!r} at {m.start()} is not annotated"
                if (m.start(), m.end()) in by_span:
                    assert by_span[(m.start(), m.end())] == node_id, f"{doc['doc_id']}: {m.group()!r}"


def test_abbreviations_defined_in_text_are_annotated_like_their_long_form():
    """'long form (SHORT)': when both are annotated, they carry the same id."""
    pairs = 0
    for doc in documents():
        ents = doc["entities"]
        text = text_of(doc)
        for a, b in zip(ents, ents[1:]):
            if text[a["end"]:b["start"]] == " (" and text[b["end"]:b["end"] + 1] == ")":
                assert a["id"] == b["id"], f"{doc['doc_id']}: {a['text']!r} vs {b['text']!r}"
                pairs += 1
    assert pairs >= 10


# --------------------------------------------------------------------------------------------------
# kg_nodes.tsv / kg_edges.tsv
# --------------------------------------------------------------------------------------------------


def test_node_table_format():
    header, rows = _table("kg_nodes.tsv")
    assert header == NODE_HEADER
    ids = [r[0] for r in rows]
    assert len(set(ids)) == len(ids), [i for i, c in Counter(ids).items() if c > 1]
    for r in rows:
        assert len(r) == len(NODE_HEADER), r
        node_id, name, category, synonyms = r
        assert CURIE.match(node_id), r
        assert category in CATEGORY_TYPE, f"{node_id}: category {category!r}"
        assert (category == "biolink:Gene") == node_id.startswith("NCBIGene:"), r
        assert name.strip() == name and name, r
        assert all(s.strip() == s and s for s in synonyms.split("|")) if synonyms else True, r
    assert 80 <= len(rows) <= 200


def test_node_names_are_short_enough_to_be_injected_as_leaves():
    """Tails are injected into at most 7 leaf slots; WordPiece only splits these pieces further,
    so more than 7 pre-tokenised pieces could never fit."""
    for node_id, row in nodes().items():
        pieces = re.findall(r"\w+|[^\w\s]", row["name"])
        assert len(pieces) <= 7, f"{node_id}: {row['name']!r}"


def test_edge_table_format_and_references():
    header, rows = _table("kg_edges.tsv")
    assert header == EDGE_HEADER
    kg = nodes()
    doc_ids = {d["doc_id"] for d in documents()}
    for r in rows:
        assert len(r) == len(EDGE_HEADER), r
        subject, predicate, obj, source, pubs = r
        assert subject in kg, f"edge subject {subject} is not a node"
        assert obj in kg, f"edge object {obj} is not a node"
        assert subject != obj, r
        assert predicate in SCHEMA, f"unknown predicate {predicate!r}"
        assert source == "graphmert:demo", r
        for pub in filter(None, pubs.split("|")):
            assert pub in doc_ids, f"{r}: unknown publication {pub}"


def test_no_duplicate_edges():
    triples = [(e["subject"], e["predicate"], e["object"]) for e in edges()]
    assert len(set(triples)) == len(triples), [t for t, c in Counter(triples).items() if c > 1]


def test_every_predicate_has_enough_edges():
    counts = Counter(e["predicate"] for e in edges())
    assert set(counts) == set(SCHEMA)
    for predicate, n in counts.items():
        assert n >= MIN_EDGES_PER_PREDICATE, f"{predicate}: {n} edges"
    assert 300 <= sum(counts.values()) <= 500


def test_edges_respect_the_relation_schema():
    for e in edges():
        pair = (node_type(e["subject"]), node_type(e["object"]))
        assert pair in SCHEMA[e["predicate"]], f"{e}: {pair}"


def test_publications_are_exactly_the_documents_mentioning_both_ends():
    mentioned_in: dict[str, set[str]] = {}
    for doc in documents():
        for ent in doc["entities"]:
            mentioned_in.setdefault(ent["id"], set()).add(doc["doc_id"])
    for e in edges():
        both = mentioned_in.get(e["subject"], set()) & mentioned_in.get(e["object"], set())
        assert e["publications"] == "|".join(sorted(both)), e


def test_most_edge_subjects_are_mentioned_in_the_corpus():
    mentioned = {ent["id"] for doc in documents() for ent in doc["entities"]}
    rows = edges()
    share = sum(e["subject"] in mentioned for e in rows) / len(rows)
    assert share >= 0.6, share


def test_some_nodes_exist_only_in_the_kg():
    mentioned = {ent["id"] for doc in documents() for ent in doc["entities"]}
    assert len(set(nodes()) - mentioned) >= 3


# --------------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------------


@cache
def generator():
    spec = importlib.util.spec_from_file_location("graphmert_demo_build", DEMO / "build_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_files_deterministically():
    gen = generator()
    first, second = gen.build(), gen.build()
    assert first == second
    for name, data in first.items():
        assert (DEMO / name).read_bytes() == data, f"{name} is stale: run data/demo/build_demo.py"


def test_held_out_facts_are_stated_in_text_but_absent_from_the_kg():
    gen = generator()
    held_out = gen.resolve_facts(gen.HELD_OUT, gen.load_nodes())
    assert len(held_out) >= 10
    kg = {(e["subject"], e["predicate"], e["object"]) for e in edges()}
    for s, p, o in held_out:
        assert (s, p, o) not in kg
        assert any({s, o} <= {e["id"] for e in d["entities"]} for d in documents()), (s, p, o)
