"""Sentences and abbreviations from spaCy's blank English + scispaCy (no model download)."""

from graphmert.corpus.document import Document
from graphmert.corpus.nlp import TextAnalyzer


def test_sentences_and_abbreviations():
    text = ("Type 2 diabetes mellitus (T2DM) is treated with metformin. IL-6 levels rose in T2DM "
            "patients (p<0.05). Glucagon-like peptide 1 (GLP-1) agonists help.")
    doc = next(TextAnalyzer().annotate([Document(id="a", text=text)]))
    sents = [text[s:e] for s, e in doc.sentences]
    assert sents == ["Type 2 diabetes mellitus (T2DM) is treated with metformin.",
                     "IL-6 levels rose in T2DM patients (p<0.05).",
                     "Glucagon-like peptide 1 (GLP-1) agonists help."]
    pairs = {(text[a.short_start:a.short_end], text[a.long_start:a.long_end]) for a in doc.abbreviations}
    assert pairs == {("T2DM", "Type 2 diabetes mellitus"), ("GLP-1", "Glucagon-like peptide 1")}
    # both occurrences of T2DM are linked
    assert sum(text[a.short_start:a.short_end] == "T2DM" for a in doc.abbreviations) == 2


def test_disabled_analyzer_passes_documents_through():
    d = Document(id="x", text="Nothing here.")
    assert next(TextAnalyzer(sentences=False, abbreviations=False).annotate([d])) is d
    assert d.sentences == [] and d.abbreviations == []
