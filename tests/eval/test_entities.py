"""Entity metrics: strict-span recognition and document-level normalisation scores against hand
counts (exact match, off-by-one span, wrong type, missing document, multi-id gold, unlinked and
composite ids, categories left out), empty inputs, the Markdown table, and a naive reference
implementation on seeded random documents."""

from __future__ import annotations

import random

import pytest

from graphmert.corpus.document import Document, Mention
from graphmert.eval.entities import (
    ENTITY_CATEGORIES, id_parts, normalisation_scores, recognition_scores,
)
from graphmert.eval.report import entity_table
from graphmert.kg.schema import mention_category

GENE, DISEASE, CHEM = ENTITY_CATEGORIES
KEYS = {"precision", "recall", "f1", "tp", "fp", "fn", "predicted", "gold"}


def m(start, end, type_, *ids):
    return Mention(start=start, end=end, text="x" * (end - start), type=type_, ids=list(ids))


def doc(doc_id, *mentions):
    return Document(id=doc_id, text="x" * 200, mentions=list(mentions))


def counts(s):
    return s["tp"], s["fp"], s["fn"]


def f1(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


# --------------------------------------------------------------------------------------------------
# Recognition
# --------------------------------------------------------------------------------------------------


def test_exact_match_is_a_true_positive_across_type_spellings():
    gold = [doc("1", m(0, 4, "GeneOrGeneProduct", "NCBIGene:1"))]
    pred = [doc("1", m(0, 4, "Gene"))]           # another spelling of the same category, unlinked
    s = recognition_scores(pred, gold)
    assert set(s) == {GENE, DISEASE, CHEM, "micro"} and list(s)[-1] == "micro"
    assert all(set(v) == KEYS for v in s.values())
    assert counts(s[GENE]) == (1, 0, 0) and s[GENE]["f1"] == 1.0
    assert counts(s["micro"]) == (1, 0, 0)
    assert counts(s[DISEASE]) == (0, 0, 0) and s[DISEASE]["f1"] == 0.0


@pytest.mark.parametrize("span", [(1, 4), (0, 5), (0, 3), (1, 5)])
def test_off_by_one_span_is_one_fp_and_one_fn(span):
    gold = [doc("1", m(0, 4, "Chemical"))]
    pred = [doc("1", m(*span, "Chemical"))]
    s = recognition_scores(pred, gold)
    assert counts(s[CHEM]) == (0, 1, 1)
    assert s[CHEM]["precision"] == s[CHEM]["recall"] == s[CHEM]["f1"] == 0.0


def test_wrong_type_is_fp_in_one_category_and_fn_in_the_other():
    gold = [doc("1", m(0, 4, "Chemical"))]
    pred = [doc("1", m(0, 4, "DiseaseOrPhenotypicFeature"))]
    s = recognition_scores(pred, gold)
    assert counts(s[CHEM]) == (0, 0, 1)
    assert counts(s[DISEASE]) == (0, 1, 0)
    assert counts(s["micro"]) == (0, 1, 1)


def test_same_span_in_another_document_does_not_match():
    gold = [doc("1", m(0, 4, "Chemical")), doc("2")]
    pred = [doc("2", m(0, 4, "Chemical"))]
    assert counts(recognition_scores(pred, gold)[CHEM]) == (0, 1, 1)


def test_document_missing_from_predicted_counts_its_gold_as_fn_and_extra_documents_are_ignored():
    gold = [doc("1", m(0, 4, "Chemical")),
            doc("2", m(0, 4, "Chemical"), m(10, 15, "SpecificDisease"))]
    pred = [doc("1", m(0, 4, "Chemical")),
            doc("99", m(0, 4, "Chemical"), m(5, 9, "Gene"))]          # not in the gold: ignored
    s = recognition_scores(pred, gold)
    assert counts(s[CHEM]) == (1, 0, 1)
    assert counts(s[DISEASE]) == (0, 0, 1)
    assert counts(s[GENE]) == (0, 0, 0)
    assert counts(s["micro"]) == (1, 0, 2)
    assert s["micro"]["gold"] == 3 and s["micro"]["predicted"] == 1


def test_categories_outside_the_scored_ones_are_ignored_on_both_sides():
    gold = [doc("1", m(0, 4, "Species", "NCBITaxon:9606"), m(5, 9, "SequenceVariant"),
                m(10, 14, "CellLine"), m(15, 19, "Chemical"))]
    pred = [doc("1", m(0, 4, "OrganismTaxon"), m(20, 24, "Species"), m(30, 34, "nonsense"),
                m(15, 19, "Chemical"))]
    s = recognition_scores(pred, gold)
    assert counts(s["micro"]) == (1, 0, 0)
    only_species = recognition_scores(pred, gold, categories=["biolink:OrganismTaxon"])
    assert list(only_species) == ["biolink:OrganismTaxon", "micro"]
    assert counts(only_species["micro"]) == (1, 1, 0)


def test_duplicate_mentions_count_once():
    gold = [doc("1", m(0, 4, "Disease"), m(0, 4, "DiseaseClass"))]    # both biolink:Disease
    pred = [doc("1", m(0, 4, "Disease"), m(0, 4, "Disease"))]
    assert counts(recognition_scores(pred, gold)[DISEASE]) == (1, 0, 0)


def test_per_category_and_micro_arithmetic_against_hand_counts():
    gold = [
        doc("a", m(0, 4, "GeneOrGeneProduct"), m(10, 20, "GeneOrGeneProduct"),
            m(30, 35, "Chemical"), m(40, 50, "DiseaseOrPhenotypicFeature")),
        doc("b", m(0, 5, "Gene"), m(6, 9, "Chemical"), m(12, 20, "Chemical"),
            m(25, 30, "Disease")),
    ]
    pred = [
        doc("a", m(0, 4, "GeneOrGeneProduct"),      # gene TP
            m(10, 19, "GeneOrGeneProduct"),         # gene FP (+ gene FN 10-20)
            m(30, 35, "Chemical"),                  # chem TP
            m(40, 50, "Chemical"),                  # chem FP (+ disease FN 40-50)
            m(60, 70, "Disease")),                  # disease FP
        doc("b", m(0, 5, "GeneOrGeneProduct"),      # gene TP
            m(6, 9, "Chemical"), m(12, 20, "Chemical"),   # chem TP ×2
            m(25, 30, "Disease")),                  # disease TP
    ]
    s = recognition_scores(pred, gold)
    hand = {GENE: (2, 1, 1), CHEM: (3, 1, 0), DISEASE: (1, 1, 1)}
    for cat, (tp, fp, fn) in hand.items():
        assert counts(s[cat]) == (tp, fp, fn), cat
        assert s[cat]["predicted"] == tp + fp and s[cat]["gold"] == tp + fn
        assert s[cat]["precision"] == pytest.approx(tp / (tp + fp))
        assert s[cat]["recall"] == pytest.approx(tp / (tp + fn))
        assert s[cat]["f1"] == pytest.approx(f1(tp, fp, fn))
    assert counts(s["micro"]) == (6, 3, 2)
    assert s["micro"]["precision"] == pytest.approx(6 / 9)
    assert s["micro"]["recall"] == pytest.approx(6 / 8)
    assert s["micro"]["f1"] == pytest.approx(f1(6, 3, 2))


def test_inputs_may_be_generators_read_once():
    gold = [doc("1", m(0, 4, "Chemical", "MESH:D000001"))]
    pred = [doc("1", m(0, 4, "Chemical", "MESH:D000001"))]
    s = recognition_scores(iter(pred), (d for d in gold))
    n = normalisation_scores(iter(pred), (d for d in gold))
    assert s["micro"]["tp"] == n["micro"]["tp"] == 1


@pytest.mark.parametrize("pred, gold", [([], []), ([doc("1", m(0, 4, "Chemical"))], []),
                                        ([], [doc("1")]), ([doc("1")], [doc("1")])])
def test_empty_inputs_give_zeros(pred, gold):
    for fn in (recognition_scores, normalisation_scores):
        s = fn(pred, gold)
        for row in s.values():
            assert counts(row) == (0, 0, 0)
            assert row["precision"] == row["recall"] == row["f1"] == 0.0


def test_empty_gold_document_with_predictions_has_zero_precision():
    s = recognition_scores([doc("1", m(0, 4, "Chemical"))], [doc("1")])
    assert counts(s[CHEM]) == (0, 1, 0)
    assert s[CHEM]["precision"] == s[CHEM]["recall"] == s[CHEM]["f1"] == 0.0


@pytest.mark.parametrize("categories", [[], ["micro"], [GENE, GENE]])
def test_bad_categories_are_refused(categories):
    with pytest.raises(ValueError, match="categories"):
        recognition_scores([], [], categories=categories)


# --------------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------------


def test_id_parts_splits_composites_but_not_tmvar_keys():
    assert id_parts("MESH:D017180|MESH:D014693") == ["MESH:D017180", "MESH:D014693"]
    assert id_parts("MESH:D1|OMIM:123|NCBIGene:7157") == ["MESH:D1", "OMIM:123", "NCBIGene:7157"]
    assert id_parts("tmVar:c|SUB|G|1234|A") == ["tmVar:c|SUB|G|1234|A"]
    assert id_parts("MESH:D003924") == ["MESH:D003924"]


def test_normalisation_is_a_document_level_id_set():
    gold = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(50, 54, "Chemical", "MESH:D000001"),
                m(10, 14, "GeneOrGeneProduct", "NCBIGene:7157"))]
    # a different span of the same entity still finds it; the gene is found under a wrong id
    pred = [doc("1", m(60, 64, "Chemical", "MESH:D000001"), m(10, 14, "Gene", "NCBIGene:1"))]
    s = normalisation_scores(pred, gold)
    assert counts(s[CHEM]) == (1, 0, 0)
    assert counts(s[GENE]) == (0, 1, 1)
    assert counts(s["micro"]) == (1, 1, 1)


def test_every_id_of_a_mention_counts_on_both_sides():
    # a composite mention ("Smad2/3"): gold lists both genes, the linker gives both, or one and a wrong one
    gold = [doc("1", m(0, 4, "GeneOrGeneProduct", "NCBIGene:4087", "NCBIGene:4088"))]
    s = normalisation_scores([doc("1", m(0, 4, "Gene", "NCBIGene:4088", "NCBIGene:4087"))], gold)
    assert counts(s[GENE]) == (2, 0, 0)
    s = normalisation_scores([doc("1", m(0, 4, "Gene", "NCBIGene:4087", "NCBIGene:9"))], gold)
    assert counts(s[GENE]) == (1, 1, 1)
    assert s[GENE]["precision"] == s[GENE]["recall"] == 0.5


def test_composite_ids_are_split_on_both_sides():
    gold = [doc("1", m(0, 4, "Disease", "MESH:D051437|MESH:D017093"))]
    pred = [doc("1", m(0, 4, "Disease", "MESH:D017093|MESH:D000009"))]
    assert counts(normalisation_scores(pred, gold)[DISEASE]) == (1, 1, 1)
    tm = "tmVar:c|SUB|G|1234|A"
    gold = [doc("1", m(0, 4, "GeneOrGeneProduct", tm))]
    assert counts(normalisation_scores([doc("1", m(0, 4, "Gene", tm))], gold)[GENE]) == (1, 0, 0)


def test_unlinked_prediction_adds_nothing_to_normalisation_but_counts_for_recognition():
    gold = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 9, "Chemical"))]   # 2nd unlinked
    pred = [doc("1", m(0, 4, "Chemical"), m(5, 9, "Chemical"))]
    n = normalisation_scores(pred, gold)
    assert counts(n[CHEM]) == (0, 0, 1)
    assert n[CHEM]["predicted"] == 0 and n[CHEM]["gold"] == 1
    assert counts(recognition_scores(pred, gold)[CHEM]) == (2, 0, 0)


def test_same_id_under_another_category_does_not_match():
    gold = [doc("1", m(0, 4, "Chemical", "MESH:D000001"))]
    pred = [doc("1", m(0, 4, "Disease", "MESH:D000001"))]
    s = normalisation_scores(pred, gold)
    assert counts(s[CHEM]) == (0, 0, 1) and counts(s[DISEASE]) == (0, 1, 0)


# --------------------------------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------------------------------


def test_entity_table_rows_columns_and_decimals():
    gold = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 9, "Gene", "NCBIGene:1"),
                m(10, 14, "Gene", "NCBIGene:2"))]
    pred = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 9, "Gene", "NCBIGene:3"))]
    rec, norm = recognition_scores(pred, gold), normalisation_scores(pred, gold)
    lines = entity_table(rec, norm).splitlines()
    assert lines[0].startswith("| entities | recognition P |") and lines[0].count("|") == 10
    assert lines[1] == "|" + "---|" * 9
    names = [ln.split("|")[1].strip() for ln in lines[2:]]
    assert names == [GENE, DISEASE, CHEM, "micro"]
    gene = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert gene == [GENE, "1.000", "0.500", "0.667", "0.000", "0.000", "0.000", "2", "1"]
    disease = [c.strip() for c in lines[3].split("|")[1:-1]]
    assert disease[1:] == ["0.000"] * 6 + ["0", "0"]
    micro = [c.strip() for c in lines[5].split("|")[1:-1]]
    assert micro == ["micro", "1.000", "0.667", "0.800", "0.500", "0.333", "0.400", "3", "2"]


def test_entity_table_marks_missing_normalisation_rows():
    rec = recognition_scores([], [doc("1", m(0, 4, "Chemical"))])
    table = entity_table(rec, {})
    assert table.count("–") == 3 * 4 and table.endswith("\n")


# --------------------------------------------------------------------------------------------------
# Reference implementation on random documents
# --------------------------------------------------------------------------------------------------

TYPES = ["GeneOrGeneProduct", "Gene", "Chemical", "ChemicalEntity", "Disease",
         "DiseaseOrPhenotypicFeature", "SpecificDisease", "Species", "SequenceVariant", "junk",
         "biolink:Gene"]
IDS = ["MESH:D000001", "MESH:D000002", "MESH:D000001|MESH:D000003", "NCBIGene:1", "NCBIGene:2",
       "OMIM:5", "tmVar:c|SUB|G|1|A", "NCBIGene:1|NCBIGene:2"]


def random_mention(rng):
    start = rng.randrange(12)
    return m(start, start + rng.randrange(1, 4), rng.choice(TYPES),
             *rng.sample(IDS, rng.choice([0, 0, 1, 1, 2, 3])))


def random_corpora(rng):
    gold = [doc(str(i), *[random_mention(rng) for _ in range(rng.randrange(7))])
            for i in range(rng.randrange(6))]
    pred = []
    for d in gold:
        if rng.random() < 0.2:
            continue                                   # document missing from the predictions
        kept = [x for x in d.mentions if rng.random() < 0.6]
        pred.append(doc(d.id, *kept, *[random_mention(rng) for _ in range(rng.randrange(4))]))
    pred += [doc(f"extra{i}", random_mention(rng)) for i in range(rng.randrange(2))]
    rng.shuffle(pred)
    return pred, gold


def naive_parts(cid):
    pieces = cid.split("|")
    return pieces if not cid.startswith("tmVar:") else [cid]


def naive_scores(pred_docs, gold_docs, item_lists, categories):
    """Per category: distinct items by plain lists and nested membership loops."""
    gold_ids = [d.id for d in gold_docs]
    out = {}
    for cat in [*categories, None]:
        def items(docs, side):
            found = []
            for d in docs:
                if d.id not in gold_ids:
                    continue
                for item in item_lists(d, side):
                    if (cat is None and item[1] in categories or item[1] == cat) and item not in found:
                        found.append(item)
            return found
        p, g = items(pred_docs, "pred"), items(gold_docs, "gold")
        tp = sum(1 for x in p if x in g)
        out[cat or "micro"] = (tp, len(p) - tp, len(g) - tp)
    return out


def naive_spans(d, side):
    return [(d.id, mention_category(x.type), x.start, x.end) for x in d.mentions]


def naive_ids(d, side):
    out = []
    for x in d.mentions:
        for cid in x.ids:
            out += [(d.id, mention_category(x.type), part) for part in naive_parts(cid)]
    return out


@pytest.mark.parametrize("seed", range(40))
def test_matches_a_naive_reference(seed):
    rng = random.Random(seed)
    pred, gold = random_corpora(rng)
    cats = ENTITY_CATEGORIES if seed % 2 else (GENE, "biolink:OrganismTaxon")
    for scores, items in ((recognition_scores, naive_spans), (normalisation_scores, naive_ids)):
        got = scores(pred, gold, categories=cats)
        want = naive_scores(pred, gold, items, cats)
        assert {k: counts(v) for k, v in got.items()} == want
        for v in got.values():
            assert v["f1"] == pytest.approx(f1(*counts(v)))


def test_categories_apart_get_their_own_rows_after_micro_and_stay_out_of_it():
    from pipelines.stages.evaluate import _entity_scores
    from graphmert.eval.gold import GoldSet

    variant = "biolink:SequenceVariant"
    gold_doc = doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 10, "SequenceVariant", "tmVar:p|SUB|R|2|W"),
                   m(11, 16, "SequenceVariant", "dbSNP:rs123"), m(17, 20, "Gene", "NCBIGene:1"),
                   m(21, 24, "Disease", "MESH:D000002"))
    found = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 10, "SequenceVariant", "tmVar:p|SUB|R|2|W"))]
    scores = _entity_scores(GoldSet.from_documents([gold_doc]), found, list(ENTITY_CATEGORIES))["entities"]
    assert scores["recognition"]["micro"]["gold"] == 3                      # not the variants
    apart = scores["apart"]["recognition"][variant]
    assert (apart["precision"], apart["recall"], apart["gold"]) == (1.0, 0.5, 2)
    lines = entity_table(scores["recognition"], scores["normalisation"], scores["apart"]["recognition"],
                         scores["apart"]["normalisation"]).splitlines()
    assert [ln.split("|")[1].strip() for ln in lines[2:]] == [GENE, DISEASE, CHEM, "micro",
                                                               f"{variant} (not in micro)"]
    assert lines[-1].split("|")[2:10] == [" 1.000 ", " 0.500 ", " 0.667 ", " 1.000 ", " 0.500 ", " 0.667 ",
                                          " 2 ", " 1 "]
    no_variants = _entity_scores(GoldSet.from_documents([gold_doc]), [doc("1")], list(ENTITY_CATEGORIES))
    assert "apart" not in no_variants["entities"]


def test_a_category_the_gold_never_annotates_is_scored_apart_not_as_false_positives():
    """BC5CDR annotates chemicals and diseases only: the genes a raw-text run recognises in its
    documents get a row of their own outside the micro average, which stays the annotated
    categories'; a gold with no mentions at all keeps every category in the micro."""
    from pipelines.stages.evaluate import _entity_scores
    from graphmert.eval.gold import GoldSet

    gold_doc = doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 10, "Disease", "MESH:D000002"))
    found = [doc("1", m(0, 4, "Chemical", "MESH:D000001"), m(5, 10, "Disease", "MESH:D000002"),
                 m(11, 16, "Gene", "NCBIGene:1"), m(17, 20, "Gene", "NCBIGene:2"))]
    scores = _entity_scores(GoldSet.from_documents([gold_doc]), found, list(ENTITY_CATEGORIES))["entities"]
    assert list(scores["recognition"]) == [DISEASE, CHEM, "micro"]
    assert scores["recognition"]["micro"]["precision"] == scores["normalisation"]["micro"]["precision"] == 1.0
    genes = scores["apart"]["recognition"][GENE]
    assert (genes["gold"], genes["predicted"], genes["precision"]) == (0, 2, 0.0)
    no_mentions = _entity_scores(GoldSet.from_documents([doc("1")]), found, list(ENTITY_CATEGORIES))["entities"]
    assert list(no_mentions["recognition"]) == [GENE, DISEASE, CHEM, "micro"] and "apart" not in no_mentions
