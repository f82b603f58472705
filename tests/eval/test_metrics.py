"""Pair metrics: P/R/F1 against hand-computed values, the seed-known / novel split, pair extraction
from Triple records, validity, and the metrics.json payload / Markdown table."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.gold import GoldSet
from graphmert.eval.metrics import (
    evaluate_system, pair_sets, prf, seed_pairs, split_seed, triple_documents, validity,
)
from graphmert.eval.report import markdown_table, metrics_payload, write_report
from graphmert.extract.triples import Evidence, Triple
from graphmert.kg.graph import Edge, Node, SeedKG
from graphmert.kg.schema import RelationSchema


def pair(doc, a, b):
    return (doc, frozenset((a, b)))


def tpair(doc, a, b, t):
    return (doc, frozenset((a, b)), t)


def triple(h, r, t, docs, hc="biolink:Gene", tc="biolink:Disease", evidence=True):
    ev = [Evidence(doc_id=d, chunk_id=f"{d}-0", sentence="s", sentence_start=0, head_start=0,
                   head_end=1) for d in docs] if evidence else []
    return Triple(head_id=h, head_name=h, head_category=hc, relation=r, tail_id=t, tail_name=t,
                  tail_category=tc, tail_source="mention", confidence=0.9,
                  documents=[] if evidence else list(docs), evidence=ev)


def gold_set() -> GoldSet:
    """d1: A–B Association, A–C Positive_Correlation, B–D Bind; d2: E–F Association."""
    d1 = Document(id="d1", text="A B C D", mentions=[
        Mention(0, 1, "A", "Gene", ["A"]), Mention(2, 3, "B", "Disease", ["B"]),
        Mention(4, 5, "C", "Chemical", ["C"]), Mention(6, 7, "D", "Gene", ["D"])],
        relations=[Relation("Association", "A", "B"), Relation("Positive_Correlation", "C", "A"),
                   Relation("Bind", "B", "D")], sentences=[(0, 7)])
    d2 = Document(id="d2", text="E F", mentions=[
        Mention(0, 1, "E", "Gene", ["E"]), Mention(2, 3, "F", "Gene", ["F"])],
        relations=[Relation("Association", "F", "E")], sentences=[(0, 3)])
    return GoldSet.from_documents([d1, d2])


# ---------------------------------------------------------------------------------------- prf


def test_prf_hand_computed():
    gold = {1, 2, 3}
    pred = {1, 2, 4, 5}
    m = prf(pred, gold)
    # TP = 2; P = 2/4; R = 2/3; F1 = 2PR/(P+R) = (2 · 1/2 · 2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7
    assert m["tp"] == 2 and m["predicted"] == 4 and m["gold"] == 3
    assert m["precision"] == pytest.approx(0.5)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(4 / 7)


def test_prf_zero_denominators():
    assert prf(set(), {1}) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "predicted": 0,
                               "gold": 1}
    assert prf({1}, set()) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "predicted": 1,
                               "gold": 0}
    assert prf({1}, {2})["f1"] == 0.0


@given(st.sets(st.integers(0, 20)), st.sets(st.integers(0, 20)))
def test_prf_matches_counting_reference(pred, gold):
    tp = sum(1 for x in pred if x in gold)
    m = prf(pred, gold)
    assert m["tp"] == tp
    if pred and gold and tp:
        assert m["f1"] == pytest.approx(2 * tp / (len(pred) + len(gold)))
    else:
        assert m["f1"] == 0.0


# -------------------------------------------------------------------------------- pair_sets


def test_pair_sets_one_pair_per_evidence_document_and_relation_map():
    ts = [triple("A", "associated_with", "B", ["d1", "d2", "d1"]),
          triple("B", "treats", "A", ["d1"])]
    u, t = pair_sets(ts, {"associated_with": "Association"})
    assert u == {pair("d1", "A", "B"), pair("d2", "A", "B")}
    assert t == {tpair("d1", "A", "B", "Association"), tpair("d2", "A", "B", "Association"),
                 tpair("d1", "A", "B", "treats")}          # unmapped relation keeps its name


def test_pair_sets_count_unlinked_ends_and_skip_self_pairs():
    """A triple with an end that has no id is a pair of its own, keyed by the end's name, which no gold
    pair holds; linked_only leaves it out; self-pairs give nothing either way."""
    ts = [triple("", "r", "B", ["d1"]), triple("A", "r", "", ["d1"]), triple("A", "r", "A", ["d1"]),
          triple("A", "r", "C", ["d1"])]
    u, t = pair_sets(ts)
    assert u == {pair("d1", "A", "C"), pair("d1", "unlinked:", "B"), pair("d1", "A", "unlinked:")}
    assert tpair("d1", "A", "C", "r") in t and len(t) == 3
    named = triple("A", "r", "", ["d1"])
    named.tail_name = "pain"
    assert pair_sets([named])[0] == {pair("d1", "A", "unlinked:pain")}
    u, t = pair_sets(ts, linked_only=True)
    assert u == {pair("d1", "A", "C")}
    assert t == {tpair("d1", "A", "C", "r")}


def test_a_text_node_triple_lowers_precision():
    """Every triple a user receives counts: adding a triple with an unlinked end to a correct one
    halves precision and leaves recall as it was; the linked-ends figure does not move."""
    g = gold_set()
    right = triple("A", "associated_with", "B", ["d1"])
    text = triple("A", "associated_with", "", ["d1"])
    text.tail_name = "headache"
    alone = evaluate_system(*pair_sets([right]), g)["untyped"]["all"]
    both = evaluate_system(*pair_sets([right, text]), g)["untyped"]["all"]
    linked = evaluate_system(*pair_sets([right, text], linked_only=True), g)["untyped"]["all"]
    assert alone["precision"] == 1.0 and both["precision"] == 0.5
    assert both["recall"] == alone["recall"] == 0.25
    assert linked == alone


def test_triple_documents_falls_back_to_documents_without_evidence():
    assert triple_documents(triple("A", "r", "B", ["d2", "d1"], evidence=False)) == ["d1", "d2"]
    assert triple_documents(triple("A", "r", "B", ["d2", "d1", "d2"])) == ["d1", "d2"]


# ---------------------------------------------------------------------------- evaluate_system


def test_evaluate_system_hand_computed():
    g = gold_set()
    assert len(g.untyped) == 4 and len(g.typed) == 4
    pu = {pair("d1", "A", "B"), pair("d1", "A", "C"), pair("d1", "C", "D"), pair("d2", "E", "F"),
          pair("d9", "A", "B")}                                       # d9 is not in the gold
    pt = {tpair("d1", "A", "B", "Association"), tpair("d1", "A", "C", "Association"),
          tpair("d1", "C", "D", "Bind"), tpair("d2", "E", "F", "Association"),
          tpair("d9", "A", "B", "Association")}
    assert g.outside(pu) == 1 and g.outside(pt) == 1
    r = evaluate_system(pu, pt, g, set())
    # untyped: 4 scored predictions, TP = 3 (A–B, A–C, E–F), gold 4 → P 3/4, R 3/4, F1 3/4
    assert r["untyped"]["all"]["tp"] == 3 and r["untyped"]["all"]["predicted"] == 4
    assert r["untyped"]["all"]["precision"] == pytest.approx(0.75)
    assert r["untyped"]["all"]["recall"] == pytest.approx(0.75)
    assert r["untyped"]["all"]["f1"] == pytest.approx(0.75)
    # typed: A–C has the wrong type → TP = 2 of 4 → P = R = F1 = 1/2
    assert r["typed"]["all"]["tp"] == 2
    assert r["typed"]["all"]["f1"] == pytest.approx(0.5)
    # no seed pairs: everything is novel
    assert r["untyped"]["novel"] == r["untyped"]["all"]
    assert r["untyped"]["seed_known"]["predicted"] == 0 and r["untyped"]["seed_known"]["gold"] == 0


def test_seed_known_novel_split():
    g = gold_set()
    kg = SeedKG([Node(i, i) for i in "ABCDEF"],
                [Edge("B", "rel", "A"), Edge("E", "rel", "F"), Edge("C", "rel", "C")])
    seed = seed_pairs(kg)
    assert seed == {frozenset("AB"), frozenset("EF")}             # direction ignored, self-loop out
    pu = {pair("d1", "A", "B"), pair("d1", "A", "C"), pair("d1", "C", "D"), pair("d2", "E", "F")}
    pt = {tpair("d1", "A", "B", "Bind"), tpair("d1", "A", "C", "Positive_Correlation")}
    r = evaluate_system(pu, pt, g, seed)
    u = r["untyped"]
    # known: pred {d1 A–B, d2 E–F}, gold {d1 A–B, d2 E–F} → TP 2, P = R = 1
    assert (u["seed_known"]["tp"], u["seed_known"]["predicted"], u["seed_known"]["gold"]) == (2, 2, 2)
    assert u["seed_known"]["f1"] == pytest.approx(1.0)
    # novel: pred {A–C, C–D}, gold {A–C, B–D} → TP 1, P 1/2, R 1/2
    assert (u["novel"]["tp"], u["novel"]["predicted"], u["novel"]["gold"]) == (1, 2, 2)
    assert u["novel"]["f1"] == pytest.approx(0.5)
    assert u["all"]["tp"] == u["seed_known"]["tp"] + u["novel"]["tp"]
    t = r["typed"]
    # typed known: A–B predicted Bind, gold Association → TP 0; novel: A–C correct → TP 1 of 2 gold
    assert (t["seed_known"]["tp"], t["seed_known"]["predicted"], t["seed_known"]["gold"]) == (0, 1, 2)
    assert (t["novel"]["tp"], t["novel"]["predicted"], t["novel"]["gold"]) == (1, 1, 2)


def test_split_seed_partitions():
    pairs = {pair("d", "A", "B"), pair("d", "B", "C"), tpair("d", "A", "B", "x")}
    known, novel = split_seed(pairs, {frozenset("AB")})
    assert known == {pair("d", "A", "B"), tpair("d", "A", "B", "x")}
    assert novel == {pair("d", "B", "C")}


# ---------------------------------------------------------------------------------- validity


def test_validity_share_of_schema_conform_triples():
    schema = RelationSchema({"treats": {("biolink:ChemicalEntity", "biolink:Disease")},
                             "binds": {("biolink:Gene", "biolink:Gene")}})
    ts = [triple("c", "treats", "d", ["x"], "biolink:ChemicalEntity", "biolink:Disease"),
          triple("g", "binds", "h", ["x"], "biolink:Gene", "biolink:Gene"),
          triple("d", "treats", "c", ["x"], "biolink:Disease", "biolink:ChemicalEntity"),  # reversed
          triple("g", "unknown_rel", "h", ["x"], "biolink:Gene", "biolink:Gene")]         # not in schema
    assert validity(ts, schema) == pytest.approx(2 / 4)
    assert validity(iter(ts[:2]), schema) == 1.0
    assert validity([], schema) is None


# ------------------------------------------------------------------------------------ report


def test_payload_and_markdown_table(tmp_path):
    g = gold_set()
    r = evaluate_system({pair("d1", "A", "B"), pair("d1", "C", "D")},
                        {tpair("d1", "A", "B", "Association")}, g, {frozenset("AB")})
    payload = metrics_payload({"graphmert": {**r, "validity": 2 / 3, "settings": "k=4, t=0.3"},
                               "cooccurrence": r}, {"documents": 2, **g.counts()})
    assert list(payload["systems"]) == ["graphmert", "cooccurrence"]
    assert payload["systems"]["cooccurrence"]["validity"] is None
    assert payload["systems"]["graphmert"]["untyped"]["all"]["tp"] == 1
    assert payload["gold_pairs"] == 4 and payload["unknown_relation_ids"] == 0
    table = markdown_table(payload)
    lines = table.strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("| system | P | R | F1 | typed P")
    # graphmert: untyped P 1/2, R 1/4, F1 1/3; typed P 1, R 1/4, F1 2/5; known F1 (1 of 1 known
    # gold A–B, 1 prediction) = 1; novel: pred {C–D}, gold {A–C, B–D, E–F} → 0; validity 2/3
    assert lines[2] == ("| graphmert | 0.500 | 0.250 | 0.333 | 1.000 | 0.250 | 0.400 | 1.000 | "
                        "0.000 | 0.667 | – | k=4, t=0.3 |")
    assert lines[3].endswith("| – | – | – |")          # no validity, linked-only figure or settings
    paths = write_report(tmp_path / "evaluate", payload)
    assert json.loads(paths["metrics.json"].read_text()) == json.loads(json.dumps(payload))
    assert paths["metrics.md"].read_text() == table


def test_payload_rejects_malformed_systems_and_reserved_keys():
    r = evaluate_system(set(), set(), gold_set(), set())
    with pytest.raises(ValueError, match="'broken'.*'typed'"):
        metrics_payload({"broken": {"untyped": r["untyped"]}}, {})
    with pytest.raises(ValueError, match="reserved"):
        metrics_payload({"ok": r}, {"systems": 1})


def test_markdown_table_lists_the_model_numbers():
    """An optional "model" object (issue #15) follows the systems as a two-column table."""
    r = evaluate_system(set(), set(), gold_set(), set())
    model = {"heldout_leaf_accuracy": 0.123456, "leaf_majority_baseline": None, "injections": 42,
             "injections_per_relation": {"Association": 40, "Bind": 2},
             "member_candidate_accuracy": {"0": 0.7021645021645022, "1": 0.6813852813852814}}
    table = markdown_table(metrics_payload({"graphmert": r}, {"model": model}))
    lines = table.strip().splitlines()
    i = lines.index("| model | value |")
    assert lines[i - 1] == "" and lines[i + 1] == "|---|---|"
    assert lines[i + 2:] == ["| heldout_leaf_accuracy | 0.1235 |", "| leaf_majority_baseline | – |",
                             "| injections | 42 |", "| injections_per_relation | Association 40, Bind 2 |",
                             "| member_candidate_accuracy | 0 0.7022, 1 0.6814 |"]      # rounded as the rest
    assert "| model |" not in markdown_table(metrics_payload({"graphmert": r}, {"model": {}}))


# ------------------------------------------------------------------- the evaluate stage's stream

POOL = [triple("A", "associated_with", "B", ["d1", "d9"]), triple("A", "treats", "B", ["d1"]),
        triple("C", "associated_with", "A", ["d9"]), triple("E", "associated_with", "F", ["d2", "d1"]),
        triple("A", "associated_with", "", ["d1"]), triple("B", "associated_with", "D", ["d1"], tc="biolink:Gene"),
        triple("E", "treats", "F", ["d8"], evidence=False), triple("F", "associated_with", "E", ["d2"], evidence=False)]


@settings(deadline=None)                  # the first example imports the stage module
@given(st.lists(st.sampled_from(range(len(POOL))), max_size=12))
def test_the_evaluate_stage_scores_a_stream_as_it_scored_every_triple_held(picks):
    """The stage reads each system once and keeps only the triples on gold documents
    (pipelines.stages.evaluate.scan); its rows equal scoring all the triples held at once."""
    from pipelines.stages.evaluate import _scores, scan

    g, schema = gold_set(), RelationSchema({"associated_with": {("biolink:Gene", "biolink:Disease")}})
    triples = [POOL[i] for i in picks]
    s = scan(iter(triples), g)
    rmap = {"associated_with": "Association"}
    got = _scores(s, pair_sets(s.on_gold, rmap), rmap, g, set(), schema)
    want = evaluate_system(*pair_sets(triples, rmap), g, set())
    assert {k: got[k] for k in ("untyped", "typed")} == want
    assert got["linked_only"] == evaluate_system(*pair_sets(triples, rmap, linked_only=True), g)["untyped"]["all"]
    assert got["validity"] == validity([t for t in triples if set(triple_documents(t)) & {"d1", "d2"}], schema)
    assert s.triples == len(triples)
    assert s.outside == sum(d not in g.documents for t in triples for d in triple_documents(t))
