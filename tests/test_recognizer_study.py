"""experiments/recognizer.py's training-data options: ``--repeat`` reads a source's documents N times
(the selection slice, by id, counts them as often), and ``--models-from`` completes a variant that
trains some categories only with another recognizer's models for the rest."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graphmert.corpus.document import Document
from graphmert.ner.recognizer import Recognizer, RecognizerPart

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from recognizer import completed, repeat_counts, repeated  # noqa: E402


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


def test_completed_adds_the_other_models_after_the_variants_own():
    dc, gene = ["biolink:Disease", "biolink:ChemicalEntity"], ["biolink:Gene"]
    mine, saved = _recognizer(dc), _recognizer(dc, gene)
    both = completed(mine, saved)
    assert [p.categories for p in both.parts] == [dc, gene]
    assert both.parts[0] is mine.parts[0] and both.parts[1] is saved.parts[1]     # the variant's own first
    with pytest.raises(SystemExit, match=r"--models-from: its models \[\['biolink:Disease', "
                                         r"'biolink:ChemicalEntity'\]\] find some of the variant's"):
        completed(_recognizer(["biolink:Disease"]), saved)
