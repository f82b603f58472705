"""experiments/recognizer.py's training-data options: ``--repeat`` reads a source's documents N times
(the selection slice, by id, counts them as often), ``--models-from`` completes a variant that
trains some categories only with another recognizer's models for the rest, and ``--every-epoch``
saves every epoch's model with its selection scores by source."""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from graphmert.config import NERConfig
from graphmert.corpus.document import Document
from graphmert.ner.recognizer import Recognizer, RecognizerPart, train_recognizer
from ner_corpus import template_document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from recognizer import EpochSaver, completed, repeat_counts, repeated  # noqa: E402


def _doc(i: int, source: str) -> Document:
    return Document(id=f"{source}{i}", text="text", metadata={"source": source})


def test_repeated_reads_each_document_of_a_source_as_often_as_asked_and_the_others_once():
    docs = [_doc(0, "biored_train"), _doc(0, "bc5cdr_train"), _doc(1, "biored_train"), _doc(0, "other")]
    got = [d.id for d in repeated(docs, {"biored_train": 3, "other": 2})]
    assert got == ["biored_train0", "bc5cdr_train0", "biored_train1", "other0",      # every document once,
                   "biored_train0", "biored_train1", "other0",                       # then again where asked
                   "biored_train0", "biored_train1"]
    assert repeated(docs, {}) == docs and repeated(docs, {"biored_train": 1}) == docs


def test_repeat_counts_are_whole_numbers_of_at_least_one():
    assert repeat_counts([["biored_train", "3"], ["other", "1"]]) == {"biored_train": 3, "other": 1}
    for bad in ("0", "2.5", "-1", "x"):
        with pytest.raises(ValueError, match=rf"--repeat biored_train {bad}: give a whole number of at least 1"):
            repeat_counts([["biored_train", bad]])


def _recognizer(*groups: list[str]) -> Recognizer:
    return Recognizer(parts=[RecognizerPart(nlp=object(), categories=list(g)) for g in groups])


def test_completed_puts_the_variants_own_models_where_the_ones_they_replace_stood():
    """The earlier part wins a tie of equal spans, so the variant's model keeps the replaced one's place."""
    dc, gene = ["biolink:Disease", "biolink:ChemicalEntity"], ["biolink:Gene"]
    mine, saved = _recognizer(dc), _recognizer(dc, gene)
    both = completed(mine, saved)
    assert [p.categories for p in both.parts] == [dc, gene]
    assert both.parts[0] is mine.parts[0] and both.parts[1] is saved.parts[1]
    genes = _recognizer(gene)
    both = completed(genes, saved)
    assert [p.categories for p in both.parts] == [dc, gene]
    assert both.parts[0] is saved.parts[0] and both.parts[1] is genes.parts[0]
    assert [p.categories for p in completed(genes, _recognizer(dc)).parts] == [gene, dc]   # replaces none: first
    with pytest.raises(SystemExit, match=r"--models-from: its models \[\['biolink:Disease', "
                                         r"'biolink:ChemicalEntity'\]\] find some of the variant's"):
        completed(_recognizer(["biolink:Disease"]), saved)


def test_every_epoch_saves_each_model_whole_and_scores_its_selection_slice_by_source(tmp_path):
    """``--every-epoch``: each epoch of the variant's model is a recognizer of its own, completed with
    the ``--models-from`` models, scored per source on the selection slice; the epoch the training
    keeps is the saved epoch of that number, byte for byte."""
    rng = random.Random(3)
    docs = [replace(d, metadata={"source": "a" if i % 2 else "b"})
            for i, d in enumerate(template_document(f"d{i}", rng) for i in range(40))]
    dc, gene = ["biolink:Disease", "biolink:ChemicalEntity"], ["biolink:Gene"]
    cfg = replace(NERConfig(), categories=dc, epochs=2, patience=2, selection_fraction=0.3, width=32)
    genes, _ = train_recognizer(docs, replace(cfg, categories=gene, epochs=1))
    recognizer, report = train_recognizer(docs, cfg, probe=EpochSaver(tmp_path, docs, cfg, others=genes))
    (part,) = report["parts"]
    assert [r["epoch"] for r in part["history"]] == [1, 2]
    for r in part["history"]:
        assert set(r["selection_by_source"]) == {"a", "b"}
        assert all(0.0 <= v["f"] <= 1.0 for v in r["selection_by_source"].values())
    saved = Recognizer.load(tmp_path / "Disease+Chemical" / f"epoch-{part['best_epoch']:02d}")
    assert saved.categories == dc + gene
    kept = recognizer.parts[0].nlp.get_pipe("ner").to_bytes()
    other = Recognizer.load(tmp_path / "Disease+Chemical" / f"epoch-{3 - part['best_epoch']:02d}")
    assert saved.parts[0].nlp.get_pipe("ner").to_bytes() == kept
    assert other.parts[0].nlp.get_pipe("ner").to_bytes() != kept
    assert sorted(p.name for p in (tmp_path / "Disease+Chemical").iterdir()) == ["epoch-01", "epoch-02"]


def test_every_epoch_refuses_dictionary_flags_before_anything_trains(monkeypatch, capsys):
    """The saved epochs carry no dictionary flags, so a variant that reads them is refused by name."""
    import recognizer as study

    monkeypatch.setattr(sys, "argv", ["recognizer.py", "--every-epoch", "unused", "--variant", "flags",
                                      "ner.dictionary_flags=[genes]"])
    monkeypatch.setattr(study, "_training_split", lambda *a: pytest.fail("read documents before refusing"))
    with pytest.raises(SystemExit) as e:
        study.main()
    assert e.value.code == 2
    assert "--every-epoch saves models without ner.dictionary_flags' flags" in capsys.readouterr().err
