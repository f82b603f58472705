"""experiments/raw_entities.py's recognition errors by kind: every strict-span error of the three
categories in exactly one class, counted as graphmert evaluate's recognition scores count spans."""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention
from graphmert.eval.entities import recognition_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from raw_entities import ERROR_KINDS, VotingRecognizer, error_kinds  # noqa: E402

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


def test_variant_ids_by_kind_and_the_rs_ids_a_key_replaced():
    from raw_entities import variant_ids

    text = "R47W and rs9 and A12T in one abstract"

    def v(start: int, end: int, *ids: str) -> Mention:
        return Mention(start=start, end=end, text=text[start:end], type="SequenceVariant", ids=list(ids))

    gold = Document(id="d", text=text, mentions=[v(0, 4, "dbSNP:rs5"), v(9, 12, "dbSNP:rs9"),
                                                 v(17, 21, "tmVar:p|SUB|A|12|T")])
    found = Document(id="d", text=text, mentions=[v(0, 4, "tmVar:p|SUB|R|47|W"), v(9, 12, "dbSNP:rs9"),
                                                  v(17, 21, "tmVar:p|SUB|A|12|T")])
    taught = Document(id="t", text="rs5", mentions=[Mention(start=0, end=3, text="rs5", type="SequenceVariant",
                                                           ids=["dbSNP:rs5"])])
    rows = variant_ids([found], [gold], [taught])
    assert rows[0] == {"ids": "dbSNP", "found": 1, "the gold's": 1}
    assert rows[1] == {"ids": "tmVar", "found": 2, "the gold's": 1}
    assert rows[2]["found"] == 1 and rows[2]["the gold's"].startswith("1 of")   # R47W: rs5, taught
    assert variant_ids([found], [gold], [])[2]["the gold's"].startswith("0 of")


class _Fixed:
    """A recognizer stand-in that finds the given mentions in every document without any."""

    def __init__(self, *mentions: Mention):
        self.mentions = list(mentions)

    def recognize(self, docs, propagate=False):
        assert not propagate                      # the vote propagates on its own spans
        return [d if d.mentions else Document(id=d.id, text=d.text, mentions=self.mentions) for d in docs]


def _spans(doc: Document) -> list[tuple[int, int, str]]:
    return [(m.start, m.end, m.type) for m in doc.mentions]


def test_a_seed_vote_keeps_the_spans_a_majority_finds_exactly():
    raw = Document(id="d", text=TEXT)
    a = _Fixed(_m(0, 5, "Gene"), _m(21, 27, "Disease"), _m(33, 40, "Chemical"))
    b = _Fixed(_m(0, 5, "Gene"), _m(21, 27, "Chemical"), _m(33, 40, "Chemical"), _m(57, 63, "Disease"))
    c = _Fixed(_m(0, 14, "Gene"), _m(21, 27, "Disease"), _m(44, 49, "Gene"))
    majority = VotingRecognizer([a, b, c], votes=2).recognize([raw])[0]
    assert _spans(majority) == [(0, 5, "Gene"), (21, 27, "Disease"), (33, 40, "Chemical")]
    union = VotingRecognizer([a, b, c], votes=1).recognize([raw])[0]      # overlaps: the longer span
    assert _spans(union) == [(0, 14, "Gene"), (21, 27, "Chemical"), (33, 40, "Chemical"),
                             (44, 49, "Gene"), (57, 63, "Disease")]
    genes_only = VotingRecognizer([b, a, c], votes=2, voted=frozenset({"Gene"})).recognize([raw])[0]
    assert _spans(genes_only) == [(0, 5, "Gene"), (21, 27, "Chemical"), (33, 40, "Chemical"),
                                  (57, 63, "Disease")]                   # the first member's others
    assert _spans(VotingRecognizer([c], votes=1).recognize([raw])[0]) == _spans(c.recognize([raw])[0])
    gold = Document(id="g", text=TEXT, mentions=[_m(57, 63, "Disease")])
    assert VotingRecognizer([a, b, c], votes=2).recognize([gold])[0] is gold   # annotated: kept as is


def test_a_seed_vote_propagates_its_own_spans():
    text = "TP53 binds MDM2; TP53 is a gene."
    raw = Document(id="d", text=text)
    tp53 = Mention(start=0, end=4, text="TP53", type="Gene", ids=[])
    mdm2 = Mention(start=11, end=15, text="MDM2", type="Gene", ids=[])
    vote = VotingRecognizer([_Fixed(tp53, mdm2), _Fixed(tp53), _Fixed(mdm2)], votes=2)
    assert _spans(vote.recognize([raw], propagate=True)[0]) == [(0, 4, "Gene"), (11, 15, "Gene"), (17, 21, "Gene")]
    assert _spans(VotingRecognizer([_Fixed(tp53), _Fixed(mdm2)], votes=2).recognize([raw], propagate=True)[0]) == []
    both = vote.recognize_both([raw])             # one pass of the members, both readings
    assert [_spans(both[p][0]) for p in (False, True)] == [_spans(vote.recognize([raw], propagate=p)[0])
                                                           for p in (False, True)]
    assert _spans(both[False][0]) == [(0, 4, "Gene"), (11, 15, "Gene")]
