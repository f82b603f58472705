"""The readers on the real corpora in ../shared/datasets: counts equal those measured in their READMEs,
mention offsets agree with the text, and the same corpus in different formats reads identically."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from graphmert.corpus.readers import detect_format, read_corpus

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"

pytestmark = [
    pytest.mark.shared,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"shared datasets not found at {DATA}"),
]


@functools.lru_cache(maxsize=None)
def load(rel: str):
    reader = read_corpus(DATA / rel)
    docs = list(reader)
    return docs, reader.stats


def key(doc):
    return doc.id, doc.title, doc.text, doc.mentions, doc.relations


# (file, format, documents, mentions, relations), from the READMEs
COUNTS = [
    ("biored/Train.PubTator", "pubtator", 400, 13_351, 4_178),
    ("biored/Train.BioC.XML.gz", "bioc_xml", 400, 13_351, 4_178),
    ("biored/Dev.PubTator", "pubtator", 100, 3_533, 1_162),
    ("biored/Dev.BioC.XML.gz", "bioc_xml", 100, 3_533, 1_162),
    ("biored/Dev.BioC.JSON.gz", "bioc_json", 100, 3_533, 1_162),
    ("bc5cdr/CDR_TrainingSet.PubTator.txt", "pubtator", 490, 9_137, 1_022),
    ("bc5cdr/CDR_DevelopmentSet.PubTator.txt", "pubtator", 489, 9_334, 992),
    ("bc5cdr/CDR_TestSet.PubTator.txt", "pubtator", 487, 9_498, 1_036),
]


@pytest.mark.parametrize("rel, fmt, n_docs, n_mentions, n_relations", COUNTS)
def test_counts_match_readme(rel, fmt, n_docs, n_mentions, n_relations):
    assert detect_format(DATA / rel) == fmt
    docs, stats = load(rel)
    assert (stats.documents, stats.mentions, stats.relations) == (n_docs, n_mentions, n_relations)
    assert (len(docs), sum(len(d.mentions) for d in docs)) == (n_docs, n_mentions)
    assert stats.skipped == []
    assert stats.offset_mismatches == 0
    assert all(d.text[m.start:m.end] == m.text for d in docs for m in d.mentions)
    assert all(d.text == d.title + " " + d.text[len(d.title) + 1:] for d in docs)


def test_abstracts_corpus():
    docs, stats = load("biomed_abstracts_corpus/abstracts.jsonl.gz")
    assert stats.documents == len(docs) == 3_165
    assert stats.offset_mismatches == 1                 # the one the README documents
    (bad,) = [(d, m) for d in docs for m in d.mention_text_mismatches()]
    assert bad[0].metadata["offset_mismatches"] == 1
    assert sum(d.metadata["offset_mismatches"] for d in docs) == 1
    assert Counter(d.metadata["source"] for d in docs) == {
        "biored_train": 400, "bc5cdr_train": 439, "bc5cdr_dev": 439, "ncbi_disease_train": 584,
        "tmvar3_pubtator": 303, "pubmedqa_pqal": 1_000}
    pubmedqa = [d for d in docs if d.metadata["source"] == "pubmedqa_pqal"]
    assert all(d.title == "" and d.mentions == [] and d.metadata["mesh_headings"] for d in pubmedqa)


def test_biored_mention_types_relation_types_and_novelty():
    docs, _ = load("biored/Train.PubTator")
    assert Counter(m.type for d in docs for m in d.mentions) == {
        "GeneOrGeneProduct": 4_430, "DiseaseOrPhenotypicFeature": 3_646, "ChemicalEntity": 2_853,
        "OrganismTaxon": 1_429, "SequenceVariant": 890, "CellLine": 103}
    rels = [r for d in docs for r in d.relations]
    assert Counter(r.type for r in rels) == {
        "Association": 2_192, "Positive_Correlation": 1_089, "Negative_Correlation": 763, "Bind": 61,
        "Cotreatment": 31, "Comparison": 28, "Drug_Interaction": 11, "Conversion": 3}
    assert Counter(r.novel for r in rels) == {"Novel": 2_838, "No": 1_340}
    # relation ids are the mentions' normalised ids: numeric genes became NCBIGene:, MeSH got MESH:
    for d in docs:
        ids = {i for m in d.mentions for i in m.ids} | {"|".join(m.ids) for m in d.mentions}
        assert all(r.head in ids and r.tail in ids for r in d.relations), d.id

    dev, _ = load("biored/Dev.PubTator")
    assert Counter(m.type for d in dev for m in d.mentions) == {
        "GeneOrGeneProduct": 1_087, "DiseaseOrPhenotypicFeature": 982, "ChemicalEntity": 822,
        "OrganismTaxon": 370, "SequenceVariant": 250, "CellLine": 22}


@pytest.mark.parametrize("rel, chemical, disease, u_chemical, u_disease", [
    ("bc5cdr/CDR_TrainingSet.PubTator.txt", 5_024, 4_113, 646, 662),
    ("bc5cdr/CDR_DevelopmentSet.PubTator.txt", 5_173, 4_161, 646, 597),
    ("bc5cdr/CDR_TestSet.PubTator.txt", 5_166, 4_332, 657, 641),
])
def test_bc5cdr_types_and_unique_mesh_ids(rel, chemical, disease, u_chemical, u_disease):
    docs, _ = load(rel)
    assert Counter(m.type for d in docs for m in d.mentions) == {"Chemical": chemical,
                                                                  "Disease": disease}
    unique = defaultdict(set)
    for d in docs:
        for m in d.mentions:
            unique[m.type].update(m.ids)            # composite "D1|D2" counted as its two ids
    assert (len(unique["Chemical"]), len(unique["Disease"])) == (u_chemical, u_disease)
    assert all(i.startswith("MESH:") for ids in unique.values() for i in ids)
    assert all(r.type == "CID" and r.head.startswith("MESH:") for d in docs for r in d.relations)


@pytest.mark.parametrize("split, others", [
    ("Train", ["Train.BioC.XML.gz"]),
    ("Dev", ["Dev.BioC.XML.gz", "Dev.BioC.JSON.gz"]),
])
def test_biored_formats_read_identically(split, others):
    reference = [key(d) for d in load(f"biored/{split}.PubTator")[0]]
    for other in others:
        assert [key(d) for d in load(f"biored/{other}")[0]] == reference
