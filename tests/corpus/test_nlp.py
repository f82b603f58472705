"""Sentences and abbreviations from spaCy's blank English + scispaCy (no model download)."""

import pytest

from graphmert.corpus.document import Document
from graphmert.corpus.nlp import TextAnalyzer, detector_text


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


def test_a_short_form_joined_to_the_next_word_by_a_hyphen_is_found():
    """"(NTG)-induced": the tokenizer keeps ")-induced" whole, and the detector found no short form
    there; it reads the hyphen as a space, and the sentences and offsets stay the text's own."""
    text = ("Nitroglycerin (NTG)-induced hypotension was treated. NTG was given to "
            "lipopolysaccharide (LPS)-stimulated mice. (S)-ketamine and (IL-6)-mediated effects.")
    doc = next(TextAnalyzer().annotate([Document(id="a", text=text)]))
    pairs = [(text[a.short_start:a.short_end], text[a.long_start:a.long_end]) for a in doc.abbreviations]
    assert pairs == [("NTG", "Nitroglycerin"), ("NTG", "Nitroglycerin"), ("LPS", "lipopolysaccharide")]
    plain = next(TextAnalyzer(abbreviations=False).annotate([Document(id="a", text=text)]))
    assert doc.sentences == plain.sentences and len(doc.sentences) == 3


@pytest.mark.parametrize("text, read", [
    ("nitroglycerin (NTG)-induced", "nitroglycerin (NTG) induced"), ("(IL-6)-mediated", "(IL-6) mediated"),
    ("(S)-ketamine", "(S)-ketamine"), ("(2R,3S)-form", "(2R,3S)-form"), ("(ntg)-induced", "(ntg)-induced"),
    ("(NTG)-Induced", "(NTG)-Induced"), ("(Ang II)-induced", "(Ang II)-induced"),
    ("interferon (IFN)-g levels", "interferon (IFN)-g levels"), ("(IFN)-gamma", "(IFN)-gamma")])
def test_detector_text(text, read):
    assert detector_text(text) == read and len(detector_text(text)) == len(text)
