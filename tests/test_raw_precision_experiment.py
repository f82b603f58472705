"""experiments/raw_precision.py: each extracted raw-text pair in one bucket by its weaker end's support
and link, with the score the run would have without that bucket."""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention
from graphmert.ner.linking import LinkResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from raw_precision import buckets, end_links  # noqa: E402

TEXT = "BRCA1 and BRCA1 with TP53 cause cancer; c.35delG too."
#       0    5    10   15   20   25   30   35   40   45   50


class _Linker:
    """Answers by mention text, and records what it was asked to link (mentions without ids)."""

    HOW = {"BRCA1": "dictionary", "TP53": "fuzzy", "cancer": "terms"}

    def __init__(self) -> None:
        self.asked: list[str] = []

    def link_mentions(self, doc: Document) -> list[LinkResult | None]:
        self.asked += [m.text for m in doc.mentions if not m.ids]
        return [None if m.ids else LinkResult(("x",), 1.0, self.HOW[m.text]) for m in doc.mentions]


def _m(start: int, end: int, type_: str, *ids: str) -> Mention:
    return Mention(start=start, end=end, text=TEXT[start:end], type=type_, ids=list(ids))


DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 15, "Gene", "672"), _m(21, 25, "Gene", "7157"),
    _m(32, 38, "Disease", "MESH:D009369"), _m(40, 47, "SequenceVariant", "c.35delG")])


def test_end_links_count_mentions_and_relink_all_but_variants():
    linker = _Linker()
    assert end_links(DOC, linker) == {"672": (2, "dictionary"), "7157": (1, "fuzzy"),
                                      "MESH:D009369": (1, "terms"), "c.35delG": (1, "variant")}
    assert linker.asked == ["BRCA1", "BRCA1", "TP53", "cancer"]     # ids stripped, the variant kept
    assert DOC.mentions[0].ids == ["672"]                          # the run's document is untouched


def test_buckets_by_the_weaker_end_and_the_score_without_each():
    ends = {"d": {"672": (2, "dictionary"), "7157": (1, "fuzzy"), "MESH:D009369": (3, "kg")}}
    brca_cancer = ("d", frozenset(("672", "MESH:D009369")))
    tp53_cancer = ("d", frozenset(("7157", "MESH:D009369")))
    text_node = ("d", frozenset(("unlinked:p53", "MESH:D009369")))
    predicted, gold = {brca_cancer, tp53_cancer, text_node}, {brca_cancer, ("d", frozenset(("672", "7157")))}
    support, link = buckets(predicted, gold, ends)
    by = {r["weaker end's support"]: r for r in support}
    assert {k: (r["pairs"], r["precision"]) for k, r in by.items()} == {
        "1": (1, 0.0), "2": (1, 1.0), "unlinked end": (1, 0.0)}
    # without the single-support pair: {brca_cancer, text_node}, 1 of 2 right, 1 of 2 gold found
    assert (by["1"]["P without"], by["1"]["R without"], by["1"]["F1 without"]) == (0.5, 0.5, 0.5)
    assert by["2"]["R without"] == 0.0
    assert {r["weaker end's link"]: r["pairs"] for r in link} == {"kg": 1, "fuzzy": 1, "none": 1}   # the weaker of the two


def test_a_run_that_did_not_extract_or_read_raw_text_gets_a_clear_exit(tmp_path, monkeypatch):
    import pytest
    import raw_precision

    run = tmp_path / "run"
    argv = ["raw_precision.py", "--run-dir", str(run), "--gold", str(tmp_path / "gold.PubTator")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match=r"extract/documents.txt: missing; run `graphmert extract`"):
        raw_precision.main()
    (run / "extract").mkdir(parents=True)
    (run / "extract" / "documents.txt").write_text("d\n")              # a gold-mention run's output
    with pytest.raises(SystemExit, match=r"extract/documents.parquet or the run's linker: missing; this reads "
                                         r"a raw-text run"):
        raw_precision.main()


def test_precision_by_confidence_and_support_and_the_cross_validated_aucs():
    from raw_precision import with_confidence

    ends = {"d": {"672": (2, "dictionary"), "7157": (1, "fuzzy"), "MESH:D009369": (3, "kg")}}
    brca_cancer = ("d", frozenset(("672", "MESH:D009369")))         # weaker end: support 2
    tp53_cancer = ("d", frozenset(("7157", "MESH:D009369")))        # support 1
    conf = {brca_cancer: 0.95, tp53_cancer: 0.8}
    bands, auc = with_confidence(conf, {brca_cancer}, ends)
    low, mid, high = bands
    assert (high["support 2: pairs"], high["support 2: P"], high["support 1: pairs"]) == (1, 1.0, 0)
    assert (mid["support 1: pairs"], mid["support 1: P"]) == (1, 0.0)
    assert low["support 3+: pairs"] == 0 and low["support 3+: P"] is None
    assert auc == {"confidence": None, "+ support": None, "+ support + link": None}   # one document
    assert with_confidence({}, {brca_cancer}, ends) == ([], {})       # a run without pairs


def test_cross_validated_auc_sees_a_feature_that_separates_the_classes():
    import numpy as np
    import pytest
    from raw_precision import cv_auc

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 50)
    docs = [f"doc{i}" for i in range(100)]
    noise = rng.normal(size=(100, 1))
    assert cv_auc(noise, y, docs) == pytest.approx(0.5, abs=0.15)
    assert cv_auc(np.c_[noise, y + 0.1 * rng.normal(size=100)], y, docs) > 0.95
    assert cv_auc(noise, np.zeros(100, dtype=int), docs) is None
    assert cv_auc(noise[:2], y[[0, -1]], ["d", "d"]) is None     # one document: its fold's fit has no rows
