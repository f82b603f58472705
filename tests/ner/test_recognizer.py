"""The entity recognizer: tokenization, partial annotation, that training learns, save/load, errors."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import replace

import pytest

from graphmert.config import NERConfig
from graphmert.corpus.document import Document, Mention
from graphmert.ner.recognizer import (SELECTION_VERSION, Recognizer, RecognizerError, RecognizerPart,
                                      epochs_without_gain, selection_scores, selection_split,
                                      recognizer_groups, plan_parts, recognizer_nlp, selection_hash,
                                      tok2vec_config, train_part, train_recognizer, training_examples)
from ner_corpus import template_document

CATS = ["biolink:Gene", "biolink:Disease", "biolink:ChemicalEntity"]


def _doc(i: int, rng: random.Random, genes: bool = True) -> Document:
    return template_document(f"d{i}", rng, genes=genes)


def test_tokenizer_splits_compounds_so_gold_spans_align():
    nlp = recognizer_nlp(CATS)
    doc = nlp.make_doc("bleomycin-induced fibrosis and EPO/EPOR signalling (TP53)")
    assert [t.text for t in doc][:6] == ["bleomycin", "-", "induced", "fibrosis", "and", "EPO"]
    assert doc.char_span(0, 9) is not None and doc.char_span(31, 34) is not None


def test_unknown_category_is_refused():
    with pytest.raises(RecognizerError, match="biolink:Protein"):
        recognizer_nlp(["biolink:Protein"])


def test_unannotated_category_tokens_are_missing_not_outside():
    rng = random.Random(0)
    full = _doc(0, rng)
    partial = replace(_doc(1, random.Random(0)), id="p")          # same text, genes unannotated
    partial.mentions = [m for m in full.mentions if m.type != "GeneOrGeneProduct"]
    nlp = recognizer_nlp(CATS)
    examples, counts = training_examples(nlp, [full, partial], CATS)
    gene = next(m for m in full.mentions if m.type == "GeneOrGeneProduct")
    tags_full = examples[0].reference
    tags_partial = examples[1].reference
    tok = tags_full.char_span(gene.start, gene.end)[0].i
    assert tags_full[tok].ent_iob_ == "B" and tags_full[tok].ent_type_ == "Gene"
    assert tags_partial[tok].ent_iob_ == ""                       # missing: teaches neither way
    assert counts["missing_tokens"] >= 1 and counts["unaligned"] == 0
    alone, _ = training_examples(nlp, [partial], CATS)                # no gene form known: "O"
    assert alone[0].reference[tok].ent_iob_ == "O"
    told, _ = training_examples(nlp, [partial], CATS, forms_from=[full])  # the training set's forms
    assert told[0].reference[tok].ent_iob_ == ""
    chem = next(m for m in full.mentions if m.type == "Chemical")
    assert tags_partial[tags_partial.char_span(chem.start, chem.end)[0].i].ent_type_ == "Chemical"


def test_default_tok2vec_is_spacys_and_the_options_resize_it():
    from spacy.pipeline.ner import DEFAULT_NER_MODEL

    assert tok2vec_config(NERConfig()) == dict(DEFAULT_NER_MODEL["tok2vec"])
    chars = tok2vec_config(replace(NERConfig(), embed="characters", width=64, depth=3, window_size=2))
    assert chars["embed"]["@architectures"] == "spacy.CharacterEmbed.v2" and chars["embed"]["width"] == 64
    assert chars["encode"] == {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 64, "depth": 3,
                               "window_size": 2, "maxout_pieces": 3}
    nlp = recognizer_nlp(CATS, replace(NERConfig(), window_size=2))
    assert dict(nlp.config["components"]["ner"]["model"]["tok2vec"]) == {**DEFAULT_NER_MODEL["tok2vec"],
                                                                        "window_size": 2}
    lstm = tok2vec_config(replace(NERConfig(), encoder="bilstm", width=64, depth=2, vectors=16))
    assert lstm["encode"] == {"@architectures": "spacy.TorchBiLSTMEncoder.v1", "width": 64, "depth": 2,
                              "dropout": NERConfig().dropout}
    one = tok2vec_config(replace(NERConfig(), encoder="bilstm", depth=1))
    assert one["encode"]["dropout"] == 0.0 and one["embed"]["include_static_vectors"] is False
    hashed = dict(DEFAULT_NER_MODEL["tok2vec"])         # the default's embedding, written out
    assert lstm["embed"] == {"@architectures": "spacy.MultiHashEmbed.v2", "width": 64,
                             "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
                             "rows": [hashed["embed_size"], *[hashed["embed_size"] // 2] * 3],
                             "include_static_vectors": True}


@pytest.mark.parametrize("tok2vec", [{}, {"embed": "characters", "window_size": 2},
                                     {"encoder": "bilstm", "depth": 1, "epochs": 30}],   # the LSTM starts slower
                         ids=["hash", "characters", "bilstm"])
def test_training_learns_to_recognise_held_out_documents(tmp_path, tok2vec):
    rng = random.Random(1)
    train = [_doc(i, rng, genes=i % 3 != 0) for i in range(90)]    # a third without gene annotations
    test = [_doc(1000 + i, random.Random(100 + i)) for i in range(20)]
    cfg = replace(NERConfig(), **{"epochs": 8, "selection_fraction": 0.2, "seed": 0, **tok2vec})
    cfg = replace(cfg, patience=cfg.epochs)
    rec, report = train_recognizer(train, cfg)
    (part,) = report["parts"]
    assert part["epochs_run"] == cfg.epochs and part["stopped"] == "epochs" and part["best_epoch"] >= 1
    assert report["selection"]["f"] > 0.8
    found = list(rec.recognize([replace(d, mentions=[]) for d in test]))
    gold = {(d.id, m.start, m.end, m.type) for d in test for m in d.mentions}
    label = {"Chemical": "Chemical", "Disease": "Disease", "Gene": "GeneOrGeneProduct"}
    pred = {(d.id, m.start, m.end, label[m.type]) for d in found for m in d.mentions}
    assert len(pred) > 0
    tp = len(gold & pred)
    f1 = 2 * tp / (len(gold) + len(pred))
    assert f1 > 0.9, f1                                         # an untrained pipeline finds nothing
    assert all(m.ids == [] for d in found for m in d.mentions)       # linking is the linker's job

    rec.save(tmp_path / "rec", report)
    back = Recognizer.load(tmp_path / "rec")
    again = list(back.recognize([replace(d, mentions=[]) for d in test]))
    assert [d.mentions for d in again] == [d.mentions for d in found]
    annotated = list(back.recognize(test[:1]))[0]
    assert annotated.mentions == test[0].mentions                # annotated documents pass unchanged


def test_word_vectors_feed_the_tok2vec_and_travel_with_the_saved_model(tmp_path):
    """``ner.vectors``: vectors learnt from the given texts sit in every part's vocabulary, the
    tok2vec reads them (zeroing them changes its output), and a saved recognizer keeps them."""
    import numpy as np

    rng = random.Random(1)
    train = [_doc(i, rng) for i in range(40)]
    unannotated = [_doc(500 + i, rng).text for i in range(40)]
    cfg = replace(NERConfig(), epochs=2, patience=2, selection_fraction=0.2, width=32, vectors=16)
    assert tok2vec_config(cfg)["pretrained_vectors"] is True
    rec, report = train_recognizer(train, cfg, texts=[d.text for d in train] + unannotated)
    (part,) = rec.parts
    assert report["vectors"]["dimensions"] == 16 and part.nlp.vocab.vectors.shape == (report["vectors"]["words"], 16)
    rec.save(tmp_path / "rec", report)
    back = Recognizer.load(tmp_path / "rec")
    (loaded,) = back.parts
    assert np.array_equal(loaded.nlp.vocab.vectors.data, part.nlp.vocab.vectors.data)
    docs = [replace(d, mentions=[]) for d in train[:5]]
    assert [d.mentions for d in back.recognize(docs)] == [d.mentions for d in rec.recognize(docs)]
    tok2vec = loaded.nlp.get_pipe("ner").model.get_ref("tok2vec")
    before = tok2vec.predict([loaded.nlp.make_doc(train[0].text)])[0].copy()
    loaded.nlp.vocab.vectors.data[:] = 0
    assert not np.allclose(tok2vec.predict([loaded.nlp.make_doc(train[0].text)])[0], before)
    with pytest.raises(RecognizerError, match="ner.vectors=16 needs text to learn word vectors from"):
        train_recognizer(train, cfg)


def test_training_errors_name_the_problem():
    cfg = replace(NERConfig(), epochs=1)
    with pytest.raises(RecognizerError, match="no training documents"):
        train_recognizer([], cfg)
    odd = [Document(id="x", text="foo bar", mentions=[Mention(0, 3, "foo", "Widget")])]
    with pytest.raises(RecognizerError, match=r"Widget.*maps to"):
        train_recognizer(odd, cfg)


def test_load_refuses_a_foreign_or_stale_recognizer(tmp_path):
    with pytest.raises(RecognizerError, match="not a saved recognizer"):
        Recognizer.load(tmp_path)
    rec = Recognizer([RecognizerPart(nlp=recognizer_nlp(CATS), categories=CATS)])
    rec.parts[0].nlp.initialize()
    rec.save(tmp_path / "r")
    meta = tmp_path / "r" / "graphmert-recognizer.json"
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "tokenizer_version": 0}))
    with pytest.raises(RecognizerError, match="tokenizer version 0"):
        Recognizer.load(tmp_path / "r")


def _f1(rec: Recognizer, test: list[Document]) -> float:
    found = list(rec.recognize([replace(d, mentions=[]) for d in test]))
    label = {"Chemical": "Chemical", "Disease": "Disease", "Gene": "GeneOrGeneProduct"}
    gold = {(d.id, m.start, m.end, m.type) for d in test for m in d.mentions}
    pred = {(d.id, m.start, m.end, label[m.type]) for d in found for m in d.mentions}
    return 2 * len(gold & pred) / max(len(gold) + len(pred), 1)


def test_a_separate_category_learns_only_from_the_documents_that_annotate_it(tmp_path):
    rng = random.Random(2)
    train = [_doc(i, rng, genes=i % 3 != 0) for i in range(90)]
    test = [_doc(1000 + i, random.Random(200 + i)) for i in range(20)]
    cfg = replace(NERConfig(), epochs=8, patience=8, selection_fraction=0.2, seed=0,
                  separate_categories=["biolink:Gene"], width=64, embed_rows=3000)
    rec, report = train_recognizer(train, cfg)
    joint, gene = report["parts"]
    assert joint["categories"] == ["biolink:Disease", "biolink:ChemicalEntity"]
    assert gene["categories"] == ["biolink:Gene"]
    with_genes = [d for d in train if any(m.type == "GeneOrGeneProduct" for m in d.mentions)]
    assert gene["documents"] + gene["selection_documents"] == len(with_genes) == 60
    assert joint["documents"] + joint["selection_documents"] == 90
    assert joint["missing_tokens"] == 0                     # no gene label to hide in that part
    assert set(report["selection"]["per_label"]) == {"Gene", "Disease", "Chemical"}
    assert _f1(rec, test) > 0.9
    assert rec.parts[0].nlp.config["components"]["ner"]["model"]["tok2vec"]["embed_size"] == 3000
    rec.save(tmp_path / "rec")
    back = Recognizer.load(tmp_path / "rec")
    assert back.categories == ["biolink:Disease", "biolink:ChemicalEntity", "biolink:Gene"]
    assert _f1(back, test) == _f1(rec, test)


def test_a_separate_category_with_too_few_documents_is_refused_by_name():
    rng = random.Random(4)
    docs = [_doc(i, rng, genes=i == 0) for i in range(20)]             # one document annotates genes
    cfg = replace(NERConfig(), epochs=1, selection_fraction=0.2, separate_categories=["biolink:Gene"])
    with pytest.raises(RecognizerError, match=r"ner.paths: 1 documents annotating \['biolink:Gene'\] "
                                              r"are too few .*selection_fraction=0.2 of them for selection "
                                              r".*salted id hash.*raise ner.selection_fraction"):
        train_recognizer(docs, cfg)


def test_parts_share_one_budget_and_the_smallest_trains_first(caplog):
    rng = random.Random(5)
    docs = [_doc(i, rng, genes=i % 2 == 0) for i in range(40)]
    seen: list[tuple[str, int]] = []
    cfg = replace(NERConfig(), epochs=3, patience=3, selection_fraction=0.2,
                  separate_categories=["biolink:Gene"], width=32)
    _, report = train_recognizer(docs, cfg, on_epoch=lambda r: seen.append((r["categories"][0], r["epoch"])))
    assert seen == [("biolink:Gene", 1), ("biolink:Gene", 2), ("biolink:Gene", 3),
                    ("biolink:Disease", 1), ("biolink:Disease", 2), ("biolink:Disease", 3)]
    assert [p["categories"][0] for p in report["parts"]] == ["biolink:Disease", "biolink:Gene"]
    assert [p["stopped"] for p in report["parts"]] == ["epochs", "epochs"]
    seen.clear()                                    # a budget spent by the first epoch: one epoch each
    with caplog.at_level(logging.WARNING, logger="graphmert.ner"):
        _, report = train_recognizer(docs, replace(cfg, max_minutes=1e-6),
                                     on_epoch=lambda r: seen.append((r["categories"][0], r["epoch"])))
    assert seen == [("biolink:Gene", 1), ("biolink:Disease", 1)]
    assert [p["epochs_run"] for p in report["parts"]] == [1, 1]
    assert [p["stopped"] for p in report["parts"]] == ["budget", "budget"]
    warned = [r.getMessage() for r in caplog.records if "ner.max_minutes" in r.getMessage()]
    assert len(warned) == 2 and "biolink:Gene model" in warned[1] and "after 1 of 3 epochs" in warned[1]


def test_a_model_stops_after_patience_epochs_without_a_better_selection_f1():
    rng = random.Random(7)
    docs = [_doc(i, rng) for i in range(40)]
    cfg = replace(NERConfig(), epochs=30, patience=1, selection_fraction=0.2, width=32)
    _, report = train_recognizer(docs, cfg)
    (part,) = report["parts"]
    f1 = [h["f"] for h in part["history"]]
    assert part["stopped"] == "patience" and part["epochs_run"] < 30
    assert f1[-1] <= max(f1[:-1]) and part["best_epoch"] == part["epochs_run"] - 1


def test_patience_counts_the_epochs_since_the_first_best_once_anything_is_found():
    assert epochs_without_gain([]) == 0
    assert epochs_without_gain([{"f": 0.0}, {"f": 0.0}, {"f": 0.0}]) == 0      # nothing found yet
    assert epochs_without_gain([{"f": 0.0}, {"f": 0.5}, {"f": 0.4}, {"f": 0.5}]) == 2   # the first best
    assert epochs_without_gain([{"f": 0.0}, {"f": 0.2}, {"f": 0.6}]) == 0


def test_a_model_that_finds_nothing_yet_trains_on_keeps_its_latest_epoch_and_is_warned_of(caplog):
    """Averaged weights start from zero: on 12 documents the model finds nothing of its selection
    slice in 6 epochs. Patience does not stop it (it would have after epoch 2, keeping epoch 1), the
    latest epoch is kept, and a warning says the recognizer may find nothing."""
    rng = random.Random(7)
    docs = [_doc(i, rng) for i in range(12)]
    cfg = replace(NERConfig(), epochs=6, patience=1, selection_fraction=0.2, width=32)
    with caplog.at_level(logging.WARNING, logger="graphmert.ner"):
        _, report = train_recognizer(docs, cfg)
    (part,) = report["parts"]
    assert [h["f"] for h in part["history"]] == [0.0] * 6
    assert part["stopped"] == "epochs" and part["epochs_run"] == 6 and part["best_epoch"] == 6
    (warned,) = [r.getMessage() for r in caplog.records if "F1 0" in r.getMessage()]
    assert "biolink:Gene + biolink:Disease + biolink:ChemicalEntity model" in warned
    assert "in 6 epochs" in warned and "ner.epochs" in warned


def test_part_sources_train_one_part_only_and_never_its_selection_slice():
    """ner.part_sources: documents lent to the gene part (train_recognizer's ``extra``) join that
    part's training documents only; the other part, every selection slice and the report's document
    counts are those of ``docs``. An unknown category is refused by name."""
    from graphmert.ner import recognizer as R

    rng = random.Random(6)
    docs = [_doc(i, rng, genes=i % 4 == 0) for i in range(40)]
    lent = [template_document(f"silver{i}", rng) for i in range(12)]
    seen: dict[tuple[str, ...], list[str]] = {}
    real = R.training_examples

    def spy(nlp, part_docs, categories, **kw):
        seen.setdefault(tuple(categories), []).append(",".join(sorted(d.id for d in part_docs)))
        return real(nlp, part_docs, categories, **kw)

    cfg = replace(NERConfig(), epochs=1, selection_fraction=0.2, separate_categories=["biolink:Gene"],
                  width=32)
    R.training_examples = spy
    try:
        _, report = train_recognizer(docs, cfg, extra={"biolink:Gene": lent})
        _, plain = train_recognizer(docs, cfg)
    finally:
        R.training_examples = real
    gene_train, gene_pick = (ids.split(",") for ids in seen[("biolink:Gene",)][:2])    # train, selection
    other_train = seen[tuple(CATS[1:])][0].split(",")
    assert {f"silver{i}" for i in range(12)} <= set(gene_train)
    assert not [i for i in gene_pick + other_train if i.startswith("silver")]
    parts = {p["categories"][0]: p for p in report["parts"]}
    assert [parts[c]["part_source_documents"] for c in ("biolink:Gene", "biolink:Disease")] == [12, 0]
    assert (report["documents"], report["selection_documents"]) == (plain["documents"], plain["selection_documents"])
    with pytest.raises(RecognizerError,
                       match=r"ner.part_sources: \['biolink:Protein'\] are not in ner.categories"):
        train_recognizer(docs, cfg, extra={"biolink:Protein": lent})
    with pytest.raises(RecognizerError, match=r"ner.part_sources: no document of the sources given for "
                                              r"\['biolink:Gene'\] has a mention of that category"):
        train_recognizer(docs, cfg, extra={"biolink:Gene": []})


def test_groups_put_separate_categories_apart_and_refuse_unknown_ones():
    assert recognizer_groups(CATS, []) == [CATS]
    # the joint model first: the earlier model wins a tie of equal-length mentions, and the gene model
    # first cost held-out chemicals 0.820 -> 0.804 (docs/experiments/recognizer-training.md, "the epoch each model keeps")
    assert recognizer_groups(CATS, ["biolink:Gene"]) == [CATS[1:], ["biolink:Gene"]]
    assert recognizer_groups(CATS, CATS) == [[c] for c in CATS]
    with pytest.raises(RecognizerError, match=r"separate_categories.*biolink:Protein"):
        recognizer_groups(CATS, ["biolink:Protein"])


class FakeNLP:
    """A trained pipeline's stand-in: the same entity spans (start, end, label) in every text."""

    def __init__(self, ents):
        self.ents = ents

    def pipe(self, texts, batch_size):
        from types import SimpleNamespace as NS
        return [NS(ents=[NS(start_char=a, end_char=b, text=t[a:b], label_=lab) for a, b, lab in self.ents])
                for t in texts]


@pytest.mark.parametrize("text, found, want", [
    ("during 5-fluorouracil (5-FU) treatment", "5-fluorouracil (5-FU", ["5-fluorouracil", "5-FU"]),
    ("serum 17-hydroxyprogesterone (17-OHP) rose", "17-hydroxyprogesterone (17",
     ["17-hydroxyprogesterone", "17-OHP"]),
    ("levels of 15-F(2t)-IsoP, lipid", "15-F(2t", ["15-F(2t)-IsoP"]),
    ("days decreased [(3)H]norepinephrine uptake", "[(3)H", ["[(3)H]norepinephrine"]),
    ("interleukin 8 (IL-8), which", "IL-8)", ["IL-8"]),
    ("CXCL5 and IL-8) were", "IL-8)", ["IL-8"]),
    ("the ETV6 (TEL) protein", "ETV6 (TEL)", ["ETV6 (TEL)"]),            # balanced: as it is
    ("the ETV6 (TEL) protein", "TEL) protein", ["TEL) protein"]),        # no rule settles it
    # rules 2 and 3 undo each other (the other kind of bracket closes it): where they come back to
    ("infected at 10(3], while", "10(3", ["10(3"]),
    ("infected at 10(3]", "10(3", ["10(3"]),
])
def test_bracket_repair(text, found, want):
    from graphmert.ner.recognizer import bracket_repair

    a = text.index(found)
    assert [text[x:y] for x, y in bracket_repair(text, a, a + len(found))] == want


def test_recognised_spans_are_bracket_repaired():
    text = "Rats given 5-fluorouracil (5-FU) had IL-8) rises"
    a, b = text.index("5-fluorouracil"), text.index(")")
    rec = Recognizer([RecognizerPart(nlp=FakeNLP([(a, b, "Chemical"), (37, 42, "Gene")]), categories=CATS)])
    (doc,) = rec.recognize([Document(id="x", text=text)])
    assert [(m.text, m.type) for m in doc.mentions] == [
        ("5-fluorouracil", "Chemical"), ("5-FU", "Chemical"), ("IL-8", "Gene")]
    assert all(doc.text[m.start:m.end] == m.text for m in doc.mentions)


def test_a_failure_on_a_recognised_span_names_its_document(monkeypatch):
    """Whatever goes wrong on a document's spans carries the document's id (a PEP 678 note) and goes
    on unchanged, so a crash in a corpus of 30,000 names the abstract to look at."""
    import graphmert.ner.recognizer as recognizer

    def repair(text, start, end):
        if "odd" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return [(start, end)]

    monkeypatch.setattr(recognizer, "bracket_repair", repair)
    rec = Recognizer([RecognizerPart(nlp=FakeNLP([(0, 4, "Gene")]), categories=CATS)])
    docs = [Document(id="ok", text="TP53 rises"), Document(id="2503176", text="odd 10(3], text")]
    with pytest.raises(RecursionError, match="maximum recursion") as caught:
        list(rec.recognize(docs))
    assert caught.value.__notes__ == ["document 2503176"]


def test_overlapping_mentions_of_two_parts_keep_the_longer_one():
    text = "BRCA1 deficiency and TP53 with cisplatin"
    genes = FakeNLP([(0, 5, "Gene"), (21, 25, "Gene")])
    rest = FakeNLP([(0, 16, "Disease"), (21, 25, "Chemical"), (31, 40, "Chemical")])
    rec = Recognizer([RecognizerPart(nlp=rest, categories=CATS[1:]),
                      RecognizerPart(nlp=genes, categories=CATS[:1])])
    (doc,) = rec.recognize([Document(id="x", text=text)])
    assert [(m.text, m.type) for m in doc.mentions] == [
        ("BRCA1 deficiency", "Disease"), ("TP53", "Chemical"), ("cisplatin", "Chemical")]


def test_gold_spans_keep_the_longer_and_decide_equal_spans_by_label_not_order():
    from graphmert.ner.recognizer import _gold_spans

    ms = [Mention(0, 5, "BRCA1", "GeneOrGeneProduct"), Mention(0, 5, "BRCA1", "Disease"),
          Mention(0, 16, "BRCA1 deficiency", "Disease"), Mention(21, 25, "TP53", "GeneOrGeneProduct"),
          Mention(21, 25, "TP53", "Chemical")]
    text = "BRCA1 deficiency and TP53"
    for order in (ms, ms[::-1]):
        spans = _gold_spans(Document(id="x", text=text, mentions=order), CATS)
        assert spans == [(0, 16, "Disease"), (21, 25, "Chemical")]


def test_a_one_part_recognizer_saved_before_parts_still_loads(tmp_path):
    rec = Recognizer([RecognizerPart(nlp=recognizer_nlp(CATS), categories=CATS)])
    rec.parts[0].nlp.initialize()
    rec.save(tmp_path / "r")
    (tmp_path / "r" / "model-0").rename(tmp_path / "r" / "model")
    meta = tmp_path / "r" / "graphmert-recognizer.json"
    data = json.loads(meta.read_text())
    del data["parts"], data["files"]               # saves from before parts had no file sizes either
    meta.write_text(json.dumps({**data, "categories": CATS}))
    assert Recognizer.load(tmp_path / "r").categories == CATS


def test_propagation_tags_every_other_whole_word_occurrence_of_a_found_text():
    from graphmert.ner.recognizer import propagate_mentions

    text = "TP53 loss. TP53-mutant cells, not TP53BP1, and tp53 differ; aspirin and TP53 aspirin."
    found = [(0, 4, 1, "TP53", "Gene"), (60, 67, 0, "aspirin", "Chemical")]
    got = propagate_mentions(text, found)
    # "TP53-mutant" and the last TP53 are found (a hyphen is a token edge); TP53BP1 and the lower-case
    # tp53 are other words; the second aspirin takes the label and the part of the first
    assert [(text[a:b], a, k, lab) for a, b, k, _, lab in got] == [
        ("TP53", 0, 1, "Gene"), ("TP53", 11, 1, "Gene"), ("aspirin", 60, 0, "Chemical"),
        ("TP53", 72, 1, "Gene"), ("aspirin", 77, 0, "Chemical")]
    # a text found with two labels takes its more frequent one (its first part) everywhere else
    text = "BRCA1 and BRCA1 and BRCA1 and BRCA1"
    found = [(0, 5, 1, "BRCA1", "Gene"), (10, 15, 0, "BRCA1", "Chemical"), (20, 25, 1, "BRCA1", "Gene")]
    assert propagate_mentions(text, found) == found + [(30, 35, 1, "BRCA1", "Gene")]
    # the words of a longer found mention are not matched on their own
    text = "BRCA1 deficiency; BRCA1 deficiency and BRCA1"
    found = [(0, 16, 0, "BRCA1 deficiency", "Disease")]
    assert propagate_mentions(text, found) == found + [(18, 34, 0, "BRCA1 deficiency", "Disease")]


def test_a_documents_mentions_propagate_with_their_majority_label_and_no_ids():
    from graphmert.ner.recognizer import propagate_document

    text = "galactose, oral galactose; galactose-fed rats and TP53 galactosemia."
    doc = Document(id="d", text=text, mentions=[Mention(16, 25, "galactose", "Chemical", ["MESH:D005690"]),
                                                Mention(0, 9, "galactose", "Chemical")])
    got = propagate_document(doc)
    # the hyphenated occurrence is a word edge; "galactosemia" is another word; the first two are kept
    # as they were (ids too) and the added one has none
    assert [(m.start, m.text, m.type, m.ids) for m in got.mentions] == [
        (0, "galactose", "Chemical", []), (16, "galactose", "Chemical", ["MESH:D005690"]),
        (27, "galactose", "Chemical", [])]
    assert doc.mentions[0].start == 16                                  # the input is untouched
    alone = Document(id="a", text="aspirin only", mentions=[Mention(0, 7, "aspirin", "Chemical")])
    assert propagate_document(alone) is alone


def test_recognize_propagates_only_when_asked():
    class FakeNLP:
        def pipe(self, texts, batch_size):
            from types import SimpleNamespace as NS
            return [NS(ents=[NS(start_char=0, end_char=4, text=t[:4], label_="Gene")]) for t in texts]

    rec = Recognizer([RecognizerPart(nlp=FakeNLP(), categories=CATS[:1])])
    doc = Document(id="x", text="TP53 binds MDM2; TP53 is lost.")
    assert [m.start for m in next(rec.recognize([doc])).mentions] == [0]
    assert [(m.start, m.text, m.type) for m in next(rec.recognize([doc], propagate=True)).mentions] == [
        (0, "TP53", "Gene"), (17, "TP53", "Gene")]


def test_the_kept_weights_are_the_ones_the_selection_slice_scored():
    """With ``ner.average_weights`` the moving average is scored and kept, without it the last
    update's weights: either way the saved model scores its best epoch's selection F1 again, and the
    two are different models."""
    rng = random.Random(5)
    docs = [_doc(i, rng) for i in range(40)]                 # every category annotated: nothing missing
    pick = [d for d in docs if selection_hash(d.id) < 0.2]
    kept = {}
    for average in (True, False):
        cfg = replace(NERConfig(), epochs=3, patience=3, selection_fraction=0.2, width=32,
                      average_weights=average)
        rec, report = train_recognizer(docs, cfg)
        (part,) = report["parts"]
        (nlp,) = [p.nlp for p in rec.parts]
        best = part["history"][part["best_epoch"] - 1]
        examples, _ = training_examples(nlp, pick, CATS)
        assert nlp.evaluate(examples)["ents_f"] == pytest.approx(best["f"], abs=1e-4), average
        kept[average] = nlp.get_pipe("ner").to_bytes()           # its weights
    assert kept[True] != kept[False]


def test_a_probe_sees_every_epoch_and_changes_nothing_it_trains():
    """``train_part``'s ``probe`` is called after each epoch's updates, its dict joins that epoch's
    record, and a probe that scores both sets of weights (as the learning curves of
    docs/experiments/recognizer-training.md did) leaves the trained model byte for byte the same."""
    rng = random.Random(5)
    docs = [_doc(i, rng) for i in range(40)]
    cfg = replace(NERConfig(), epochs=2, patience=2, selection_fraction=0.2, width=32)
    (plan,) = plan_parts(docs, cfg)
    seen = []

    def probe(nlp, optimizer) -> dict:
        examples, _ = training_examples(nlp, plan.docs[:5], plan.categories)
        last = nlp.evaluate(examples)["ents_f"]
        with nlp.use_params(optimizer.averages):
            average = nlp.evaluate(examples)["ents_f"]
        seen.append(len(seen) + 1)
        return {"probe": seen[-1], "last F1": last, "average F1": average}

    plain, report = train_part(plan, cfg, deadline=float("inf"))
    probed, probed_report = train_part(plan, cfg, deadline=float("inf"), probe=probe)
    assert seen == [1, 2]
    assert [r["probe"] for r in probed_report["history"]] == [1, 2]
    assert all("last F1" in r and "average F1" in r for r in probed_report["history"])
    assert "probe" not in report["history"][0]
    assert probed.get_pipe("ner").to_bytes() == plain.get_pipe("ner").to_bytes()


# ------------------------------------------------------------------ the selection slice's salted hash
def test_the_selection_slice_is_not_the_extraction_slice_and_is_deterministic():
    """``ner.selection_fraction``'s slice hashes the id with a salt: for the same fraction it is not
    ``extract.document_fraction``'s slice (version 1 used that very hash, so the documents the ner
    stage keeps after holding that slice out had no selection document below the same fraction). Its
    members are pinned: a change of the hash changes every run's selection slice, so it must be
    deliberate (bump ``SELECTION_VERSION``)."""
    from pipelines.holdout import in_slice

    ids = [f"d{i}" for i in range(3000)]
    docs = [Document(id=i, text="x") for i in ids]
    f = 0.2
    _, pick = selection_split(docs, f)
    picked = {d.id for d in pick}
    extract_slice = {i for i in ids if in_slice(i, f)}
    assert abs(len(picked) / len(ids) - f) < 0.03
    # independent hashes: the slices share about f² of the ids, not all of them
    assert abs(len(picked & extract_slice) / len(ids) - f * f) < 0.02
    # what the ner stage trains on when extraction reads the same ids at the same fraction
    kept = [d for d in docs if not in_slice(d.id, f)]
    train, pick_kept = selection_split(kept, f)
    assert abs(len(pick_kept) / len(kept) - f) < 0.03 and len(train) + len(pick_kept) == len(kept)
    assert [d.id for d in selection_split(docs, f)[1]] == [d.id for d in pick]          # same call, same slice
    assert [i for i in ids[:40] if selection_hash(i) < f] == SELECTED_OF_FIRST_40
    assert SELECTION_VERSION == 2


#: ``d0`` … ``d39`` in the selection slice at 0.2 (computed once from the salted hash, version 2)
SELECTED_OF_FIRST_40 = ['d0', 'd1', 'd2', 'd7', 'd12', 'd14', 'd18', 'd20', 'd22', 'd23', 'd28', 'd31', 'd34']


class _Fixed:
    """A stand-in recognizer that finds fixed mentions per document id (and sees no gold)."""

    def __init__(self, found: dict[str, list[Mention]]):
        self.found = found

    def recognize(self, docs):
        assert all(not d.mentions for d in docs), "the gold mentions were shown to the recognizer"
        return [replace(d, mentions=list(self.found.get(d.id, []))) for d in docs]


def test_selection_scores_count_a_category_only_where_the_document_annotates_it():
    def m(start, text, kind):
        return Mention(start=start, end=start + len(text), text=text, type=kind)

    text = "TP53 loss causes glioma; aspirin and EGFR."
    gene, glioma, aspirin = m(0, "TP53", "Gene"), m(17, "glioma", "Disease"), m(25, "aspirin", "Chemical")
    egfr = m(37, "EGFR", "Gene")
    gold = [Document(id="a", text=text, mentions=[gene, glioma]),       # genes and diseases only
            Document(id="b", text=text, mentions=[gene, egfr, aspirin])]
    found = _Fixed({"a": [gene, m(17, "glioma;", "Disease"), aspirin],   # a boundary miss; aspirin unannotated here
                    "b": [gene, aspirin, m(5, "loss", "Disease")]})       # no disease annotated in b: not counted
    s = selection_scores(found, gold, CATS)
    # genes: 2 right of 2 found, 3 gold; diseases: 0 of 1 found, 1 gold; chemicals: 1 of 1, 1 gold
    assert s["per_label"]["Gene"] == {"p": 1.0, "r": round(2 / 3, 4), "f": 0.8}
    assert s["per_label"]["Disease"] == {"p": 0.0, "r": 0.0, "f": 0.0}
    assert s["per_label"]["Chemical"] == {"p": 1.0, "r": 1.0, "f": 1.0}
    assert (s["p"], s["r"]) == (0.75, 0.6)                                 # 3 right of 4 found, 5 gold
    assert s["f"] == round(2 * 0.75 * 0.6 / 1.35, 4)
