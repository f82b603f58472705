"""Recognised spans cut at a sentence end or split at a slash between two genes
(graphmert.ner.span_cuts), alone and as extraction runs them (extract.sentence_cut, extract.slash_split)."""

from __future__ import annotations

import pytest

from graphmert.config import ExtractConfig
from graphmert.corpus.document import Document, Mention
from graphmert.kg.graph import SeedKG
from graphmert.ner.linking import EntityLinker
from graphmert.ner.span_cuts import sentence_cut, sentence_ends, slash_split


def _doc(text: str, spans: list[tuple[str, str]]) -> Document:
    mentions, at = [], 0
    for name, label in spans:
        start = text.index(name, at)
        mentions.append(Mention(start, start + len(name), name, label))
        at = start + len(name)
    return Document(id="d", text=text, mentions=mentions)


def _texts(doc: Document) -> list[tuple[str, str]]:
    assert all(doc.text[m.start:m.end] == m.text for m in doc.mentions)      # spans and texts agree
    return [(m.text, m.type) for m in doc.mentions]


@pytest.mark.parametrize("text, parts", [
    ("Serpina 3g. EPO/EPOR", ["Serpina 3g", "EPO/EPOR"]),
    ("androgen-responsive elements. T>G exchange", ["androgen-responsive elements", "T>G exchange"]),
    ("ataxia.  Dystonia", ["ataxia", "Dystonia"]),                 # spaces run on
    ("renal failure. Hypertension. 5-FU", ["renal failure", "Hypertension", "5-FU"]),
    # the shared corpus's gold mentions with a full stop and a capital or a digit: none is cut
    ("St. Anthony's fire", ["St. Anthony's fire"]),
    ("c. 1093-1G>T", ["c. 1093-1G>T"]),
    ("Glucose-6-phosphate dehydrogenase (G6PD; EC 1. 1. 1. 49) deficiency",
     ["Glucose-6-phosphate dehydrogenase (G6PD; EC 1. 1. 1. 49) deficiency"]),
    ("vitamin D3. insulin", ["vitamin D3. insulin"]),              # a small letter starts no sentence
])
def test_sentence_ends_cut_a_span_only_after_a_word_a_capital_or_digit_follows(text, parts):
    ends = sentence_ends(text)
    starts, stops = [0, *(b for _, b in ends)], [*(a for a, _ in ends), len(text)]
    assert [text[a:b] for a, b in zip(starts, stops)] == parts


def test_a_mention_across_a_sentence_end_becomes_its_parts():
    text = "We studied Serpina 3g. EPO/EPOR signalling and the IL-6 gene."
    doc = _doc(text, [("Serpina 3g. EPO/EPOR", "Gene"), ("IL-6", "Gene")])
    assert _texts(sentence_cut(doc)) == [("Serpina 3g", "Gene"), ("EPO/EPOR", "Gene"), ("IL-6", "Gene")]
    assert doc.mentions[0].text == "Serpina 3g. EPO/EPOR"                  # the input is untouched
    plain = _doc("IL-6 rose.", [("IL-6", "Gene")])
    assert sentence_cut(plain) is plain


IDS = {"EPO": ("NCBIGene:2056",), "EPOR": ("NCBIGene:2057",), "CDC42": ("NCBIGene:998",),
       "Rac1": ("NCBIGene:5879",), "p85": ("NCBIGene:5295",), "PI3K": ("NCBIGene:5290",),
       "p85/PI3K": ("NCBIGene:5295",), "ERK1": ("NCBIGene:5595",), "HLA": ("NCBIGene:3106",),
       "HLA-B": ("NCBIGene:3106",)}


def test_two_genes_joined_by_a_slash_are_two_mentions():
    text = "EPO/EPOR, CDC42/Rac1, p85/PI3K, ERK1/2, HLA/HLA-B, EPO/EPOR, EPO/Foo and EPO/EPOR."
    doc = _doc(text, [("EPO/EPOR", "Gene"), ("CDC42/Rac1", "Gene"), ("p85/PI3K", "Gene"), ("ERK1/2", "Gene"),
                      ("HLA/HLA-B", "Gene"), ("EPO/EPOR", "Chemical"), ("EPO/Foo", "Gene")])
    out = slash_split(doc, lambda t: IDS.get(t, ()))
    assert _texts(out) == [
        ("EPO", "Gene"), ("EPOR", "Gene"), ("CDC42", "Gene"), ("Rac1", "Gene"),
        ("p85/PI3K", "Gene"),          # the whole is linked: a form annotated whole
        ("ERK1/2", "Gene"),            # a numbered family: the second part starts with a digit
        ("HLA/HLA-B", "Gene"),         # both parts name one gene
        ("EPO/EPOR", "Chemical"),      # genes only
        ("EPO/Foo", "Gene")]           # a part the linker does not know
    assert doc.mentions[0].text == "EPO/EPOR"                               # the input is untouched
    assert slash_split(_doc("ERK1/2", [("ERK1/2", "Gene")]), lambda t: IDS.get(t, ())).mentions[0].text == "ERK1/2"


def test_extraction_cuts_and_splits_before_one_sense_per_document():
    """The held-out abstract that wrote "EPO" ten times had it only inside "Serpina 3g. EPO/EPOR": cut
    and split, the recognised "EPO" spreads to the abstract's other occurrences."""
    from pipelines.stages.extract_parts import more_mentions

    train = [_doc("EPO and EPOR and Serpina 3g.", [("EPO", "Gene"), ("EPOR", "Gene"), ("Serpina 3g", "Gene")])]
    train = [Document(id="t", text=train[0].text, mentions=[
        Mention(m.start, m.end, m.text, m.type, [f"NCBIGene:{k}"]) for k, m in enumerate(train[0].mentions, 1)])]
    linker = EntityLinker.build(train, SeedKG([], []))
    text = "Liver Serpina 3g. EPO/EPOR signalling needs EPO; EPO rose."
    doc = _doc(text, [("Serpina 3g. EPO/EPOR", "Gene")])
    on = ExtractConfig(sentence_cut=True, slash_split=True, propagate_mentions=True)
    assert _texts(more_mentions(doc, linker, on)) == [
        ("Serpina 3g", "Gene"), ("EPO", "Gene"), ("EPOR", "Gene"), ("EPO", "Gene"), ("EPO", "Gene")]
    assert _texts(more_mentions(doc, linker, ExtractConfig(propagate_mentions=True))) == [
        ("Serpina 3g. EPO/EPOR", "Gene")]
    only_cut = ExtractConfig(sentence_cut=True)
    assert _texts(more_mentions(doc, linker, only_cut)) == [("Serpina 3g", "Gene"), ("EPO/EPOR", "Gene")]
