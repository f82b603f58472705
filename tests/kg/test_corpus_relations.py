"""Seed triples from relation corpora (``kg.relation_files``): annotated documents and held-out
documents (issue #15). Two small PubTator files share an abstract, as BioRED and BC5CDR do."""

from __future__ import annotations

import pytest

from graphmert.config import build
from graphmert.kg.corpus_relations import read_relation_files
from graphmert.kg.graph import KGError
from graphmert.kg.loaders import load_kg
from relation_corpora import write_pubtator

MET, T2D, OB, LA = "MESH:D008687", "MESH:D003924", "MESH:D009765", "MESH:D000140"
TCF, FTO, ASP, PAIN = "NCBIGene:6934", "NCBIGene:79068", "MESH:D001241", "MESH:D010146"

TITLE_101 = "Metformin, obesity and lactic acidosis"
TEXT_101 = "Obesity raises the risk of type 2 diabetes; metformin rarely causes lactic acidosis."

# BioRED-like: two relation types; 103 states no relation; 199 is the held-out document. Its many
# "Obesity" mentions would make "Obesity" the node's name if they were read.
BIORED = [
    ("101", TITLE_101, TEXT_101,
     [("obesity", "Disease", "D009765"), ("type 2 diabetes", "Disease", "D003924")],
     [("Association", "D009765", "D003924")]),
    ("102", "TCF7L2 and diabetes", "TCF7L2 variants raise the risk of type 2 diabetes.",
     [("TCF7L2", "Gene", "6934"), ("type 2 diabetes", "Disease", "D003924")],
     [("Positive_Correlation", "6934", "D003924")]),
    ("103", "Aspirin and pain", "Aspirin relieves pain.",
     [("Aspirin", "Chemical", "D001241"), ("pain", "Disease", "D010146")], []),
    ("199", "Obesity genetics", "Obesity. Obesity. Obesity is linked to FTO.",
     [("Obesity", "Disease", "D009765"), ("FTO", "Gene", "79068")],
     [("Association", "79068", "D009765")]),
]
# BC5CDR-like (CID lines with four fields): 101 again with another annotation, and 199 again
BC5CDR = [
    ("101", TITLE_101, TEXT_101,
     [("metformin", "Chemical", "D008687"), ("lactic acidosis", "Disease", "D000140")],
     [("CID", "D008687", "D000140")]),
    ("104", "Metformin toxicity", "Metformin overdose causes lactic acidosis.",
     [("Metformin", "Chemical", "D008687"), ("lactic acidosis", "Disease", "D000140")],
     [("CID", "D008687", "D000140")]),
    ("199", "Obesity genetics", "Obesity. Obesity. Obesity is linked to FTO.",
     [("Obesity", "Disease", "D009765"), ("FTO", "Gene", "79068")],
     [("CID", "79068", "D009765")]),
]


@pytest.fixture()
def files(tmp_path):
    return (write_pubtator(tmp_path / "biored.PubTator", BIORED),
            write_pubtator(tmp_path / "bc5cdr.PubTator", BC5CDR),
            write_pubtator(tmp_path / "only_held_out.PubTator", [BIORED[-1]]))


def both(s: str, r: str, o: str) -> set[tuple[str, str, str]]:
    return {(s, r, o), (o, r, s)}


def test_annotated_documents_carry_their_files_types_and_triples(files):
    biored, bc5cdr, _ = files
    kg = read_relation_files([str(biored), str(bc5cdr)], held_out={"199"})
    assert set(kg.annotated) == {"101", "102", "103", "104"}
    # a document without a relation of its own still gets its file's types (known negatives)
    assert kg.annotated["103"].types == {"Association", "Positive_Correlation"}
    assert kg.annotated["103"].triples == frozenset()
    assert kg.annotated["102"].triples == both(TCF, "Positive_Correlation", T2D)
    # a document in two files: the union of both files' types and of its triples there
    assert kg.annotated["101"].types == {"Association", "Positive_Correlation", "CID"}
    assert kg.annotated["101"].triples == both(OB, "Association", T2D) | both(MET, "CID", LA)
    assert kg.annotated["104"].types == {"CID"}
    assert kg.annotated["104"].triples == both(MET, "CID", LA)
    assert kg.stats()["annotated_documents"] == 4
    # both directions of every relation, provenance names the document; 104 repeats 101's CID
    # triple, whose first row (101's) is kept
    keys = {e.key for e in kg.edges}
    assert keys == (both(OB, "Association", T2D) | both(TCF, "Positive_Correlation", T2D)
                    | both(MET, "CID", LA))
    assert kg.duplicate_edges == 2
    assert {e.provenance["publications"] for e in kg.edges} == {"101", "102"}


def test_held_out_documents_contribute_nothing_and_are_counted(files):
    biored, bc5cdr, _ = files
    kg = read_relation_files([str(biored), str(bc5cdr)], held_out={"199"})
    assert kg.skipped["relation_documents_held_out"] == 2          # once per file it is in
    assert FTO not in kg.nodes and "199" not in kg.annotated
    assert not any(e.provenance["publications"] == "199" for e in kg.edges)
    assert not any(FTO in (e.subject, e.object) for e in kg.edges)
    assert kg.name(OB) == "obesity"                                  # its mentions are not read either
    assert kg.relation_counts() == {"Association": 2, "CID": 2, "Positive_Correlation": 2}

    # the contrast: without the holdout, 199's relations and names are seed-KG facts
    full = read_relation_files([str(biored), str(bc5cdr)])
    assert "relation_documents_held_out" not in full.skipped
    assert FTO in full.nodes and "199" in full.annotated
    assert full.annotated["199"].types == {"Association", "Positive_Correlation", "CID"}
    assert full.name(OB) == "Obesity"
    assert {e.key for e in full.edges} >= both(FTO, "Association", OB) | both(FTO, "CID", OB)


def test_a_file_entirely_held_out_is_not_an_error(files):
    biored, _, only = files
    kg = read_relation_files([str(biored), str(only)], held_out={"199"})
    assert kg.skipped["relation_documents_held_out"] == 2
    assert set(kg.annotated) == {"101", "102", "103"}
    alone = read_relation_files([str(only)], held_out={"199"})
    assert alone.edges == [] and not alone.nodes and alone.annotated == {}
    assert alone.skipped == {"relation_documents_held_out": 1}


def test_a_file_without_any_relation_still_is_an_error(tmp_path, files):
    biored, _, _ = files
    empty = write_pubtator(tmp_path / "no_relations.PubTator", [BIORED[2]])
    with pytest.raises(KGError, match="no usable document-level relation"):
        read_relation_files([str(biored), str(empty)])


def test_load_kg_passes_the_holdout(files):
    biored, bc5cdr, only = files
    cfg = build({"kg": {"relation_files": [str(biored), str(bc5cdr)]}}).kg
    kg = load_kg(cfg, held_out={"199", "104"})
    assert set(kg.annotated) == {"101", "102", "103"}
    assert kg.skipped["relation_documents_held_out"] == 3
    assert {e.provenance["publications"] for e in kg.edges} == {"101", "102"}
    assert len(load_kg(cfg).annotated) == 5
    # a KG of relation files alone that the holdout empties is an error (nothing to inject)
    with pytest.raises(KGError):
        load_kg(build({"kg": {"relation_files": [str(only)]}}).kg, held_out={"199"})


def test_relation_map_renames_triples_and_the_types_a_corpus_annotates(files):
    biored, bc5cdr, _ = files
    cfg = build({"kg": {"relation_files": [str(biored), str(bc5cdr)],
                        "relation_map": {"CID": "Positive_Correlation"}}}).kg
    kg = load_kg(cfg, held_out={"199"})
    assert kg.relations == ["Association", "Positive_Correlation"]
    assert {e.key for e in kg.edges} == (both(OB, "Association", T2D) | both(TCF, "Positive_Correlation", T2D)
                                         | both(MET, "Positive_Correlation", LA))
    # BC5CDR's documents now say "no Positive_Correlation" where they annotate no CID
    assert kg.annotated["104"].types == {"Positive_Correlation"}
    assert kg.annotated["101"].types == {"Association", "Positive_Correlation"}
    assert kg.annotated["101"].triples == both(OB, "Association", T2D) | both(MET, "Positive_Correlation", LA)
    assert load_kg(build({"kg": {"relation_files": [str(bc5cdr)]}}).kg, held_out={"199"}).relations == ["CID"]
    typo = build({"kg": {"relation_files": [str(bc5cdr)], "relation_map": {"CDI": "Positive_Correlation"}}}).kg
    with pytest.raises(KGError, match=r"kg.relation_map: \['CDI'\] name no relation of the seed KG "
                                      r"\(its relations: \['CID'\]\)"):
        load_kg(typo, held_out={"199"})
