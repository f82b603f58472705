"""Reliability by confidence: pair confidences from evidence, bins against scikit-learn's
calibration_curve, the expected calibration error against a loop, the ≥ c rows against prf, and the
Markdown table."""

from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from graphmert.eval.calibration import calibration_table, pair_confidences, reliability
from graphmert.eval.gold import GoldSet
from graphmert.eval.metrics import pair_sets, prf
from graphmert.extract.triples import Evidence, Triple

from tests.eval.test_metrics import gold_set, pair


def evidence(doc: str, conf: float) -> Evidence:
    return Evidence(doc_id=doc, chunk_id=f"{doc}-0", sentence="s", sentence_start=0, head_start=0,
                    head_end=1, confidence=conf)


def triple(h, r, t, events=(), confidence=0.5, documents=(), head_name=None):
    return Triple(head_id=h, head_name=head_name or h, head_category="biolink:Gene", relation=r,
                  tail_id=t, tail_name=t, tail_category="biolink:Disease", tail_source="mention",
                  confidence=confidence, documents=list(documents),
                  evidence=[evidence(d, c) for d, c in events])


def test_a_pairs_confidence_is_its_best_event_in_that_document():
    ts = [triple("A", "Association", "B", [("d1", 0.3), ("d1", 0.7), ("d2", 0.4)]),
          triple("B", "Bind", "A", [("d1", 0.6)]),                       # the same pair, another type
          triple("C", "Association", "D", confidence=0.8, documents=["d1"]),   # no evidence records
          triple("", "Association", "E", [("d1", 0.2)], head_name="x"),   # an unlinked end
          triple("F", "Association", "F", [("d1", 0.9)])]                 # a self-pair: no pair
    conf = pair_confidences(ts, {"Bind": "Binding"})
    assert conf == {pair("d1", "A", "B"): (0.7, frozenset({"Association", "Binding"})),
                    pair("d2", "A", "B"): (0.4, frozenset({"Association"})),
                    pair("d1", "C", "D"): (0.8, frozenset({"Association"})),
                    pair("d1", "unlinked:x", "E"): (0.2, frozenset({"Association"}))}
    assert set(conf) == pair_sets(ts)[0]                # the same pairs the scores count


def _random_case(seed: int, n: int = 300):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(20)]
    from graphmert.corpus.document import Document, Mention, Relation
    gold_docs, conf = [], {}
    for d in docs:
        ents = [f"{d}e{j}" for j in range(6)]
        rels = [Relation("Association", a, b) for a, b in zip(ents, ents[1:]) if rng.random() < 0.5]
        gold_docs.append(Document(id=d, text="x " * 6, sentences=[(0, 12)], relations=rels,
                                  mentions=[Mention(2 * j, 2 * j + 1, "x", "Gene", [e]) for j, e in enumerate(ents)]))
        for a in ents:
            for b in ents:
                if a < b and rng.random() < 0.6:
                    conf[(d, frozenset((a, b)))] = (rng.random(), frozenset({rng.choice(["Association", "Bind"])}))
    return GoldSet.from_documents(gold_docs), conf


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bins_match_scikit_learns_calibration_curve_and_the_ece_a_loop(seed):
    gold, conf = _random_case(seed)
    rel = reliability(conf, gold, bins=10)
    keys = list(conf)
    y = np.array([(k in gold.untyped) for k in keys], dtype=float)
    p = np.array([conf[k][0] for k in keys])
    frac, mean = calibration_curve(y, p, n_bins=10, strategy="uniform")
    assert [b["precision"] for b in rel["bins"]] == pytest.approx(list(frac))
    assert [b["mean_confidence"] for b in rel["bins"]] == pytest.approx(list(mean))
    ece = 0.0
    for lo in range(10):
        inside = [(c, r) for c, r in zip(p, y) if lo / 10 <= c < (lo + 1) / 10]
        if inside:
            ece += len(inside) / len(p) * abs(np.mean([r for _, r in inside]) - np.mean([c for c, _ in inside]))
    assert rel["ece"] == pytest.approx(ece) and rel["pairs"] == len(keys)
    assert sum(b["pairs"] for b in rel["bins"]) == len(keys)


@pytest.mark.parametrize("seed", [0, 1])
def test_each_at_least_row_scores_the_pairs_kept_at_that_confidence(seed):
    gold, conf = _random_case(seed)
    rel = reliability(conf, gold)
    for b in rel["bins"]:
        kept = {k for k, (c, _) in conf.items() if c >= b["low"]}
        want = prf(kept, gold.untyped)
        got = b["at_least"]
        assert (got["pairs"], got["precision"], got["recall"]) == (want["predicted"], pytest.approx(want["precision"]),
                                                                   pytest.approx(want["recall"]))
        typed = [any((k[0], k[1], t) in gold.typed for t in conf[k][1])
                 for k, (c, _) in conf.items() if b["low"] <= c < b["high"]]
        assert b["typed_precision"] == pytest.approx(sum(typed) / len(typed))


def test_a_confidence_that_equals_the_precision_has_no_calibration_error_and_unlinked_pairs_count():
    gold = gold_set()                                  # d1: A–B, A–C, B–D; d2: E–F
    right = {pair("d1", "A", "B"): (0.75, frozenset({"Association"})),
             pair("d1", "A", "C"): (0.75, frozenset({"Association"})),
             pair("d1", "B", "D"): (0.75, frozenset({"Bind"})),
             pair("d1", "C", "D"): (0.75, frozenset({"Association"}))}
    rel = reliability(right, gold)
    assert rel["ece"] == pytest.approx(0.0)
    assert rel["bins"][0]["precision"] == 0.75 and rel["bins"][0]["typed_precision"] == 0.5
    worse = reliability({**right, pair("d1", "unlinked:x", "A"): (0.75, frozenset({"Association"}))}, gold)
    assert worse["bins"][0]["precision"] == pytest.approx(0.6) and worse["ece"] == pytest.approx(0.15)
    outside = reliability({**right, pair("d9", "A", "B"): (0.75, frozenset())}, gold)
    assert outside == rel                              # documents outside the gold are not scored
    assert reliability({}, gold) == {"pairs": 0, "ece": None, "bins": []}
    with pytest.raises(ValueError, match="bins must be ≥ 1"):
        reliability(right, gold, bins=0)


def test_confidences_of_exactly_one_fall_in_the_top_bin_and_the_table_lists_it_first():
    gold = gold_set()
    rel = reliability({pair("d1", "A", "B"): (1.0, frozenset({"Association"})),
                       pair("d2", "E", "F"): (0.05, frozenset({"Association"}))}, gold)
    assert [(b["low"], b["pairs"]) for b in rel["bins"]] == [(0.0, 1), (0.9, 1)]
    table = calibration_table("graphmert", rel).splitlines()
    assert table[0].startswith("Confidence of graphmert's pairs (2 scored; expected calibration error 0.475")
    assert table[4].startswith("| 0.9–1.0 | 1 | 1.000 | 1.000 | 1.000 | 1 | 1.000 | 0.250 |")
    assert table[5].startswith("| 0.0–0.1 | 1 | 0.050 | 1.000 | 1.000 | 2 | 1.000 | 0.500 |")
    assert calibration_table("x", reliability({}, gold)) == "Confidence of x's pairs: no scored pairs.\n"
