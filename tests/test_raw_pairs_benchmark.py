"""benchmarks/raw_pairs.py's split of a raw-text run's pairs: every gold pair in exactly one row,
by its worse end, and every false extracted pair by how many of its ends are gold entities."""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.gold import GoldSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from raw_pairs import decompose, entity_status  # noqa: E402

TEXT = "BRCA1 and TP53 cause cancer with aspirin."
#       0    5    10   15   20   25   30   35


def _m(start: int, end: int, type_: str, *ids: str) -> Mention:
    return Mention(start=start, end=end, text=TEXT[start:end], type=type_, ids=list(ids))


GOLD_DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 14, "Gene", "7157"), _m(21, 27, "Disease", "MESH:D009369"),
    _m(33, 40, "Chemical", "MESH:D001241")],
    relations=[Relation(type="Association", head="672", tail="MESH:D009369"),
               Relation(type="Association", head="7157", tail="MESH:D009369"),
               Relation(type="Association", head="MESH:D001241", tail="MESH:D009369"),
               Relation(type="Association", head="672", tail="7157")])

# recognised: BRCA1 right, TP53 linked to a wrong id, cancer right, aspirin not recognised
FOUND_DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 14, "Gene", "999"), _m(21, 27, "Disease", "MESH:D009369")])


def test_entity_status_found_mislinked_unrecognised():
    assert entity_status(GOLD_DOC, FOUND_DOC) == {"672": "found", "7157": "mislinked",
                                                   "MESH:D009369": "found", "MESH:D001241": "unrecognised"}
    assert set(entity_status(GOLD_DOC, None).values()) == {"unrecognised"}


def test_every_gold_pair_in_one_row_and_false_pairs_by_gold_ends():
    gold = GoldSet.from_documents([GOLD_DOC])
    predicted = {("d", frozenset(("672", "MESH:D009369"))),       # true positive
                 ("d", frozenset(("999", "MESH:D009369"))),       # one end not a gold entity
                 ("d", frozenset(("672", "MESH:D001241")))}       # both gold entities, not a gold pair
    missed, wrong = decompose(gold, {"d": FOUND_DOC}, predicted)
    assert missed == {"both ends found: extracted (true positive)": 1,
                      "an end mislinked (Gene)": 2,                # 7157–cancer and BRCA1–TP53
                      "an end unrecognised (ChemicalEntity)": 1}   # aspirin–cancer
    assert sum(missed.values()) == len(gold.untyped)
    assert wrong == {"one end not a gold entity": 1, "both ends gold entities: the wrong pair": 1}
