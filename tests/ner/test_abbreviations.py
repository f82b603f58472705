"""Short forms of abbreviations as mentions with their long forms' labels (graphmert.ner.abbreviations)."""

from __future__ import annotations

import pytest

from graphmert.corpus.document import Abbreviation, Document, Mention
from graphmert.ner.abbreviations import (
    abbreviation_mentions, abbreviation_veto, initials_of, is_short_form, spelled_by,
)

LABELS = frozenset({"Gene", "Disease", "Chemical"})


def _doc(text: str, spans: list[tuple[str, str, int]], abbreviations: list[tuple[str, int, str, int]]) -> Document:
    """Mentions (text, label, k-th occurrence) and abbreviations (short, k-th, long, k-th) by text."""
    def at(t: str, k: int) -> int:
        pos = -1
        for _ in range(k + 1):
            pos = text.index(t, pos + 1)
        return pos

    mentions = [Mention(start=at(t, k), end=at(t, k) + len(t), text=t, type=lab) for t, lab, k in spans]
    abbr = [Abbreviation(at(s, ks), at(s, ks) + len(s), at(lf, kl), at(lf, kl) + len(lf))
            for s, ks, lf, kl in abbreviations]
    return Document(id="d", text=text, mentions=sorted(mentions, key=lambda m: m.start), abbreviations=abbr)


def _spans(doc: Document) -> list[tuple[str, str]]:
    return [(m.text, m.type) for m in doc.mentions]


def test_short_forms_take_the_long_forms_label_everywhere():
    text = ("Complement factor H (CFH) binds. CFH and CFHR1 differ; oxygen-induced retinopathy (OIR) "
            "in OIR mice; inflammatory bowel disease (IBD) and IBD.")
    d = _doc(text, [("Complement factor H", "Gene", 0), ("oxygen", "Chemical", 0), ("retinopathy", "Disease", 0),
                    ("inflammatory bowel disease", "Disease", 0), ("IBD", "Chemical", 1)],
             [("CFH", 0, "Complement factor H", 0), ("OIR", 0, "oxygen-induced retinopathy", 0),
              ("IBD", 0, "inflammatory bowel disease", 0)])
    out = abbreviation_mentions(d, LABELS)
    assert _spans(out) == [
        ("Complement factor H", "Gene"), ("CFH", "Gene"), ("CFH", "Gene"),     # not inside "CFHR1"
        ("oxygen", "Chemical"), ("retinopathy", "Disease"), ("OIR", "Disease"), ("OIR", "Disease"),  # the head
        ("inflammatory bowel disease", "Disease"), ("IBD", "Disease"), ("IBD", "Disease")]  # relabelled
    assert [m.start for m in out.mentions] == sorted(m.start for m in out.mentions)
    assert _spans(d)[-1] == ("IBD", "Chemical")                                # the input is untouched


def test_nothing_changes_without_a_labelled_long_form():
    text = "confidence interval (CI) of CI; the Bar cells (BC) and BC."
    d = _doc(text, [("Bar cells", "CellLine", 0)], [("CI", 0, "confidence interval", 0), ("BC", 0, "Bar cells", 0)])
    # no mention heads "confidence interval"; "Bar cells" is not a recognizer label's mention
    assert _spans(abbreviation_mentions(d, LABELS)) == [("Bar cells", "CellLine")]
    plain = Document(id="p", text="no abbreviations", mentions=[])
    assert abbreviation_mentions(plain, LABELS) is plain


def test_linked_and_longer_mentions_are_kept():
    text = "tumor necrosis factor (TNF) and TNF receptor; TNF."
    d = _doc(text, [("tumor necrosis factor", "Gene", 0), ("TNF receptor", "Gene", 0), ("TNF", "Chemical", 2)],
             [("TNF", 0, "tumor necrosis factor", 0)])
    d.mentions[-1].ids = ["MESH:D1"]                                  # a linked mention keeps its label
    out = abbreviation_mentions(d, LABELS)
    assert _spans(out) == [("tumor necrosis factor", "Gene"), ("TNF", "Gene"), ("TNF receptor", "Gene"),
                           ("TNF", "Chemical")]


def test_abbreviation_pairs_are_distinct_and_sorted():
    from graphmert.ner.abbreviations import abbreviation_pairs

    text = "tumor necrosis factor (TNF); TNF and TNF."
    d = Document(id="d", text=text, abbreviations=[Abbreviation(37, 40, 0, 21), Abbreviation(23, 26, 0, 21),
                                                   Abbreviation(29, 32, 0, 21)])
    assert abbreviation_pairs(d) == [("TNF", 0, 21)]


def test_short_forms_of_the_other_number_are_mentions_too():
    from graphmert.ner.abbreviations import short_form_variants

    assert short_form_variants("AVSDs") == ["AVSDs", "AVSD"]
    assert short_form_variants("DRM") == ["DRM", "DRMs"]
    assert short_form_variants("IL-6") == ["IL-6"] and short_form_variants("Ts") == ["Ts"]
    text = "Atrioventricular septal defects (AVSDs) are common; AVSD recurs in AVSDs families."
    d = _doc(text, [("Atrioventricular septal defects", "Disease", 0)],
             [("AVSDs", 0, "Atrioventricular septal defects", 0)])
    assert _spans(abbreviation_mentions(d, LABELS)) == [
        ("Atrioventricular septal defects", "Disease"), ("AVSDs", "Disease"), ("AVSD", "Disease"),
        ("AVSDs", "Disease")]


def test_a_short_form_defined_as_something_unrecognised_is_not_a_mention():
    """"room air (RA)": no recognised mention heads the long form, so no "RA" of the document is a
    disease (nor "RAs", its other number); a short form whose long form is headed ("OIR"), or which
    the linker knows ("MO"), stays; genes (not in the labels vetoed: the recognizer often misses a
    gene's long form, "leukemia inhibitory factor", where it finds "LIF"), linked mentions and a
    document without abbreviations are left alone."""
    text = ("room air (RA) or RA and RAs; oxygen-induced retinopathy (OIR) in OIR mice; multiple "
            "osteochondromas (MO) and MO; leukemia inhibitory factor (LIF) and LIF; RA.")
    d = _doc(text, [("RA", "Disease", 1), ("RAs", "Disease", 0), ("retinopathy", "Disease", 0),
                    ("OIR", "Disease", 1), ("MO", "Disease", 1), ("LIF", "Gene", 1), ("RA", "Chemical", 3)],
             [("RA", 0, "room air", 0), ("OIR", 0, "oxygen-induced retinopathy", 0),
              ("MO", 0, "multiple osteochondromas", 0), ("LIF", 0, "leukemia inhibitory factor", 0)])
    d.mentions[-1].ids = ["MESH:D2"]                                          # the last RA: linked
    seen: list[tuple[str, str]] = []

    def known(long_form: str, label: str) -> bool:
        seen.append((long_form, label))
        return long_form == "multiple osteochondromas"

    out = abbreviation_veto(d, frozenset({"Disease", "Chemical"}), known)
    assert _spans(out) == [("retinopathy", "Disease"), ("OIR", "Disease"), ("MO", "Disease"),
                           ("LIF", "Gene"), ("RA", "Chemical")]
    assert ("room air", "Disease") in seen and ("multiple osteochondromas", "Disease") in seen
    assert len(d.mentions) == 7                                                # the input is untouched
    genes = abbreviation_veto(d, frozenset({"Gene"}))                          # only the labels given
    assert _spans(genes) == [s for s in _spans(d) if s != ("LIF", "Gene")]
    plain = Document(id="p", text="RA", mentions=[Mention(0, 2, "RA", "Disease")])
    assert abbreviation_veto(plain, LABELS) is plain


@pytest.mark.parametrize("short, long, expected", [
    ("POAG", "primary open-angle glaucoma", True),
    ("XLMR", "X-linked mental retardation", True),
    ("ADs", "Alzheimer diseases", True),
    ("T2D", "type 2 diabetes", True),
    ("MR", "X-linked mental retardation", False),       # initials must cover every word
    ("IL", "interleukin", False),                       # one word has one initial
    ("aD", "Alzheimer disease", False),                 # a short form starts with a capital
    ("HF", "hepatic failure in the liver", False),
])
def test_initials_of(short, long, expected):
    assert initials_of(short, long) is expected


@pytest.mark.parametrize("short, long, spelled", [
    ("ITP", "immune thrombocytopenia", True),          # P inside a word, as Schwartz–Hearst allows
    ("NPHP", "nephronophthisis", True),
    ("AD", "atopic dermatitis", True),
    ("AD", "dermatitis", False),                       # the first letter must start a word
    ("MFA", "fibroadenomas", False),
    ("itp", "immune thrombocytopenia", False),         # not a short form
])
def test_spelled_by(short, long, spelled):
    assert spelled_by(short, long) is spelled


@pytest.mark.parametrize("text, short", [("ITP", True), ("IL6", True), ("DRMs", True), ("Ins", False),
                                         ("itp", False), ("A", False), ("ABCDEFGHI", False)])
def test_is_short_form(text, short):
    assert is_short_form(text) is short
