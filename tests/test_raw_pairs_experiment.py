"""experiments/raw_pairs.py's finer tables of a raw-text run: mislinked genes by species, the ids a
link can reach, triples with an unlinked end, pairs by their variant id. (Its first two tables are
graphmert.eval.losses', tested in tests/eval/test_losses.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

from graphmert.corpus.document import Document, Mention, Relation
from graphmert.eval.gold import GoldSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

TEXT = "BRCA1 and TP53 cause cancer with aspirin."
#       0    5    10   15   20   25   30   35


def _m(start: int, end: int, type_: str, *ids: str) -> Mention:
    return Mention(start=start, end=end, text=TEXT[start:end], type=type_, ids=list(ids))


GOLD_DOC = Document(id="d", text=TEXT, mentions=[
    _m(0, 5, "Gene", "672"), _m(10, 14, "Gene", "7157"), _m(21, 27, "Disease", "MESH:D009369"),
    _m(33, 40, "Chemical", "MESH:D001241")],
    relations=[Relation(type="Association", head="672", tail="MESH:D009369"),
               Relation(type="Association", head="7157", tail="MESH:D009369"),
               Relation(type="Association", head="MESH:D001241", tail="MESH:D009369"),
               Relation(type="Association", head="672", tail="7157")])


def test_wrong_gene_ids_split_by_taxon_and_by_document():
    from raw_pairs import wrong_gene_documents, wrong_gene_ids

    text = "AAA1 BBB2 CCC3 DDD4 EEE5 cancer"
    #       0    5    10   15   20   25
    def m(start: int, type_: str, *ids: str) -> Mention:
        return Mention(start=start, end=start + 4, text=text[start:start + 4], type=type_, ids=list(ids))

    disease = Mention(start=25, end=31, text="cancer", type="Disease", ids=["MESH:D1"])
    gold = Document(id="g", text=text, mentions=[
        m(0, "Gene", "NCBIGene:1"), m(5, "Gene", "NCBIGene:2"), m(10, "Gene", "NCBIGene:3"),
        m(15, "Gene", "NCBIGene:4"), m(20, "Gene", "NCBIGene:5"), disease],
        relations=[Relation(type="Association", head=f"NCBIGene:{i}", tail="MESH:D1") for i in (1, 2, 3, 5)])
    found = Document(id="g", text=text, mentions=[
        m(0, "Gene", "NCBIGene:10"),        # human gold, a mouse gene
        m(5, "Gene", "NCBIGene:11"),        # gold id unknown to the linker
        m(10, "Gene", "NCBIGene:12"),       # human gold, another human gene
        m(15, "Gene", "NCBIGene:13"),       # wrong, but NCBIGene:4 is in no gold pair
        m(20, "Gene", "NCBIGene:5"), disease])   # right

    class Linker:
        taxa = {"NCBIGene:1": "human", "NCBIGene:3": "human", "NCBIGene:4": "human", "NCBIGene:10": "mouse",
                "NCBIGene:11": "human", "NCBIGene:12": "human", "NCBIGene:13": "mouse"}

        def gene_taxon(self, gene):
            return self.taxa.get(gene)

    rows = wrong_gene_ids(GoldSet.from_documents([gold]), {"g": found}, Linker())
    assert rows == {"a gene of another species": 1, "gold id unseen in training and the seed KG": 1,
                    "another gene of the gold's species": 1}

    # by document: a second abstract with one gene of another species ranks after "g"
    other = Document(id="h", text=text, mentions=[m(0, "Gene", "NCBIGene:1"), disease],
                     relations=[Relation(type="Association", head="NCBIGene:1", tail="MESH:D1")])
    found_other = Document(id="h", text=text, mentions=[m(0, "Gene", "NCBIGene:10"), disease])
    docs = wrong_gene_documents(GoldSet.from_documents([other, gold]), {"g": found, "h": found_other},
                                Linker())
    assert docs == [{"document": "g", "gene entities": 3, "of another species": 1, "gold pairs with one": 3},
                    {"document": "h", "gene entities": 1, "of another species": 1, "gold pairs with one": 1}]
    assert wrong_gene_documents(GoldSet.from_documents([other, gold]), {"g": found, "h": found_other},
                                Linker(), top=1) == docs[:1]


def test_reachable_counts_entities_and_pairs_whose_ids_a_link_can_give():
    from raw_pairs import reachable

    text = "BRCA1 R175H rs28934578 cancer"
    gold_doc = Document(id="r", text=text, mentions=[
        Mention(start=0, end=5, text="BRCA1", type="Gene", ids=["NCBIGene:672"]),
        Mention(start=6, end=11, text="R175H", type="SequenceVariant", ids=["tmVar:p|SUB|R|175|H"]),
        Mention(start=12, end=22, text="rs28934578", type="SequenceVariant", ids=["dbSNP:rs28934578"]),
        Mention(start=23, end=29, text="cancer", type="Disease", ids=["MESH:D009369"])],
        relations=[Relation(type="Association", head="NCBIGene:672", tail="MESH:D009369"),
                   Relation(type="Association", head="tmVar:p|SUB|R|175|H", tail="MESH:D009369"),
                   Relation(type="Association", head="dbSNP:rs28934578", tail="MESH:D009369")])
    gold = GoldSet.from_documents([gold_doc])
    rows = {r["gold"]: (r["reachable"], r["of"]) for r in reachable(gold, frozenset({"MESH:D009369"}))}
    # the gene's id is unknown; both variants come from the rules (a key, an rs number in the text)
    assert rows == {"Gene entities": (0, 1), "Disease entities": (1, 1),
                    "SequenceVariant entities": (2, 2), "pairs, both ends": (2, 3)}


def test_text_node_pairs_say_what_the_unlinked_text_covers():
    """A text-node triple counts as false; the fifth table says whether its text covered a gold
    entity that makes a gold pair with the other end."""
    from raw_pairs import text_node_pairs

    from graphmert.extract.triples import Triple

    found = Document(id="d", text=TEXT, mentions=[
        _m(0, 5, "Gene", "672"), _m(10, 14, "Gene"), _m(21, 27, "Disease", "MESH:D009369"),
        _m(33, 40, "Chemical")])                                   # TP53 and aspirin unlinked

    def triple(head: tuple[str, str], tail: tuple[str, str]) -> Triple:
        return Triple(head_id=head[0], head_name=head[1], head_category="", relation="Association",
                      tail_id=tail[0], tail_name=tail[1], tail_category="", tail_source="entity",
                      confidence=0.9, documents=["d"])

    triples = [triple(("", "TP53"), ("MESH:D009369", "cancer")),    # 7157–cancer: a gold pair
               triple(("MESH:D009369", "cancer"), ("", "TP53")),    # the same pair again
               triple(("", "aspirin"), ("672", "BRCA1")),           # gold entities, not a gold pair
               triple(("", "cancers"), ("672", "BRCA1")),           # no mention with that text
               triple(("672", "BRCA1"), ("MESH:D009369", "cancer"))]   # linked: not counted
    rows = text_node_pairs(GoldSet.from_documents([GOLD_DOC]), {"d": found}, triples)
    assert rows == {"a gold pair, were the text linked": 1, "gold entities, not a gold pair": 1,
                    "no gold entity under the unlinked text": 1}


def test_variant_pairs_split_by_the_kind_of_variant_id():
    from raw_pairs import variant_kind, variant_pairs

    gold = GoldSet.from_documents([Document(id="v", text="R47W and rs1 in cancer", relations=[
        Relation(type="Association", head="tmVar:p|SUB|R|47|W", tail="MESH:D009369"),
        Relation(type="Association", head="dbSNP:rs1", tail="MESH:D009369")])])
    predicted = {("v", frozenset(("tmVar:p|SUB|R|47|W", "MESH:D009369"))),     # gold, keyed
                 ("v", frozenset(("tmVar:p|SUB|R|48|W", "MESH:D009369"))),     # keyed, not gold
                 ("v", frozenset(("dbSNP:rs2", "MESH:D009369"))),              # rs id, not gold
                 ("v", frozenset(("672", "MESH:D009369")))}                    # no variant
    assert variant_kind(frozenset(("dbSNP:rs1", "tmVar:c|DEL||32"))) == "tmVar key"
    rows = {r["variant end"]: (r["extracted"], r["of them gold"], r["precision"], r["in the gold"])
            for r in variant_pairs(gold, predicted)}
    assert rows == {"none": (1, 0, 0.0, 0), "dbSNP id": (1, 0, 0.0, 1), "tmVar key": (2, 1, 0.5, 1)}


def test_term_links_split_by_what_knows_the_descriptor(tmp_path):
    from raw_pairs import term_links, term_rows

    from graphmert.config.ner import VocabularySource
    from graphmert.kg.graph import Node, SeedKG
    from graphmert.ner.linking import EntityLinker

    terms = tmp_path / "mesh.tsv"
    terms.write_text("D000001\tTestis\t\nD000002\tCisplatin\tCDDP\n", encoding="utf-8")
    kg = SeedKG([Node("MESH:D000002", "Platinol", "biolink:ChemicalEntity")], [])
    linker = EntityLinker.build([], kg, fuzzy_threshold=2.0,
                                vocabularies=[VocabularySource(kind="terms", path=str(terms))])
    text = "The testis took cisplatin and CDDP."
    #       0   4    9    14   19   24   29
    found = Document(id="t", text=text, mentions=[
        Mention(start=4, end=10, text="testis", type="Disease", ids=["MESH:D000001"]),
        Mention(start=16, end=25, text="cisplatin", type="Chemical", ids=["MESH:D000002"]),
        Mention(start=30, end=34, text="CDDP", type="Chemical", ids=[])])
    gold = Document(id="t", text=text, mentions=[
        Mention(start=16, end=25, text="cisplatin", type="Chemical", ids=["MESH:D000002"])])
    linker.known_terms_only = True
    counts = term_links(GoldSet.from_documents([gold]), {"t": found, "other": found}, linker)
    assert counts == {("biolink:Disease", False, False): 1, ("biolink:ChemicalEntity", True, True): 2}
    assert linker.known_terms_only                                  # the run's own setting is back
    rows = {(r["category"], r["descriptor"][:2]): (r["linked"], r["right"]) for r in term_rows(counts, "x")}
    assert rows == {("Disease", "th"): (0, 0), ("Disease", "no"): (1, 0),
                    ("ChemicalEntity", "th"): (2, 2), ("ChemicalEntity", "no"): (0, 0)}
