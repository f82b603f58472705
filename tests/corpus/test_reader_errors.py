"""Bad corpus input: every problem is a CorpusError naming the file, the line/record and the problem;
with skip_bad_records the bad record is counted in the stats and the good ones are still read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from graphmert.corpus.readers import CorpusError, read_corpus


def pubtator_doc(doc_id: str, extra: str = "") -> str:
    return (f"{doc_id}|t|Insulin in diabetes.\n{doc_id}|a|Insulin lowers glucose.\n"
            f"{doc_id}\t0\t7\tInsulin\tGeneOrGeneProduct\t3630\n"
            f"{doc_id}\t11\t19\tdiabetes\tDisease\tD003920\n{extra}")


def jsonl_doc(doc_id: str, **extra) -> str:
    return json.dumps({"doc_id": doc_id, "title": "Insulin in diabetes.", "abstract": "More.",
                       "entities": [{"start": 0, "end": 7, "text": "Insulin", "type": "Gene",
                                     "id": "3630"}], **extra}) + "\n"


def bioc_xml_doc(doc_id: str) -> str:
    return (f"<document><id>{doc_id}</id><passage><infon key=\"type\">title</infon><offset>0</offset>"
            f"<text>Insulin in diabetes.</text><annotation id=\"1\"><infon key=\"type\">Gene</infon>"
            f"<infon key=\"identifier\">3630</infon><location offset=\"0\" length=\"7\"/>"
            f"<text>Insulin</text></annotation></passage></document>\n")


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def write(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def expect_error(paths, *fragments: str) -> str:
    """Reading fails with a CorpusError whose message holds every fragment."""
    with pytest.raises(CorpusError) as info:
        list(read_corpus(paths))
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, f"{fragment!r} not in {msg!r}"
    return msg


def read_skipping(paths):
    reader = read_corpus(paths, skip_bad_records=True)
    docs = list(reader)
    return docs, reader.stats


# --------------------------------------------------------------------------------------------------
# File-level damage: truncated gzip, non-UTF-8 bytes
# --------------------------------------------------------------------------------------------------


def test_truncated_gzip(tmp_path):
    text = "".join(pubtator_doc(str(i)) + "\n" for i in range(300))
    whole = gzip.compress(text.encode())
    path = tmp_path / "big.pubtator.gz"
    path.write_bytes(whole[: len(whole) // 2])
    msg = expect_error(path, "big.pubtator.gz: line ", "byte ", "truncated or corrupt gzip")
    assert "line 1," not in msg                 # it names the line where the data ran out

    docs, stats = read_skipping(path)
    assert 0 < len(docs) < 300
    assert [d.id for d in docs] == [str(i) for i in range(len(docs))]
    assert all(len(d.mentions) == 2 and d.text == "Insulin in diabetes. Insulin lowers glucose."
               for d in docs)                   # the document cut off by the damage is dropped
    assert len(stats.skipped) == 1 and "truncated" in stats.skipped[0].reason
    assert stats.files[str(path)].skipped == 1


def test_truncated_gzip_xml(tmp_path):
    xml = "<collection>" + "".join(bioc_xml_doc(str(i)) for i in range(300)) + "</collection>"
    whole = gzip.compress(xml.encode())
    path = tmp_path / "c.xml.gz"
    path.write_bytes(whole[: len(whole) // 2])
    # Detection reads the start only; the damage shows when reading.
    expect_error(path, "c.xml.gz", "byte ", "of the decompressed data", "truncated or corrupt gzip")
    docs, stats = read_skipping(path)
    assert 0 < len(docs) < 300 and len(stats.skipped) == 1


def test_not_gzip_at_all(tmp_path):
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(jsonl_doc("1").encode())
    expect_error(path, "plain.jsonl.gz", "byte 0", "truncated or corrupt gzip")


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
def test_non_utf8_bytes_jsonl(tmp_path, name):
    data = (jsonl_doc("1") + jsonl_doc("2").replace("More.", "Mo\udcffre.") + jsonl_doc("3"))
    path = write_bytes(tmp_path / name, data.encode("utf-8", "surrogateescape"))
    expect_error(path, name, "line 2", "invalid UTF-8 byte 0xff")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "3"] and len(stats.skipped) == 1


def test_non_utf8_bytes_pubtator_drops_that_document(tmp_path):
    data = (pubtator_doc("1") + "\n" + pubtator_doc("2").replace("lowers", "low\udce9rs") + "\n"
            + pubtator_doc("3"))
    path = write_bytes(tmp_path / "a.pubtator", data.encode("utf-8", "surrogateescape"))
    expect_error(path, "a.pubtator: line 7", "invalid UTF-8 byte 0xe9")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "3"] and len(stats.skipped) == 1


def test_non_utf8_bytes_bioc_json(tmp_path):
    text = json.dumps({"documents": [{"id": "1", "passages": [{"offset": 0, "text": "Fine."}]}]},
                      indent=1)
    data = text.replace("Fine", "Fi\udcffne").encode("utf-8", "surrogateescape")
    path = write_bytes(tmp_path / "a.json", data)
    bad_byte = data.index(b"\xff")
    expect_error(path, "a.json: line 8, column 17", "invalid UTF-8 byte 0xff", f"(byte {bad_byte})")


# --------------------------------------------------------------------------------------------------
# Syntax: malformed PubTator lines, invalid XML, invalid JSON
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_line, problem", [
    ("1\t20\t28\tdiabetes\tDisease\n", "mention line has 5 tab-separated fields"),
    ("1\t20\tx\tdiabetes\tDisease\tD003920\n", "end offset 'x' is not an integer"),
    ("1\tAssociation\t3630\n", "not a title/abstract line"),
    ("1\tAssociation\t3630\tD003920\tNovel\textra\n", "relation line has 6 tab-separated fields"),
    ("9\t0\t7\tInsulin\tGene\t3630\n", "annotation line for document '9' inside document 1"),
    ("1|x|What\n", "unknown section '1|x|'"),
])
def test_malformed_pubtator_line(tmp_path, bad_line, problem):
    path = write(tmp_path / "a.pubtator", pubtator_doc("1", extra=bad_line) + "\n" + pubtator_doc("2"))
    expect_error(path, "a.pubtator: line 5", problem)
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "2"] and [len(d.mentions) for d in docs] == [2, 2]
    assert len(stats.skipped) == 1 and problem in stats.skipped[0].reason
    assert "line 5" in stats.skipped[0].location


def test_relation_to_unlinked_id(tmp_path):
    path = write(tmp_path / "a.pubtator", pubtator_doc("1", extra="1\tCID\t-1\tD003920\n"))
    expect_error(path, "a.pubtator: line 5", "refers to an unlinked id ('-1')")


def test_invalid_xml(tmp_path):
    xml = "<collection>\n" + bioc_xml_doc("1") + "<document><id>2</passage>\n" + bioc_xml_doc("3")
    path = write(tmp_path / "c.xml", xml + "</collection>")
    expect_error(path, "c.xml: line 3, column ", "invalid XML: mismatched tag")
    docs, stats = read_skipping(path)            # parsing cannot resume: what came before is kept
    assert [d.id for d in docs] == ["1"] and len(stats.skipped) == 1


def test_invalid_bioc_structure(tmp_path):
    xml = ("<collection><document><id>1</id><passage><offset>0</offset><text>Some text.</text>"
           "<annotation id=\"A7\"><infon key=\"type\">Gene</infon><text>x</text></annotation>"
           "</passage></document></collection>")
    path = write(tmp_path / "c.xml", xml)
    expect_error(path, "c.xml: document 1 (record 1), annotation A7", "annotation has no location")
    docs, stats = read_skipping(path)
    assert len(docs) == 1 and docs[0].mentions == [] and len(stats.skipped) == 1

    obj = {"documents": [{"id": "5", "passages": [{"offset": 0, "text": "Long title here."},
                                                  {"offset": 4, "text": "overlap"}]}]}
    path = write(tmp_path / "o.json", json.dumps(obj))
    expect_error(path, "o.json: line 1, document 5", "passage at offset 4 overlaps")


def test_invalid_json_line(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl_doc("1") + '{"doc_id": "2", "title": \n' + jsonl_doc("3"))
    expect_error(path, "a.jsonl: line 2", "invalid JSON")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "3"] and len(stats.skipped) == 1


def test_invalid_jsonl_record(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl_doc("1") + '["a list"]\n' + '{"title": "no id"}\n'
                 + jsonl_doc("4", entities=[{"start": "0", "end": 3, "type": "Gene"}]))
    expect_error(path, "a.jsonl: line 2", "expected a JSON object, got list")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "4"] and docs[1].mentions == []
    assert [s.reason for s in stats.skipped] == [
        "expected a JSON object, got list", "record has no 'doc_id' (or 'id')",
        "'start' must be an integer, got '0'"]
    assert stats.skipped[2].location.endswith("a.jsonl: line 4, document 4, entity 1")


def test_invalid_bioc_json(tmp_path):
    good = {"id": "1", "passages": [{"offset": 0, "text": "Fine."}]}
    text = '{"documents": [\n' + json.dumps(good) + ",\n" + '{"id": "2", "passages": [}\n]}'
    path = write(tmp_path / "a.json", text)
    expect_error(path, "a.json: line 3", "invalid JSON")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1"] and len(stats.skipped) == 1


# --------------------------------------------------------------------------------------------------
# Checks shared by all formats (read_corpus)
# --------------------------------------------------------------------------------------------------


def test_mention_offset_beyond_text(tmp_path):
    bad = "1\t500\t510\tglucose\tChemical\tD005947\n"
    path = write(tmp_path / "a.pubtator", pubtator_doc("1", extra=bad) + "\n" + pubtator_doc("2"))
    expect_error(path, "a.pubtator: line 5", "mention 'glucose' offset 500-510 beyond text of length 44")
    docs, stats = read_skipping(path)
    assert [len(d.mentions) for d in docs] == [2, 2] and stats.mentions == 4
    assert len(stats.skipped) == 1

    path = write(tmp_path / "b.jsonl", jsonl_doc("7", entities=[
        {"start": 3, "end": 3, "text": "", "type": "Gene", "id": "1"}]))
    expect_error(path, "b.jsonl: line 1, document 7, entity 1", "empty or reversed span 3-3")


def test_duplicate_document_ids_name_both_places(tmp_path):
    a = write(tmp_path / "a.pubtator", pubtator_doc("1") + "\n" + pubtator_doc("2"))
    b = write(tmp_path / "b.jsonl", jsonl_doc("3") + jsonl_doc("2"))
    expect_error([a, b], "b.jsonl: line 2, document 2", "duplicate document id '2'",
                 "first read at", "a.pubtator: line 6, document 2")
    docs, stats = read_skipping([a, b])
    assert [d.id for d in docs] == ["1", "2", "3"] and stats.documents == 3
    assert len(stats.skipped) == 1 and stats.files[str(b)].skipped == 1


def test_empty_input(tmp_path):
    empty = write(tmp_path / "empty.pubtator", "\n\n")
    good = write(tmp_path / "good.jsonl", jsonl_doc("1"))
    expect_error(empty, "empty.pubtator", "contains no documents")
    expect_error([good, empty], "empty.pubtator", "contains no documents")
    docs, stats = read_skipping([good, empty])
    assert [d.id for d in docs] == ["1"] and stats.skipped[0].reason == "contains no documents"
    with pytest.raises(CorpusError, match="no documents could be read"):
        read_skipping([empty])

    folder = tmp_path / "texts"
    folder.mkdir()
    expect_error(folder, "texts", "contains no documents")
    write(folder / "blank.txt", "  \n")
    expect_error(folder, "blank.txt", "text file is empty")


def test_missing_file(tmp_path):
    with pytest.raises(CorpusError, match=r"nothere\.pubtator: no such file or directory"):
        read_corpus(tmp_path / "nothere.pubtator")
    with pytest.raises(CorpusError, match=r"nothere\.txt: no such file or directory"):
        read_corpus(tmp_path / "nothere.txt", format="text")


# --------------------------------------------------------------------------------------------------
# Bad raw text (issue #51): a 1 MB abstract is an error naming its record (or a skip); empty,
# non-English and symbol-only texts are documents like any other (tests/test_raw_bad_input.py)
# --------------------------------------------------------------------------------------------------


def test_an_abstract_of_one_megabyte_names_its_file_and_record(tmp_path):
    from graphmert.corpus.readers import MAX_TEXT_CHARS

    huge = "Metformin lowers glucose. " * (2**20 // 26 + 1)              # 1 MiB of abstract
    assert len(huge) > MAX_TEXT_CHARS == 1_000_000
    path = write(tmp_path / "a.pubtator", pubtator_doc("1") + "\n" + f"2|t|Huge\n2|a|{huge}\n\n"
                 + pubtator_doc("3"))
    expect_error(path, "a.pubtator: line 6, document 2", f"{len(huge) + 5:,} characters",
                 "MAX_TEXT_CHARS", "corpus.skip_bad_records")
    docs, stats = read_skipping(path)
    assert [d.id for d in docs] == ["1", "3"] and len(stats.skipped) == 1
    at_limit = write(tmp_path / "b.jsonl", json.dumps({"doc_id": "4", "text": "x" * MAX_TEXT_CHARS}) + "\n")
    assert [len(d.text) for d in read_corpus(at_limit)] == [MAX_TEXT_CHARS]   # the limit itself is read
