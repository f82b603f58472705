"""experiments/raw_entities.py's recognition errors by kind: every strict-span error of the three
categories in exactly one class, counted as graphmert evaluate's recognition scores count spans."""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention
from graphmert.eval.entities import recognition_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from raw_entities import ERROR_KINDS, error_kinds  # noqa: E402

TEXT = "BRCA1 and TP53 cause cancer with aspirin in HeLa2 and in asthma."
#       0    5    10   15   20   25   30   35   40   45   50   55   60


def _m(start: int, end: int, type_: str) -> Mention:
    return Mention(start=start, end=end, text=TEXT[start:end], type=type_, ids=[])


GOLD = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene"), _m(10, 14, "Gene"), _m(21, 27, "Disease"), _m(33, 40, "Chemical"),
    _m(44, 49, "CellLine"), _m(57, 63, "Disease")])
FOUND = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene"),            # right
    _m(0, 5, "Gene"),            # the same span twice: one span, as the scores count it
    _m(10, 20, "Gene"),          # TP53 too long: a boundary error both ways
    _m(21, 27, "Chemical"),      # cancer as a chemical: a category error both ways
    _m(33, 36, "Gene"),          # part of aspirin as a gene: boundary and category both ways
    _m(44, 49, "Gene"),          # a cell line as a gene: spurious over another kind of gold
    _m(50, 53, "Disease")])      # "and": spurious over nothing; asthma is missed over nothing


def test_error_kinds_class_every_error_once_and_match_the_scores():
    rows = {r["category"]: r for r in error_kinds([FOUND], [GOLD])}
    gene, disease, chemical, micro = rows["Gene"], rows["Disease"], rows["Chemical"], rows["micro"]
    assert (gene["gold"], gene["found"], gene["right"]) == (2, 4, 1)
    assert gene["missed: boundary"] == 1 and gene["spurious: boundary"] == 1
    assert gene["spurious: boundary and category"] == 1 and gene["spurious: other kind"] == 1
    assert disease["missed: category"] == 1 and chemical["spurious: category"] == 1
    assert chemical["missed: boundary and category"] == 1
    assert disease["missed: nothing"] == 1 and disease["spurious: nothing"] == 1
    for row in rows.values():       # each error in one class: gold − right missed, found − right spurious
        assert sum(row[f"missed: {k}"] for k in ERROR_KINDS) == row["gold"] - row["right"]
        assert sum(row[f"spurious: {k}"] for k in ERROR_KINDS) == row["found"] - row["right"]
    scores = recognition_scores([FOUND], [GOLD])
    assert (micro["gold"], micro["found"], micro["right"]) == (5, 6, 1)
    assert (scores["micro"]["gold"], scores["micro"]["predicted"], scores["micro"]["tp"]) == (5, 6, 1)
    assert micro["F1"] == round(scores["micro"]["f1"], 3)
    # one boundary pair (TP53) repaired: 2 right of 5 gold and 6 found (the spurious one replaced)
    assert gene["F1 were the boundaries right"] == round(2 * 2 / 6, 3)
    assert micro["F1 were the boundaries right"] == round(2 * 2 / 11, 3)
