"""Reference gene vocabularies (graphmert/ner/vocabularies/genes.py) and gene species
(graphmert/ner/linking/species.py): reading the NCBI Gene, rat, HomoloGene and RGD files, look-ups
per species with variants and orthologs, the species of a mention, and the linker built with them."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from graphmert.config import ConfigError, VocabularySource, build
from graphmert.corpus.document import Document, Mention
from graphmert.ner.linking import EntityLinker, LinkerError, normalize_surface, surface_key
from graphmert.ner.vocabularies.gene_forms import gene_variants
from graphmert.ner.vocabularies.genes import (
    build_gene_vocabulary, folded_key, initials, read_gene_info, read_rgd_orthologs,
)
from graphmert.corpus.document import Abbreviation
from graphmert.ner.vocabularies.surface import names_several
from graphmert.ner.linking.species import (
    abbreviation_marks, host_marks, mention_species, sentence_spans, species_marks, symbol_case_species,
)

HEADER = ("#tax_id\tGeneID\tSymbol\tLocusTag\tSynonyms\tdbXrefs\tchromosome\tmap_location\tdescription\t"
          "type_of_gene\tSymbol_from_nomenclature_authority\tFull_name_from_nomenclature_authority\t"
          "Nomenclature_status\tOther_designations\tModification_date\tFeature_type")


def gene_row(taxon: int, gene: int, symbol: str, synonyms: str = "-", full: str = "-",
             other: str = "-", kind: str = "protein-coding") -> str:
    return "\t".join([str(taxon), str(gene), symbol, "-", synonyms, "-", "1", "-", full, kind, symbol,
                      full, "O", other, "20230101", "-"])


HUMAN = [gene_row(9606, 332, "BIRC5", "API4|EPR-1", "baculoviral IAP repeat containing 5"),
         gene_row(9606, 7124, "TNF", "TNFA|TNF-alpha", "tumor necrosis factor"),
         gene_row(9606, 4086, "SMAD1", "MADH1", "SMAD family member 1"),
         gene_row(9606, 4087, "SMAD2", "MADH2", "SMAD family member 2"),
         gene_row(9606, 7040, "TGFB1", "TGFbeta", "transforming growth factor beta 1"),
         gene_row(9606, 9001, "DUP", "TNFA", "a pseudogene named like TNF", kind="pseudo"),
         gene_row(9606, 3569, "IL6", "IFNB2|BSF2", "interleukin 6")]
MOUSE = [gene_row(10090, 11799, "Birc5", "Api4|TIAP", "baculoviral IAP repeat-containing 5", "survivin"),
         gene_row(10090, 21926, "Tnf", "Tnfa|TNF-alpha", "tumor necrosis factor"),
         gene_row(10090, 16193, "Il6", "Il-6", "interleukin 6")]
RAT_TABLE = "#GeneID\tRGD_ID\tSymbol\tSynonyms\n24835\t3876\tTnf\tTNF-alpha|Tnfa\n24498\t2901\tIl6\t-\n"
HOMOLOGENE = ("#HID\ttax_id\tGeneID\tSymbol\n"
              "1\t9606\t332\tBIRC5\n1\t10090\t11799\tBirc5\n1\t7955\t999\tbirc5a\n"
              "2\t9606\t7124\tTNF\n2\t10090\t21926\tTnf\n")
RGD = ("# RGD ortholog file\n# GENERATED-ON: 2017-02-17\n"
       "RAT_GENE_SYMBOL\tRAT_GENE_RGD_ID\tRAT_GENE_NCBI_GENE_ID\tHUMAN_ORTHOLOG_SYMBOL\tHUMAN_ORTHOLOG_RGD\t"
       "HUMAN_ORTHOLOG_NCBI_GENE_ID\tHUMAN_ORTHOLOG_SOURCE\tMOUSE_ORTHOLOG_SYMBOL\tMOUSE_ORTHOLOG_RGD\t"
       "MOUSE_ORTHOLOG_NCBI_GENE_ID\tMOUSE_ORTHOLOG_MGI\tMOUSE_ORTHOLOG_SOURCE\tHUMAN_ORTHOLOG_HGNC_ID\n"
       "Tnf\t3876\t24835\tTNF\t1\t7124\tHGNC\tTnf\t2\t21926\tMGI:1\tHGNC\tHGNC:1\n"
       "Il6\t2901\t24498\tIL6\t3\t3569\tHGNC\tIl6\t4\t16193\tMGI:2\tHGNC\tHGNC:2\n")


def write(path: Path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
    return str(path)


@pytest.fixture
def sources(tmp_path) -> list[VocabularySource]:
    return [VocabularySource(kind="gene_info", path=write(tmp_path / "human.gene_info.gz", "\n".join([HEADER, *HUMAN]) + "\n")),
            VocabularySource(kind="gene_info", path=write(tmp_path / "mouse.gene_info", "\n".join([HEADER, *MOUSE]) + "\n")),
            VocabularySource(kind="gene_table", path=write(tmp_path / "rat.tsv", RAT_TABLE), taxon="NCBITaxon:10116"),
            VocabularySource(kind="homologene", path=write(tmp_path / "homologene.tsv", HOMOLOGENE)),
            VocabularySource(kind="rgd_orthologs", path=write(tmp_path / "rgd.txt.gz", RGD))]


HUMAN_TAXON, MOUSE_TAXON, RAT_TAXON = "NCBITaxon:9606", "NCBITaxon:10090", "NCBITaxon:10116"


# -------------------------------------------------------------------------- look-ups and variants
def test_lookup_answers_in_the_mentions_species(sources):
    v = build_gene_vocabulary(sources)
    assert v.lookup("tnf", HUMAN_TAXON) == ("NCBIGene:7124", 0)
    assert v.lookup("tnf", MOUSE_TAXON) == ("NCBIGene:21926", 0)
    assert v.lookup("tnf", RAT_TAXON) == ("NCBIGene:24835", 0)
    # a coding gene's synonym beats a pseudogene's, whatever the numbers
    assert v.lookup("tnfa", HUMAN_TAXON) == ("NCBIGene:7124", 1)
    assert v.taxon("NCBIGene:24835") == RAT_TAXON and v.taxon("NCBIGene:404") is None


def test_a_shared_synonym_goes_to_the_gene_whose_full_name_it_abbreviates(tmp_path):
    rows = [gene_row(9606, 3239, "HOXD13", "SPD|SPD1", "homeobox D13"),
            gene_row(9606, 6441, "SFTPD", "SP-D|COLEC7", "surfactant protein D"),
            gene_row(9606, 6494, "SIPA1", "SPA1", "signal-induced proliferation-associated 1"),
            gene_row(9606, 653509, "SFTPA1", "SP-A1", "surfactant protein A1")]
    v = build_gene_vocabulary([VocabularySource(kind="gene_info", path=write(tmp_path / "h.gene_info",
                                                                             "\n".join([HEADER, *rows]) + "\n"))])
    assert v.lookup("spd", HUMAN_TAXON) == ("NCBIGene:6441", 1)           # not the smaller number
    assert v.lookup("spa1", HUMAN_TAXON) == ("NCBIGene:653509", 1)
    assert v.lookup("spd1", HUMAN_TAXON) == ("NCBIGene:3239", 1)          # no other candidate
    assert v.lookup("sftpd", HUMAN_TAXON) == ("NCBIGene:6441", 0)         # a symbol still beats a synonym


@pytest.mark.parametrize("name, key", [("surfactant protein D", "spd"), ("surfactant protein A1", "spa1"),
                                       ("tumor necrosis factor", "tnf"), ("homeobox D13", "hd13"),
                                       ("receptor activator of NF-kappaB ligand", "raonkl")])
def test_initials(name, key):
    assert initials(name) == key


def test_a_name_known_in_another_species_takes_its_ortholog(sources):
    v = build_gene_vocabulary(sources)
    # "survivin" is a mouse designation only: the human and the rat mention get their own gene
    assert v.lookup("survivin", MOUSE_TAXON) == ("NCBIGene:11799", 3)
    assert v.lookup("survivin", HUMAN_TAXON) == ("NCBIGene:332", 3)
    assert v.lookup("survivin", RAT_TAXON) is None            # no rat member in the group
    # RGD's rows join HomoloGene's groups: the rat Tnf is the human TNF's and the mouse Tnf's
    assert v.ortholog("NCBIGene:24835", HUMAN_TAXON) == "NCBIGene:7124"
    assert v.ortholog("NCBIGene:7124", RAT_TAXON) == "NCBIGene:24835"
    assert v.ortholog("NCBIGene:24498", MOUSE_TAXON) == "NCBIGene:16193"
    # species no names source covers (zebrafish) are left out of the groups
    assert "NCBIGene:999" not in v.groups


@pytest.mark.parametrize("text, key", [("IL-1 beta", "il1b"), ("TNFα", "tnfa"), ("type II", "type2"),
                                       ("TGF-β1", "tgfb1"), ("Tgfb-1", "tgfb1"), ("diabetes", "diabetes")])
def test_folded_key(text, key):
    assert folded_key(normalize_surface(text)) == key


def test_folded_lookup_matches_greek_spelt_or_not(sources):
    v = build_gene_vocabulary(sources)
    assert v.lookup(folded_key(normalize_surface("TGF-beta1")), HUMAN_TAXON, folded=True)[0] == "NCBIGene:7040"
    assert v.lookup(surface_key("TGF-beta1"), HUMAN_TAXON) is None        # "tgfbeta1": no exact name
    # a name whose folded key differs from its key ("TGFbeta" → "tgfb") answers a folded query only
    assert v.lookup("tgfb", HUMAN_TAXON) is None
    assert v.lookup(folded_key(normalize_surface("TGF-β")), HUMAN_TAXON, folded=True)[0] == "NCBIGene:7040"


@pytest.mark.parametrize("text, variants", [
    ("Smad1/2", [["Smad1", "Smad2"]]),
    ("PAK1-3", [["PAK1", "PAK2", "PAK3"]]),
    ("ROCK-I/II", [["ROCK1", "ROCK2"]]),
    ("NRG-1 beta", [["NRG-1"]]),
    ("nuclear factor (NF)-kappaB", [["NF-kappaB"], ["nuclear factor-kappaB"]]),
    ("IL6 gene", [["IL6"]]),
    ("hTERT", [["TERT"]]),
    ("IL-6", []),
    ("CCK1 receptor", [["CCK1R"]]),
    ("GnRH-receptors", [["GnRHR"]]),
    ("insulin receptor", []),                   # a ligand written as a word makes no symbol
    ("beta(1)-integrin", [["beta1-integrin"], ["beta-integrin"]]),
    ("leukocyte antigen (HLA)-DRB1", [["HLA-DRB1"], ["leukocyte antigen-DRB1"]]),
    ("tumor necrosis factor (TNF)", [["tumor necrosis factor"]]),    # nothing continues the short form
    ("AMPKa", [["AMPKalpha"]]),
    ("PPARg", [["PPARgamma"]]),
    ("Rab3a", []),                              # a letter after a digit is the symbol's own
    ("miR-138", [["MIR138"], ["MIR138-1", "MIR138-2", "MIR138-3"]]),
    ("hsa-miR-483-3p", [["MIR483"], ["MIR483-1", "MIR483-2", "MIR483-3"]]),
    ("microRNA-21", [["MIR21"], ["MIR21-1", "MIR21-2", "MIR21-3"]]),
    ("miR-138-2", [["MIR138-2"]]),
    ("let-7b", [["MIRLET7B"], ["MIRLET7B1", "MIRLET7B2", "MIRLET7B3"]]),
    ("miRNAs", []),
])
def test_gene_variants(text, variants):
    assert gene_variants(text) == variants


# -------------------------------------------------------------------------- species
def test_species_marks_and_mention_species():
    text = "In mice, Tnf rose. Patients with TNF. C57BL/6 marrow. Rats too."
    forms = {"mice": ("NCBITaxon:10090",), "patients": ("NCBITaxon:9606",), "rats": ("NCBITaxon:10116",)}
    marks = species_marks(text, forms)
    assert [t for _, t in marks] == [MOUSE_TAXON, HUMAN_TAXON, MOUSE_TAXON, RAT_TAXON]
    sentences = sentence_spans(text, [])
    assert [text[a:b].strip() for a, b in sentences][:2] == ["In mice, Tnf rose.", "Patients with TNF."]
    spans = [(text.index("Tnf"), text.index("Tnf") + 3), (text.index("TNF"), text.index("TNF") + 3),
             (len(text) - 3, len(text) - 1)]
    assert mention_species(spans, marks, sentences, default="X") == [MOUSE_TAXON, HUMAN_TAXON, RAT_TAXON]
    assert mention_species(spans, [], sentences, default="X") == ["X", "X", "X"]


def test_a_xenograft_names_human_genes():
    text = "Nude mice bearing KU7 cells as xenografts lost Sp1. In mice, Tnf rose."
    forms = {"mice": ("NCBITaxon:10090",)}
    marks = species_marks(text, forms)
    assert [t for _, t in marks] == [MOUSE_TAXON, HUMAN_TAXON, MOUSE_TAXON]
    sp1, tnf = text.index("Sp1"), text.index("Tnf")
    assert mention_species([(sp1, sp1 + 3), (tnf, tnf + 3)], marks, sentence_spans(text, []),
                           default=None) == [HUMAN_TAXON, MOUSE_TAXON]    # the nearest cue of its sentence


@pytest.mark.parametrize("text", ["in BALB/c nude mice.", "in athymic nude mice.", "in NOD/SCID mice.",
                                  "in nude rats.", "in immunodeficient mice."])
def test_a_xenograft_host_is_a_human_cue(text):
    # the host animal holds human cells: one human cue where its words are, and no rodent cue inside
    forms = {"mice": (MOUSE_TAXON,), "rats": (RAT_TAXON,)}
    text = f"H446 cells grew {text} Mice lost weight."
    marks = host_marks(text, species_marks(text, forms))
    assert [t for _, t in marks] == [HUMAN_TAXON, MOUSE_TAXON]         # "Mice" after it stays a mouse cue
    assert marks[0][0] == text.index("in ") + 3
    plain = "in C57BL/6 mice."
    assert host_marks(plain, species_marks(plain, forms)) == species_marks(plain, forms)


def test_cre_drivers_and_floxed_alleles_are_mouse_cues():
    text = "Alb-Cre;gankyrin(f/f), Shh(CreERT2) and floxed Ctnnb1 (fl/fl); CRE binding; a f/fl ratio."
    marks = species_marks(text, {})
    assert [text[a:a + 4] for a, _ in marks] == ["Cre;", "f/f)", "CreE", "flox", "fl/f"]
    assert {t for _, t in marks} == {MOUSE_TAXON}


def test_the_linker_reads_a_xenograft_host_and_a_cre_driver(sources):
    linker = EntityLinker.build(TRAIN, None, vocabularies=sources)
    xenograft = gene_doc("x", "TNF-alpha rose as tumors grew in nude mice. Mice were treated.", ["TNF-alpha"],
                         species=["mice", "Mice"])
    assert linker.document_species(xenograft) == HUMAN_TAXON              # a tie: the default species
    assert linker.link_mentions(xenograft)[0].ids == ("NCBIGene:7124",)
    cre = gene_doc("c", "In patients, Alb-Cre; Tnf(f/f) livers lost TNF-alpha.", ["TNF-alpha"], species=["patients"])
    assert linker.document_species(cre) == MOUSE_TAXON
    assert linker.link_mentions(cre)[0].ids == ("NCBIGene:21926",)


def test_a_species_no_gene_table_covers_names_no_genes_species(sources):
    # an abstract on HIV names human genes: HIV, which no reference table names genes of, is no cue
    text = "HIV raised TNF-alpha."
    doc = Document("v", text, mentions=[Mention(0, 3, "HIV", "OrganismTaxon", ["NCBITaxon:11676"]),
                                        Mention(11, 20, "TNF-alpha", "GeneOrGeneProduct", [])])
    linker = EntityLinker.build(TRAIN, None, vocabularies=sources)
    assert linker.mention_species(doc)[1] is None               # no cue left: look-ups take the default
    assert linker.link_mentions(doc)[1].ids == ("NCBIGene:7124",)
    bare = EntityLinker.build(TRAIN, None)                              # without tables every species is a cue
    assert bare.mention_species(doc)[1] == "NCBITaxon:11676"


def abbreviation(text: str, short: str, long: str) -> tuple[int, int, int, int]:
    return (text.index(f"({short})") + 1, text.index(f"({short})") + 1 + len(short), text.index(long),
            text.index(long) + len(long))


def test_a_short_form_defined_with_a_species_names_it_where_it_recurs():
    text = ("Rats and human retinal ECs (hRMVECs) and mouse or rat fibroblasts (MRFs) and tissue "
            "fluid (TF). In hRMVECs, NOX4 fell; hRMVEC growth stopped; xhRMVECs and TF and MRFs rose.")
    forms = {"rats": (RAT_TAXON,), "human": (HUMAN_TAXON,), "mouse": (MOUSE_TAXON,), "rat": (RAT_TAXON,)}
    marks = species_marks(text, forms)
    spans = [abbreviation(text, "hRMVECs", "human retinal ECs"), abbreviation(text, "MRFs", "mouse or rat fibroblasts"),
             abbreviation(text, "TF", "tissue fluid")]
    got = abbreviation_marks(text, spans, marks)
    # the two later hRMVEC(s), not the definition itself nor "xhRMVECs"; no cue from MRFs (two species) or TF (none)
    assert got == [(text.index("In hRMVECs") + 3, HUMAN_TAXON), (text.index("hRMVEC growth"), HUMAN_TAXON)]
    nox4 = text.index("NOX4")
    sentences = sentence_spans(text, [])
    assert mention_species([(nox4, nox4 + 4)], marks, sentences, default=RAT_TAXON) == [RAT_TAXON]
    assert mention_species([(nox4, nox4 + 4)], sorted(marks + got), sentences, default=RAT_TAXON) == [HUMAN_TAXON]


def test_the_linker_reads_a_species_from_a_short_form_in_the_genes_sentence(sources):
    linker = EntityLinker.build(TRAIN, None, vocabularies=sources)
    text = "Mice, mice and their patients' fibroblasts (PFs) were studied. In PFs, survivin rose."
    doc = gene_doc("a", text, ["survivin"], species=["Mice", "mice", "patients"])
    doc.abbreviations = [Abbreviation(*abbreviation(text, "PFs", "patients' fibroblasts"))]
    assert linker.document_species(doc) == MOUSE_TAXON
    assert linker.link_mentions(doc)[0].ids == ("NCBIGene:332",)        # human, from "PFs"
    linker.abbreviation_species = False
    assert linker.link_mentions(doc)[0].ids == ("NCBIGene:11799",)      # the document's mouse


def test_symbol_case_species():
    assert symbol_case_species(["Socs2", "Pim1", "EPO"]) == MOUSE_TAXON
    assert symbol_case_species(["SOCS2", "PIM1", "Epo"]) is None
    assert symbol_case_species([]) is None


# -------------------------------------------------------------------------- the linker
def gene_doc(doc_id: str, text: str, genes: list[str], species: list[str] = ()) -> Document:
    mentions = [Mention(text.index(g), text.index(g) + len(g), g, "GeneOrGeneProduct", []) for g in genes]
    mentions += [Mention(text.index(s), text.index(s) + len(s), s, "OrganismTaxon", []) for s in species]
    return Document(doc_id, text, mentions=mentions)


TRAIN = [Document("t1", "Mice and patients.", mentions=[
    Mention(0, 4, "Mice", "OrganismTaxon", ["NCBITaxon:10090"]),
    Mention(9, 17, "patients", "OrganismTaxon", ["NCBITaxon:9606"])])]


def test_linker_links_genes_by_species_with_variants(sources, tmp_path):
    linker = EntityLinker.build(TRAIN, None, vocabularies=sources)
    mouse = gene_doc("m", "In mice, survivin and TNF-alpha and Smad1/2.", ["survivin", "TNF-alpha", "Smad1/2"])
    human = gene_doc("h", "In patients, survivin and TNF-alpha and Smad1/2.", ["survivin", "TNF-alpha", "Smad1/2"])
    unknown = gene_doc("u", "Socs2 and Pim1 bind Tnf.", ["Socs2", "Pim1", "Tnf"])   # rodent symbols: mouse
    got = {d.id: [r.ids for r in linker.link_mentions(d)] for d in (mouse, human, unknown)}
    assert got["m"] == [("NCBIGene:11799",), ("NCBIGene:21926",), ()]
    assert got["h"] == [("NCBIGene:332",), ("NCBIGene:7124",), ("NCBIGene:4086", "NCBIGene:4087")]
    assert got["u"][2] == ("NCBIGene:21926",)
    assert [r.how for r in linker.link_mentions(human)] == ["reference"] * 3
    back = EntityLinker.load(linker.save(tmp_path / "linker.json.gz"))
    assert [r.ids for r in back.link_mentions(mouse)] == got["m"]
    assert back.stats()["reference_genes"] == linker.stats()["reference_genes"] == 12
    assert {"NCBIGene:332", "NCBIGene:24835", "NCBIGene:9001"} <= back.known_ids()


def test_receptors_bracketed_indices_and_short_forms_and_latin_greek_letters_link_as_ncbi_gene_writes_them(tmp_path):
    rows = [gene_row(9606, 2057, "EPOR", "-", "erythropoietin receptor"),
            gene_row(9606, 3688, "ITGB1", "CD29", "integrin subunit beta 1", "beta1-integrin"),
            gene_row(9606, 5562, "PRKAA1", "AMPKalpha", "protein kinase AMP-activated catalytic subunit alpha 1"),
            gene_row(9606, 3123, "HLA-DRB1", "DRB1", "major histocompatibility complex, class II, DR beta 1")]
    path = write(tmp_path / "h.gene_info", "\n".join([HEADER, *rows]) + "\n")
    genes = [VocabularySource(kind="gene_info", path=path)]
    linker = EntityLinker.build(TRAIN, None, vocabularies=genes)
    text = "In patients, EPO receptor, beta(1)-integrin, AMPKa, leukocyte antigen (HLA)-DRB1 and insulin receptor."
    doc = gene_doc("h", text, ["EPO receptor", "beta(1)-integrin", "AMPKa", "leukocyte antigen (HLA)-DRB1",
                               "insulin receptor"])
    assert [r.ids for r in linker.link_mentions(doc)] == [("NCBIGene:2057",), ("NCBIGene:3688",),
                                                          ("NCBIGene:5562",), ("NCBIGene:3123",), ()]


def test_a_microrna_links_to_its_gene_or_its_familys_loci(tmp_path):
    rows = [gene_row(10090, 387156, "Mir138-1", "Mirn138|mir-138-1", "microRNA 138-1", kind="ncRNA"),
            gene_row(10090, 723956, "Mir138-2", "mir-138-2", "microRNA 138-2", kind="ncRNA"),
            gene_row(10090, 723874, "Mir483", "mir-483", "microRNA 483", kind="ncRNA"),
            gene_row(10090, 387245, "Mirlet7b", "let-7b", "microRNA let7b", kind="ncRNA")]
    mouse = VocabularySource(kind="gene_info", path=write(tmp_path / "mouse", "\n".join([HEADER, *rows]) + "\n"))
    linker = EntityLinker.build(TRAIN, None, vocabularies=[mouse])
    doc = gene_doc("m", "In mice, miR-138, miR-483-3p, miR-138-2, Let-7b and miR-999.",
                   ["miR-138", "miR-483-3p", "miR-138-2", "Let-7b", "miR-999"])
    assert [r.ids for r in linker.link_mentions(doc)] == [
        ("NCBIGene:387156", "NCBIGene:723956"),      # the family's two loci
        ("NCBIGene:723874",), ("NCBIGene:723956",), ("NCBIGene:387245",), ()]


def test_a_composite_of_another_species_maps_every_member_to_its_ortholog(sources):
    # a human training document annotates "TNF/IL-6" with both genes; in a mouse abstract each member
    # becomes the mouse gene (HomoloGene for TNF, RGD's rat row joining IL6's human and mouse genes)
    text = "In patients, TNF/IL-6 rose."
    train = [*TRAIN, Document("t2", text, mentions=[
        Mention(9, 17, "patients", "OrganismTaxon", ["NCBITaxon:9606"]),
        Mention(13, 21, "TNF/IL-6", "GeneOrGeneProduct", ["NCBIGene:7124", "NCBIGene:3569"])])]
    linker = EntityLinker.build(train, None, vocabularies=sources)
    mouse = gene_doc("m", "In mice, TNF/IL-6 rose.", ["TNF/IL-6"])
    assert [r.ids for r in linker.link_mentions(mouse)] == [("NCBIGene:21926", "NCBIGene:16193")]
    human = gene_doc("h", text, ["TNF/IL-6"])
    assert [r.ids for r in linker.link_mentions(human)] == [("NCBIGene:7124", "NCBIGene:3569")]


@pytest.mark.parametrize("text, several", [
    ("Smad2/3", True), ("p85/PI3K", True), ("PAK1-3", True), ("MEK 1/2", True),
    ("breast and ovarian cancer", True), ("caspase", False), ("Smad", False), ("IL-6", False),
    ("TGF-beta1", False), ("EGF, PDGF", False),
])
def test_names_several(text, several):
    assert names_several(text) is several


def test_a_family_name_annotated_with_several_genes_takes_one_elsewhere():
    train = [Document("t", "caspase and Smad2/3 act.", mentions=[
        Mention(0, 7, "caspase", "GeneOrGeneProduct", ["NCBIGene:836", "NCBIGene:840"]),
        Mention(12, 19, "Smad2/3", "GeneOrGeneProduct", ["NCBIGene:4087", "NCBIGene:4088"])])]
    linker = EntityLinker.build(train, None)
    assert linker.link("caspase", "Gene").ids == ("NCBIGene:836",)
    assert linker.link("Smad2/3", "Gene").ids == ("NCBIGene:4087", "NCBIGene:4088")


def test_document_species_ties_go_to_the_default_species(sources):
    linker = EntityLinker.build(TRAIN, None, vocabularies=sources)
    tie = gene_doc("t", "In patients and in mice, survivin.", ["survivin"])
    assert linker.document_species(tie) == HUMAN_TAXON
    assert [r.ids for r in linker.link_mentions(tie)] == [("NCBIGene:11799",)]   # "mice" is nearer
    linker.sentence_species = False
    assert [r.ids for r in linker.link_mentions(tie)] == [("NCBIGene:332",)]
    linker.default_species = MOUSE_TAXON
    assert linker.document_species(tie) == MOUSE_TAXON
    assert linker.document_species(gene_doc("n", "No species here: Tnf.", ["Tnf"])) is None


def test_a_species_tie_goes_to_a_rodent_when_the_genes_are_written_as_rodent_symbols(sources):
    train = [*TRAIN, Document("t2", "Rats.", mentions=[Mention(0, 4, "Rats", "OrganismTaxon", ["NCBITaxon:10116"])])]
    linker = EntityLinker.build(train, None, vocabularies=sources)
    text = "In patients and in {}, {} and {} rose."
    docs = {(animal, genes): gene_doc("t", text.format(animal, *genes), list(genes), species=["patients", animal])
            for animal in ("mice", "rats") for genes in (("Socs2", "Pim1"), ("SOCS2", "PIM1"))}
    assert {k: linker.document_species(d) for k, d in docs.items()} == {
        ("mice", ("Socs2", "Pim1")): MOUSE_TAXON, ("rats", ("Socs2", "Pim1")): RAT_TAXON,
        ("mice", ("SOCS2", "PIM1")): HUMAN_TAXON, ("rats", ("SOCS2", "PIM1")): HUMAN_TAXON}
    one_each = gene_doc("o", "In patients, Socs2.", ["Socs2"], species=["patients"])
    assert linker.document_species(one_each) == HUMAN_TAXON                 # no tie: the case is no cue


def test_linker_without_vocabularies_has_no_reference_step():
    linker = EntityLinker.build(TRAIN, None)
    assert linker.link("survivin", "biolink:Gene", HUMAN_TAXON).ids == ()
    assert "reference_genes" not in linker.stats()


# -------------------------------------------------------------------------- errors
def test_malformed_files_name_the_file_and_line(tmp_path):
    bad = write(tmp_path / "bad.gene_info", "\n".join([HEADER, HUMAN[0], "9606\t12\tX"]) + "\n")
    with pytest.raises(LinkerError, match=r"bad.gene_info: line 3: expected 16 tab-separated columns"):
        list(read_gene_info(bad))
    nonumber = write(tmp_path / "nonumber.gene_info", "\n".join([HEADER, HUMAN[0].replace("332", "x332", 1)]) + "\n")
    with pytest.raises(LinkerError, match=r"nonumber.gene_info: line 2: GeneID 'x332' is not a number"):
        list(read_gene_info(nonumber))
    headless = write(tmp_path / "headless.gene_info", HUMAN[0] + "\n")
    with pytest.raises(LinkerError, match=r"headless.gene_info: line 1: expected a gene_info file header"):
        list(read_gene_info(headless))
    with pytest.raises(LinkerError, match=r"missing.txt: RGD ortholog file not found"):
        list(read_rgd_orthologs(tmp_path / "missing.txt"))
    table = write(tmp_path / "table.tsv", "#GeneID\tSymbol\n1\tA\n")
    with pytest.raises(LinkerError, match=r"table.tsv: line 1: a gene table needs the columns .*'Synonyms'"):
        build_gene_vocabulary([VocabularySource(kind="gene_table", path=table, taxon=RAT_TAXON)])


@pytest.mark.parametrize("entry, message", [
    ({"kind": "gene_table", "path": "x"}, r"ner.vocabularies\[0\].taxon: a gene_table needs the NCBITaxon id"),
    ({"kind": "gene_info"}, r"ner.vocabularies\[0\].path: empty"),
    ({"kind": "nope", "path": "x"}, r"ner.vocabularies\[0\].kind: 'nope' is not allowed"),
    ({"kind": "gene_info", "path": "x", "species": 1}, r"ner.vocabularies\[0\].species: unknown key"),
    ({"kind": "terms", "path": "x", "prefix": "MESH"}, r"ner.vocabularies\[0\].prefix: 'MESH' must end with ':'"),
])
def test_config_errors(entry, message):
    with pytest.raises(ConfigError, match=message):
        build({"ner": {"vocabularies": [entry]}})


def test_default_gene_species_must_be_a_taxon():
    with pytest.raises(ConfigError, match="extract.default_gene_species: expected an NCBITaxon id"):
        build({"extract": {"default_gene_species": "human"}})
