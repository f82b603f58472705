"""Gold loading: pair sets from PubTator files, self-pairs and unknown ids counted, composite ids as
one entity, categories, clear errors; on the shared BioRED Dev split, the counts of its README and
the same gold from PubTator and BioC."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.corpus.readers import CorpusError
from graphmert.eval.gold import GoldSet, load_gold

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


def pubtator(pmid: str, title: str, abstract: str, mentions: list[tuple[str, str, str]],
             relations: list[str]) -> str:
    """A PubTator document; each mention (surface, type, raw id) is placed at the next occurrence of
    its surface in ``title + " " + abstract`` after the previous one of the same surface."""
    text = f"{title} {abstract}"
    lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
    after: dict[str, int] = {}
    for surface, etype, raw in mentions:
        start = text.index(surface, after.get(surface, 0))
        after[surface] = start + 1
        lines.append(f"{pmid}\t{start}\t{start + len(surface)}\t{surface}\t{etype}\t{raw}")
    lines += [f"{pmid}\t{r}" for r in relations]
    return "\n".join(lines) + "\n"


DOC1 = pubtator(
    "100", "Aspirin and Reye syndrome.", "Aspirin causes Reye syndrome in children. BRCA1 binds TP53.",
    [("Aspirin", "Chemical", "D001241"), ("Reye syndrome", "Disease", "D012173"),
     ("Aspirin", "ChemicalEntity", "D001241"), ("Reye syndrome", "DiseaseOrPhenotypicFeature", "D012173"),
     ("children", "Species", "9606"), ("BRCA1", "GeneOrGeneProduct", "672"),
     ("TP53", "GeneOrGeneProduct", "7157,7158")],
    ["Positive_Correlation\tD001241\tD012173\tNovel", "Bind\t672\t7157\tNo", "Bind\t672\t672\tNo",
     "Association\tD001241\tD999999\tNo"])
DOC2 = pubtator(
    "200", "Composite entity.", "Cyclophosphamide and doxorubicin cause cardiotoxicity.",
    [("Cyclophosphamide and doxorubicin", "Chemical", "D003520|D004317"),
     ("cardiotoxicity", "Disease", "D066126")],
    ["CID\tD003520|D004317\tD066126"])
NO_RELATIONS = pubtator("300", "Plain title.", "Plain abstract with Aspirin.",
                        [("Aspirin", "Chemical", "D001241")], [])


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_load_gold_pairs_counts_and_categories(tmp_path):
    g = load_gold([write(tmp_path, "a.PubTator", DOC1 + "\n" + DOC2)])
    assert sorted(g.documents) == ["100", "200"]
    assert g.documents["100"].sentences, "sentences are split"
    assert len(g.documents["100"].sentences) == 3
    composite = "MESH:D003520|MESH:D004317"
    assert g.untyped == {
        ("100", frozenset({"MESH:D001241", "MESH:D012173"})),
        ("100", frozenset({"NCBIGene:672", "NCBIGene:7157"})),
        ("100", frozenset({"MESH:D001241", "MESH:D999999"})),
        ("200", frozenset({composite, "MESH:D066126"})),
    }
    assert ("100", frozenset({"NCBIGene:672", "NCBIGene:7157"}), "Bind") in g.typed
    assert ("200", frozenset({composite, "MESH:D066126"}), "CID") in g.typed
    assert g.relations == 5 and g.self_pairs == 1
    assert g.unknown_relation_ids == 1                         # D999999: no mention carries it
    assert g.category("100", "MESH:D001241") == "biolink:ChemicalEntity"
    assert g.category("100", "NCBIGene:7158") == "biolink:Gene"
    assert g.category("100", "NCBITaxon:9606") == "biolink:OrganismTaxon"
    assert g.category("200", composite) == "biolink:ChemicalEntity"
    assert g.category("100", "MESH:D999999") == ""
    assert g.entity_ids("200") == ["MESH:D003520", "MESH:D004317", "MESH:D066126"]
    assert g.counts() == {"documents": 2, "gold_relations": 5, "gold_pairs": 4, "gold_typed_pairs": 4,
                          "gold_self_pairs": 1, "unknown_relation_ids": 1, "gold_skipped_records": 0}
    assert g.outside([("100", frozenset("ab")), ("999", frozenset("ab"))]) == 1


def test_gold_file_without_relations_is_an_error_naming_it(tmp_path):
    good = write(tmp_path, "good.PubTator", DOC2)
    bad = write(tmp_path, "plain.PubTator", NO_RELATIONS)
    with pytest.raises(CorpusError, match=r"plain\.PubTator: the gold file has no relations"):
        load_gold([good, bad])
    with pytest.raises(CorpusError, match="no gold files"):
        load_gold([])


def test_missing_gold_file_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="missing.PubTator: no such file"):
        load_gold(tmp_path / "missing.PubTator")


def test_majority_type_and_type_counts():
    def doc(i, types):
        ms = [Mention(0, 1, "a", "Gene", [f"g{j}"]) for j in range(len(types) + 1)]
        rels = [Relation(t, "g0", f"g{j + 1}") for j, t in enumerate(types)]
        return Document(id=i, text="a", mentions=ms, relations=rels, sentences=[(0, 1)])

    g = GoldSet.from_documents([doc("1", ["Bind", "Association"]), doc("2", ["Bind", "Association"])])
    assert g.type_counts() == {"Association": 2, "Bind": 2}
    assert g.majority_type() == "Association"                   # tie → smallest name
    g = GoldSet.from_documents([doc("1", ["Bind", "Association", "Bind"])])
    assert g.majority_type() == "Bind"
    assert GoldSet.from_documents([doc("1", [])]).majority_type() is None
    with pytest.raises(ValueError, match="'1' occurs twice"):
        GoldSet.from_documents([doc("1", []), doc("1", [])])


@pytest.mark.shared
@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared datasets not found at {DATA}")
def test_biored_dev_gold_counts_and_formats_agree():
    g = load_gold(DATA / "biored" / "Dev.PubTator")
    # README: 100 documents, 1,162 relations; one of them (24036311, Bind NCBIGene:22083 with itself)
    # is a self-pair, so 1,161 scored pairs
    assert g.counts() == {"documents": 100, "gold_relations": 1162, "gold_pairs": 1161,
                          "gold_typed_pairs": 1161, "gold_self_pairs": 1, "unknown_relation_ids": 0,
                          "gold_skipped_records": 0}
    assert g.type_counts()["Association"] == 560 and g.majority_type() == "Association"
    x = load_gold(DATA / "biored" / "Dev.BioC.XML.gz")
    assert x.untyped == g.untyped and x.typed == g.typed and x.categories == g.categories


def test_subset_keeps_the_gold_of_the_given_documents(tmp_path):
    """GoldSet.subset (issue #15): evaluation scores only the documents extraction read."""
    g = load_gold([write(tmp_path, "a.PubTator", DOC1 + "\n" + DOC2)])
    s = g.subset(["200", "999"])                                # an id without gold is ignored
    assert list(s.documents) == ["200"]
    assert s.untyped == {p for p in g.untyped if p[0] == "200"}
    assert s.typed == {p for p in g.typed if p[0] == "200"}
    assert s.counts() == {"documents": 1, "gold_relations": 1, "gold_pairs": 1, "gold_typed_pairs": 1,
                          "gold_self_pairs": 0, "unknown_relation_ids": 0, "gold_skipped_records": 0}
    assert s.category("200", "MESH:D066126") == "biolink:Disease" and s.sources == g.sources
    assert g.subset(g.documents).counts() == g.counts()
    assert g.subset([]).counts()["gold_pairs"] == 0
