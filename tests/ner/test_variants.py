"""Rule-based sequence variants (graphmert/ner/variants.py): the tmVar-style keys of the forms
abstracts write, the ids BioRED's own annotations normalise to, the collisions left out, and the
extract stage's wiring of ``extract.variant_mentions`` (and of ``extract.kg_gene_species`` into the
linker)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graphmert.config import Config
from graphmert.corpus.document import Document, Mention, normalize_id
from graphmert.ner.variants import VARIANT_TYPE, add_variants, find_variants, residue_chemicals, rs_aliases


@pytest.mark.parametrize("text, key", [
    ("rs1800795", "rs1800795"),
    ("643C>T", "c|SUB|C|643|T"), ("c.643C>T", "c|SUB|C|643|T"), ("-174 G>C", "c|SUB|G|-174|C"),
    ("g.3503C>T", "g|SUB|C|3503|T"), ("1123T-->G", "c|SUB|T|1123|G"), ("IVS3+1G>A", "c|SUB|G|IVS3+1|A"),
    ("+3100 T/G", "c|SUB|T|+3100|G"), ("C262T", "c|SUB|C|262|T"),
    ("R215W", "p|SUB|R|215|W"), ("p.R34X", "p|SUB|R|34|X"), ("p.G12D", "p|SUB|G|12|D"),
    ("Arg215Trp", "p|SUB|R|215|W"), ("p.Leu307Arg", "p|SUB|L|307|R"), ("S75*", "p|SUB|S|75|X"),
    ("R58fs", "p|FS|R|58||"), ("192Q/R", "p|SUB|Q|192|R"),
    ("657del5", "c|DEL|657|5"), ("30delG", "c|DEL|30|G"), ("c.715_717delGTC", "c|DEL|715_717|GTC"),
    ("del642T", "c|DEL|642|T"), ("Delta32", "c|DEL||32"), ("5382insC", "c|INS|5382|C"),
])
def test_a_written_variant_gets_its_tmvar_key(text, key):
    found = find_variants(f"carriers of the {text} allele")
    assert [(v.text, v.key) for v in found] == [(text, key)]


@pytest.mark.parametrize("text", ["T2D", "H2O", "S100B", "G6PD", "E2F1", "C57BL/6", "A549", "V5",
                                  "D4 receptor", "IL-6", "p53", "1.5 mg", "2/3 of patients"])
def test_names_and_numbers_are_not_variants(text):
    assert find_variants(f"in {text} and more") == []


def test_overlapping_matches_keep_the_longest_and_all_are_in_order():
    text = "c.643C>T (R215W) and rs1800795"
    assert [(v.start, v.end, v.key) for v in find_variants(text)] == [
        (0, 8, "c|SUB|C|643|T"), (10, 15, "p|SUB|R|215|W"), (21, 30, "rs1800795")]


def test_ids_are_those_biored_annotations_normalise_to():
    # BioRED writes "p|SUB|R|215|W" and "rs1800795" in its id column; the reader normalises them
    doc = add_variants(Document(id="d", text="R215W and rs1800795"))
    assert [m.ids for m in doc.mentions] == [[normalize_id("p|SUB|R|215|W", VARIANT_TYPE)],
                                             [normalize_id("rs1800795", VARIANT_TYPE)]]
    assert doc.mentions[0].ids == ["tmVar:p|SUB|R|215|W"] and doc.mentions[1].ids == ["dbSNP:rs1800795"]


@pytest.mark.parametrize("text", ["rs4539 (A2718G) within CYP11B2", "A2718G (rs4539) within CYP11B2",
                                  "rs4539 [ A2718G ] within CYP11B2"])
def test_a_variant_bracketed_with_an_rs_id_takes_it_everywhere(text):
    doc = add_variants(Document(id="d", text=f"{text}; A2718G carriers and R215W"))
    assert [(m.text, m.ids) for m in doc.mentions] == [
        *sorted([("rs4539", ["dbSNP:rs4539"]), ("A2718G", ["dbSNP:rs4539"])],
                key=lambda tm: text.index(tm[0])),
        ("A2718G", ["dbSNP:rs4539"]), ("R215W", ["tmVar:p|SUB|R|215|W"])]


@pytest.mark.parametrize("text", [
    "rs4539 and A2718G",                        # not bracketed
    "rs4539 (A2718G, R215W)",                   # the bracket holds more than the variant
    "rs4539 (A2718G) and rs6387 (A2718G)",      # one written form, two rs ids
    "R215W (A2718G)",                           # no rs id
])
def test_a_variant_keeps_its_key_unless_one_rs_id_brackets_it(text):
    found = find_variants(text)
    assert rs_aliases(text, found) == {}
    assert all(m.ids == [normalize_id(v.key, VARIANT_TYPE)]
               for m, v in zip(add_variants(Document(id="d", text=text)).mentions, found))


def test_without_keys_only_rs_ids_link():
    doc = add_variants(Document(id="d", text="R215W (rs1800795) and c.643C>T"), keys=False)
    assert [(m.text, m.ids) for m in doc.mentions] == [
        ("R215W", ["dbSNP:rs1800795"]), ("rs1800795", ["dbSNP:rs1800795"]), ("c.643C>T", [])]


def test_a_variant_never_replaces_a_mention_and_mentions_stay_sorted():
    text = "KRASG12D and S100B12A and R215W in BRCA1"
    gene = Mention(start=0, end=8, text="KRASG12D", type="Gene", ids=["NCBIGene:3845"])
    late = Mention(start=35, end=40, text="BRCA1", type="Gene", ids=["NCBIGene:672"])
    doc = add_variants(Document(id="d", text=text, mentions=[gene, late]))
    assert [(m.text, m.type) for m in doc.mentions] == [
        ("KRASG12D", "Gene"), ("R215W", VARIANT_TYPE), ("BRCA1", "Gene")]
    plain = Document(id="e", text="nothing to see")
    assert add_variants(plain) is plain


def test_extract_stage_adds_variants_only_when_asked():
    from pipelines.stages.extract_parts import recognize_documents

    class Recognizer:
        def recognize(self, docs, propagate=False):
            for d in docs:
                yield replace(d, mentions=[Mention(start=0, end=5, text="BRCA1", type="Gene")])

    class Linker:
        kg_species = "unset"

        def link_document(self, d):
            return replace(d, mentions=[replace(m, ids=["NCBIGene:672"]) for m in d.mentions])

    raw = Document(id="d", text="BRCA1 R1699W carriers")
    annotated = Document(id="g", text="R215W", mentions=[Mention(start=0, end=5, text="R215W", type="Gene")])
    for on in (False, True):
        cfg = Config()
        cfg.extract.variant_mentions = on
        docs, found = recognize_documents([raw, annotated], Recognizer(), Linker(), cfg.extract)
        assert set(found) == {"d"} and docs[1] is annotated           # annotated documents untouched
        types = [m.type for m in docs[0].mentions]
        assert types == (["Gene", VARIANT_TYPE] if on else ["Gene"])
    cfg.extract.variant_keys = False                                    # extract.variant_keys
    docs, _ = recognize_documents([raw], Recognizer(), Linker(), cfg.extract)
    assert [(m.text, m.ids) for m in docs[0].mentions] == [("BRCA1", ["NCBIGene:672"]), ("R1699W", [])]
    cfg.extract.kg_gene_species = "NCBITaxon:9606"
    linker = Linker()
    recognize_documents([raw], Recognizer(), linker, cfg.extract)
    assert linker.kg_species == "NCBITaxon:9606"                        # extract.kg_gene_species


def test_an_amino_acid_written_as_a_residue_is_no_chemical():
    text = ("Codon 358, tyrosine to histidine; asparagine 86 for alanine; glycine (Gly) to glutamine; lysine "
            "at residue 223. Tyrosine 20 mg, 5 mg lysine, glutamine 30 min before, plasma asparagine into "
            "aspartate.")
    words = ["tyrosine", "histidine", "asparagine", "alanine", "glycine", "glutamine", "lysine", "Tyrosine",
             "lysine", "glutamine", "asparagine", "aspartate"]
    mentions, pos = [], 0
    for w in words:
        start = text.index(w, pos)
        mentions.append(Mention(start=start, end=start + len(w), text=w, type="Chemical"))
        pos = start + 1
    doc = Document(id="d", text=text, mentions=[*mentions, Mention(0, 5, "Codon", "Gene")])
    kept = residue_chemicals(doc)
    assert [m.text for m in kept.mentions if m.type == "Chemical"] == ["Tyrosine", "lysine", "glutamine", "asparagine",
                                                                         "aspartate"]     # doses and times stay
    assert any(m.type == "Gene" for m in kept.mentions)                # another label stays
    assert residue_chemicals(doc, chemical="Disease") is doc
