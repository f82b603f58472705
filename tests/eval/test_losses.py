"""graphmert.eval.losses: every gold pair in exactly one row (recognition, linking or the model), every
false extracted pair in one row, and the table metrics.md shows."""

from __future__ import annotations

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.gold import GoldSet
from graphmert.eval.losses import entity_status, loss_table, pair_losses
from graphmert.eval.report import markdown_table

TEXT = "BRCA1 and TP53 in cancer with aspirin."
#       0     6   10   15 18     25   30


def _m(start: int, end: int, type_: str, *ids: str) -> Mention:
    return Mention(start=start, end=end, text=TEXT[start:end], type=type_, ids=list(ids))


GOLD_DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 14, "Gene", "7157"), _m(18, 24, "Disease", "MESH:D009369"),
    _m(30, 37, "Chemical", "MESH:D001241")], relations=[
    Relation(type="Association", head="672", tail="MESH:D009369"),
    Relation(type="Association", head="7157", tail="MESH:D009369"),
    Relation(type="Bind", head="672", tail="7157"),
    Relation(type="Negative_Correlation", head="MESH:D001241", tail="MESH:D009369")])
# recognised: BRCA1 right, TP53 linked to a wrong id, cancer right, aspirin not recognised
FOUND_DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 14, "Gene", "999"), _m(18, 24, "Disease", "MESH:D009369")])


def test_entity_status_found_mislinked_unrecognised():
    assert entity_status(GOLD_DOC, FOUND_DOC) == {"672": "found", "7157": "mislinked",
                                                   "MESH:D009369": "found", "MESH:D001241": "unrecognised"}
    assert set(entity_status(GOLD_DOC, None).values()) == {"unrecognised"}
    assert set(entity_status(GOLD_DOC, GOLD_DOC).values()) == {"found"}      # gold mentions: all found


def test_every_gold_pair_in_one_row_and_every_false_pair_in_one_row():
    gold = GoldSet.from_documents([GOLD_DOC])
    predicted = {("d", frozenset(("672", "MESH:D009369"))),           # true positive
                 ("d", frozenset(("999", "MESH:D009369"))),           # one end not a gold entity
                 ("d", frozenset(("672", "MESH:D001241"))),           # both gold entities, not a gold pair
                 ("d", frozenset(("672", "unlinked:p53 protein"))),   # a text node
                 ("other", frozenset(("1", "2")))}                    # evidence outside the gold: not counted
    losses = pair_losses(gold, {"d": FOUND_DOC}, predicted)
    assert losses["gold_pairs"] == {"both ends found: extracted (true positive)": 1,
                                    "an end mislinked: Gene": 2,         # 7157–cancer and BRCA1–TP53
                                    "an end unrecognised: ChemicalEntity": 1}   # aspirin–cancer
    assert list(losses["gold_pairs"])[0] == "both ends found: extracted (true positive)"
    assert sum(losses["gold_pairs"].values()) == len(gold.untyped)
    assert losses["false_pairs"] == {"an end unlinked (a text node)": 1,
                                     "both ends gold entities: the wrong pair": 1, "one end not a gold entity": 1}
    assert losses["extracted_pairs"] == 4


def test_on_gold_mentions_only_the_model_loses_pairs():
    gold = GoldSet.from_documents([GOLD_DOC])
    losses = pair_losses(gold, {"d": GOLD_DOC}, set())
    assert losses["gold_pairs"] == {"both ends found: not extracted": 4}
    assert losses["false_pairs"] == {} and losses["extracted_pairs"] == 0


def test_the_table_gives_counts_and_shares_and_metrics_md_shows_it():
    gold = GoldSet.from_documents([GOLD_DOC])
    losses = pair_losses(gold, {"d": FOUND_DOC}, {("d", frozenset(("672", "MESH:D009369"))),
                                                  ("d", frozenset(("999", "MESH:D009369")))})
    table = loss_table(losses)
    assert "Where graphmert loses the 4 gold pairs" in table
    assert "| an end mislinked: Gene | 2 | 0.500 |" in table
    assert "| the 1 false of 2 extracted pairs | count | share |" in table
    assert "| one end not a gold entity | 1 | 0.500 |" in table
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "tp": 1, "predicted": 2, "gold": 4}
    scores = {k: {"all": prf, "seed_known": prf, "novel": prf} for k in ("untyped", "typed")}
    md = markdown_table({"systems": {"graphmert": scores}, "losses": {"graphmert": losses}})
    assert table.rstrip("\n") in md
    assert "Where graphmert" not in markdown_table({"systems": {"graphmert": scores}})

