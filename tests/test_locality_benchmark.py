"""benchmarks/locality.py's count: within each question, how often a gold tail outranks another
candidate, by where each lies (docs/EVALUATION.md section 13), checked against a hand count."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from graphmert.extract.pairs import PairQuery

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from locality import locality_rows  # noqa: E402


def test_gold_ranked_above_is_counted_per_question_and_side():
    plans = [SimpleNamespace(doc=SimpleNamespace(id="d"))]
    q1 = PairQuery(chunk=0, root=1, end=2, head="H", relation="r", candidates=("A", "B", "C"),
                   outside=(False, True, True))
    q2 = PairQuery(chunk=0, root=5, end=6, head="H", relation="r", candidates=("A", "D"))   # all inside
    gold = {("d", frozenset(("H", "A"))), ("d", frozenset(("H", "C")))}
    # q1: A (gold, in) 0.5 > B (other, out) 0.3; C (gold, out) 0.3 ties B; q2: A (gold) 0.1 < D 0.4
    rows = locality_rows("model", plans, [q1, q2], [np.array([0.5, 0.3, 0.3]), np.array([0.1, 0.4])], gold)
    got = {(r["gold tail"], r["other candidate"]): (r["pairs"], r["gold ranked above"]) for r in rows}
    assert got[("inside", "outside")] == (1, 1.0)
    assert got[("outside", "outside")] == (1, 0.5)
    assert got[("inside", "inside")] == (1, 0.0)
    assert got[("outside", "inside")][0] == 0
    assert rows[0]["mixed questions"] == 1 and rows[0]["top answer outside (mixed questions)"] == 0.0
    shares = {r["gold tail"]: r["gold share of rows (gold's side)"] for r in rows}
    assert shares["inside"] == pytest.approx(2 / 3) and shares["outside"] == pytest.approx(1 / 2)
