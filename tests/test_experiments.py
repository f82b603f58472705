"""The quality studies of experiments/ that read the shared datasets still run end to end, on their
smallest settings; their numbers are not asserted (docs/experiments/ holds them). Each takes from
half a minute to a few minutes here (the shared corpus, scispaCy, a recognizer's epoch), so all are
``slow``: ``make test-all`` runs them. tune_extraction.py, category_pairs.py and raw_pairs.py run
on a small trained run in tests/test_pipeline_pairs.py; raw_pairs.py's buckets are tested in
tests/test_raw_pairs_experiment.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")]


def _study(script: str, tmp_path: Path, *args: str) -> tuple[str, list[dict]]:
    out = tmp_path / f"{Path(script).stem}.json"
    res = subprocess.run([sys.executable, str(ROOT / "experiments" / script), *args, "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout, json.loads(out.read_text())["rows"]


def test_cross_chunk_study_counts_and_cross_validates(tmp_path):
    from graphmert.config import TokenizerConfig, build_section
    from graphmert.corpus.readers import read_corpus
    from graphmert.corpus.tokenizer import train_tokenizer

    texts = [d.text for d in read_corpus([SHARED / "biored" / "Train.PubTator"])]
    tok = train_tokenizer(texts, build_section(TokenizerConfig, {"vocab_size": 2000}, "tokenizer"))
    tok.save(str(tmp_path / "tokenizer.json"))
    stdout, rows = _study("cross_chunk.py", tmp_path, "--tokenizer", str(tmp_path / "tokenizer.json"),
                          "--thresholds", "0.35", "--salts", "", "a")
    assert [r["threshold"] for r in rows] == [0.35] and rows[0]["train added"] > 0
    assert "cross chunk, gold" in stdout


def test_variants_study_scores_train_and_dev(tmp_path):
    _, rows = _study("variants.py", tmp_path)
    splits, cues = [r for r in rows if "split" in r], [r for r in rows if "cue" in r]
    assert len(splits) == 2 and all(0 < r["P"] <= 1 for r in splits)
    assert [r["cue"] for r in cues] == ["all documents", "no 'polymorphism' or 'SNP'", "'novel'"]
    for r in cues:                  # each keyed variant has one kind of gold id, and a cue selects
        assert r["gold dbSNP id"] + r["gold = its key"] + r["gold another key"] == r["variants"]
        assert r["variants"] <= cues[0]["variants"] and r["dbSNP id another document teaches"] <= r["gold dbSNP id"]


def test_relation_typer_study_fits_one_setting(tmp_path):
    stdout, rows = _study("relation_typer.py", tmp_path, "--windows", "2", "--C", "1")
    assert rows and "prior" in stdout


def test_typer_features_study_compares_variants_on_the_same_pairs(tmp_path):
    _, rows = _study("typer_features.py", tmp_path, "--folds", "2", "--salts", "cv",
                     "--variants", "shipped", "shared", "distant_treats", "roles", "pooled_max", "--base", "shared")
    assert [r["variant"] for r in rows] == ["shipped", "shared", "distant_treats", "roles", "pooled_max"]
    assert len({r["pairs"] for r in rows}) == 1 and rows[0]["pairs"] > 3000
    assert (rows[1]["won"], rows[1]["lost"], rows[1]["sign_p"]) == (0, 0, 1.0)    # the base
    others = [r for r in rows if r["variant"] != "shared"]
    assert all(r["won"] + r["lost"] > 0 and 0 < r["accuracy"] < 1 for r in others)
    from scipy.stats import binomtest                     # the sign test against scipy's exact one
    for r in others:
        assert r["sign_p"] == pytest.approx(binomtest(r["won"], r["won"] + r["lost"]).pvalue, abs=1e-4)


def test_typing_document_study_reports_homogeneity_votes_and_words(tmp_path):
    _, rows = _study("typing_document.py", tmp_path, "--folds", "2", "--salts", "cv", "--weights", "0", "1")
    gold = [r for r in rows if "document majority" in r]
    # a document's own majority types its pairs at least as well as one type for every document
    assert len(gold) >= 5 and all(r["document majority"] >= r["category-pair majority"] for r in gold)
    votes = [r for r in rows if "λ" in r]
    assert [r["λ"] for r in votes] == [0.0, 1.0] and all(0 < r["accuracy"] < 1 for r in votes)
    assert [r["C"] for r in rows if "C" in r] == [0.3, 1.0, 3.0]


def test_linking_study_at_one_threshold_with_the_vocabularies(tmp_path):
    cdr = SHARED / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    stdout, rows = _study("linking.py", tmp_path, "--thresholds", "0.8", "--no-abbreviations", "--vocabularies",
                          "--also-gold", str(cdr), "--errors", "3")
    assert len(rows) == 1 and rows[0]["reference"] > 0 and rows[0]["terms"] > 0
    assert "the 3 most frequent held-out gene linking errors" in stdout and "| species read |" in stdout
    assert "BioRED dev disease and chemical misses at the chosen threshold" in stdout
    also = json.loads((tmp_path / "linking.json").read_text())["also_gold_report_only"]
    assert f"{cdr} gold spans at the chosen threshold: REPORT ONLY" in stdout
    assert 400 < also[0]["documents"] < 500 and also[0]["acc disease"] > 0.5   # less the 53 learnt from
    assert also[0]["acc gene"] is None                                          # BC5CDR names no genes


def test_recognizer_study_saves_a_recognizer_the_entity_rules_study_reads(tmp_path):
    tiny = ["ner.epochs=1", "ner.vectors=0", "ner.width=32", "ner.sources=[biored_train]",
            "ner.part_sources={}"]
    _, rows = _study("recognizer.py", tmp_path, "--variant", "tiny", *tiny, "--save", str(tmp_path / "rec"))
    assert [r["variant"] for r in rows] == ["tiny", "tiny + propagate"]
    stdout, rows = _study("raw_entities.py", tmp_path, "--recognizer", str(tmp_path / "rec" / "tiny"),
                          "--variant", "shipped", "--variant", "no-veto", "extract.abbreviation_veto=[]",
                          "--errors", "2")
    assert [r["variant"] for r in rows] == ["shipped", "no-veto"]
    assert "the 2 most frequent recognition errors of each category (shipped)" in stdout


def test_recognizer_study_adds_repeats_completes_a_model_of_some_categories_and_saves_every_epoch(tmp_path):
    tiny = ["ner.epochs=1", "ner.vectors=0", "ner.width=32", "ner.sources=[biored_train]", "ner.part_sources={}"]
    _study("recognizer.py", tmp_path, "--variant", "all", *tiny, "--save", str(tmp_path / "rec"))
    dc = ["ner.categories=[biolink:Disease,biolink:ChemicalEntity]", "ner.separate_categories=[]",
          "extract.name_mentions=[biolink:ChemicalEntity,biolink:Disease]"]
    stdout, rows = _study("recognizer.py", tmp_path, "--variant", "dc", *tiny, *dc, "--save", str(tmp_path / "rec"),
                          "--models-from", str(tmp_path / "rec" / "all"), "--repeat", "biored_train", "2",
                          "--add", str(SHARED / "bc5cdr" / "CDR_TestSet.PubTator.txt"),
                          "--every-epoch", str(tmp_path / "epochs"))
    assert "418 added" in stdout                # BC5CDR test less its 53 BioRED-train and 16 BioRED-dev documents
    train = int(stdout.split(" training documents")[0].rsplit(" ", 1)[-1])
    assert f"{train} repeats" in stdout         # every BioRED-train document read twice
    from graphmert.ner.recognizer import Recognizer
    saved = Recognizer.load(tmp_path / "rec" / "dc")
    assert [p.categories for p in saved.parts] == [["biolink:Disease", "biolink:ChemicalEntity"],
                                                   ["biolink:Gene"]]   # the first recognizer's gene model after
    epoch = Recognizer.load(tmp_path / "epochs" / "dc" / "Disease+Chemical" / "epoch-01")     # --every-epoch
    assert [p.categories for p in epoch.parts] == [p.categories for p in saved.parts]
    line = next(x for x in stdout.splitlines() if x.startswith("Disease+Chemical epoch 1: selection F1 by source"))
    assert "'biored_train': " in line and "'(no source)': " in line       # BC5CDR test's added documents


def test_pretrained_recognizer_study_runs_tiny(tmp_path):
    tiny = ["ner.epochs=1", "ner.vectors=0", "ner.width=32", "ner.sources=[biored_train]", "ner.part_sources={}"]
    stdout, rows = _study("recognizer_pretrain.py", tmp_path, "--minutes", "0.05", "--save", str(tmp_path / "p"),
                          *tiny)
    assert [r["variant"] for r in rows] == ["pretrained", "pretrained + propagate"]
    assert (tmp_path / "p" / "tok2vec.bin").stat().st_size > 0 and "pretrain:" in stdout


def test_kg_term_names_gives_the_seed_kgs_mesh_descriptors_their_mesh_2024_names(tmp_path):
    from graphmert.ner.vocabularies.tables import read_name_tables

    out = tmp_path / "names.tsv"
    res = subprocess.run([sys.executable, str(ROOT / "experiments" / "kg_term_names.py"), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    names = read_name_tables([out])                       # the linker's own reader takes the table
    assert names["MESH:D008687"][:2] == ["Metformin", "Dimethylbiguanidine"]
    assert "Glucophage" in names["MESH:D008687"]
    assert all(i.startswith("MESH:") for i in names) and len(names) > 10_000
