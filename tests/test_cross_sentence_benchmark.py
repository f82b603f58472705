"""benchmarks/cross_sentence.py: a document's entity pairs, whether a sentence holds both, whether
they are gold, and the exact break-even of adding pairs to a system (F1' > F1 ⟺ t/n > F1/2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.gold import GoldSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from cross_sentence import _f1, document_pairs  # noqa: E402

TEXT = "Aspirin treats pain. Pain is common in gout. Aspirin again."


def _m(surface: str, start_at: int, type_: str, eid: str) -> Mention:
    start = TEXT.index(surface, start_at)
    return Mention(start=start, end=start + len(surface), text=surface, type=type_, ids=[eid])


def test_pairs_sharing_a_sentence_gold_and_features():
    doc = Document(id="d", text=TEXT, title="Aspirin treats pain.",
                   mentions=[_m("Aspirin", 0, "Chemical", "MESH:A"), _m("pain", 0, "Disease", "MESH:P"),
                             _m("Pain", 0, "Disease", "MESH:P"), _m("gout", 0, "Disease", "MESH:G"),
                             _m("Aspirin", 30, "Chemical", "MESH:A")],
                   relations=[Relation(type="Association", head="MESH:A", tail="MESH:G")],
                   sentences=[(0, 20), (21, 44), (45, 59)])
    rows = document_pairs(GoldSet.from_documents([doc]), "d")
    assert sorted((r["shared"], r["gold"], r["pair"]) for r in rows) == [
        (False, True, "biolink:ChemicalEntity|biolink:Disease"),      # aspirin–gout: never together
        (True, False, "biolink:ChemicalEntity|biolink:Disease"),      # aspirin–pain: sentence 1
        (True, False, "biolink:Disease|biolink:Disease")]             # pain–gout: sentence 2
    f = next(r for r in rows if r["gold"])["features"]
    assert (f["title_one"], f["title_both"]) == (1.0, 0.0)            # aspirin in the title, gout not
    assert f["log_count_min"] == 0.0 and f["log_count_max"] > 0.0      # gout once, aspirin twice
    assert f["log_distance"] == pytest.approx(0.6931, abs=1e-3)        # nearest: sentences 2 and 3


def test_break_even_is_half_the_f1():
    tp, predicted, gold = 60.0, 100.0, 100.0                           # P = R = F1 = 0.6
    base = _f1(tp, predicted, gold)
    assert base == pytest.approx(0.6)
    assert _f1(tp + 3, predicted + 10, gold) == pytest.approx(base)    # precision 0.3 = F1 / 2
    assert _f1(tp + 4, predicted + 10, gold) > base                    # 0.4 > 0.3
    assert _f1(tp + 2, predicted + 10, gold) < base                    # 0.2 < 0.3
