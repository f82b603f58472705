"""experiments/cross_chunk_run.py: the pairs one run holds and the other does not, each with its best
confidence, scored by threshold against the gold."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from graphmert.extract.triples import Evidence, Triple, write_triples

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import cross_chunk_run  # noqa: E402

GOLD = """d1|t|BRCA1 causes breast cancer. c.35delG is a variant.
d1|a|Deafness follows.
d1\t0\t5\tBRCA1\tGene\t672
d1\t13\t26\tbreast cancer\tDisease\tD001943
d1\t28\t36\tc.35delG\tSequenceVariant\tc.35delG
d1\t51\t59\tDeafness\tDisease\tD003638
d1\tAssociation\t672\tD001943
d1\tPositive_Correlation\tD003638\tc.35delG

"""


def _t(head: str, tail: str, confidence: float, doc: str = "d1") -> Triple:
    return Triple(head_id=head, head_name=head, head_category="biolink:Disease", relation="associated_with",
                  tail_id=tail, tail_name=tail, tail_category="biolink:Gene", tail_source="mention",
                  confidence=confidence, documents=[doc],
                  evidence=[Evidence(doc_id=doc, chunk_id=f"{doc}#0", sentence="", sentence_start=0,
                                     head_start=0, head_end=1, confidence=confidence)])


def _run(root: Path, name: str, triples: list[Triple], docs: str = "d1\n") -> Path:
    run = root / name
    (run / "extract").mkdir(parents=True)
    (run / "extract" / "documents.txt").write_text(docs)
    write_triples(triples, run / "extract" / "triples-00000.parquet")
    return run


def test_added_pairs_and_the_table_by_threshold(tmp_path, capsys):
    base = [_t("MESH:D001943", "NCBIGene:672", 0.9)]
    without = _run(tmp_path, "without", base)
    with_run = _run(tmp_path, "with", base + [_t("MESH:D003638", "c.35delG", 0.6),     # gold
                                              _t("MESH:D003638", "c.35delG", 0.3),     # same pair, lower
                                              _t("MESH:D001943", "c.35delG", 0.25)])   # not gold
    added = cross_chunk_run.added_pairs(with_run, without)
    assert added == {("d1", frozenset(("MESH:D003638", "c.35delG"))): 0.6,
                     ("d1", frozenset(("MESH:D001943", "c.35delG"))): 0.25}
    gold = tmp_path / "gold.PubTator"
    gold.write_text(GOLD)
    out = tmp_path / "rows.json"
    cross_chunk_run.main(["--with", str(with_run), "--without", str(without), "--gold", str(gold),
                          "--thresholds", "0.2", "0.5", "0.7", "--out", str(out)])
    rows = {r["threshold"]: r for r in json.loads(out.read_text())["rows"]}
    # base: 1 of 2 gold pairs, 1 predicted: F1 2/3; adding both gives 2·2 / (3 + 2) = 0.8
    assert (rows[0.2]["pairs added"], rows[0.2]["gold"], rows[0.2]["F1"]) == (2, 1, 0.8)
    assert (rows[0.5]["pairs added"], rows[0.5]["gold"], rows[0.5]["F1"]) == (1, 1, 1.0)
    assert rows[0.7]["pairs added"] == 0 and rows[0.7]["ΔF1"] == 0
    assert rows[0.5]["ΔF1"] == pytest.approx(1 / 3, abs=1e-4)


def test_a_given_base_replaces_the_runs_own_and_runs_on_other_documents_are_refused(tmp_path):
    without = _run(tmp_path, "without", [])
    with_run = _run(tmp_path, "with", [_t("MESH:D003638", "c.35delG", 0.6)])
    gold = tmp_path / "gold.PubTator"
    gold.write_text(GOLD)
    out = tmp_path / "rows.json"
    cross_chunk_run.main(["--with", str(with_run), "--without", str(without), "--gold", str(gold),
                          "--thresholds", "0.5", "--base-p", "0.5", "--base-r", "0.5", "--base-gold", "10",
                          "--out", str(out)])
    row = json.loads(out.read_text())["rows"][0]
    # base TP 5 of 10 predicted, 10 gold: F1 0.5; one right pair added: 2·6 / (11 + 10)
    assert row["F1"] == pytest.approx(12 / 21, abs=1e-4)
    with pytest.raises(SystemExit, match="--base-p and --base-r go together"):
        cross_chunk_run.main(["--with", str(with_run), "--without", str(without), "--gold", str(gold),
                              "--base-p", "0.5"])
    other = _run(tmp_path, "other", [], docs="d2\n")
    with pytest.raises(SystemExit, match="extracted different documents"):
        cross_chunk_run.main(["--with", str(with_run), "--without", str(other), "--gold", str(gold)])
