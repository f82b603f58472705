"""Seed-KG names found in raw text (graphmert.ner.gazetteer): gene symbols, and disease and chemical
names the training documents annotate."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graphmert.config import Config
from graphmert.corpus.document import Abbreviation, Document, Mention
from graphmert.kg.graph import Node, SeedKG
from graphmert.ner.gazetteer import (MIN_NAME_CHARS, gene_extension, gene_name_labels, greek_suffix, name_extension,
                                     name_mentions, protein_heads, route_trim, symbol_mentions)
from graphmert.ner.linking import EntityLinker, LinkerError

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


def test_extract_stage_adds_abbreviation_and_symbol_mentions_only_when_asked():
    from pipelines.stages.extract_parts import recognize_documents

    text = "growth arrest protein (GAP) and GADD45A; GAP rose."
    raw = Document(id="d", text=text, abbreviations=[Abbreviation(23, 26, 0, 21)])

    class Recognizer:
        def recognize(self, docs, propagate=False):
            for d in docs:
                yield replace(d, mentions=[Mention(start=0, end=21, text="growth arrest protein", type="Gene")])

    for abbreviations, symbols, expected in [(False, False, ["growth arrest protein"]),
                                             (True, False, ["growth arrest protein", "GAP", "GAP"]),
                                             (False, True, ["growth arrest protein", "GADD45A"]),
                                             (True, True, ["growth arrest protein", "GAP", "GADD45A", "GAP"])]:
        cfg = Config()
        cfg.extract.abbreviation_mentions, cfg.extract.symbol_mentions = abbreviations, symbols
        docs, _ = recognize_documents([raw], Recognizer(), _linker(), cfg.extract)
        assert [m.text for m in docs[0].mentions] == expected
        assert all(m.type == "Gene" for m in docs[0].mentions)
    assert docs[0].mentions[2].ids == ["NCBIGene:1"]                 # linked after they were added


# --------------------------------------------------------------------------------------------------
# seed-KG disease, chemical and gene names (name_mentions)
# --------------------------------------------------------------------------------------------------

CHEMICAL = {"biolink:ChemicalEntity": "Chemical"}


def _doc(doc_id: str, text: str, spans: list[tuple[str, str]]) -> Document:
    """Linked mentions (:func:`_mentions`), a gene id for a gene, a MeSH id otherwise."""
    mentions = [replace(m, ids=["NCBIGene:1"] if m.type == "GeneOrGeneProduct" else ["MESH:D1"])
                for m in _mentions(text, spans)]
    return Document(id=doc_id, text=text, mentions=mentions)


def _mentions(text: str, spans: list[tuple[str, str]]) -> list[Mention]:
    """Mentions without ids on the first occurrence of each text after the previous one's start."""
    out, pos = [], 0
    for t, type_ in spans:
        start = text.index(t, pos)
        out.append(Mention(start=start, end=start + len(t), text=t, type=type_))
        pos = start + 1
    return out


NAME_TRAIN = [
    _doc("t1", "Lithium and cisplatin were given. Lithium levels rose.",
         [("Lithium", "Chemical"), ("cisplatin", "Chemical"), ("Lithium", "Chemical")]),
    _doc("t2", "Water intake and water loss with aspirin; insulin rose.",
         [("aspirin", "Chemical"), ("insulin", "GeneOrGeneProduct")]),
    _doc("t3", "Valproic acid in a gene-only document: water.", [("Valproic acid", "GeneOrGeneProduct")]),
    _doc("held", "Imatinib and imatinib.", [("Imatinib", "Chemical")]),
]
NAME_NODES = [Node(f"MESH:D{i}", name, "biolink:ChemicalEntity")
              for i, name in enumerate(["Lithium", "Cisplatin", "Water", "Aspirin", "Imatinib", "Ca", "Insulin",
                                        "Valproic Acid"])]


def _name_linker() -> EntityLinker:
    return EntityLinker.build(NAME_TRAIN, SeedKG(NAME_NODES, []), exclude={"held"})


def test_the_linker_counts_kg_names_where_their_category_is_annotated(tmp_path):
    built = _name_linker()
    linker = EntityLinker.load(built.save(tmp_path / "linker.json.gz"))   # the counts are saved too
    chem = "biolink:ChemicalEntity"
    assert linker.kg_name("lithium", chem, 1.0)                           # annotated 2 of 2 times
    assert linker.kg_name("water", chem, 0.0) and not linker.kg_name("water", chem, 0.01)  # 0 of 2 (not t3's)
    assert linker.kg_name("imatinib", chem, 1.0)                          # never met: the held-out doc is excluded
    assert not linker.kg_name("insulin", chem, 0.0)                       # annotated as a gene
    assert not linker.kg_name("unknownium", chem, 0.0)                    # not a KG name
    with pytest.raises(LinkerError, match="biolink:OrganismTaxon: the linker counts seed-KG names of"):
        linker.kg_name("mice", "biolink:OrganismTaxon", 0.5)
    # lithium, cisplatin, water, aspirin and insulin occur where chemicals are annotated; no KG gene
    assert linker.stats()["kg_names_in_training"] == {chem: 5, "biolink:Disease": 0, "biolink:Gene": 0}


def test_kg_gene_names_are_counted_where_genes_are_annotated():
    nodes = [Node("NCBIGene:2057", "EPOR", "biolink:Gene"), Node("NCBIGene:6", "SET", "biolink:Gene")]
    train = [_doc("g1", "EPOR binds EPO; the set of EPOR targets.", [("EPOR", "GeneOrGeneProduct"),
                                                                    ("EPOR", "GeneOrGeneProduct")])]
    linker = EntityLinker.build(train, SeedKG(nodes, []))
    gene = "biolink:Gene"
    assert linker.kg_name("epor", gene, 1.0) and not linker.kg_name("set", gene, 0.5)   # 2 of 2, 0 of 1
    raw = _doc("d", "EPOR and the SET rose.", [])
    assert [m.text for m in name_mentions(raw, linker, {gene: "Gene"}, 0.5).mentions] == ["EPOR"]


def test_kg_names_become_mentions_by_the_rule():
    linker = _name_linker()
    raw = _doc("d", "Lithium, water, imatinib, Ca and insulin; cisplatin given.", [("cisplatin", "Chemical")])

    def added(ratio: float) -> list[str]:
        out = name_mentions(raw, linker, CHEMICAL, ratio)
        assert [m for m in out.mentions if m.ids] == raw.mentions       # the recognised ones stay
        assert all(m.type == "Chemical" for m in out.mentions)
        return [m.text for m in out.mentions if not m.ids]

    # water: annotated 0 of 2 times; Ca: a key under MIN_NAME_CHARS; insulin: annotated as a gene
    assert added(0.5) == ["Lithium", "imatinib"]
    assert added(0.0) == ["Lithium", "water", "imatinib"]
    assert MIN_NAME_CHARS == 4


def test_a_kg_name_never_overlaps_a_mention_and_the_longest_wins():
    nodes = NAME_NODES + [Node("MESH:D99", "Lithium Carbonate", "biolink:ChemicalEntity")]
    linker = EntityLinker.build(NAME_TRAIN, SeedKG(nodes, []))
    raw = _doc("d", "Valproic acid with lithium carbonate and Lithium.", [("Lithium", "Chemical")])
    out = name_mentions(raw, linker, CHEMICAL, 0.5)
    # "Valproic acid" is a KG chemical the training documents annotate as a gene only: not added
    assert [(m.text, m.start) for m in out.mentions] == [("lithium carbonate", 19), ("Lithium", 41)]
    plain = Document(id="p", text="nothing here", mentions=[])
    assert name_mentions(plain, linker, CHEMICAL, 0.5) is plain


def test_extract_stage_adds_name_mentions_only_when_asked():
    from pipelines.stages.extract_parts import recognize_documents

    raw = Document(id="d", text="Lithium and imatinib were given.")

    class Recognizer:
        def recognize(self, docs, propagate=False):
            yield from docs

    for categories, expected in [([], []), (["biolink:ChemicalEntity"], ["Lithium", "imatinib"])]:
        cfg = Config()
        cfg.extract.name_mentions = categories
        docs, _ = recognize_documents([raw], Recognizer(), _name_linker(), cfg.extract)
        assert [m.text for m in docs[0].mentions] == expected
    assert docs[0].mentions[0].ids == ["MESH:D1"]          # linked after they were added (the dictionary)


def test_recognised_chemicals_that_name_a_gene_become_genes(tmp_path):
    from graphmert.config import VocabularySource

    info = tmp_path / "Homo_sapiens.gene_info"
    cols = ["9606", "3000", "HPCA", "-", "BDR2", "-", "-", "-", "hippocalcin", "protein-coding", "HPCA",
            "hippocalcin", "O", "neuron-specific calcium-binding protein hippocalcin", "-", "-"]
    insulin = ["9606", "3630", "INS", "-", "-", "-", "-", "-", "insulin", "protein-coding", "INS", "insulin",
               "O", "-", "-", "-"]
    info.write_text("#tax_id\tGeneID\n" + "\t".join(cols) + "\n" + "\t".join(insulin) + "\n")
    train = [_doc("c", "Insulin was injected.", [("Insulin", "Chemical")])]        # BC5CDR-like: a chemical
    linker = EntityLinker.build(train, SeedKG([], []), vocabularies=[VocabularySource(kind="gene_info", path=str(info))])
    raw = Document(id="d", text="Hippocalcin, insulin and lithium; HPCA.", mentions=[
        Mention(0, 11, "Hippocalcin", "Chemical"), Mention(13, 20, "insulin", "Chemical"),
        Mention(25, 32, "lithium", "Chemical"), Mention(34, 38, "HPCA", "Chemical", ["MESH:D1"])])
    out = gene_name_labels(raw, linker)
    # a gene's full name becomes a gene; a chemical in training, a non-gene and a linked mention stay
    assert [m.type for m in out.mentions] == ["Gene", "Chemical", "Chemical", "Chemical"]
    assert raw.mentions[0].type == "Chemical"                                      # the input is untouched
    plain = Document(id="p", text="lithium", mentions=[Mention(0, 7, "lithium", "Chemical")])
    assert gene_name_labels(plain, linker) is plain
    # a name the training documents annotate as a gene only is a gene too, one they also annotate
    # as a chemical is not
    train += [_doc("g", "Gankyrin and insulin rose.",
                   [("Gankyrin", "GeneOrGeneProduct"), ("insulin", "GeneOrGeneProduct")])]
    linker = EntityLinker.build(train, SeedKG([], []),
                                vocabularies=[VocabularySource(kind="gene_info", path=str(info))])
    raw = Document(id="k", text="gankyrin, insulin", mentions=[Mention(0, 8, "gankyrin", "Chemical"),
                                                               Mention(10, 17, "insulin", "Chemical")])
    assert [m.type for m in gene_name_labels(raw, linker).mentions] == ["Gene", "Chemical"]


def test_kg_chemical_names_that_name_genes_are_added_as_genes(tmp_path):
    """The seed KG's chemical names include MeSH's protein descriptors ("Calnexin"): added by
    extract.name_mentions, they become genes under extract.gene_name_labels, which runs after it."""
    from graphmert.config import ExtractConfig, VocabularySource
    from pipelines.stages.extract_parts import more_mentions

    info = tmp_path / "Homo_sapiens.gene_info"
    canx = ["9606", "821", "CANX", "-", "CNX", "-", "-", "-", "calnexin", "protein-coding", "CANX", "calnexin",
            "O", "-", "-", "-"]
    info.write_text("#tax_id\tGeneID\n" + "\t".join(canx) + "\n")
    kg = SeedKG([Node("MESH:D037281", "Calnexin", "biolink:ChemicalEntity")], [])
    linker = EntityLinker.build([], kg, vocabularies=[VocabularySource(kind="gene_info", path=str(info))])
    doc = Document(id="d", text="Calnexin binds the protein.", mentions=[])
    for labels, expected in [(True, "Gene"), (False, "Chemical")]:
        ex = ExtractConfig(name_mentions=["biolink:ChemicalEntity"], gene_name_labels=labels)
        assert [(m.text, m.type) for m in more_mentions(doc, linker, ex).mentions] == [("Calnexin", expected)]


def test_recognised_chemicals_named_as_proteins_become_genes_unless_training_annotates_them_as_chemicals():
    from graphmert.config import ExtractConfig
    from pipelines.stages.extract_parts import more_mentions

    train = [_doc("t", "L-asparaginase and creatine kinase.", [("L-asparaginase", "Chemical"),
                                                                 ("creatine kinase", "Chemical")])]
    linker = EntityLinker.build(train, SeedKG([], []))
    proteins = ["amylase", "calcium channels", "sulfonylurea receptor", "Sp transcription factors",
                "nuclear proteins", "Na+/K+-ATPase"]
    others = ["L-asparaginase", "creatine kinase", "Schiff base", "lithium", "disease", "PAK kinases"]
    text = "; ".join(proteins + others) + "."
    raw = Document(id="d", text=text, mentions=[
        Mention(text.index(n), text.index(n) + len(n), n, "Chemical", ["MESH:D1"] if n == "PAK kinases" else [])
        for n in proteins + others])
    out = protein_heads(raw, linker)
    # the training documents' own enzymes, a word ending in "base", no protein, a word that merely
    # ends in "-ase" and a mention linked already stay chemicals
    assert [m.type for m in out.mentions] == ["Gene"] * len(proteins) + ["Chemical"] * len(others)
    assert raw.mentions[0].type == "Chemical"                                      # the input is untouched
    plain = Document(id="p", text="lithium", mentions=[Mention(0, 7, "lithium", "Chemical")])
    assert protein_heads(plain, linker) is plain
    amylase = Document(id="a", text="amylase", mentions=[Mention(0, 7, "amylase", "Chemical")])
    for flag, expected in [(True, "Gene"), (False, "Chemical")]:
        assert [m.type for m in more_mentions(amylase, linker, ExtractConfig(protein_heads=flag)).mentions] == [expected]


def test_a_route_word_is_trimmed_from_a_recognised_chemical_unless_training_annotates_the_whole():
    train = [_doc("t", "Oral contraceptives and galactose.", [("Oral contraceptives", "Chemical"),
                                                                  ("galactose", "Chemical")])]
    linker = EntityLinker.build(train, SeedKG([], []))
    text = "After oral galactose, oral contraceptives and intravenous  NaCl; oral fluid; Dietary salt."
    raw = Document(id="r", text=text, mentions=[
        Mention(6, 20, "oral galactose", "Chemical"), Mention(22, 41, "oral contraceptives", "Chemical"),
        Mention(46, 63, "intravenous  NaCl", "Chemical"), Mention(65, 69, "oral", "Chemical"),
        Mention(77, 89, "Dietary salt", "Disease"), Mention(6, 20, "oral galactose", "Chemical", ["MESH:D1"])])
    out = route_trim(raw, linker)
    assert [(m.text, text[m.start:m.end]) for m in out.mentions] == [
        ("galactose", "galactose"), ("oral contraceptives", "oral contraceptives"), ("NaCl", "NaCl"),
        ("oral", "oral"), ("Dietary salt", "Dietary salt"), ("oral galactose", "oral galactose")]
    assert raw.mentions[0].text == "oral galactose"                     # the input is untouched
    plain = Document(id="p", text="lithium", mentions=[Mention(0, 7, "lithium", "Chemical")])
    assert route_trim(plain, linker) is plain


def test_a_trimmed_mention_is_every_occurrence_of_its_text_with_one_sense_per_document():
    """extract.propagate_mentions runs again after the rules: the recognizer propagated "oral
    galactose", and only route_trim makes "galactose" of it."""
    from graphmert.config import ExtractConfig
    from pipelines.stages.extract_parts import more_mentions

    linker = EntityLinker.build([], SeedKG([], []))
    text = "Oral galactose helps. Rats fed galactose and galactose-treated mice."
    doc = Document(id="g", text=text, mentions=[Mention(0, 14, "Oral galactose", "Chemical")])
    for propagate, expected in [(True, [5, 31, 45]), (False, [5])]:
        ex = ExtractConfig(route_trim=True, propagate_mentions=propagate)
        assert [m.start for m in more_mentions(doc, linker, ex).mentions] == expected


def test_a_greek_letter_after_a_gene_joins_its_span():
    text = "NRG-1 beta and GR alpha2, NRG-1 betaine, Tnf beta-cells, TGF betas, IL beta X and Bcl beta."
    spans = [("NRG-1", "Gene"), ("GR", "Gene"), ("NRG-1", "Gene"), ("Tnf", "Gene"), ("TGF", "Gene"),
             ("IL", "Chemical"), ("Bcl", "Gene"), ("beta", "Chemical")]
    raw = Document(id="g", text=text, mentions=_mentions(text, spans))
    out = greek_suffix(raw)
    # a whole Greek word (and a digit) joins a gene; not a longer word, a compound, a plural, another
    # category's mention, nor a word another mention starts at
    assert [(m.text, text[m.start:m.end]) for m in out.mentions][:7] == [
        ("NRG-1 beta", "NRG-1 beta"), ("GR alpha2", "GR alpha2"), ("NRG-1", "NRG-1"), ("Tnf", "Tnf"),
        ("TGF", "TGF"), ("IL", "IL"), ("Bcl", "Bcl")]
    assert raw.mentions[0].text == "NRG-1"                              # the input is untouched
    plain = Document(id="p", text="TNF", mentions=[Mention(0, 3, "TNF", "Gene")])
    assert greek_suffix(plain) is plain



def test_a_mention_takes_the_longest_known_name_around_it():
    # the training documents annotate two diseases and a chemical; the KG names a gene and a disease
    train = [_doc("t", "Retinopathy of prematurity, primary open angle glaucoma and reactive oxygen species.",
                  [("Retinopathy of prematurity", "Disease"), ("primary open angle glaucoma", "Disease"),
                   ("reactive oxygen species", "Chemical")]),
             _doc("u", "Rain fell.", [("Rain", "Chemical")]),
             _doc("v", "Open angle glaucoma.", [("Open angle glaucoma", "Disease")])]
    kg = SeedKG([Node("NCBIGene:9", "alpha-B crystallin", "biolink:Gene"),
                 Node("MESH:D9", "left ventricular dysfunction", "biolink:Disease")], [])
    linker = EntityLinker.build(train, kg, [])
    text = ("In retinopathy of prematurity, primary open angle glaucoma, reactive oxygen species, "
            "alpha-B crystallin and left ventricular dysfunction; RA in rats; retinopathy of prematurity, oxygen.")
    spans = [("retinopathy", "Disease"), ("glaucoma", "Disease"), ("oxygen", "Chemical"),
             ("alpha-B", "Gene"), ("ventricular dysfunction", "Disease"), ("RA", "Chemical"),
             ("retinopathy", "Disease"), ("prematurity", "Disease"), ("oxygen", "Gene")]
    raw = Document(id="r", text=text, mentions=_mentions(text, spans))
    out = name_extension(raw, linker, frozenset({"Gene", "Disease", "Chemical"}))
    assert [(m.text, text[m.start:m.end], m.type) for m in out.mentions] == [
        ("retinopathy of prematurity", "retinopathy of prematurity", "Disease"),      # right, 2 words
        ("primary open angle glaucoma", "primary open angle glaucoma", "Disease"),     # the longest, 3 words
        ("reactive oxygen species", "reactive oxygen species", "Chemical"),           # both sides
        ("alpha-B crystallin", "alpha-B crystallin", "Gene"),                         # a KG name
        ("left ventricular dysfunction", "left ventricular dysfunction", "Disease"),   # a KG name
        # "RA in" has the key of the chemical "Rain", but a name ends in no function word
        ("RA", "RA", "Chemical"),
        # "retinopathy of prematurity" would grow over another mention; "oxygen" is no gene name
        ("retinopathy", "retinopathy", "Disease"), ("prematurity", "prematurity", "Disease"),
        ("oxygen", "oxygen", "Gene")]
    assert raw.mentions[0].text == "retinopathy"                        # the input is untouched
    linked = replace(raw, mentions=[replace(raw.mentions[0], ids=["MESH:D1"])])
    assert name_extension(linked, linker, frozenset({"Disease"})) is linked   # a linked mention stays
    assert name_extension(raw, linker, frozenset({"Gene"})).mentions[0].text == "retinopathy"  # not its label


def test_a_chemical_inside_a_known_gene_name_becomes_that_gene():
    # the KG names two genes; the training documents annotate one name as a gene and one as a chemical
    train = [_doc("t", "Mammalian target of rapamycin and creatine kinase.",
                  [("Mammalian target of rapamycin", "GeneOrGeneProduct"), ("creatine kinase", "Chemical")])]
    kg = SeedKG([Node("NCBIGene:1621", "dopamine beta-hydroxylase", "biolink:Gene"),
                 Node("NCBIGene:1152", "creatine kinase", "biolink:Gene")], [])
    linker = EntityLinker.build(train, kg, [])
    text = "dopamine beta-hydroxylase, mammalian target of rapamycin, creatine kinase, dopamine and rapamycin."
    spans = [("dopamine", "Chemical"), ("rapamycin", "Chemical"), ("creatine", "Chemical"),
             ("dopamine", "Chemical"), ("rapamycin", "Chemical")]
    raw = Document(id="r", text=text, mentions=_mentions(text, spans))
    out = gene_extension(raw, linker)
    assert [(m.text, text[m.start:m.end], m.type) for m in out.mentions] == [
        ("dopamine beta-hydroxylase", "dopamine beta-hydroxylase", "Gene"),          # a KG gene name
        ("mammalian target of rapamycin", "mammalian target of rapamycin", "Gene"),  # a trained gene name
        ("creatine", "creatine", "Chemical"),             # training annotates the longer name as a chemical
        ("dopamine", "dopamine", "Chemical"), ("rapamycin", "rapamycin", "Chemical")]   # no gene around
    assert raw.mentions[0].type == "Chemical"                           # the input is untouched
    linked = replace(raw, mentions=[replace(raw.mentions[0], ids=["MESH:D1"])])
    assert gene_extension(linked, linker) is linked                     # a linked mention stays
    assert gene_extension(raw, linker, chemical="Disease") is raw       # only the chemical label grows


def test_only_the_training_documents_and_the_kg_name_exactly():
    train = [_doc("t", "Calcium channels and calcium.", [("Calcium channels", "Chemical"), ("calcium", "Chemical")]),
             _doc("u", "Calcium channels bind.", [("Calcium channels", "GeneOrGeneProduct")])]
    linker = EntityLinker.build(train, SeedKG([Node("MESH:D5", "glucose transporter", "biolink:Disease")], []), [])
    assert linker.names_exactly("calcium", "Chemical") and linker.names_exactly("Calcium", "biolink:ChemicalEntity")
    assert linker.names_exactly("glucose transporters", "Disease")       # a KG name's plural
    assert not linker.names_exactly("calcium channels", "Chemical")      # annotated as a gene too
    assert not linker.names_exactly("glucose transporter", "Chemical")   # the KG's category only
    assert not linker.names_exactly("calcum", "Chemical")                # no fuzzy match
    assert not linker.names_exactly("", "Chemical")


def test_no_function_word_begins_or_ends_a_kg_name_or_symbol():
    """Look-up keys ignore spaces, so "as NS" has the key of ASNS and "of C4" of OFC4 (a synonym of
    MACF1): a word run that a function word begins or ends is no name; a capital letter is no
    function word ("vitamin A")."""
    nodes = [Node("NCBIGene:440", "ASNS", "biolink:Gene"), Node("NCBIGene:23499", "OFC4", "biolink:Gene"),
             Node("MESH:D014801", "vitamin A", "biolink:ChemicalEntity")]
    linker = EntityLinker.build([], SeedKG(nodes, []))
    raw = Document(id="d", text="Known as NS, the loss of C4 and of vitamin A; ASNS and OFC4.", mentions=[])
    assert [m.text for m in symbol_mentions(raw, linker).mentions] == ["OFC4"]
    named = name_mentions(raw, linker, {"biolink:Gene": "Gene", "biolink:ChemicalEntity": "Chemical"}, 0.5)
    assert [m.text for m in named.mentions] == ["vitamin A", "ASNS", "OFC4"]
