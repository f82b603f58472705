"""Raw text end to end through the CLI (issue #19): the ner stage trains a recognizer and the link
stage builds a linker from annotated documents; extract gives unannotated documents recognised,
linked mentions; evaluate scores them (recognition, normalisation) and pairs the baselines over them.
Linker options rebuild the linker alone, never the recognizer."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmert.corpus.document import Document, Mention, Relation, read_documents
from ner_corpus import template_document, to_pubtator
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.hidden_size=32", "model.num_layers=1", "model.num_heads=2", "model.intermediate_size=64",
        "train.max_steps=4", "train.eval_every=2", "train.checkpoint_every=2", "train.nproc=1"]
NER = ["ner.epochs=6", "ner.patience=6", "ner.selection_fraction=0.2"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An annotated training file, gold documents with a relation each, and the same stripped."""
    d = tmp_path_factory.mktemp("ner")
    rng = random.Random(3)
    train = [template_document(f"{100 + i}", rng, genes=i % 3 != 0) for i in range(80)]
    gold = [template_document(f"{900 + i}", random.Random(50 + i)) for i in range(6)]
    for g in gold:
        chem, dis = (next(m for m in g.mentions if m.type == t) for t in ("Chemical", "Disease"))
        g.relations = [Relation("Positive_Correlation", chem.ids[0], dis.ids[0])]
    (d / "train.PubTator").write_text(to_pubtator(train), encoding="utf-8")
    (d / "gold.PubTator").write_text(to_pubtator(gold), encoding="utf-8")
    raw = [Document(id=g.id, text=g.text) for g in gold]
    (d / "raw.PubTator").write_text(to_pubtator(raw), encoding="utf-8")
    return d


def test_raw_documents_get_recognised_linked_mentions_and_entity_scores(files, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    common = ["--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet", *TINY, *NER,
              f"ner.paths=[{files / 'train.PubTator'}]", f"extract.paths=[{files / 'raw.PubTator'}]",
              "extract.beta=0.0", "extract.min_confidence=0.0", "extract.tail_sources=[mention]",
              "--scheduler", "synchronous"]        # Dask's part: test_models_train_as_worker_tasks…
    r = invoke("run", *common, "--to", "extract")
    assert r.exit_code == 0, r.output
    ner = json.loads((run_dir / "ner" / "manifest.json").read_text())
    assert ner["enabled"] and ner["inputs"]["read"] == 80 and ner["documents"] < 80 and ner["selection"]["f"] > 0.5
    ex = json.loads((run_dir / "extract" / "manifest.json").read_text())
    assert ex["recognized_documents"] == 6 and ex["linked_mentions"] > 0
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert ex["work"]["queries"] > 0 and "was asked nothing" not in log
    sel = ner["selection"]                               # the recognizer's selection scores, said once
    assert f"ner: the recognizer on its {ner['selection_documents']} selection documents: strict-span " \
           f"P {sel['p']:.3f} R {sel['r']:.3f} F1 {sel['f']:.3f}" in log
    known = json.loads((run_dir / "link" / "manifest.json").read_text())["linker"]["dictionary_forms"]
    assert f"link: names known from the training documents {sum(known.values())}, the seed KG" in log
    docs = list(read_documents(run_dir / "extract" / "documents.parquet"))
    assert {d.id for d in docs} == {f"{900 + i}" for i in range(6)}
    linked = [m for d in docs for m in d.mentions if m.ids]
    assert linked and all(m.ids[0].startswith(("MESH:", "NCBIGene:")) for m in linked)

    r = invoke("evaluate", *common, "--gold", files / "gold.PubTator")
    assert r.exit_code == 0, r.output
    metrics = json.loads((run_dir / "evaluate" / "metrics.json").read_text())
    rec, norm = metrics["entities"]["recognition"], metrics["entities"]["normalisation"]
    assert rec["micro"]["gold"] == sum(len(g.mentions) for g in _gold(files))
    assert rec["micro"]["f1"] > 0.5 and norm["micro"]["f1"] > 0.5
    assert "recognition F1" in (run_dir / "evaluate" / "metrics.md").read_text()
    losses = metrics["losses"]["graphmert"]                # where the gold pairs are lost, every one once
    assert sum(losses["gold_pairs"].values()) == metrics["gold_pairs"]
    assert losses["extracted_pairs"] == metrics["systems"]["graphmert"]["untyped"]["all"]["predicted"]
    assert losses["gold_pairs"].get("both ends found: extracted (true positive)", 0) \
        == metrics["systems"]["graphmert"]["untyped"]["all"]["tp"]
    assert "Where graphmert loses the" in (run_dir / "evaluate" / "metrics.md").read_text()

    # experiments/folds.py pool makes the baselines again as evaluate made them: over the recognised,
    # linked mentions, not the gold ones
    import runpy

    monkeypatch.syspath_prepend(str(ROOT / "experiments"))
    docs, counts = runpy.run_path(str(ROOT / "experiments" / "folds.py"))["run_counts"](run_dir)
    assert docs == sorted(g.id for g in _gold(files))
    for name in ("graphmert", "cooccurrence", "seed_kg"):
        for kind in ("untyped", "typed"):
            own = metrics["systems"][name][kind]["all"]
            assert counts[name][kind].sum(axis=0).tolist() == [own["tp"], own["predicted"], own["gold"]], (name, kind)
    assert counts["cooccurrence"]["untyped"].sum(axis=0)[1] > 0


def _gold(files: Path) -> list[Document]:
    from graphmert.corpus.readers import read_corpus

    return list(read_corpus([files / "gold.PubTator"]))


def test_ner_stage_without_paths_does_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = invoke("ner", "--config", ROOT / "configs/demo.yaml", "--run-dir", tmp_path / "run", "--quiet")
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "ner" / "manifest.json").read_text())
    assert m["enabled"] is False and m["off"] == "ner.paths is empty (documents keep their own mentions)"


def test_ner_stage_refuses_unannotated_training_files(tmp_path, monkeypatch, files):
    monkeypatch.chdir(ROOT)
    r = invoke("ner", "--config", ROOT / "configs/demo.yaml", "--run-dir", tmp_path / "run", "--quiet",
               f"ner.paths=[{files / 'raw.PubTator'}]")
    assert r.exit_code != 0 and "no training documents with entity mentions" in r.output


def test_a_missing_extraction_file_is_named_before_the_recognizer_trains(tmp_path, monkeypatch, files):
    """A mistyped extraction file stops the run before the recognizer trains, naming the file: the run
    checks every stage's input files first, and the ner stage's inputs include which of its
    documents extract.paths holds out."""
    monkeypatch.chdir(ROOT)
    run_dir, missing = tmp_path / "run", tmp_path / "nope.PubTator"
    r = invoke("run", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet",
               f"ner.paths=[{files / 'train.PubTator'}]", f"extract.paths=[{missing}]")
    assert r.exit_code != 0 and f"input not found: {missing}" in r.output, r.output
    assert not (run_dir / "ner").exists() and not (run_dir / "link").exists()
    r = invoke("ner", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet",
               f"ner.paths=[{files / 'train.PubTator'}]", f"extract.paths=[{missing}]")
    assert r.exit_code != 0 and f"{missing}: no such file or directory" in r.output, r.output   # the stage alone
    assert not (run_dir / "ner").exists()


SHARED = ROOT.parent / "shared" / "datasets"


@pytest.mark.shared
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared datasets not found at {SHARED}")
def test_raw_config_never_trains_the_recognizer_on_an_evaluation_document(monkeypatch):
    """configs/biored-raw.yaml: no BioRED dev document (extracted from or scored on) trains the
    recognizer, its word vectors or the linker, and a tuning slice of BioRED train is left out when
    it is extracted."""
    from graphmert.config import load_config
    from graphmert.corpus.readers import read_corpus
    from pipelines.holdout import held_out_documents
    from pipelines.stages.ner import read_ner_documents, training_documents, vector_texts

    monkeypatch.chdir(ROOT)
    dev_file = SHARED / "biored" / "Dev.PubTator"     # the stripped copy has the same ids (build/)
    cfg = load_config(ROOT / "configs" / "biored-raw.yaml", [f"extract.paths=[{dev_file}]"])
    dev = {d.id for d in read_corpus([dev_file])}
    docs, extra, counts = training_documents(cfg, held_out_documents(cfg))
    assert docs and not dev & {d.id for d in docs}
    assert {d.metadata["source"] for d in docs} == set(cfg.ner.sources)
    lent = [d for v in extra.values() for d in v]                    # ner.part_sources: one model only
    assert set(extra) == set(cfg.ner.part_sources) and not dev & {d.id for d in lent}
    assert {d.metadata["source"] for d in lent} <= {s for v in cfg.ner.part_sources.values() for s in v}
    assert not {d.id for d in docs} & {d.id for d in lent}
    train = SHARED / "biored" / "Train.PubTator"
    sliced = load_config(ROOT / "configs" / "biored-raw.yaml",
                         [f"extract.paths=[{train}]", "extract.document_fraction=0.2"])
    held = held_out_documents(sliced)
    kept, extra, counts = training_documents(sliced, held)
    assert counts["held_out"] > 50 and not held & {d.id for d in kept}
    assert not held & {d.id for v in extra.values() for d in v}
    corpus = list(read_corpus(sliced.ner.paths))                    # ner.vectors: every text but held ones
    texts, gone = vector_texts(read_ner_documents(sliced), held), [d.text for d in corpus if d.id in held]
    assert gone and len(texts) == len(corpus) - len(gone) and not set(gone) & set(texts)
    assert len(texts) > len(kept)                                    # unannotated documents too


SEPARATE = [*NER, "ner.width=32", "ner.separate_categories=[biolink:Gene]"]


def _manifest(run_dir: Path, stage: str = "ner") -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


ONE_EPOCH = ["ner.epochs=1", "ner.patience=1", "ner.selection_fraction=0.2", "ner.width=32"]


def _in_this_process(plan, shared, log_path, out):
    """:func:`pipelines.stages.ner.train_in_child` in the test's process (faster; where the child
    process is not under test)."""
    from graphmert.ner.recognizer import train_part

    nlp, report = train_part(plan, shared.cfg, deadline=float("inf"))
    Path(out).write_bytes(nlp.to_bytes())
    return report


def test_models_train_as_worker_tasks_exactly_as_in_one_process(files, tmp_path, monkeypatch):
    """Two models (genes apart) train at once on a LocalCluster's workers, each in a process of its
    own from the same seed, so the saved pipelines — word vectors (``ner.vectors``, sent to the
    workers once) included — are byte-identical to train_recognizer's one after another in this
    process; the driver follows every epoch of both (the manifest's histories, the run's log)."""
    from graphmert.config import load_config
    from graphmert.corpus.readers import read_corpus
    from graphmert.ner.corpus import annotated_documents
    from graphmert.ner.recognizer import Recognizer, train_recognizer
    from pipelines.holdout import held_out_documents
    from pipelines.stages.ner import read_ner_documents, vector_texts

    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    paths = f"ner.paths=[{files / 'train.PubTator'}]"
    args = ["--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet", *SEPARATE, paths,
            "ner.vectors=8", "pipeline.workers=2"]
    r = invoke("ner", *args, "--scheduler", "local")
    assert r.exit_code == 0, r.output
    ner = _manifest(run_dir)
    assert ner["tasks"]["model"]["ran"] == 2 and [p["epochs_run"] for p in ner["parts"]] == [6, 6]
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert all(f"ner: {lab} epoch 6 " in log for lab in ("Disease+Chemical", "Gene"))

    assert ner["vectors"]["dimensions"] == 8

    full = load_config(ROOT / "configs/demo.yaml", [*SEPARATE, paths, "ner.vectors=8"])
    docs = list(annotated_documents(read_corpus([files / "train.PubTator"])))
    here, _ = train_recognizer(docs, full.ner, texts=vector_texts(read_ner_documents(full), held_out_documents(full)))
    there = Recognizer.load(run_dir / "ner" / "recognizer")
    assert [p.nlp.to_bytes() for p in there.parts] == [p.nlp.to_bytes() for p in here.parts]
    assert all(p.nlp.vocab.vectors.shape[1] == 8 for p in there.parts)


def test_a_killed_ner_run_reuses_the_models_it_finished(files, tmp_path, monkeypatch):
    """The gene model fails once (after the other one finished, the largest first): the rerun trains
    the gene model only and reuses the other."""
    from pipelines.stages import ner as stage

    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    args = ["ner", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet", *SEPARATE,
            f"ner.paths=[{files / 'train.PubTator'}]", "--scheduler", "synchronous"]
    real = stage.train_in_child

    def gene_fails(plan, *a):
        if plan.categories == ["biolink:Gene"]:
            raise RuntimeError("killed")
        return real(plan, *a)

    monkeypatch.setattr(stage, "train_in_child", gene_fails)
    r = invoke(*args)
    assert r.exit_code != 0 and not (run_dir / "ner" / "manifest.json").exists()
    monkeypatch.setattr(stage, "train_in_child", real)
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    ner = _manifest(run_dir)
    assert (ner["tasks"]["model"]["ran"], ner["tasks"]["model"]["reused"]) == (1, 1)
    assert [p["reused"] for p in ner["parts"]] == [True, False]


def test_a_model_whose_training_fails_in_its_process_is_a_clear_stage_error(tmp_path):
    """The child process's own error (here: too few documents for a selection slice) reaches the
    stage's error with the model's name."""
    from graphmert.config import NERConfig
    from graphmert.ner.recognizer import PartPlan
    from pipelines.stage import StageError
    from pipelines.stages.ner import PartsShared, train_in_child

    doc = template_document("1", random.Random(0))
    shared = PartsShared(cfg=NERConfig(), wall_deadline=0.0, epochs_dir=str(tmp_path))
    with pytest.raises(StageError, match=r"(?s)ner: training the Gene model failed \(exit 1\):.*"
                                         r"RecognizerError.*too few"):
        train_in_child(PartPlan(categories=["biolink:Gene"], docs=[doc], more=[]), shared,
                       tmp_path / "part-0.jsonl", tmp_path / "out.spacy")


def test_epoch_follower_hands_on_complete_lines_once_each(tmp_path):
    from pipelines.stages.ner import EpochFollower
    seen = []
    follower = EpochFollower(tmp_path, seen.append, every=3600)
    a, b = tmp_path / "part-0.jsonl", tmp_path / "part-1.jsonl"
    a.write_text('{"epoch": 1}\n{"epoch"')                # the second line is still being written
    follower.poll()
    assert seen == [{"epoch": 1}]
    with a.open("a") as f:
        f.write(': 2}\n')
    b.write_text('{"epoch": 1, "part": 1}\n')
    follower.poll()
    follower.poll()                                        # nothing new: nothing handed on twice
    assert seen == [{"epoch": 1}, {"epoch": 2}, {"epoch": 1, "part": 1}]
    with follower:                                         # the thread's last read on exit
        with b.open("a") as f:
            f.write('{"epoch": 2, "part": 1}\n')
    assert seen[-1] == {"epoch": 2, "part": 1} and len(seen) == 4


def _with_chemical(doc: Document, name: str, cid: str) -> Document:
    """``doc`` with one more sentence naming the chemical ``name`` (annotated with ``cid``)."""
    start = len(doc.text) + 1
    mention = Mention(start, start + len(name), name, "Chemical", [cid])
    return Document(id=doc.id, text=f"{doc.text} {name} was given.", title="", mentions=[*doc.mentions, mention])


def test_the_ner_stage_holds_out_the_extraction_slice_and_gold_documents_it_shares_ids_with(tmp_path, monkeypatch):
    """ner.paths shares ids with extract.paths (sliced at 0.5) and evaluate.gold: the documents in
    the slice never train the recognizer or the linker, and those outside it do. The held-out ones
    alone name the chemical 'zanzibarol' (MESH:C999999), which the linker must not know; the shared
    ones outside the slice name 'quuxamine' (MESH:C888888), which it must."""
    from graphmert.ner.linking import EntityLinker
    from pipelines.holdout import in_slice
    from pipelines.stages import ner as stage

    monkeypatch.setattr(stage, "train_in_child", _in_this_process)    # the holdout is under test, not the child
    monkeypatch.chdir(ROOT)
    rng = random.Random(7)
    ids = [str(100 + i) for i in range(30)]
    shared, gold_ids = ids[:20], ids[20:22]
    held = {i for i in shared + gold_ids if in_slice(i, 0.5)}
    assert 0 < len(held) < len(shared + gold_ids)
    train = []
    for i in ids:
        d = template_document(i, rng)
        if i in held:
            d = _with_chemical(d, "zanzibarol", "MESH:C999999")
        elif i in shared + gold_ids:
            d = _with_chemical(d, "quuxamine", "MESH:C888888")
        train.append(d)
    (tmp_path / "train.PubTator").write_text(to_pubtator(train), encoding="utf-8")
    raw = [Document(id=i, text=f"Metformin lowers glucose in study {i}.") for i in shared]
    (tmp_path / "raw.PubTator").write_text(to_pubtator(raw), encoding="utf-8")
    (tmp_path / "gold.PubTator").write_text(to_pubtator([d for d in train if d.id in gold_ids]), encoding="utf-8")
    run_dir = tmp_path / "run"
    r = invoke("run", "--to", "link", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet",
               *ONE_EPOCH, f"ner.paths=[{tmp_path / 'train.PubTator'}]",
               f"extract.paths=[{tmp_path / 'raw.PubTator'}]", "extract.document_fraction=0.5",
               f"evaluate.gold=[{tmp_path / 'gold.PubTator'}]", "--scheduler", "synchronous")
    assert r.exit_code == 0, r.output
    ner = _manifest(run_dir)
    assert ner["inputs"]["held_out"] == len(held) and ner["inputs"]["annotated"] == len(ids)
    assert ner["documents"] + ner["selection_documents"] == len(ids) - len(held)
    assert _manifest(run_dir, "link")["inputs"] == ner["inputs"]       # the same documents
    linker = EntityLinker.load(run_dir / "link" / "linker.json.gz")
    assert linker.link("quuxamine", "Chemical").ids == ("MESH:C888888",)
    assert "MESH:C999999" not in linker.link("zanzibarol", "Chemical").ids


def test_the_ner_and_link_stages_split_the_ner_keys_and_the_code():
    """Every ``ner`` key is the recognizer's, the linker's or the training documents' (both read
    those); neither stage's config keys or code fingerprint hold the other's, and both hold the
    vocabularies' readers (graphmert.ner.vocabularies)."""
    from dataclasses import fields

    from graphmert.config import NERConfig
    from pipelines import fingerprint
    from pipelines.stages import STAGES
    from pipelines.stages.ner_documents import (DOCUMENT_KEYS, LINKER_KEYS, RECOGNIZER_KEYS, SEED_KG_KEYS,
                                                held_link_documents, held_ner_documents)

    ner, link = STAGES["ner"], STAGES["link"]
    every = {f"ner.{f.name}" for f in fields(NERConfig)}
    shared = {k for k in DOCUMENT_KEYS if k.startswith("ner.")}
    assert set(LINKER_KEYS) | set(RECOGNIZER_KEYS) | shared == every          # every key is placed
    assert not set(LINKER_KEYS) & set(RECOGNIZER_KEYS)
    assert set(ner.sections) == set(RECOGNIZER_KEYS) | set(DOCUMENT_KEYS)
    assert set(link.sections) == set(LINKER_KEYS) | set(DOCUMENT_KEYS) | set(SEED_KG_KEYS)
    # of extract.paths and evaluate.gold, both read only which of their documents are held out
    assert not {k for k in (*ner.sections, *link.sections) if k.startswith(("extract.", "evaluate."))}
    assert (ner.derived, link.derived) == (held_ner_documents, held_link_documents)
    assert list(STAGES)[:2] == ["ner", "link"] and {"ner", "link"} <= set(STAGES["extract"].upstream)
    ner_code = fingerprint.module_closure(ner.run.__module__)
    link_code = fingerprint.module_closure(link.run.__module__)
    assert not [m for m in ner_code if m.startswith(("graphmert.ner.linking", "graphmert.ner.gazetteer",
                                                     "pipelines.stages.link"))]
    # the recognizer's dictionary flags and the linker read the same vocabularies: a change there reruns both
    assert {"graphmert.ner.dictionary", "graphmert.ner.vocabularies.genes"} <= set(ner_code)
    assert "graphmert.ner.vocabularies.genes" in link_code
    assert not {"graphmert.ner.recognizer", "graphmert.ner.vectors", "pipelines.stages.ner"} & set(link_code)
    assert "pipelines.stages.ner_documents" in ner_code and "pipelines.stages.ner_documents" in link_code


def test_linker_options_rerun_the_link_stage_and_never_the_recognizer(files, tmp_path, monkeypatch):
    """``graphmert run --to link`` trains the recognizer (RUN/ner) and builds the linker
    (RUN/link/linker.json.gz). Then a vocabulary, a linker option or an edited vocabulary file makes
    the link stage stale and leaves the ner stage up to date (rerun: ner skipped, link ran); a
    recognizer option the other way round; the training documents both. With
    ``ner.dictionary_flags`` the vocabulary files are the recognizer's inputs too."""
    from graphmert.config import load_config
    from graphmert.ner.linking import EntityLinker
    from pipelines.stage import stale_reason
    from pipelines.stages import STAGES
    from pipelines.stages import ner as stage

    monkeypatch.setattr(stage, "train_in_child", _in_this_process)
    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    base = [*ONE_EPOCH, f"ner.paths=[{files / 'train.PubTator'}]"]
    args = ["run", "--to", "link", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet",
            "--scheduler", "synchronous"]
    r = invoke(*args, *base)
    assert r.exit_code == 0, r.output
    link = _manifest(run_dir, "link")
    assert link["enabled"] and link["inputs"] == _manifest(run_dir)["inputs"] and link["linker"]["dictionary_forms"]
    assert (run_dir / "link" / "linker.json.gz").is_file() and not (run_dir / "ner" / "linker.json.gz").exists()
    saved = json.loads((run_dir / "ner" / "recognizer" / "graphmert-recognizer.json").read_text())
    assert "width" in saved["report"]["config"] and "vocabularies" not in saved["report"]["config"]

    terms = tmp_path / "terms.tsv"
    terms.write_text("D000001\tZanzibarol Poisoning\t\n", encoding="utf-8")
    vocabulary = f"ner.vocabularies=[{{kind: terms, path: '{terms}'}}]"

    def stale(*overrides: str) -> dict:
        cfg = load_config(ROOT / "configs/demo.yaml", [*base, *overrides])
        return {s: stale_reason(STAGES[s], cfg, run_dir) for s in ("ner", "link")}

    linker_only = {"ner": None, "link": "its config changed"}
    assert stale() == {"ner": None, "link": None}
    assert stale(vocabulary) == stale("ner.fuzzy_threshold=0.9") == stale("kg.include_isa=true") == linker_only
    assert stale("ner.width=48") == stale("ner.max_minutes=5") == {"ner": "its config changed", "link": None}
    assert stale("ner.sources=[x]") == {"ner": "its config changed", "link": "its config changed"}
    assert stale("kg.alpha=0.2") == {"ner": None, "link": None}        # the KG's scoring, not its contents
    # other documents to extract from or score on retrain nothing; a slice of the training file does
    others = [f"extract.paths=[{files / 'raw.PubTator'}]", f"evaluate.gold=[{files / 'gold.PubTator'}]"]
    assert stale(*others) == {"ner": None, "link": None}
    assert stale(f"extract.paths=[{files / 'train.PubTator'}]", "extract.document_fraction=0.5") == {
        "ner": "its inputs changed", "link": "its inputs changed"}

    r = invoke(*args, *base, vocabulary)
    assert r.exit_code == 0, r.output
    assert (_manifest(run_dir)["status"], _manifest(run_dir, "link")["status"]) == ("skipped", "ran")
    assert _manifest(run_dir, "link")["linker"]["term_vocabularies"] == [str(terms)]
    linker = EntityLinker.load(run_dir / "link" / "linker.json.gz")
    assert linker.link("zanzibarol poisoning", "Disease").ids == ("MESH:D000001",)
    assert stale(vocabulary) == {"ner": None, "link": None}
    terms.write_text("D000002\tZanzibarol Poisoning\t\n", encoding="utf-8")       # the file edited
    assert stale(vocabulary) == {"ner": None, "link": "its inputs changed"}

    # with ner.dictionary_flags the recognizer reads the vocabulary too: an edit retrains it
    flagged = [vocabulary, "ner.dictionary_flags=[terms]"]
    assert stale(*flagged) == {"ner": "its config changed", "link": "its inputs changed"}
    r = invoke(*args, *base, *flagged)
    assert r.exit_code == 0, r.output
    assert _manifest(run_dir)["dictionary"] == {"gene_symbols": 0, "gene_names": 0, "terms": 1}
    assert (run_dir / "ner" / "recognizer" / "dictionary.json.gz").is_file()
    terms.write_text("D000003\tZanzibarol Fever\t\n", encoding="utf-8")
    assert stale(*flagged) == {"ner": "its inputs changed", "link": "its inputs changed"}
    assert stale(vocabulary)["ner"] == "its config changed"


def test_runs_that_can_give_nothing_say_why_in_a_warning(files, tmp_path, monkeypatch):
    """Raw text and no ner.paths: no mention, no question, no triple, and the run log says why; a
    gold file that holds none of the extracted documents: every figure 0, and the log says so."""
    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    common = ["--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet", *TINY,
              f"extract.paths=[{files / 'raw.PubTator'}]", "extract.tail_sources=[mention]",
              "--scheduler", "synchronous"]
    r = invoke("run", *common, "--to", "extract")
    assert r.exit_code == 0, r.output
    assert json.loads((run_dir / "extract" / "manifest.json").read_text())["triples"] == 0
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert "extract: the model was asked nothing in 6 chunk(s)" in log and "raw text needs ner.paths" in log

    other = tmp_path / "other.PubTator"                  # the gold documents under other ids
    other.write_text(to_pubtator([replace(g, id=f"7{g.id}") for g in _gold(files)]), encoding="utf-8")
    r = invoke("evaluate", *common, "--gold", other)
    assert r.exit_code == 0, r.output
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert "evaluate: none of the 6 extracted documents is in the gold" in log and "other.PubTator" in log
