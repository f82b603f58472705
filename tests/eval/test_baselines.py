"""Baselines: sentence co-occurrence and seed-KG lookup on a hand-built two-document gold, the
registry names the config refers to, and the co-occurrence calibration on BioRED Dev."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmert.config import ConfigError, EvaluateConfig
from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.baselines import (
    BASELINES, allowed_category_pairs, cooccurrence, seed_kg, sentence_entity_ids,
)
from graphmert.eval.gold import GoldSet, load_gold
from graphmert.eval.metrics import evaluate_system, seed_pairs
from graphmert.kg.graph import Edge, Node, SeedKG
from graphmert.kg.schema import RelationSchema
from graphmert.registry import RegistryError

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"

CHEM, DIS, GENE, VAR = ("biolink:ChemicalEntity", "biolink:Disease", "biolink:Gene",
                        "biolink:SequenceVariant")


def document(doc_id: str, sentences: list[str], mentions: list[tuple[int, str, str, list[str]]],
             relations: list[tuple[str, str, str]]) -> Document:
    """Sentences joined by one space; a mention is (sentence index, surface, type, ids) placed at the
    surface's first occurrence in that sentence."""
    text = " ".join(sentences)
    spans, pos = [], 0
    for s in sentences:
        spans.append((pos, pos + len(s)))
        pos += len(s) + 1
    ms = []
    for i, surface, etype, ids in mentions:
        start = text.index(surface, spans[i][0])
        assert start + len(surface) <= spans[i][1]
        ms.append(Mention(start, start + len(surface), surface, etype, ids))
    return Document(id=doc_id, text=text, mentions=ms, sentences=spans,
                    relations=[Relation(t, h, o) for t, h, o in relations])


def p(doc, a, b):
    return (doc, frozenset((a, b)))


@pytest.fixture
def gold() -> GoldSet:
    d1 = document(
        "d1", ["Aspirin treats headache via PTGS2.", "Ibuprofen and PTGS2 variant rs1 in humans."],
        [(0, "Aspirin", "Chemical", ["C1"]), (0, "headache", "Disease", ["D1"]),
         (0, "PTGS2", "GeneOrGeneProduct", ["G1"]),
         (1, "Ibuprofen", "ChemicalEntity", ["C2", "C3"]),          # one mention, two ids
         (1, "PTGS2", "GeneOrGeneProduct", ["G1"]), (1, "rs1", "SequenceVariant", ["V1"]),
         (1, "humans", "Species", ["T1"])],
        [("Positive_Correlation", "C1", "D1"), ("Negative_Correlation", "G1", "C2"),
         ("Association", "G1", "V1"), ("Association", "C1", "C2")])
    d2 = document(
        "d2", ["BRCA1 causes cancer.", "Cancer cells."],
        [(0, "BRCA1", "Gene", ["G2"]), (0, "cancer", "Disease", ["D2"]), (1, "Cancer", "Disease", ["D2"])],
        [("Association", "G2", "D2")])
    return GoldSet.from_documents([d1, d2])


# ------------------------------------------------------------------------------ co-occurrence


def test_cooccurrence_without_schema_pairs_every_sentence_pair(gold):
    u, t = cooccurrence(gold, None, None, {})
    expected = {
        # d1, sentence 1: {C1, D1, G1}
        p("d1", "C1", "D1"), p("d1", "C1", "G1"), p("d1", "D1", "G1"),
        # d1, sentence 2: {C2, C3, G1, V1, T1} → all 10 pairs
        p("d1", "C2", "C3"), p("d1", "C2", "G1"), p("d1", "C2", "V1"), p("d1", "C2", "T1"),
        p("d1", "C3", "G1"), p("d1", "C3", "V1"), p("d1", "C3", "T1"), p("d1", "G1", "V1"),
        p("d1", "G1", "T1"), p("d1", "V1", "T1"),
        # d2, sentence 1: {G2, D2}; sentence 2 has one id
        p("d2", "G2", "D2"),
    }
    assert u == expected
    # majority class of the gold: Association (3 of 5 typed pairs)
    assert gold.majority_type() == "Association"
    assert t == {(d, pr, "Association") for d, pr in expected}
    r = evaluate_system(u, t, gold, set())["untyped"]["all"]
    # gold {C1–D1, G1–C2, G1–V1, C1–C2, G2–D2}: all but the cross-sentence C1–C2 co-occur → TP 4
    assert (r["tp"], r["predicted"], r["gold"]) == (4, 14, 5)


def test_cooccurrence_keeps_pairs_some_relation_admits_in_either_order(gold):
    schema = RelationSchema({"treats": {(CHEM, DIS)},
                             "interacts": {(GENE, CHEM)},       # written gene-first: order is free
                             "has_variant": {(GENE, VAR)}})
    assert allowed_category_pairs(schema) == {frozenset((CHEM, DIS)), frozenset((GENE, CHEM)),
                                              frozenset((GENE, VAR))}
    u, _ = cooccurrence(gold, None, schema, {})
    assert u == {p("d1", "C1", "D1"), p("d1", "C1", "G1"), p("d1", "C2", "G1"), p("d1", "C3", "G1"),
                 p("d1", "G1", "V1")}


def test_sentence_assignment_by_start_offset():
    doc = Document(id="x", text="aa bb. cc dd. ee", sentences=[(0, 6), (7, 13)],
                   mentions=[Mention(0, 2, "aa", "Gene", ["a"]), Mention(3, 5, "bb", "Gene", ["b"]),
                             Mention(7, 9, "cc", "Gene", ["c"]), Mention(14, 16, "ee", "Gene", ["e"])])
    g = GoldSet.from_documents([doc])
    # "ee" starts after the last span: it belongs to the last sentence starting before it
    assert sentence_entity_ids(g, "x") == [{"a", "b"}, {"c", "e"}]
    doc.sentences = []
    with pytest.raises(ValueError, match="'x' has mentions but no sentence spans"):
        sentence_entity_ids(g, "x")


# ---------------------------------------------------------------------------------- seed KG


def seed() -> SeedKG:
    ids = ["C1", "C2", "C3", "D1", "D2", "D9", "G1", "G2", "X", "Y"]
    return SeedKG([Node(i, i) for i in ids], [
        Edge("C1", "treats", "D1"),
        Edge("G1", "binds", "C2"), Edge("G1", "upregulates", "C2"),   # two predicates, one pair
        Edge("C2", "resembles", "C1"),                                 # cross-sentence, same doc
        Edge("G2", "associates", "D2"),
        Edge("C1", "treats", "D9"),                                    # D9 is not mentioned
        Edge("G1", "binds", "G1"),                                     # self-loop
        Edge("X", "binds", "Y"),
    ])


def test_seed_kg_baseline_links_mentioned_ids(gold):
    kg = seed()
    rmap = {"treats": "Positive_Correlation", "binds": "Bind", "associates": "Association"}
    u, t = seed_kg(gold, kg, None, rmap)
    assert u == {p("d1", "C1", "D1"), p("d1", "C2", "G1"), p("d1", "C1", "C2"), p("d2", "G2", "D2")}
    assert t == {("d1", frozenset(("C1", "D1")), "Positive_Correlation"),
                 ("d1", frozenset(("C2", "G1")), "Bind"),
                 ("d1", frozenset(("C2", "G1")), "upregulates"),       # unmapped keeps its name
                 ("d1", frozenset(("C1", "C2")), "resembles"),
                 ("d2", frozenset(("G2", "D2")), "Association")}
    r = evaluate_system(u, t, gold, seed_pairs(kg))
    # every gold pair the KG links is found (all gold ids are mentioned), and nothing novel is
    assert r["untyped"]["seed_known"]["recall"] == 1.0
    assert r["untyped"]["novel"]["predicted"] == 0
    # typed: C1–D1 Positive_Correlation and G2–D2 Association are right; C2–G1 gold is
    # Negative_Correlation, C1–C2 gold is Association → TP 2 of 5 predictions
    assert (r["typed"]["all"]["tp"], r["typed"]["all"]["predicted"]) == (2, 5)


def test_seed_kg_baseline_needs_a_kg(gold):
    with pytest.raises(ConfigError, match="evaluate.baselines: the 'seed_kg' baseline needs a seed KG"):
        seed_kg(gold, None, None, {})


# --------------------------------------------------------------------------------- registry


def test_registry_has_the_configured_baselines():
    assert {"cooccurrence", "seed_kg"} <= set(BASELINES.names())
    assert BASELINES.get("cooccurrence") is cooccurrence and BASELINES.get("seed_kg") is seed_kg
    for name in EvaluateConfig().baselines:                      # every default name resolves
        assert name in BASELINES
    with pytest.raises(RegistryError, match=r"evaluate\.baselines: unknown evaluation baseline 'x'"):
        BASELINES.get("x")


# ------------------------------------------------------------------------------ calibration


@pytest.mark.shared
@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared datasets not found at {DATA}")
def test_cooccurrence_calibration_on_biored_dev():
    gold = load_gold(DATA / "biored" / "Dev.PubTator")
    cats = [GENE, DIS, CHEM, VAR]                  # OrganismTaxon and CellLine excluded
    schema = RelationSchema({"related_to": {(a, b) for a in cats for b in cats}})
    u, t = BASELINES.get("cooccurrence")(gold, None, schema, {})
    r = evaluate_system(u, t, gold, set())["untyped"]["all"]
    assert (r["predicted"], r["tp"]) == (3287, 958)
    # 1,162 relations, one a self-pair → 1,161 gold pairs
    assert r["gold"] == 1161
    assert round(r["precision"], 3) == 0.291
    assert round(r["recall"], 3) == 0.825       # 958 / 1,161 (958 / 1,162 = 0.824 with the self-pair)
    assert round(r["f1"], 3) == 0.431
