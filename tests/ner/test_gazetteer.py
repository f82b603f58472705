"""Seed-KG gene symbols found in raw text (graphmert.ner.gazetteer)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from graphmert.config import Config
from graphmert.corpus.document import Abbreviation, Document, Mention
from graphmert.kg.graph import Node, SeedKG
from graphmert.ner.gazetteer import symbol_mentions
from graphmert.ner.linking import EntityLinker

NODES = [Node("NCBIGene:1", "GADD45A", "biolink:Gene"), Node("NCBIGene:2", "CYP2C19", "biolink:Gene"),
         Node("NCBIGene:3", "IL6", "biolink:Gene"), Node("NCBIGene:4", "C3", "biolink:Gene"),
         Node("NCBIGene:5", "CAT", "biolink:Gene"), Node("NCBIGene:6", "H2O2X", "biolink:Gene"),
         Node("NCBIGene:7", "MT1", "biolink:Gene")]
# the training documents annotate "H2O2X" as a chemical
TRAIN = [Document(id="t", text="H2O2X was added.", mentions=[Mention(0, 5, "H2O2X", "Chemical", ["MESH:D1"])])]


def _linker() -> EntityLinker:
    return EntityLinker.build(TRAIN, SeedKG(NODES, []), [])


def test_symbol_like_kg_genes_become_gene_mentions():
    text = "GADD45A and IL-6 rose, Cyp2c19 and CAT did not; C3 and H2O2X; MT1-MMP; CYP2C19."
    doc = Document(id="d", text=text, mentions=[Mention(0, 7, "GADD45A", "Chemical")])
    out = symbol_mentions(doc, _linker())
    assert [(m.text, m.type) for m in out.mentions] == [
        ("GADD45A", "Chemical"),               # a recognised mention stays as it is
        ("IL-6", "Gene"),                      # the KG's IL6, written with a hyphen
        ("Cyp2c19", "Gene"),                   # the mouse gene, found through the human symbol
        ("MT1", "Gene"),                       # MT1-MMP: "MT1" is a word there, the KG has no "MT1-MMP"
        ("CYP2C19", "Gene")]
    # not: "CAT" (no digit), "C3" (too short), "H2O2X" (a chemical in training)
    assert doc.mentions == [Mention(0, 7, "GADD45A", "Chemical")]           # the input is untouched
    assert [m.start for m in out.mentions] == sorted(m.start for m in out.mentions)


def test_longest_candidate_wins_and_nothing_found_returns_the_document():
    linker = EntityLinker.build([], SeedKG(NODES + [Node("NCBIGene:8", "MT1 MMP", "biolink:Gene")], []), [])
    out = symbol_mentions(Document(id="d", text="MT1-MMP binds.", mentions=[]), linker)
    assert [(m.start, m.end, m.text) for m in out.mentions] == [(0, 7, "MT1-MMP")]
    plain = Document(id="p", text="nothing here", mentions=[])
    assert symbol_mentions(plain, linker) is plain


def test_extract_stage_adds_abbreviation_and_symbol_mentions_only_when_asked(monkeypatch):
    import pipelines.stages.extract as stage

    text = "growth arrest protein (GAP) and GADD45A; GAP rose."
    raw = Document(id="d", text=text, abbreviations=[Abbreviation(23, 26, 0, 21)])

    class Recognizer:
        def recognize(self, docs, propagate=False):
            for d in docs:
                yield replace(d, mentions=[Mention(start=0, end=21, text="growth arrest protein", type="Gene")])

    monkeypatch.setattr(stage, "load_entity_tools", lambda ctx: (Recognizer(), _linker()))
    for abbreviations, symbols, expected in [(False, False, ["growth arrest protein"]),
                                             (True, False, ["growth arrest protein", "GAP", "GAP"]),
                                             (False, True, ["growth arrest protein", "GADD45A"]),
                                             (True, True, ["growth arrest protein", "GAP", "GADD45A", "GAP"])]:
        cfg = Config()
        cfg.extract.abbreviation_mentions, cfg.extract.symbol_mentions = abbreviations, symbols
        docs, _ = stage._recognize(SimpleNamespace(cfg=cfg, progress=lambda it, **kw: it), [raw])
        assert [m.text for m in docs[0].mentions] == expected
        assert all(m.type == "Gene" for m in docs[0].mentions)
    assert docs[0].mentions[2].ids == ["NCBIGene:1"]                 # linked after they were added
