"""Reference term tables (``ner.vocabularies`` kind ``terms``, MeSH descriptors): reading, the
variants a look-up finds (permuted, plural, Greek, hyphen), their place after the dictionary and the
seed KG's names, save/load, and the errors that name the file and the line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from graphmert.config.ner import VocabularySource
from graphmert.corpus.document import Document, Mention
from graphmert.kg.graph import Node, SeedKG
from graphmert.ner.linking import EntityLinker, LinkerError, surface_key
from graphmert.ner.vocabularies.terms import read_terms, term_tables

ROWS = [
    "D015470\tLeukemia, Myeloid, Acute\tLeukemia, Acute Myeloid|Acute Myelogenous Leukemia",
    "D009369\tNeoplasms\tTumor|Cancer|Neoplasm",
    "D000002\tTumor Drug\tNeoplasms",             # a smaller id whose entry term is D009369's name
    "D000003\tOther Cancer Word\tCancer",         # "cancer": two entry terms, the smaller id first
    "D014409\tTumor Necrosis Factor-alpha\tTNF-α|Cachectin",
    "D000004\tAbattoirs\tSlaughterhouses",
    "D002945\tCisplatin\t",                       # no entry terms
    "",                                           # blank lines are skipped
    "C000001\tSupplementary Thing\tST-1",         # an id with no prefix of its own
    "MESH:D000005\tAlready Prefixed\t",
]
DISEASE, CHEMICAL = "biolink:Disease", "biolink:ChemicalEntity"


@pytest.fixture
def terms_file(tmp_path) -> Path:
    path = tmp_path / "mesh.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(ROWS) + "\n")
    return path


def source(path: Path, **kw) -> VocabularySource:
    return VocabularySource(kind="terms", path=str(path), **kw)


def doc(doc_id: str, text: str, spans: list[tuple[str, str, str]]) -> Document:
    mentions = []
    for t, type_, ident in spans:
        start = text.index(t)
        mentions.append(Mention(start, start + len(t), t, type_, [ident]))
    return Document(doc_id, text, mentions=mentions)


TRAIN = [doc("1", "Cancer is annotated. Tumors too.",
             [("Cancer", "Disease", "MESH:D000099"), ("Tumors", "Disease", "MESH:D000098")])]
KG = SeedKG([Node("MESH:D000777", "Cachectin", "biolink:ChemicalEntity")], [])


@pytest.fixture
def linker(terms_file) -> EntityLinker:
    return EntityLinker.build(TRAIN, KG, fuzzy_threshold=2.0, vocabularies=[source(terms_file)])


# --------------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------------


def test_a_missing_gene_vocabulary_is_an_error_naming_it(terms_file):
    with pytest.raises(LinkerError, match="no/such/gene_info.gz: gene_info file not found"):
        EntityLinker.build(TRAIN, KG, vocabularies=[source(terms_file),
                                                   VocabularySource(kind="gene_info", path="no/such/gene_info.gz")])


def test_read_terms_keys_names_terms_and_variants(terms_file):
    keys = read_terms(terms_file)
    assert keys[surface_key("Leukemia, Myeloid, Acute")] == ["MESH:D015470"]  # the name itself
    assert keys["acutemyeloidleukemia"] == ["MESH:D015470"]              # permuted name and entry term
    assert keys["acutemyelogenousleukemia"] == ["MESH:D015470"]
    assert surface_key("Leukemia, Acute Myeloid") not in keys               # an inverted term: permuted only
    assert keys["tnfalpha"] == ["MESH:D014409"]                          # Greek letter, hyphen folded
    assert keys["tumornecrosisfactoralpha"] == ["MESH:D014409"]
    assert keys["slaughterhouse"] == ["MESH:D000004"]                    # singular of a plural term
    assert keys["abattoir"] == ["MESH:D000004"]
    assert keys["cisplatin"] == ["MESH:D002945"]
    assert keys["st1"] == ["MESH:C000001"] and keys["alreadyprefixed"] == ["MESH:D000005"]
    # ranked: a preferred name before an entry term (though D000002 is the smaller id) ...
    assert keys["neoplasms"] == ["MESH:D009369", "MESH:D000002"]
    # ... and among entry terms the smallest id first
    assert keys["cancer"] == ["MESH:D000003", "MESH:D009369"]
    assert read_terms(terms_file, prefix="X:")["cisplatin"] == ["X:D002945"]


def test_singulars_drop_es_only_after_a_sibilant_or_o(tmp_path):
    """A plural term's singular keys are English's: "-es" goes only after s, x, z, ch, sh or o, so
    "Sales" (MeSH's Commerce) keys "sale" and never "sal", which would answer the short form "Sal"."""
    path = tmp_path / "plurals.tsv"
    path.write_text("D1\tCommerce\tSales\nD2\tPus Pocket\tAbscesses\nD3\tTree Part\tBranches\n"
                    "D4\tCare\tTherapies\nD5\tPain\tHeadaches\n", encoding="utf-8")
    keys = read_terms(path)
    assert keys["sale"] == ["MESH:D1"] and "sal" not in keys
    assert keys["abscess"] == ["MESH:D2"] and keys["branch"] == ["MESH:D3"]
    assert keys["therapy"] == ["MESH:D4"] and "therapi" not in keys
    assert keys["headache"] == ["MESH:D5"]
    linker = EntityLinker.build(TRAIN, KG, fuzzy_threshold=2.0, vocabularies=[source(path)])
    assert linker.link("Sal", CHEMICAL).ids == () and linker.link("Sale", CHEMICAL).ids == ("MESH:D1",)


def test_read_terms_plain_text_and_categories(tmp_path):
    path = tmp_path / "plain.tsv"
    path.write_text("D1\tAsthma\tAsthmas\n", encoding="utf-8")
    tables = term_tables([source(path, categories=[DISEASE])], [DISEASE, CHEMICAL])
    assert set(tables) == {DISEASE} and tables[DISEASE]["asthma"] == ["MESH:D1"]


def test_two_categories_of_one_source_share_one_table(terms_file):
    tables = term_tables([source(terms_file)], [DISEASE, CHEMICAL])
    assert tables[DISEASE] is tables[CHEMICAL]


@pytest.mark.parametrize("body, line, what", [
    ("D1\tAsthma\t\nD2\tCough\n", 2, "expected 3 tab-separated fields"),
    ("D1\tAsthma\t\n\nD2\tCough\tx\ty\n", 3, "found 4"),
    ("D1\tAsthma\t\n\tCough\tx\n", 2, "empty id"),
    ("D1\t \tx\n", 1, "empty name"),
])
def test_a_malformed_line_names_the_file_and_the_line(tmp_path, body, line, what):
    path = tmp_path / "bad_terms.tsv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(LinkerError) as e:
        read_terms(path)
    assert "bad_terms.tsv" in str(e.value) and f"line {line}:" in str(e.value) and what in str(e.value)
    with pytest.raises(LinkerError, match=f"line {line}:"):
        EntityLinker.build([], None, vocabularies=[source(path)])


def test_a_missing_file_is_named(tmp_path):
    missing = tmp_path / "no_such_mesh.tsv.gz"
    with pytest.raises(LinkerError, match="no_such_mesh.tsv.gz.*not found"):
        read_terms(missing)
    with pytest.raises(LinkerError, match="no_such_mesh.tsv.gz"):
        EntityLinker.build([], None, vocabularies=[source(missing)])


# --------------------------------------------------------------------------------------------------
# look-ups
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, category, expected", [
    ("Acute Myeloid Leukemia", DISEASE, "MESH:D015470"),              # permuted name
    ("leukemia, myeloid, acute", DISEASE, "MESH:D015470"),            # the inverted name
    ("acute myelogenous leukemias", DISEASE, "MESH:D015470"),          # plural query
    ("Neoplasm", DISEASE, "MESH:D009369"),
    ("TNF-α", CHEMICAL, "MESH:D014409"),                              # Greek and hyphen
    ("TNF alpha", CHEMICAL, "MESH:D014409"),
    ("tumor necrosis factor alpha", CHEMICAL, "MESH:D014409"),
    ("Slaughterhouse", DISEASE, "MESH:D000004"),                      # singular of a plural term
    ("cisplatin", "Chemical", "MESH:D002945"),                        # a mention type
])
def test_terms_link_variants(linker, text, category, expected):
    r = linker.link(text, category)
    assert r.ids == (expected,) and r.how == "terms" and r.score == 1.0


def test_the_dictionary_and_kg_names_come_first(linker):
    assert linker.link("cancer", DISEASE).ids == ("MESH:D000099",)    # the dictionary's own id
    assert linker.link("cancer", DISEASE).how == "dictionary"
    # the dictionary's plural variant ("Tumors" → "tumor") too, before the term "Tumor"
    assert linker.link("tumor", DISEASE).ids == ("MESH:D000098",)
    r = linker.link("cachectin", CHEMICAL)                              # a seed-KG name
    assert r.ids == ("MESH:D000777",) and r.how == "kg"
    assert linker.link("cachectin", DISEASE).ids == ("MESH:D014409",)  # the KG names it a chemical only
    # a key several descriptors name answers with the best-ranked one, one entity only
    assert linker.link("neoplasms", DISEASE).ids == ("MESH:D009369",)


def test_a_british_spelling_is_looked_up_as_the_american_one(tmp_path):
    """MeSH writes "Hypoglycemia" and "Silver Sulfadiazine"; a British abstract "hypoglycaemia" and
    "silver sulphadiazine". The American spelling is tried only where the text itself links to
    nothing: the training documents' own "Oedema" keeps its id."""
    path = tmp_path / "mesh.tsv"
    path.write_text("D007003\tHypoglycemia\t\nD004487\tEdema\t\nD012837\tSilver Sulfadiazine\t\n"
                    "D009369\tNeoplasms\tTumor\n", encoding="utf-8")
    train = [doc("1", "Oedema is annotated.", [("Oedema", "Disease", "MESH:D000099")])]
    uk = EntityLinker.build(train, None, fuzzy_threshold=2.0, vocabularies=[source(path)])
    for text, category, expected in [("hypoglycaemia", DISEASE, "MESH:D007003"),
                                     ("Silver sulphadiazine", CHEMICAL, "MESH:D012837"),
                                     ("tumours", DISEASE, "MESH:D009369")]:        # plural and "-our"
        r = uk.link(text, category)
        assert r.ids == (expected,) and r.how == "terms" and r.score == 1.0, text
    assert uk.link("oedema", DISEASE).ids == ("MESH:D000099",)           # the text's own link
    assert uk.link("angio-oedema", DISEASE).ids == ()                     # "angio-edema": no key
    assert uk.link("hypoglycaemia", CHEMICAL).ids == ("MESH:D007003",)   # one table for both categories


def test_no_terms_outside_the_sources_categories(terms_file):
    only = EntityLinker.build([], None, fuzzy_threshold=2.0,
                              vocabularies=[source(terms_file, categories=[DISEASE])])
    assert only.link("cisplatin", DISEASE).ids == ("MESH:D002945",)
    assert only.link("cisplatin", CHEMICAL).ids == ()
    plain = EntityLinker.build([], None, fuzzy_threshold=2.0)
    assert plain.link("cisplatin", DISEASE).ids == ()


def test_known_ids_and_stats_count_the_terms(linker, terms_file):
    assert {"MESH:D015470", "MESH:D000002", "MESH:C000001"} <= linker.known_ids()
    stats = linker.stats()
    assert stats["term_forms"][DISEASE] == stats["term_forms"][CHEMICAL] == len(read_terms(terms_file))
    assert stats["term_vocabularies"] == [str(terms_file)]            # the gene_info source is not one


# --------------------------------------------------------------------------------------------------
# persistence
# --------------------------------------------------------------------------------------------------


def test_save_load_round_trip_keeps_the_terms(linker, tmp_path):
    path = linker.save(tmp_path / "linker.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    assert len(data["terms"]) == 1                                     # a shared table is saved once
    assert sorted(data["terms"][0]["categories"]) == [CHEMICAL, DISEASE]
    back = EntityLinker.load(path)
    for text, cat in [("acute myeloid leukemia", DISEASE), ("TNF-α", CHEMICAL), ("cancer", DISEASE),
                      ("slaughterhouses", DISEASE), ("neoplasms", CHEMICAL), ("nothing", DISEASE)]:
        assert back.link(text, cat) == linker.link(text, cat)
    assert back.known_ids() == linker.known_ids() and back.stats() == linker.stats()
    back.save(tmp_path / "again.json.gz")
    assert (tmp_path / "again.json.gz").read_bytes() == path.read_bytes()


def test_a_linker_without_terms_round_trips(tmp_path):
    plain = EntityLinker.build(TRAIN, KG, fuzzy_threshold=2.0)
    back = EntityLinker.load(plain.save(tmp_path / "plain.json.gz"))
    assert back.link("cancer", DISEASE).ids == ("MESH:D000099",)
    assert back.link("cisplatin", CHEMICAL).ids == ()


def test_a_term_table_alone_names_nothing_exactly(linker):
    """:meth:`EntityLinker.names_exactly` (the span rule ``extract.name_extension``) counts the
    training documents' forms and the KG's names, never a term table's: MeSH names what is no
    mention of the category ("Abattoirs" links as a disease)."""
    assert linker.link("Slaughterhouses", DISEASE).how == "terms"
    assert not linker.names_exactly("Slaughterhouses", DISEASE)
    assert linker.names_exactly("cancer", DISEASE) and linker.names_exactly("Cachectin", CHEMICAL)


def test_a_kg_node_no_xref_maps_takes_the_one_id_the_terms_give_its_name(terms_file, tmp_path):
    """Hetionet's compounds were mapped to MeSH by MeSH 2015's descriptor names: a compound the xref
    tables leave unmapped takes the id whose name or entry term is its name ("Imatinib" → Imatinib
    Mesylate), so its names link and count as KG names; a name two ids share maps nowhere, a node
    an xref table maps keeps that mapping, and a node of a category without a term table is left."""
    xrefs = tmp_path / "drugbank_to_mesh.tsv"
    xrefs.write_text("drugbank_id\tmesh_id\nDRUGBANK:DB3\tMESH:D000777\n")
    kg = SeedKG([Node("DRUGBANK:DB1", "cisplatin", CHEMICAL, ("Platinol",)),     # D002945's name
                 Node("DRUGBANK:DB2", "Cancer", CHEMICAL),                         # D009369 and D000003
                 Node("DRUGBANK:DB3", "Abattoirs", CHEMICAL),                      # mapped by its table
                 Node("DOID:1", "Slaughterhouses", DISEASE)], [])                  # a disease node
    only_chemicals = source(terms_file, categories=[CHEMICAL])
    linker = EntityLinker.build(TRAIN, kg, [xrefs], fuzzy_threshold=2.0, vocabularies=[only_chemicals])
    hit = linker.link("Platinol", "Chemical")                   # the node's synonym, now a KG name
    assert (hit.ids, hit.how, hit.xrefs) == (("MESH:D002945",), "kg", ("DRUGBANK:DB1",))
    assert linker.kg_name(surface_key("Platinol"), CHEMICAL, 0.5)
    assert not linker.kg_name(surface_key("Cancer"), CHEMICAL, 0.5)
    assert linker.link("Abattoirs", "Chemical").ids == ("MESH:D000777",)
    assert not linker.kg_name(surface_key("Slaughterhouses"), DISEASE, 0.5)
    assert linker.stats()["kg_nodes_mapped_by_terms"] == {CHEMICAL: 1}
    assert linker.stats()["kg_nodes_unmapped"] == {CHEMICAL: 1, DISEASE: 1}
    without = EntityLinker.build(TRAIN, kg, [xrefs], fuzzy_threshold=2.0)
    assert without.link("Platinol", "Chemical").how == "none"
    assert without.stats()["kg_nodes_mapped_by_terms"] == {}


def test_a_descriptor_known_only_as_another_category_never_answers(tmp_path):
    """MeSH's file serves diseases and chemicals alike; a descriptor that the seed KG or the training
    documents give only the other category does not answer ("DDD" is a chemical's entry term, never
    the disease), one they give this category too does, one neither knows answers both, and a saved
    linker keeps the rule."""
    path = tmp_path / "mesh.tsv"
    path.write_text("D003632\tDichlorodiphenyldichloroethane\tDDD\n"
                    "D050000\tBoth Ways\tBW\n"
                    "D013737\tTestis\tTestes\n", encoding="utf-8")
    kg = SeedKG([Node("MESH:D003632", "Dichlorodiphenyldichloroethane", CHEMICAL),
                 Node("MESH:D050000", "Both Ways", CHEMICAL)], [])
    train = [doc("9", "BW is annotated as a disease here.", [("BW", "Disease", "MESH:D050000")])]
    linker = EntityLinker.build(train, kg, fuzzy_threshold=2.0, vocabularies=[source(path)])
    for one in (linker, EntityLinker.load(linker.save(tmp_path / "linker.json.gz"))):
        assert one.link("DDD", CHEMICAL).ids == ("MESH:D003632",) and one.link("DDD", DISEASE).ids == ()
        assert one.link("Both Ways", DISEASE).ids == ("MESH:D050000",)     # the training documents' disease
        assert one.link("testis", DISEASE).ids == one.link("testis", CHEMICAL).ids == ("MESH:D013737",)
    # known_terms_only (extract.known_terms_only, for recognised text): a descriptor neither source
    # gives the category answers nothing; the known ones still answer
    linker.known_terms_only = True
    assert linker.link("testis", DISEASE).ids == linker.link("testis", CHEMICAL).ids == ()
    assert linker.link("DDD", CHEMICAL).ids == ("MESH:D003632",)
    assert linker.link("Both Ways", DISEASE).ids == ("MESH:D050000",)
    assert linker.link("Both Ways", CHEMICAL).ids == ("MESH:D050000",)


def test_extraction_sets_known_terms_only_from_the_config(terms_file):
    from graphmert.config import ExtractConfig
    from pipelines.stages.extract_parts import extraction_linker

    linker = EntityLinker.build(TRAIN, KG, fuzzy_threshold=2.0, vocabularies=[source(terms_file)])
    assert linker.link("Slaughterhouses", DISEASE).ids == ("MESH:D000004",)
    assert extraction_linker(linker, ExtractConfig(known_terms_only=True)) is linker
    assert linker.known_terms_only and linker.link("Slaughterhouses", DISEASE).ids == ()


def test_a_term_step_is_a_mapping_of_the_keys_it_answers(terms_file):
    """``term_steps``' tables leave a category's foreign ids out of every view: look-up, membership,
    iteration and length agree."""
    from graphmert.ner.vocabularies.terms import term_steps

    tables = {DISEASE: read_terms(terms_file)}
    (firsts, _, _, others), _ = term_steps(tables, {DISEASE: frozenset({"MESH:D002945", "MESH:D000003"})})
    ranked, rest = firsts[DISEASE], others[DISEASE]
    assert "cisplatin" not in ranked and "cisplatin" not in set(ranked) and ranked.get("cisplatin") is None
    assert ranked["cancer"] == ("MESH:D009369",) and rest["cancer"] == ()       # D000003 left out
    gone = {"cisplatin", "othercancerword"}                                 # keys of foreign ids only
    assert len(ranked) == len(list(ranked)) == len(tables[DISEASE]) - 2 and not gone & set(ranked)
    assert dict(ranked.items())["neoplasms"] == ("MESH:D009369",)
