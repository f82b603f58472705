"""scripts/strip_annotations.py: the stripped PubTator file reads back with the same document ids and
texts and no mentions or relations (PubTator and JSON Lines inputs, documents without a title or an
abstract), refuses to overwrite its input and unrepresentable documents, and on the shared BioRED Dev
split keeps all 100 documents' texts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphmert.corpus.readers import read_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "strip_annotations.py"
DATA = ROOT / ".." / "shared" / "datasets"

_spec = importlib.util.spec_from_file_location("strip_annotations", SCRIPT)
strip = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(strip)

PUBTATOR = """\
227508|t|Naloxone reverses the antihypertensive effect of clonidine.
227508|a|Renal and hepatic failure after nalozone.
227508\t0\t8\tNaloxone\tChemical\tD009270
227508\t49\t58\tclonidine\tChemical\tD003000
227508\t60\t85\tRenal and hepatic failure\tDisease\tD051437|D017093\tRenal failure|hepatic failure
227508\t92\t100\tnalozone\tChemical\t-1
227508\tCID\tD003000\tD017093

354896|t|Lidocaine-induced cardiac asystole.
354896|a|
354896\t0\t9\tLidocaine\tChemical\tD008012

77|t|
77|a|TP53  binds  MDM2 in cells with trailing space 
77\t0\t4\tTP53\tGeneOrGeneProduct\t7157
77\t13\t17\tMDM2\tGeneOrGeneProduct\t4193
77\tAssociation\t7157\t4193\tNovel
"""


def check_round_trip(src: list[Path], out: Path) -> list:
    before = list(read_corpus(src))
    n = strip.strip_annotations(src, out)
    after = list(read_corpus(out))
    assert n == len(before) == len(after)
    assert [d.id for d in after] == [d.id for d in before]
    assert [d.text for d in after] == [d.text for d in before]
    assert all(not d.mentions and not d.relations for d in after)
    assert "\t" not in out.read_text(encoding="utf-8")
    return after


def test_pubtator_round_trip(tmp_path):
    src = tmp_path / "sample.PubTator"
    src.write_text(PUBTATOR, encoding="utf-8")
    after = check_round_trip([src], tmp_path / "out" / "stripped.PubTator")
    assert [d.title for d in after] == ["Naloxone reverses the antihypertensive effect of clonidine.",
                                        "Lidocaine-induced cardiac asystole.", ""]
    assert after[2].text.endswith("trailing space ")


def test_jsonl_input_with_odd_titles(tmp_path):
    rows = [{"id": "a", "title": "T", "abstract": "A b."},
            {"id": "b", "text": "no title at all", "entities": [
                {"start": 0, "end": 2, "type": "Chemical", "id": "D000001"}]},
            {"id": "c", "title": "Title", "text": "Text that does not start with it"},
            {"id": "d", "title": "Only", "text": "Only "},
            {"id": "e", "title": "X", "text": "X"}]
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    after = check_round_trip([src], tmp_path / "stripped.PubTator")
    assert [d.title for d in after] == ["T", "", "", "", "X"]


def test_cli_prints_count_quiet_and_refuses_to_overwrite_the_input(tmp_path, capsys):
    src = tmp_path / "sample.PubTator"
    src.write_text(PUBTATOR, encoding="utf-8")
    out = tmp_path / "stripped.PubTator"
    assert strip.main([str(src), "--output", str(out)]) == 0
    assert "wrote 3 documents" in capsys.readouterr().out
    assert strip.main([str(src), "--output", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert strip.main([str(src), "--output", str(tmp_path / "." / "sample.PubTator")]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err
    assert src.read_text(encoding="utf-8") == PUBTATOR


def test_unrepresentable_document_is_an_error_and_writes_nothing(tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "line one\nline two"}) + "\n", encoding="utf-8")
    out = tmp_path / "stripped.PubTator"
    with pytest.raises(strip.StripError, match="line break"):
        strip.strip_annotations(src, out)
    assert list(tmp_path.iterdir()) == [src]


def test_runs_as_a_script(tmp_path):
    src = tmp_path / "sample.PubTator"
    src.write_text(PUBTATOR, encoding="utf-8")
    out = tmp_path / "stripped.PubTator"
    r = subprocess.run([sys.executable, str(SCRIPT), str(src), "--output", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"wrote 3 documents to {out}"


@pytest.mark.shared
@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared datasets not found at {DATA}")
def test_biored_dev(tmp_path):
    src = DATA / "biored" / "Dev.PubTator"
    after = check_round_trip([src], tmp_path / "Dev.raw.PubTator")
    assert len(after) == 100
    assert [d.title for d in after] == [d.title for d in read_corpus(src)]
    assert sum(len(d.mentions) for d in after) == 0
