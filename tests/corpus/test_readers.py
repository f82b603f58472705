"""Corpus readers on tiny hand-written inputs: text, offsets, ids, relations, detection, gzip, and the
same document written in PubTator, BioC JSON, BioC XML and JSONL read back as equal Documents."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.corpus.readers import READERS, detect_format, read_corpus
from graphmert.registry import RegistryError

# --------------------------------------------------------------------------------------------------
# One small document, and writers for each format (independent of the readers)
# --------------------------------------------------------------------------------------------------

TITLE = "Clonidine and MODY genes in type II diabetes."
ABSTRACT = ("In rats, clonidine lowered insulin; the HNF1A variant c.123A>G (rs1169288) was linked to "
            "renal and hepatic failure.")
# (surface text, occurrence, type, raw id as the source writes it)
SPANS = [
    ("Clonidine", 0, "ChemicalEntity", "D003000"),
    ("MODY", 0, "GeneOrGeneProduct", "3172,3651,6927"),
    ("type II diabetes", 0, "DiseaseOrPhenotypicFeature", "D003924"),
    ("rats", 0, "OrganismTaxon", "10116"),
    ("clonidine", 0, "ChemicalEntity", "D003000"),
    ("insulin", 0, "GeneOrGeneProduct", "3630"),
    ("c.123A>G", 0, "SequenceVariant", "c|SUB|A|123|G"),
    ("rs1169288", 0, "SequenceVariant", "rs1169288"),
    ("renal and hepatic failure", 0, "DiseaseOrPhenotypicFeature", "D051437|D017093"),
]
RELATIONS = [("Association", "3630", "D003924", "Novel"),
             ("Positive_Correlation", "c|SUB|A|123|G", "D003924", "No"),
             ("Negative_Correlation", "D003000", "3651", "Novel")]
DOC_ID = "1234"


def _mentions(text: str) -> list[tuple[int, int, str, str, str]]:
    out, cursor = [], 0
    for surface, _, etype, raw in SPANS:
        start = text.index(surface, cursor)
        out.append((start, start + len(surface), surface, etype, raw))
        cursor = start + 1
    return out


TEXT = f"{TITLE} {ABSTRACT}"
MENTIONS = _mentions(TEXT)

EXPECTED = Document(
    id=DOC_ID, text=TEXT, title=TITLE,
    mentions=[Mention(s, e, t, ty, ids) for (s, e, t, ty, _), ids in zip(MENTIONS, [
        ["MESH:D003000"], ["NCBIGene:3172", "NCBIGene:3651", "NCBIGene:6927"], ["MESH:D003924"],
        ["NCBITaxon:10116"], ["MESH:D003000"], ["NCBIGene:3630"], ["tmVar:c|SUB|A|123|G"],
        ["dbSNP:rs1169288"], ["MESH:D051437", "MESH:D017093"]])],
    relations=[Relation("Association", "NCBIGene:3630", "MESH:D003924", "Novel"),
               Relation("Positive_Correlation", "tmVar:c|SUB|A|123|G", "MESH:D003924", "No"),
               Relation("Negative_Correlation", "MESH:D003000", "NCBIGene:3651", "Novel")])


def pubtator_text(doc_id: str = DOC_ID) -> str:
    lines = [f"{doc_id}|t|{TITLE}", f"{doc_id}|a|{ABSTRACT}"]
    lines += [f"{doc_id}\t{s}\t{e}\t{t}\t{ty}\t{raw}" for s, e, t, ty, raw in MENTIONS]
    lines += [f"{doc_id}\t{ty}\t{a}\t{b}\t{n}" for ty, a, b, n in RELATIONS]
    return "\n".join(lines) + "\n"


def bioc_json_obj(doc_id: str = DOC_ID, infons: bool = True) -> dict:
    cut = len(TITLE) + 1
    passages = []
    for kind, offset, text in (("title", 0, TITLE), ("abstract", cut, ABSTRACT)):
        anns = [{"id": str(k), "infons": {"identifier": raw, "type": ty}, "text": t,
                 "locations": [{"offset": s, "length": e - s}]}
                for k, (s, e, t, ty, raw) in enumerate(MENTIONS) if offset <= s < offset + len(text)]
        p = {"offset": offset, "text": text, "annotations": anns}
        if infons:
            p["infons"] = {"type": kind}
        passages.append(p)
    rels = [{"id": f"R{k}", "infons": {"type": ty, "entity1": a, "entity2": b, "novel": n}}
            for k, (ty, a, b, n) in enumerate(RELATIONS)]
    return {"id": doc_id, "passages": passages, "relations": rels}


def bioc_xml_text(docs: list[dict]) -> str:
    def infons(d: dict) -> str:
        return "".join(f'<infon key="{k}">{escape(str(v))}</infon>' for k, v in d.items())

    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE collection SYSTEM "BioC.dtd">\n'
           "<collection><source>test</source><date>2024</date><key>BioC.key</key>"]
    for doc in docs:
        out.append(f"<document><id>{doc['id']}</id>")
        for p in doc["passages"]:
            out.append(f"<passage>{infons(p.get('infons', {}))}<offset>{p['offset']}</offset>"
                       f"<text>{escape(p['text'])}</text>")
            for a in p["annotations"]:
                locs = "".join(f'<location offset="{x["offset"]}" length="{x["length"]}"/>'
                               for x in a["locations"])
                out.append(f'<annotation id="{a["id"]}">{infons(a["infons"])}{locs}'
                           f"<text>{escape(a['text'])}</text></annotation>")
            out.append("</passage>")
        for r in doc["relations"]:
            out.append(f'<relation id="{r["id"]}">{infons(r["infons"])}</relation>')
        out.append("</document>\n")
    out.append("</collection>\n")
    return "".join(out)


def jsonl_obj(doc_id: str = DOC_ID) -> dict:
    return {"doc_id": doc_id, "pmid": doc_id, "title": TITLE, "abstract": ABSTRACT,
            "entities": [{"start": s, "end": e, "text": t, "type": ty, "id": raw}
                         for s, e, t, ty, raw in MENTIONS],
            "relations": [{"type": ty, "head": a, "tail": b, "novel": n} for ty, a, b, n in RELATIONS],
            "source": "unit_test", "year": "2024"}


def write(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def read_one(path: Path, **kw) -> Document:
    docs = list(read_corpus(path, **kw))
    assert len(docs) == 1
    return docs[0]


def same(a: Document, b: Document) -> None:
    """Equal except source and metadata."""
    assert (a.id, a.title, a.text) == (b.id, b.title, b.text)
    assert a.mentions == b.mentions
    assert a.relations == b.relations


def assert_offsets(doc: Document) -> None:
    for m in doc.mentions:
        assert doc.text[m.start:m.end] == m.text


# --------------------------------------------------------------------------------------------------
# The same document in every annotated format
# --------------------------------------------------------------------------------------------------

FORMATS = {
    "x.pubtator": lambda: pubtator_text(),
    "x.bioc.json": lambda: json.dumps({"source": "t", "documents": [bioc_json_obj()]}, indent=1),
    "x.xml": lambda: bioc_xml_text([bioc_json_obj()]),
    "x.jsonl": lambda: json.dumps(jsonl_obj()) + "\n",
}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_gives_the_expected_document(tmp_path, name, gz):
    path = write(tmp_path / (name + (".gz" if gz else "")), FORMATS[name]())
    doc = read_one(path)
    same(doc, EXPECTED)
    assert_offsets(doc)
    assert doc.source == str(path)


def test_formats_agree_with_each_other(tmp_path):
    docs = [read_one(write(tmp_path / name, make())) for name, make in FORMATS.items()]
    for other in docs[1:]:
        same(docs[0], other)


def test_detected_formats(tmp_path):
    expected = {"x.pubtator": "pubtator", "x.bioc.json": "bioc_json", "x.xml": "bioc_xml",
                "x.jsonl": "jsonl"}
    for name, make in FORMATS.items():
        assert detect_format(write(tmp_path / name, make())) == expected[name]
        assert detect_format(write(tmp_path / (name + ".gz"), make())) == expected[name]


# --------------------------------------------------------------------------------------------------
# PubTator specifics
# --------------------------------------------------------------------------------------------------

BC5CDR = """\
227508|t|Naloxone reverses the antihypertensive effect of clonidine.
227508|a|Renal and hepatic failure after nalozone.
227508\t0\t8\tNaloxone\tChemical\tD009270
227508\t49\t58\tclonidine\tChemical\tD003000
227508\t60\t85\tRenal and hepatic failure\tDisease\tD051437|D017093\tRenal failure|hepatic failure
227508\t92\t100\tnalozone\tChemical\t-1
227508\tCID\tD003000\tD017093

354896|t|Lidocaine-induced cardiac asystole.
354896|a|A case.
354896\t0\t9\tLidocaine\tChemical\tD008012
"""


def test_pubtator_bc5cdr_composite_unlinked_and_cid(tmp_path):
    docs = list(read_corpus(write(tmp_path / "CDR_TrainingSet.PubTator.txt", BC5CDR)))
    assert [d.id for d in docs] == ["227508", "354896"]
    d = docs[0]
    assert d.text == ("Naloxone reverses the antihypertensive effect of clonidine. "
                      "Renal and hepatic failure after nalozone.")
    assert d.title == "Naloxone reverses the antihypertensive effect of clonidine."
    assert_offsets(d)
    assert [m.ids for m in d.mentions] == [["MESH:D009270"], ["MESH:D003000"],
                                           ["MESH:D051437", "MESH:D017093"], []]
    assert d.relations == [Relation("CID", "MESH:D003000", "MESH:D017093", None)]
    assert docs[1].relations == [] and docs[1].text == "Lidocaine-induced cardiac asystole. A case."


def test_pubtator_relation_ids_follow_the_mentions_types(tmp_path):
    # A numeric id becomes NCBIGene: or NCBITaxon: by the type of the mention that carries it; an id
    # no mention carries falls back to plain normalisation; a BioRED composite id stays one entity.
    text = ("1|t|TP53 in mice\n1|a|and D017180|D014693 disease.\n"
            "1\t0\t4\tTP53\tGeneOrGeneProduct\t7157\n"
            "1\t8\t12\tmice\tOrganismTaxon\t10090\n"
            "1\t17\t32\tD017180|D014693\tDiseaseOrPhenotypicFeature\tD017180|D014693\n"
            "1\tAssociation\t7157\t10090\tNo\n"
            "1\tBind\t7157\tD017180|D014693\tNovel\n"
            "1\tBind\t999\tD000001\tNovel\n")
    d = read_one(write(tmp_path / "a.pubtator", text))
    assert d.mentions[2].ids == ["MESH:D017180", "MESH:D014693"]
    assert d.relations == [Relation("Association", "NCBIGene:7157", "NCBITaxon:10090", "No"),
                           Relation("Bind", "NCBIGene:7157", "MESH:D017180|MESH:D014693", "Novel"),
                           Relation("Bind", "999", "MESH:D000001", "Novel")]


def test_pubtator_documents_without_blank_line_and_crlf(tmp_path):
    text = "1|t|First.\r\n1|a|One.\r\n2|t|Second.\r\n2|a|Two.\r\n2\t0\t6\tSecond\tX\t-\r\n"
    docs = list(read_corpus(write(tmp_path / "a.pubtator", text)))
    assert [(d.id, d.text) for d in docs] == [("1", "First. One."), ("2", "Second. Two.")]
    assert docs[1].mentions == [Mention(0, 6, "Second", "X", [])]


def test_title_only_and_abstract_only(tmp_path):
    docs = list(read_corpus(write(tmp_path / "a.pubtator", "1|t|Only a title.\n\n2|a|Only text.\n")))
    assert [(d.title, d.text) for d in docs] == [("Only a title.", "Only a title."),
                                                 ("", "Only text.")]


# --------------------------------------------------------------------------------------------------
# BioC specifics
# --------------------------------------------------------------------------------------------------


def test_bioc_json_without_passage_infons_and_with_a_gap(tmp_path):
    # BioRED's BioC JSON has no passage infons: the first of several passages is the title. An
    # abstract that starts further than len(title) + 1 is placed at its offset (gap = spaces).
    obj = bioc_json_obj(infons=False)
    doc = read_one(write(tmp_path / "a.json", json.dumps([obj])))      # a bare list of documents
    same(doc, EXPECTED)
    obj["passages"][1]["offset"] += 3
    for a in obj["passages"][1]["annotations"]:
        a["locations"][0]["offset"] += 3
    doc = read_one(write(tmp_path / "b.json", json.dumps({"documents": [obj]})))
    assert doc.text == TITLE + "    " + ABSTRACT and doc.title == TITLE
    assert_offsets(doc)


def test_bioc_json_streams_across_chunk_boundaries(tmp_path):
    # Decoding must not depend on where the file is cut into chunks (numbers, strings, nesting).
    from graphmert.corpus.readers.base import ReadContext
    from graphmert.corpus.readers.bioc import _json_documents, _JsonScanner

    docs = [bioc_json_obj(f"doc{i}") for i in range(3)]
    text = json.dumps({"source": "t", "count": 12345, "documents": docs, "ok": True, "n": None},
                      indent=2)
    for size in (2, 7, 64, len(text)):
        chunks = iter([text[i:i + size] for i in range(0, len(text), size)])
        sc = _JsonScanner(tmp_path / "x.json", ReadContext("x.json"), chunks)
        got = list(_json_documents(sc))
        assert [obj for _, obj in got] == docs
        assert [line for line, _ in got] == [text[:text.index(f'"id": "doc{i}"')].count("\n")
                                             for i in range(3)]   # the line of each opening brace


def test_bioc_xml_relation_nodes_and_metadata(tmp_path):
    xml = ('<collection><document><id>9</id><infon key="journal">J</infon>'
           '<passage><infon key="type">title</infon><offset>0</offset><text>Aspirin hurts.</text>'
           '<annotation id="A1"><infon key="type">Chemical</infon><infon key="MESH">D001241</infon>'
           '<location offset="0" length="7"/><text>Aspirin</text></annotation></passage>'
           '<passage><infon key="type">abstract</infon><offset>15</offset><text>Ulcers follow.</text>'
           '<annotation id="A2"><infon key="type">Disease</infon><infon key="MESH">D014456</infon>'
           '<location offset="15" length="6"/><text>Ulcers</text></annotation></passage>'
           '<relation id="R1"><infon key="relation">CID</infon>'
           '<node refid="A1" role="Chemical"/><node refid="A2" role="Disease"/></relation>'
           "</document></collection>")
    doc = read_one(write(tmp_path / "a.xml", xml))
    assert doc.text == "Aspirin hurts. Ulcers follow." and doc.title == "Aspirin hurts."
    assert [m.ids for m in doc.mentions] == [["MESH:D001241"], ["MESH:D014456"]]
    assert doc.relations == [Relation("CID", "MESH:D001241", "MESH:D014456", None)]
    assert doc.metadata == {"journal": "J"}


# --------------------------------------------------------------------------------------------------
# PubMed XML
# --------------------------------------------------------------------------------------------------

PUBMED = """<?xml version="1.0"?>
<!DOCTYPE PubmedArticleSet>
<PubmedArticleSet>
 <PubmedArticle>
  <MedlineCitation Status="MEDLINE">
   <PMID Version="1">111</PMID>
   <Article>
    <Journal><JournalIssue><PubDate><Year>2019</Year></PubDate></JournalIssue>
     <Title>Diabetes Care</Title></Journal>
    <ArticleTitle>Metformin and <i>HbA<sub>1c</sub></i> in adults.</ArticleTitle>
    <Abstract>
     <AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Metformin is <b>first-line</b>.</AbstractText>
     <AbstractText Label="RESULTS">HbA1c fell.</AbstractText>
    </Abstract>
   </Article>
   <MeshHeadingList>
    <MeshHeading><DescriptorName UI="D003924">Diabetes Mellitus, Type 2</DescriptorName></MeshHeading>
    <MeshHeading><DescriptorName UI="D008687">Metformin</DescriptorName>
     <QualifierName UI="Q000627">therapeutic use</QualifierName></MeshHeading>
   </MeshHeadingList>
  </MedlineCitation>
  <PubmedData><ArticleIdList><ArticleId IdType="doi">10.1/x</ArticleId></ArticleIdList></PubmedData>
 </PubmedArticle>
 <DeleteCitation><PMID>5</PMID></DeleteCitation>
 <PubmedArticle>
  <MedlineCitation><PMID>112</PMID><Article><ArticleTitle>No abstract here.</ArticleTitle></Article>
  </MedlineCitation>
 </PubmedArticle>
</PubmedArticleSet>
"""


@pytest.mark.parametrize("name", ["pubmed.xml", "pubmed.xml.gz"])
def test_pubmed_xml(tmp_path, name):
    path = write(tmp_path / name, PUBMED)
    assert detect_format(path) == "pubmed_xml"
    docs = list(read_corpus(path))
    assert [d.id for d in docs] == ["111", "112"]
    d = docs[0]
    assert d.title == "Metformin and HbA1c in adults."
    assert d.text == ("Metformin and HbA1c in adults. BACKGROUND: Metformin is first-line. "
                      "RESULTS: HbA1c fell.")
    assert d.mentions == [] and d.relations == []
    assert d.metadata == {"pmid": "111", "journal": "Diabetes Care", "year": "2019", "doi": "10.1/x",
                          "mesh_headings": ["Diabetes Mellitus, Type 2", "Metformin"],
                          "mesh_ids": ["MESH:D003924", "MESH:D008687"]}
    assert docs[1].text == docs[1].title == "No abstract here."


def test_medline_citation_set(tmp_path):
    xml = ("<MedlineCitationSet><MedlineCitation><PMID>7</PMID><Article><ArticleTitle>T.</ArticleTitle>"
           "<Abstract><AbstractText>A.</AbstractText></Abstract></Article></MedlineCitation>"
           "</MedlineCitationSet>")
    path = write(tmp_path / "m.xml", xml)
    assert detect_format(path) == "pubmed_xml"
    assert read_one(path).text == "T. A."


# --------------------------------------------------------------------------------------------------
# JSONL and plain text
# --------------------------------------------------------------------------------------------------


def test_jsonl_metadata_id_lists_and_text_field(tmp_path):
    rows = [jsonl_obj(),
            {"id": 77, "text": "Free text with TP53.", "entities": [
                {"start": 15, "end": 19, "type": "gene", "id": ["7157", "7158"]},   # no "text": sliced
                {"start": 0, "end": 4, "text": "Free", "type": "chemical", "id": ""}]},
            {"doc_id": "q1", "title": "", "abstract": "Only an abstract.", "entities": []}]
    path = write(tmp_path / "c.jsonl.gz", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    a, b, c = read_corpus(path)
    same(a, EXPECTED)
    assert a.metadata == {"pmid": DOC_ID, "source": "unit_test", "year": "2024"}
    assert b.id == "77" and b.text == "Free text with TP53." and b.title == ""
    assert b.mentions == [Mention(15, 19, "TP53", "gene", ["NCBIGene:7157", "NCBIGene:7158"]),
                          Mention(0, 4, "Free", "chemical", [])]
    assert c.text == "Only an abstract."


def test_text_folder_and_single_file(tmp_path):
    folder = tmp_path / "abstracts"
    folder.mkdir()
    write(folder / "b.txt", "  Second document.\n")
    write(folder / "a.txt.gz", "First document.\n")
    write(folder / "notes.md", "ignored")
    (folder / "sub").mkdir()
    write(folder / "sub" / "c.txt", "not entered")
    assert detect_format(folder) == "text"
    docs = list(read_corpus(folder))
    assert [(d.id, d.text, d.source) for d in docs] == [
        ("a", "First document.", str(folder / "a.txt.gz")), ("b", "Second document.", str(folder / "b.txt"))]

    single = write(tmp_path / "note.txt", "A note | with bars.\n")
    assert detect_format(single) == "text"
    assert read_one(single).id == "note"
    pt = write(tmp_path / "corpus.txt", "\n\n" + pubtator_text())
    assert detect_format(pt) == "pubtator"
    same(read_one(pt), EXPECTED)


def test_detection_by_name(tmp_path):
    assert detect_format(write(tmp_path / "Train.PubTator", pubtator_text())) == "pubtator"
    assert detect_format(write(tmp_path / "CDR_TrainingSet.PubTator.txt", BC5CDR)) == "pubtator"
    assert detect_format(write(tmp_path / "Dev.BioC.JSON.gz", "{}")) == "bioc_json"
    with pytest.raises(ValueError, match=r"x\.csv.*corpus\.format"):
        detect_format(write(tmp_path / "x.csv", "a,b"))
    with pytest.raises(ValueError, match=r"root element is 'html'"):
        detect_format(write(tmp_path / "page.xml", "<html></html>"))


# --------------------------------------------------------------------------------------------------
# read_corpus: several inputs, explicit format, stats, mismatches, streaming
# --------------------------------------------------------------------------------------------------


def test_stats_over_several_inputs(tmp_path):
    a = write(tmp_path / "a.pubtator", pubtator_text("1") + "\n" + pubtator_text("2"))
    b = write(tmp_path / "b.jsonl", json.dumps(jsonl_obj("3")) + "\n")
    reader = read_corpus([a, b])
    docs = list(reader)
    assert [d.id for d in docs] == ["1", "2", "3"]
    s = reader.stats
    n_m, n_r = len(SPANS), len(RELATIONS)
    assert (s.documents, s.mentions, s.relations, s.offset_mismatches) == (3, 3 * n_m, 3 * n_r, 0)
    assert s.files[str(a)].documents == 2 and s.files[str(b)].mentions == n_m
    assert s.skipped == []
    assert s.to_dict()["files"][str(b)] == {"documents": 1, "mentions": n_m, "relations": n_r,
                                            "offset_mismatches": 0, "skipped": 0}
    assert [d.id for d in reader] == ["1", "2", "3"] and reader.stats.documents == 3  # re-iterable


def test_explicit_format_and_unknown_format(tmp_path):
    path = write(tmp_path / "weird.dat", pubtator_text())
    same(read_one(path, format="pubtator"), EXPECTED)
    with pytest.raises(RegistryError, match=r"corpus\.format.*'nope'.*pubtator"):
        read_corpus(path, format="nope")
    assert set(READERS.names()) == {"pubtator", "bioc_json", "bioc_xml", "pubmed_xml", "jsonl", "text"}


def test_mention_text_mismatch_is_counted_and_logged(tmp_path, caplog):
    text = pubtator_text().replace("\tinsulin\t", "\tinsulin?\t")
    reader = read_corpus(write(tmp_path / "a.pubtator", text))
    with caplog.at_level(logging.WARNING, logger="graphmert.corpus"):
        (doc,) = list(reader)
    assert reader.stats.offset_mismatches == 1
    assert len(doc.mentions) == len(SPANS) and len(doc.mention_text_mismatches()) == 1
    assert "insulin?" in caplog.text and "a.pubtator: line" in caplog.text


def test_reading_is_streamed(tmp_path):
    # The first document is handed out before the reader reaches the bad line of the second.
    text = pubtator_text("1") + "\n" + pubtator_text("2") + "2\tbroken\n"
    it = iter(read_corpus(write(tmp_path / "a.pubtator", text)))
    assert next(it).id == "1"
    with pytest.raises(ValueError, match="broken"):
        next(it)


def test_id_spellings_of_different_sources_agree(tmp_path):
    # PubTator Central writes "CVCL:0594", BioRED "CVCL_0594"; a composite MeSH id that no mention
    # carries still normalises piecewise (it is not a tmVar variant key although it contains "|").
    row = {"doc_id": "1", "text": "HeLa and HeLa cells.",
           "entities": [{"start": 0, "end": 4, "text": "HeLa", "type": "cell_line", "id": "CVCL:0030"},
                        {"start": 9, "end": 13, "text": "HeLa", "type": "CellLine", "id": "CVCL_0030"}],
           "relations": [{"type": "Association", "head": "CVCL:0030", "tail": "D000001|D000002"}]}
    doc = read_one(write(tmp_path / "a.jsonl", json.dumps(row)))
    assert [m.ids for m in doc.mentions] == [["Cellosaurus:CVCL_0030"]] * 2
    assert doc.relations == [Relation("Association", "Cellosaurus:CVCL_0030",
                                      "MESH:D000001|MESH:D000002", None)]
