"""The issue #15 pipeline end to end on a small PubTator relation corpus (synchronous scheduler, a tiny
query-group model trained for a few steps): cooccurrence injection with "none" questions, the
holdout of the extraction documents' relations, pair extraction with its model-free controls, and
the evaluate table with a row per control and the model's numbers.

The corpus's relations are the seed triples (``kg.relation_files``). The extraction file holds six
documents; ``extract.document_fraction`` = 0.5 picks three (``IN``). ``IN[0]`` is also a corpus
document whose only relation type (Bind) occurs nowhere else: held out, it must leave no trace in the
run's seed KG and its chunks get no leaves. ``OUT[0]`` is a corpus document too, outside the slice:
its relations stay seed triples.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from typer.testing import CliRunner

from graphmert.config import ConfigError, load_config
from graphmert.corpus.document import read_documents
from graphmert.extract.triples import read_triples
from pipelines.cli import app
from pipelines.scheduler import ENV_ADDRESS
from pipelines.stages.extract import MODEL_ONLY, _check_rankers, fit_pair_heads, fit_typer
from relation_corpora import pmids, write_pubtator

F = 0.5
IN, OUT = pmids(3, True, F, start=600000), pmids(3, False, F, start=600000)
CHEMS = [("metformin", "D008687"), ("aspirin", "D001241"), ("statin", "D019161"), ("insulin", "D007328")]
DISEASES = [("diabetes", "D003920"), ("obesity", "D009765"), ("hypertension", "D006973"),
            ("asthma", "D001249")]
GENES = [("TCF7L2", "6934"), ("FTO", "79068"), ("LEPR", "3953")]
CONTROLS = ["candidates", "random", "nearest", "salience", "untrained"]


def doc(pmid: str, i: int, bind: bool = False):
    """Two sentences: a chemical lowers a disease (Negative_Correlation), a gene is associated with
    another disease (Association); the second disease is mentioned twice; 'bind' states Bind only."""
    (c, cid), (d, did), (d2, did2), (g, gid) = (CHEMS[i % 4], DISEASES[i % 4], DISEASES[(i + 1) % 4],
                                                GENES[i % 3])
    title = f"Study {pmid} of {c}"
    abstract = (f"In patients {c} lowers {d} strongly. "
                f"The {g} gene is associated with {d2}, and {d2} is common.")
    mentions = [(c, "Chemical", cid), (d, "Disease", did), (d2, "Disease", did2), (g, "Gene", gid)]
    rels = ([("Bind", cid, gid)] if bind else
            [("Negative_Correlation", cid, did), ("Association", gid, did2)])
    return (pmid, title, abstract, mentions, rels)


def typer_corpus(tmp_path: Path) -> Path:
    """The run's corpus less the gene–disease relation of every third document, as a PubTator file:
    the lexical control's related-or-not regression needs unrelated pairs that share a sentence."""
    fit = [doc(str(500000 + i), i) for i in range(24)] + [doc(IN[0], 1, bind=True), doc(OUT[0], 2)]
    fit = [(*d[:4], d[4][:1]) if k % 3 == 0 and len(d[4]) == 2 else d for k, d in enumerate(fit)]
    return write_pubtator(tmp_path / "typer.PubTator", fit)


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run up to evaluate (module scope: trained once)."""
    tmp = tmp_path_factory.mktemp("pairs")
    corpus = [doc(str(500000 + i), i) for i in range(24)] + [doc(IN[0], 1, bind=True), doc(OUT[0], 2)]
    extraction = [doc(p, i) if p != IN[0] else doc(p, 1, bind=True) for i, p in enumerate(IN + OUT)]
    corpus_path = write_pubtator(tmp / "corpus.PubTator", corpus)
    extract_path = write_pubtator(tmp / "dev.PubTator", extraction)
    cfg = {
        "corpus": {"paths": [str(corpus_path)], "shard_size": 10},
        "tokenizer": {"vocab_size": 300, "min_frequency": 1},
        "graph": {"num_roots": 48, "num_leaves": 4, "shard_size": 16},
        "kg": {"relation_files": [str(corpus_path)], "injection": "cooccurrence", "min_relation_count": 1},
        "model": {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64,
                  "leaf_query": "fixed", "candidate_head": True, "entity_type_embedding": True,
                  "salience_embedding": True, "sbo_head": False, "locality_features": True},
        "train": {"max_steps": 3, "eval_every": 3, "checkpoint_every": 3, "nproc": 1, "threads": 1,
                  "batch_size": 8, "effective_batch_size": 8, "warmup_steps": 1, "eval_fraction": 0.2,
                  "mnm_probability": 1.0, "loss": "separate"},
        "extract": {"paths": [str(extract_path)], "document_fraction": F, "controls": CONTROLS,
                    "relations": ["Association", "Negative_Correlation"], "tails_per_query": 1,
                    "one_relation_per_pair": True, "beta": 0.0, "min_confidence": 0.0},
        "evaluate": {"gold": [str(extract_path)]},
        "pipeline": {"scheduler": "synchronous"},
    }
    cfg_path = tmp / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp / "run"
    r = invoke("run", "--config", cfg_path, "--run-dir", run_dir, "--quiet", "--to", "extract")
    assert r.exit_code == 0, r.output
    r = invoke("evaluate", "--config", cfg_path, "--run-dir", run_dir, "--quiet")
    assert r.exit_code == 0, r.output
    return run_dir


@pytest.fixture(autouse=True)
def _no_scheduler_address(monkeypatch):
    monkeypatch.delenv(ENV_ADDRESS, raising=False)


def test_graphs_count_leaves_queries_and_the_holdout(run):
    m = manifest(run, "graphs")
    from graphmert.graph.io import read_graphs

    # the chunks' sentence numbers reach the entity tables (model.locality_features reads them)
    tables = [g.entities for g in read_graphs(sorted((run / "graphs").glob("*.parquet"))) if g.entities]
    assert tables and all(t.sentences.max() >= 1 for t in tables)        # title + 2 sentences
    report = json.loads((run / "graphs" / "injection_report.json").read_text())
    assert m["graphs"] == 26 and 0 < m["chunks_with_leaves"] < m["graphs"]     # IN[0] has none
    assert m["injections"] > 0 and m["injections"] == sum(m["injections_per_relation"].values())
    assert set(m["injections_per_relation"]) == {"Association", "Negative_Correlation"}
    # annotated documents: a chemical asks Association too (the file annotates it), with no tail
    assert m["queries_without_tail"] > 0 and report["queries_without_tail_per_relation"]
    # the held-out documents: the three sliced extraction documents; one of them is in the corpus
    assert m["held_out_documents"] == 3 and m["corpus_documents_held_out"] == 1
    assert report["chunks_held_out"] == 1
    assert m["kg"]["skipped"]["relation_documents_held_out"] == 1
    assert m["kg"]["annotated_documents"] == 25                                 # all but IN[0]
    # IN[0]'s relation (the only Bind) is not a seed triple; OUT[0]'s are
    rmap = json.loads((run / "graphs" / "relation_map.json").read_text())
    assert set(rmap) == {"Association", "Negative_Correlation"}


def test_a_sentence_candidate_scope_keeps_the_candidates_of_the_heads_sentence(run, tmp_path):
    """kg.candidate_scope=sentence on the same chunks: the same questions, each choosing among a
    subset of its chunk-wide candidates with the same gold flags; the disease of a document's other
    sentence falls outside."""
    from graphmert.graph.io import read_graphs

    scoped = tmp_path / "run"
    shutil.copytree(run, scoped)
    r = invoke("build-graphs", "--config", run.parent / "config.yaml", "--run-dir", scoped, "--quiet",
               "kg.candidate_scope=sentence")
    assert r.exit_code == 0, r.output
    m, plain = manifest(scoped, "graphs"), manifest(run, "graphs")
    assert plain["candidates_out_of_scope"] == plain["queries_tails_out_of_scope"] == 0
    assert m["candidates_out_of_scope"] > 0
    assert m["injections"] == plain["injections"]

    def rows(run_dir):
        out = {}
        for g in read_graphs(sorted((run_dir / "graphs").glob("*.parquet"))):
            if g.entities is not None:
                e = g.entities
                out[g.chunk_id] = {(int(a), e.ids[b], bool(t)) for a, b, t in e.candidates}
        return out

    narrow, wide = rows(scoped), rows(run)
    assert narrow.keys() == wide.keys()
    assert all(narrow[c] <= wide[c] for c in wide)
    assert sum(map(len, narrow.values())) == sum(map(len, wide.values())) - m["candidates_out_of_scope"]


def test_extract_writes_the_documents_and_a_file_per_control(run):
    m = manifest(run, "extract")
    ex = run / "extract"
    assert sorted((ex / "documents.txt").read_text().split()) == sorted(IN)
    assert m["documents"] == 3 and m["relation_documents_held_out"] == 1
    assert set(m["controls"]) == set(CONTROLS)
    for name in CONTROLS:
        info = m["controls"][name]
        assert info["file"] == f"control-{name}.parquet" and (ex / info["file"]).is_file()
        triples = list(read_triples(ex / info["file"]))
        assert len(triples) == info["triples"] > 0
        assert {e.doc_id for t in triples for e in t.evidence} <= set(IN)
    graphmert = list(read_triples([ex / s for s in m["shards"]]))
    candidates = list(read_triples(ex / "control-candidates.parquet"))
    key = lambda t: (t.documents[0], frozenset((t.head_id, t.tail_id)))  # noqa: E731
    assert {key(t) for t in graphmert} <= {key(t) for t in candidates}      # same questions, ranked
    log = (run / "logs" / "graphmert.log").read_text()
    assert m["work"]["questions"] > 0 and "was asked nothing" not in log and "is in the gold" not in log


def test_evaluate_scores_the_slice_and_every_control(run):
    metrics = json.loads((run / "evaluate" / "metrics.json").read_text())
    assert set(metrics["systems"]) >= {"graphmert", *CONTROLS, "cooccurrence", "seed_kg"}
    assert metrics["gold_documents_not_extracted"] == 3
    assert metrics["gold_pairs"] == 2 * 2 + 1             # two documents with two pairs, IN[0] with Bind
    model = metrics["model"]
    assert model["injections"] == manifest(run, "graphs")["injections"]
    assert model["queries_without_tail"] == manifest(run, "graphs")["queries_without_tail"]
    assert "heldout_leaf_accuracy" in model and "ensemble_size" not in model     # one model: no rows of it
    table = (run / "evaluate" / "metrics.md").read_text()
    for name in ["graphmert", *CONTROLS]:
        assert f"| {name} |" in table
    assert "| model | value |" in table and "| injections |" in table
    calibration = metrics["calibration"]
    assert set(calibration) == {"graphmert", *CONTROLS}        # every extracting system, not the baselines
    for name, rel in calibration.items():                     # every scored pair has a bin
        assert rel["pairs"] == metrics["systems"][name]["untyped"]["all"]["predicted"], name
        top = rel["bins"][0]["at_least"] if rel["bins"] else None
        assert top is None or top["precision"] == pytest.approx(metrics["systems"][name]["untyped"]["all"]["precision"])
    assert f"Confidence of graphmert's pairs ({calibration['graphmert']['pairs']} scored" in table


def test_evaluate_gives_graphmerts_difference_to_every_system_with_an_interval(run, tmp_path):
    """Each difference is the table's F1 minus the system's, inside its paired-bootstrap interval
    over the scored documents; evaluate.bootstrap_resamples=0 drops the table."""
    metrics = json.loads((run / "evaluate" / "metrics.json").read_text())
    systems, diffs = metrics["systems"], metrics["differences"]
    assert set(diffs) == set(systems) - {"graphmert"}
    for name, d in diffs.items():
        for kind in ("untyped", "typed"):
            own = systems["graphmert"][kind]["all"]["f1"] - systems[name][kind]["all"]["f1"]
            x = d[kind]
            assert x["delta"] == pytest.approx(own, abs=1e-12), (name, kind)
            assert x["low"] <= x["delta"] <= x["high"] and 0 <= x["share_not_above"] <= 1
            assert (x["resamples"], x["documents"]) == (1000, metrics["documents"])
    table = (run / "evaluate" / "metrics.md").read_text()
    assert f"Paired bootstrap over the {metrics['documents']} scored documents, 1000 resamples" in table
    assert "| graphmert − system | ΔF1 | 95% interval |" in table
    lines = table.splitlines()
    assert all(any(line.startswith(f"| {name} | ") and "[" in line for line in lines) for name in diffs)
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    r = invoke("evaluate", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet",
               "evaluate.bootstrap_resamples=0")
    assert r.exit_code == 0, r.output
    assert "differences" not in json.loads((copy / "evaluate" / "metrics.json").read_text())
    assert "Paired bootstrap" not in (copy / "evaluate" / "metrics.md").read_text()


def test_the_relation_typer_types_the_pairs_and_the_model_alone_stays_a_row(run, tmp_path):
    """Extract again with relation_choice 'typer', fitted on the corpus file: the held-out extraction
    documents are not fitted on (IN[0]'s Bind never becomes a type), graphmert keeps its pairs, and
    the model alone is written as a control that evaluate scores."""
    typed = tmp_path / "run"
    shutil.copytree(run, typed)
    controls = [*CONTROLS, "lexical", "lexical_document"]
    fit_path = typer_corpus(tmp_path)
    overrides = ["extract.relation_choice=typer", f"extract.typer_files=[{fit_path}]",
                 f"extract.controls=[{','.join(controls)}]", "extract.control_tails_per_query={salience: 2}",
                 "extract.control_min_confidence={lexical: 0.2, untrained: 0.1, lexical_document: 0.3}"]
    cfg = run.parent / "config.yaml"
    r = invoke("extract", "--config", cfg, "--run-dir", typed, "--quiet", *overrides)
    assert r.exit_code == 0, r.output
    r = invoke("evaluate", "--config", cfg, "--run-dir", typed, "--quiet", *overrides)
    assert r.exit_code == 0, r.output
    m = manifest(typed, "extract")
    assert m["typer"]["documents"] == 25 and m["typer"]["relations"] == 2 * 24 + 2 - 8   # not IN[0]
    assert set(m["controls"]) == {*controls, MODEL_ONLY}
    # the model answered once ("documents": extract.paths sentence-split, one task per part)
    assert set(m["tasks"]) == {"documents", "part", *(f"control-{c}" for c in controls)}
    # each control at its own settings, named in the manifest and the table (graphmert: k 1, t 0)
    settings = {name: (c["tails_per_query"], c["min_confidence"]) for name, c in m["controls"].items()}
    assert settings == {"candidates": (1, None), "random": (1, None), "nearest": (1, None),
                        "salience": (2, None), "untrained": (1, 0.1), "lexical": (1, 0.2),
                        "lexical_document": (1, 0.3), MODEL_ONLY: (1, 0.0)}
    # the lexical_document regression, fitted on the typer documents' questions (never IN[0])
    stack = m["lexical_document"]
    assert stack["documents"] == 25 and 0 < stack["related"] < stack["candidates"]
    stacked = list(read_triples(typed / "extract" / "control-lexical_document.parquet"))
    assert stacked and min(t.confidence for t in stacked) >= 0.3
    table = (typed / "evaluate" / "metrics.md").read_text()
    assert table.split("| lexical_document |")[1].split("\n")[0].endswith("| k=1, t=0.3 |")
    assert "| salience |" in table and table.split("| salience |")[1].split("\n")[0].endswith("| k=2 |")
    assert table.split("| lexical |")[1].split("\n")[0].endswith("| k=1, t=0.2 |")
    assert table.split("| graphmert |")[1].split("\n")[0].endswith("| k=1, t=0 |")
    assert table.split("| candidates |")[1].split("\n")[0].endswith("| all |")
    ex = typed / "extract"
    by_typer = list(read_triples([ex / s for s in m["shards"]]))
    by_model = list(read_triples(ex / f"control-{MODEL_ONLY}.parquet"))
    pair = lambda t: (t.documents[0], frozenset((t.head_id, t.tail_id)))  # noqa: E731
    assert sorted(map(pair, by_typer)) == sorted(map(pair, by_model)) and by_typer
    assert {t.relation for t in by_typer} <= {"Association", "Negative_Correlation"}
    metrics = json.loads((typed / "evaluate" / "metrics.json").read_text())
    assert metrics["systems"][MODEL_ONLY]["untyped"] == metrics["systems"]["graphmert"]["untyped"]
    # the corpus states every chemical–disease pair as "lowers": Negative_Correlation, as the gold
    chem_disease = [t for t in by_typer if {t.head_category, t.tail_category} ==
                    {"biolink:ChemicalEntity", "biolink:Disease"}]
    assert chem_disease and {t.relation for t in chem_disease} == {"Negative_Correlation"}


def far_apart(pmid: str, i: int, twice: bool) -> tuple:
    """A chemical in the first sentence and a disease six sentences later (more than a chunk of 48
    roots apart); the document relates them when the chemical is named twice."""
    (c, cid), (d, did) = CHEMS[i % 4], DISEASES[i % 4]
    filler = " ".join(["The cohort was followed for many years without further events."] * 6)
    abstract = f"{c} was given{' and ' + c + ' again' if twice else ''}. {filler} Patients had {d}."
    return (pmid, f"Report {pmid}", abstract, [(c, "Chemical", cid), (d, "Disease", did)],
            [("Negative_Correlation", cid, did)] if twice else [])


def test_pairs_no_chunk_holds_are_fitted_on_the_typer_documents_and_added_to_every_system(run, tmp_path):
    """extract.cross_chunk_pairs: the stage fits the regression on the typer documents' chemical–disease
    pairs that no chunk holds (never an extraction document), and every system's triples hold the
    extraction documents' far-apart pairs it keeps, graphmert's and each control's alike."""
    fit = [far_apart(str(700000 + i), i, twice=i % 2 == 0) for i in range(24)]
    fit_path = write_pubtator(tmp_path / "typer.PubTator", [doc(str(500000 + i), i) for i in range(24)] + fit)
    far = write_pubtator(tmp_path / "far.PubTator", [far_apart(str(800000 + i), i, twice=True) for i in range(4)])
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    overrides = ["extract.relation_choice=typer", f"extract.typer_files=[{fit_path}]", f"extract.paths=[{far}]",
                 "extract.document_fraction=1.0", "extract.controls=[nearest]",
                 "extract.cross_chunk_pairs=[ChemicalEntity|Disease]", "extract.cross_chunk_min_probability=0.5"]
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", *overrides)
    assert r.exit_code == 0, r.output
    m = manifest(copy, "extract")
    assert m["cross_chunk"] == {"ChemicalEntity|Disease": {"pairs": 24, "related": 12}}
    ex = copy / "extract"
    systems = {"graphmert": list(read_triples([ex / s for s in m["shards"]])),
               "nearest": list(read_triples(ex / "control-nearest.parquet")),
               MODEL_ONLY: list(read_triples(ex / f"control-{MODEL_ONLY}.parquet"))}
    want = {(str(800000 + i), f"MESH:{CHEMS[i % 4][1]}", f"MESH:{DISEASES[i % 4][1]}") for i in range(4)}
    for name, triples in systems.items():
        got = {(t.documents[0], t.head_id, t.tail_id) for t in triples}
        assert want <= got, name
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", *overrides[:-2],
               "extract.cross_chunk_pairs=[Gene|Disease]")
    assert r.exit_code != 0 and "Disease|Gene: the typer documents hold 0 such pairs that no chunk holds" in r.output


def test_a_calibration_maps_graphmerts_confidences_and_keeps_every_triple(run, tmp_path):
    """extract.calibration: graphmert's triples are the run's, each confidence (and its evidence's)
    mapped by the Platt scaling; the controls' are untouched."""
    from graphmert.extract.calibrate import platt
    from graphmert.extract.triples import triple_key

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet",
               "extract.calibration=[0.5,-1.0]")
    assert r.exit_code == 0, r.output

    def systems(d: Path) -> dict[str, list]:
        m = manifest(d, "extract")
        return {"graphmert": list(read_triples([d / "extract" / s for s in m["shards"]])),
                **{c: list(read_triples(d / "extract" / f"control-{c}.parquet")) for c in ("nearest", "salience")}}

    before, after = systems(run), systems(copy)
    assert manifest(copy, "extract")["calibration"] == [0.5, -1.0] and manifest(run, "extract")["calibration"] is None
    assert before["graphmert"] and [triple_key(t) for t in after["graphmert"]] == [triple_key(t) for t in before["graphmert"]]
    for b, a in zip(before["graphmert"], after["graphmert"]):
        assert a.confidence == pytest.approx(platt(b.confidence, 0.5, -1.0))
        assert [e.confidence for e in a.evidence] == pytest.approx([platt(e.confidence, 0.5, -1.0) for e in b.evidence])
    for name in ("nearest", "salience"):
        assert [t.to_dict() for t in after[name]] == [t.to_dict() for t in before[name]], name


def test_the_pair_heads_are_fitted_on_the_typer_documents_and_serve_graphmert_only(run, tmp_path):
    """extract.type_head_weight 1 and related_head_weight 0.5: the extract stage fits both heads on the
    pairs of the typer documents (never the extraction documents), graphmert's pairs take the type
    head's relations, and the lexical control is the same with the heads as without."""
    fit_path = typer_corpus(tmp_path)
    overrides = ["extract.relation_choice=typer", f"extract.typer_files=[{fit_path}]", "extract.controls=[lexical]"]
    out = {}
    for heads in ((0.0, 0.0), (1.0, 0.5)):
        copy = tmp_path / f"run-{heads[0]}"
        shutil.copytree(run, copy)
        r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", *overrides,
                   f"extract.type_head_weight={heads[0]}", f"extract.related_head_weight={heads[1]}")
        assert r.exit_code == 0, r.output
        m = manifest(copy, "extract")
        out[heads[0]] = (m, list(read_triples([copy / "extract" / s for s in m["shards"]])),
                         [{**t.to_dict(), "run_id": ""} for t in read_triples(copy / "extract" / "control-lexical.parquet")])
    (m0, _, lexical0), (m1, head, lexical1) = out[0.0], out[1.0]
    assert m0["type_head"] is None and m0["related_head"] is None
    typed, related = m1["type_head"], m1["related_head"]
    assert 0 < typed["documents"] <= m1["typer"]["documents"] == 25 and typed["pairs"] > 0
    assert typed["pairs"] == sum(typed[r] for r in ("Association", "Negative_Correlation"))
    assert related["pairs"] == related["related"] + related["unrelated"] >= typed["pairs"] and related["unrelated"]
    assert head and {t.relation for t in head} <= {"Association", "Negative_Correlation"}
    assert lexical1 == lexical0 and lexical0                     # each copy names its own run


def test_a_rerun_reuses_the_fits_a_selection_change_leaves_alone(run, tmp_path, monkeypatch):
    """Extract with the typer, the relatedness head and lexical_document; again with the lexical
    pooling on (a selection setting): the three fits come from RUN/cache/extract and the control's
    triples are the same; then extract.stack_c changed: that regression alone is fitted anew."""
    import pipelines.stages.extract as stage

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    base = ["extract.relation_choice=typer", f"extract.typer_files=[{typer_corpus(tmp_path)}]",
            "extract.controls=[lexical_document]", "extract.related_head_weight=0.5"]

    def extract(*more):
        r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", *base, *more)
        assert r.exit_code == 0, r.output
        return manifest(copy, "extract"), [t.to_dict() for t in read_triples(copy / "extract" / "control-lexical_document.parquet")]

    m0, control0 = extract()
    assert len(list((copy / "cache" / "extract").glob("*.pkl"))) == 3
    fitted = []
    for name in ("fit_typer", "fit_pair_heads", "fit_lexical_document"):
        real = getattr(stage, name)
        monkeypatch.setattr(stage, name, lambda *a, _name=name, _real=real: fitted.append(_name) or _real(*a))
    m1, control1 = extract("extract.lexical_weight=0.5")
    assert fitted == [] and control1 == control0 and m1["lexical_document"] == m0["lexical_document"]
    assert m1["status"] == "ran" and m1["config_hash"] != m0["config_hash"]            # the stage did rerun
    log = (copy / "logs" / "graphmert.log").read_text()
    assert all(f"extract: {n} reused from" in log for n in ("typer", "pair_heads", "lexical_document"))
    extract("extract.stack_c=1")
    assert fitted == ["fit_lexical_document"]


def test_pair_features_train_and_extract_through_the_pipeline(run, tmp_path):
    """model.pair_features=true on the same run: the between spans reach the candidate head in
    training and in extraction, the checkpoint keeps the option, and the model table reports the leaf
    accuracy with and without the copy path."""
    paired = tmp_path / "run"
    shutil.copytree(run, paired)
    cfg, override = run.parent / "config.yaml", "model.pair_features=true"
    for stage in ("train", "extract", "evaluate"):
        r = invoke(stage, "--config", cfg, "--run-dir", paired, "--quiet", override)
        assert r.exit_code == 0, r.output
    saved = json.loads((paired / "train" / "model" / "config.json").read_text())
    assert saved["model"]["pair_features"] is True
    assert manifest(paired, "extract")["triples"] > 0
    model = json.loads((paired / "evaluate" / "metrics.json").read_text())["model"]
    assert 0.0 <= model["heldout_leaf_accuracy_no_copy"] <= 1.0
    assert "| heldout_leaf_accuracy_no_copy |" in (paired / "evaluate" / "metrics.md").read_text()


def test_an_ensemble_is_trained_and_extracts_with_the_mean_of_its_members(run, tmp_path):
    """train.ensemble_size=2 on the same run: two models (seeds 0 and 1), extraction asks both (a new
    checkpoint id over the two), and evaluate's model table names the ensemble and its members."""
    ens = tmp_path / "run"
    shutil.copytree(run, ens)
    cfg, override = run.parent / "config.yaml", "train.ensemble_size=2"
    for stage in ("train", "extract", "evaluate"):
        r = invoke(stage, "--config", cfg, "--run-dir", ens, "--quiet", override)
        assert r.exit_code == 0, r.output
    t = manifest(ens, "train")
    assert t["ensemble_size"] == 2 and [m["seed"] for m in t["members"]] == [0, 1]
    assert (ens / "train" / "member-1" / "model" / "model.safetensors").is_file()
    m, single = manifest(ens, "extract"), manifest(run, "extract")
    assert m["ensemble_size"] == 2 and single["ensemble_size"] == 1
    assert m["checkpoint_id"] != single["checkpoint_id"]
    graphmert = list(read_triples([ens / "extract" / s for s in m["shards"]]))
    assert graphmert and {t.checkpoint_id for t in graphmert} == {m["checkpoint_id"]}
    model = json.loads((ens / "evaluate" / "metrics.json").read_text())["model"]
    assert model["ensemble_size"] == 2 and set(model["member_candidate_accuracy"]) == {"0", "1"}
    assert model["member_candidate_accuracy"]["0"] == model["heldout_candidate_accuracy"]
    assert "| ensemble_size | 2 |" in (ens / "evaluate" / "metrics.md").read_text()


@pytest.mark.parametrize("setting, asks", [({"relation_choice": "typer"}, "extract.relation_choice 'typer'"),
                                           ({"typer_min_relation": 0.3}, "extract.typer_min_relation 0.3")])
def test_the_typer_without_typer_files_is_a_config_error(setting, asks):
    # raised when the config is read, before any stage has run (not after a 20-minute training)
    with pytest.raises(ConfigError, match=f"{asks} needs extract.typer_files: gold files with typed"):
        load_config(None, [f"extract.{k}={v}" for k, v in setting.items()])
    assert fit_typer(SimpleNamespace(cfg=load_config(None, [])), frozenset()) is None     # asked by neither


def test_the_pair_heads_settings_are_checked_when_the_config_is_read():
    with pytest.raises(ConfigError, match="extract.type_head_weight 0.3 blends the type head with the "
                                          "typer's choice: it needs extract.relation_choice 'typer', not 'score'"):
        load_config(None, ["extract.type_head_weight=0.3"])
    with pytest.raises(ConfigError, match="extract.relation_choice 'typer' needs extract.typer_files"):
        load_config(None, ["extract.type_head_weight=0.3", "extract.relation_choice=typer"])
    with pytest.raises(ConfigError, match="type_head_c"):
        load_config(None, ["extract.type_head_c=0"])
    with pytest.raises(ConfigError, match="extract.related_head_weight 0.3 needs extract.typer_files"):
        load_config(None, ["extract.related_head_weight=0.3"])
    assert fit_pair_heads(SimpleNamespace(cfg=load_config(None, [])), None, frozenset()) == (None, None)  # off


def test_a_soft_scope_needs_a_query_group_checkpoint():
    ex = load_config(None, ["extract.outside_scope_weight=0.3"]).extract
    _check_rankers(ex, query_groups=True)
    with pytest.raises(ConfigError, match="outside_scope_weight: 0.3 .* needs a model trained with "
                                          "model.leaf_query 'fixed'"):
        _check_rankers(ex, query_groups=False)
    with pytest.raises(ConfigError, match="outside_scope_weight"):
        load_config(None, ["extract.outside_scope_weight=1.5"])


def test_the_band_needs_a_query_group_checkpoint_and_excludes_the_soft_scope():
    ex = load_config(None, ["extract.outside_min_confidence=0.6"]).extract
    assert ex.outside_min_confidence == 0.6 and load_config(None, []).extract.outside_min_confidence is None
    _check_rankers(ex, query_groups=True)
    with pytest.raises(ConfigError, match=r"outside_min_confidence: 0.6 \(the band\) needs a model trained "
                                          r"with model.leaf_query 'fixed'"):
        _check_rankers(ex, query_groups=False)
    with pytest.raises(ConfigError, match="outside_min_confidence"):
        load_config(None, ["extract.outside_min_confidence=1.5"])
    # read with the config, before any stage runs
    with pytest.raises(ConfigError, match=r"both weigh the candidates outside the scope: set one"):
        load_config(None, ["extract.outside_min_confidence=0.6", "extract.outside_scope_weight=0.3"])


def test_the_tuning_benchmark_sweeps_controls_and_the_lexical_weight(run, tmp_path):
    """experiments/tune_extraction.py on the run: every ranker, the lexical control among them, at each
    k; the model ranker once per lexical weight; w = 1 ranks as the lexical control does."""
    import subprocess
    import sys

    fit_path = typer_corpus(tmp_path)
    out = tmp_path / "rows.json"
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, str(root / "experiments" / "tune_extraction.py"),
                          "--config", str(run.parent / "config.yaml"), "--run-dir", str(run),
                          "--scopes", "sentence", "--k", "1", "2", "--thresholds", "0.0",
                          "--lexical-weights", "0", "1", "--models", "0", "--out", str(out),
                          "extract.relation_choice=typer", f"extract.typer_files=[{fit_path}]"],
                         capture_output=True, text=True, cwd=root, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    seen = {(r["ranker"], r["lexical_w"], r["k"]) for r in rows}
    assert {("lexical", 0.0, 1), ("lexical", 0.0, 2), ("model", 0.0, 1), ("model", 1.0, 2),
            ("salience", 0.0, 1)} <= seen
    assert not any(r["lexical_w"] for r in rows if r["ranker"] == "salience")   # controls are not pooled
    f1 = {(r["ranker"], r["lexical_w"], r["k"]): r["F1"] for r in rows}
    assert f1[("model", 1.0, 1)] == f1[("lexical", 0.0, 1)] and f1[("model", 1.0, 2)] == f1[("lexical", 0.0, 2)]


def test_the_tuning_script_fits_the_pair_heads_the_config_pools_in(run, tmp_path, monkeypatch):
    """experiments/tune_extraction.py's extractor carries the relatedness head when
    extract.related_head_weight asks for it (so its model rows are the shipped system's), and none
    when the weight is 0 or when another study builds it (heads=False)."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "experiments"))
    from tune_extraction import _extractor, tuning_documents

    fit = f"extract.typer_files=[{typer_corpus(tmp_path)}]"
    for weight, fitted in [(0.5, True), (0.0, False)]:
        cfg = load_config(run.parent / "config.yaml", [fit, f"extract.related_head_weight={weight}"])
        docs, _ = tuning_documents(cfg)
        ex = _extractor(cfg, run, docs, models=[0], heads=True)
        assert (ex.related_head is not None) == fitted and ex.type_head is None
        if fitted:
            assert ex.related_head.fit_counts["pairs"] > 0
            assert _extractor(cfg, run, docs, models=[0]).related_head is None


def test_the_tuning_script_sweeps_the_configs_own_scopes_by_default(monkeypatch):
    """Without --scopes, experiments/tune_extraction.py asks the config's questions: its tail scope
    with the per-category scopes (disease–variant pairs over the chunk for BioRED), not the bare one."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "experiments"))
    from tune_extraction import _scope_spec, config_scope

    ex = load_config(root / "configs" / "biored.yaml").extract
    assert config_scope(ex) == "sentence,Disease|SequenceVariant=chunk"
    back = _scope_spec(load_config(None).extract, config_scope(ex))
    assert (back.tail_scope, back.tail_scope_by_category) == (ex.tail_scope, ex.tail_scope_by_category)


@pytest.mark.parametrize("script", ["category_pairs.py", "raw_pairs.py"])
def test_the_pair_diagnostics_run_on_a_finished_run(run, tmp_path, monkeypatch, capsys, script):
    """experiments/category_pairs.py and experiments/raw_pairs.py on the run (gold mentions; run in
    this process, whose imports they share): each counts every gold pair once."""
    import runpy
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "rows.json"
    monkeypatch.setattr(sys, "argv", [script, "--run-dir", str(run), "--gold",
                                      *load_config(run / "config.yaml").evaluate.gold, "--out", str(out)])
    runpy.run_path(str(root / "experiments" / script), run_name="__main__")
    rows = json.loads(out.read_text())["rows"]
    if script == "category_pairs.py":
        graphmert = [r for r in rows if r["system"] == "graphmert"]
        assert graphmert and all(r["tp"] <= min(r["gold"], r["predicted"]) for r in graphmert)
        counted = sum(r["gold"] for r in graphmert)
    else:
        counted = sum(r["count"] for r in rows if "gold pairs" in r)
    assert counted == json.loads((run / "evaluate" / "metrics.json").read_text())["gold_pairs"] == 5


def test_the_cid_study_scores_chemical_disease_pairs_only(run, tmp_path, monkeypatch):
    """experiments/cid_heldout.py on the run: a row for graphmert and one per control; each system is
    scored on its chemical–disease pairs against the gold's (two: IN[0] relates a chemical to a gene
    only), so the candidates control, which asks every pair, finds both; the gold holds no
    Positive_Correlation, so no system finds an "induces" pair; every control gets an interval."""
    import runpy
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "rows.json"
    monkeypatch.setattr(sys, "argv", ["cid_heldout.py", "--run-dir", str(run), "--gold",
                                      *load_config(run / "config.yaml").evaluate.gold, "--resamples", "20",
                                      "--out", str(out)])
    runpy.run_path(str(root / "experiments" / "cid_heldout.py"), run_name="__main__")
    rows = {r["system"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"graphmert", *CONTROLS}
    assert rows["candidates"]["pairs R"] == 1.0 and rows["candidates"]["pairs predicted"] >= 2
    assert all(r["induces R"] == 0.0 for r in rows.values())
    assert all("graphmert − it, pairs" in r for name, r in rows.items() if name != "graphmert")


def test_the_folds_pool_scores_every_system_as_evaluate_does_and_refuses_shared_documents(run, tmp_path, monkeypatch):
    """experiments/folds.py pool on the run alone: each system's pooled F1 (the baselines', made
    again, too), untyped and typed, is metrics.md's, and graphmert's difference to it is
    metrics.json's; a run pooled with itself (the same documents twice) is refused; on a copy whose
    graphmert mistypes half its triples, the pooled typed F1 follows evaluate's (the fixture's
    systems agree, so this tells the typed sets apart)."""
    import runpy

    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "experiments"))
    folds = runpy.run_path(str(root / "experiments" / "folds.py"))
    out = tmp_path / "rows.json"
    folds["main"](["pool", "--run-dirs", str(run), "--resamples", "20", "--out", str(out)])
    rows = {r["system"]: r for r in json.loads(out.read_text())["rows"]}
    metrics = json.loads((run / "evaluate" / "metrics.json").read_text())
    assert set(rows) == set(metrics["systems"]) == {"graphmert", *CONTROLS, "cooccurrence", "seed_kg"}
    for name, row in rows.items():
        own = metrics["systems"][name]
        assert (row["F1"], row["typed F1"]) == (round(own["untyped"]["all"]["f1"], 3),
                                                round(own["typed"]["all"]["f1"], 3)), name
        if name != "graphmert":
            assert row["graphmert − it, Δ [95%]"].startswith(f"{metrics['differences'][name]['untyped']['delta']:+.3f}")
    with pytest.raises(SystemExit, match="scores documents another run scores"):
        folds["main"](["pool", "--run-dirs", str(run), str(run), "--resamples", "20", "--out", str(out)])
    # a copy whose graphmert keeps its pairs and mistypes half of them: its typed F1 falls, its
    # untyped F1 does not, and the pool reads each from its own gold set, as evaluate does
    from dataclasses import replace

    from graphmert.extract.triples import read_triples, write_triples

    copy = tmp_path / "retyped"
    shutil.copytree(run, copy)
    for shard in sorted((copy / "extract").glob("triples-*.parquet")):
        triples = list(read_triples(shard))
        write_triples([replace(t, relation="Bind") if k % 2 else t for k, t in enumerate(triples)], shard)
    r = invoke("evaluate", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", "--force")
    assert r.exit_code == 0, r.output
    metrics = json.loads((copy / "evaluate" / "metrics.json").read_text())["systems"]["graphmert"]
    assert metrics["typed"]["all"]["f1"] < metrics["untyped"]["all"]["f1"]
    folds["main"](["pool", "--run-dirs", str(copy), "--resamples", "20", "--out", str(out)])
    row = next(r for r in json.loads(out.read_text())["rows"] if r["system"] == "graphmert")
    assert (row["F1"], row["typed F1"]) == (round(metrics["untyped"]["all"]["f1"], 3),
                                            round(metrics["typed"]["all"]["f1"], 3))


def test_the_cid_study_keeps_chemical_disease_pairs_and_their_induces_types():
    """cid_heldout.chemical_disease: only pairs of one chemical and one disease (by the gold's category
    in that document), and of those the typed ones whose type is Positive_Correlation or CID."""
    root = Path(__file__).resolve().parents[1]
    import runpy

    chemical_disease = runpy.run_path(str(root / "experiments" / "cid_heldout.py"))["chemical_disease"]
    cats = {("d1", "C"): "biolink:ChemicalEntity", ("d1", "D"): "biolink:Disease",
            ("d1", "G"): "biolink:Gene", ("d1", "C2"): "biolink:ChemicalEntity",
            ("d1", "E"): "biolink:Disease", ("d2", "C"): "biolink:Disease"}   # C: a disease in d2
    cd, ce, cg, cc = frozenset("CD"), frozenset("CE"), frozenset("CG"), frozenset(("C", "C2"))
    pairs = {("d1", cd), ("d1", ce), ("d1", cg), ("d1", cc), ("d2", cd)}
    typed = {("d1", cd, "Positive_Correlation"), ("d1", cg, "Positive_Correlation"),
             ("d1", ce, "Negative_Correlation"), ("d2", cd, "CID")}
    assert chemical_disease(pairs, typed, cats) == ({("d1", cd), ("d1", ce)}, {("d1", cd)})
    assert chemical_disease(set(), {("d1", cd, "CID")}, cats) == (set(), {("d1", cd)})


def test_the_cid_study_counts_a_mislinked_chemical_disease_pair_as_false():
    """cid_heldout.triple_categories: an end the gold does not name in the document (a raw-text
    mislink, an unlinked text node) takes the triple's own category, so its chemical–disease pair is
    predicted and false; an end the gold names keeps the gold's category. Without it the pair with
    the wrong disease would be dropped, and the raw run's precision would count only pairs of gold
    entities."""
    import runpy

    from graphmert.extract.triples import Evidence, Triple

    root = Path(__file__).resolve().parents[1]
    study = runpy.run_path(str(root / "experiments" / "cid_heldout.py"))

    def triple(head, tail, tail_category, tail_name="x"):
        ev = Evidence(doc_id="d1", chunk_id="d1:0", sentence="", sentence_start=0, head_start=0, head_end=1)
        return Triple(head_id=head, head_name="h", head_category="biolink:ChemicalEntity",
                      relation="Positive_Correlation", tail_id=tail, tail_name=tail_name,
                      tail_category=tail_category, tail_source="entity", confidence=0.9,
                      documents=["d1"], evidence=[ev])

    gold_cats = {("d1", "C"): "biolink:ChemicalEntity", ("d1", "D"): "biolink:Disease",
                 ("d1", "G"): "biolink:Disease"}          # the gold calls G a disease: its word wins
    triples = [triple("C", "D", "biolink:Disease"), triple("C", "WRONG", "biolink:Disease"),
               triple("C", "", "biolink:Disease", tail_name="some disease"),
               triple("C", "GENE", "biolink:Gene"), triple("C", "G", "biolink:Gene")]
    cats = {**study["triple_categories"](triples), **gold_cats}
    assert cats[("d1", "WRONG")] == "biolink:Disease" and cats[("d1", "G")] == "biolink:Disease"
    assert cats[("d1", "unlinked:some disease")] == "biolink:Disease"
    pairs = {("d1", frozenset(("C", e))) for e in ("D", "WRONG", "unlinked:some disease", "GENE", "G")}
    kept, _ = study["chemical_disease"](pairs, set(), cats)
    assert kept == {("d1", frozenset(("C", e))) for e in ("D", "WRONG", "unlinked:some disease", "G")}
    assert study["chemical_disease"](pairs, set(), gold_cats)[0] == {("d1", frozenset(("C", e))) for e in "DG"}


def test_the_cid_study_scores_a_raw_runs_mislinked_pair_as_a_false_prediction(run, tmp_path):
    """cid_heldout.score on a copy of the run with one more graphmert triple: a chemical of a gold
    document paired with a disease id the gold does not hold (a raw-text mislink). It is one more
    predicted chemical–disease pair, and a false one: precision falls, recall stays."""
    import runpy
    from dataclasses import replace

    from graphmert.extract.triples import write_triples

    root = Path(__file__).resolve().parents[1]
    score = runpy.run_path(str(root / "experiments" / "cid_heldout.py"))["score"]
    gold = load_config(run / "config.yaml").evaluate.gold
    before = {r["system"]: r for r in score(run, gold, 10)}["graphmert"]
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    cd = next(t for t in read_triples(sorted((copy / "extract").glob("triples-*.parquet")))
              if {t.head_category, t.tail_category} == {"biolink:ChemicalEntity", "biolink:Disease"})
    wrong = (replace(cd, tail_id="MESH:D999999", tail_name="not this disease")
             if cd.tail_category == "biolink:Disease" else replace(cd, head_id="MESH:D999999", head_name="not it"))
    write_triples([wrong], copy / "extract" / "triples-99999.parquet")
    after = {r["system"]: r for r in score(copy, gold, 10)}["graphmert"]
    assert after["pairs predicted"] == before["pairs predicted"] + 1
    assert after["pairs R"] == before["pairs R"] and after["pairs P"] < before["pairs P"]


def test_the_typing_blend_changes_types_only(run, tmp_path, monkeypatch):
    """experiments/typing_blend.py on the run: one row per (selection, model weight b); b moves the
    types of the kept pairs, never the pairs, so pair F1 is one number per selection."""
    import runpy
    import sys

    fit_path = typer_corpus(tmp_path)
    out = tmp_path / "rows.json"
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(sys, "argv", ["typing_blend.py", "--config", str(run.parent / "config.yaml"),
                                      "--run-dir", str(run), "--weights", "0", "0.5", "1",
                                      "--selections", "0,2,0.0", "1,1,0.0", "--models", "0", "--out", str(out),
                                      "extract.relation_choice=typer", f"extract.typer_files=[{fit_path}]"])
    runpy.run_path(str(root / "experiments" / "typing_blend.py"), run_name="__main__")
    rows = json.loads(out.read_text())["rows"]
    assert {(r["lexical_w"], r["k"], r["b"]) for r in rows} == {(w, k, b) for w, k in ((0.0, 2), (1.0, 1))
                                                                for b in (0.0, 0.5, 1.0)}
    for w in (0.0, 1.0):
        assert len({r["F1"] for r in rows if r["lexical_w"] == w}) == 1
    assert all(0.0 <= r["type_acc"] <= 1.0 for r in rows)


def test_a_copied_run_names_itself_in_its_triples_and_iris(run, tmp_path):
    """run_id is the run being written (issue #51): a copy of the run directory, run again, renames
    the extract stage's output (same config, code and inputs: no model work) so that every triple,
    control and exported IRI names the copy, and it exports the copy's named graph; the original's
    name is nowhere in them."""
    copy = tmp_path / "copied"
    shutil.copytree(run, copy)
    assert {json.loads(line)["run_id"] for line in (copy / "extract" / "triples.jsonl").open()} == {"run"}
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet")
    assert r.exit_code == 0, r.output
    m, before = manifest(copy, "extract"), manifest(run, "extract")
    assert (m["status"], m["run_id"], m["renamed_from"]) == ("ran", "copied", "run")
    assert m["config_hash"] == before["config_hash"] and m["triples"] == before["triples"] > 0
    assert "shard_info" not in m                                                # nothing extracted again
    assert {json.loads(line)["run_id"] for line in (copy / "extract" / "triples.jsonl").open()} == {"copied"}
    for rec in m["controls"].values():
        assert {t.run_id for t in read_triples(copy / "extract" / rec["file"])} == {"copied"}
    same = lambda t: {**t.to_dict(), "run_id": ""}                              # noqa: E731
    assert [same(t) for t in read_triples([copy / "extract" / s for s in m["shards"]])] == \
        [same(t) for t in read_triples([run / "extract" / s for s in before["shards"]])]
    r = invoke("export", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet",
               "export.formats=[nq]")
    assert r.exit_code == 0, r.output
    quads = (copy / "export" / "kg.nq").read_text()
    graphs = {line.rsplit(" ", 2)[-2] for line in quads.splitlines() if line.strip()}
    assert len(graphs) == 1 and graphs.pop().endswith("/graph/copied>")
    assert "/run/copied>" in quads and "/graph/run>" not in quads and "/run/run>" not in quads
    again = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet")
    assert again.exit_code == 0 and manifest(copy, "extract")["status"] == "skipped"


def test_a_merge_cut_into_key_ranges_writes_the_files_of_the_driver_merge(run, tmp_path):
    """pipeline.merge_partitions 3 (a sample sort: split, one merge task per key range, the shards cut
    as Arrow batches and the JSON lines joined) writes the bytes the driver's one k-way merge writes:
    the KG's shards (2 triples each, so they cross the ranges), triples.jsonl and every control."""
    copy = tmp_path / "ranges"
    shutil.copytree(run, copy)
    args = ["extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", "--force",
            "extract.part_documents=1", "extract.shard_size=2"]

    def outputs(partitions: int) -> tuple[dict, dict]:
        r = invoke(*args, f"pipeline.merge_partitions={partitions}")
        assert r.exit_code == 0, r.output
        m = manifest(copy, "extract")
        files = [*m["shards"], "triples.jsonl", *(c["file"] for c in m["controls"].values())]
        return m, {f: (copy / "extract" / f).read_bytes() for f in files}

    driver, one = outputs(1)
    ranged, three = outputs(3)
    assert driver["parts"] == 3 and len(driver["shards"]) >= 3 and driver["triples"] >= 5
    assert (driver["merge_ranges"], ranged["merge_ranges"]) == (1, 3)
    assert three == one
    assert {k: ranged[k] for k in ("triples", "controls", "triples_per_relation")} == \
        {k: driver[k] for k in ("triples", "controls", "triples_per_relation")}
    maps = ranged["tasks"]
    assert maps["merge-graphmert"]["shards"] == 3
    assert {"split-graphmert", "jsonl-graphmert", "merge-random"} <= set(maps)
    assert not any(name.startswith(("split", "merge", "jsonl")) for name in driver["tasks"])


def test_the_untrained_control_has_the_checkpoints_architecture(run):
    """The extract workers' untrained control (``extract.controls``: untrained) is a fresh model built
    from the checkpoint's own config (this run's is far from the defaults: one layer, width 32,
    locality features…): same config and parameter shapes as the trained model, other weights, the
    same ones on every worker (seeded by ``train.seed``)."""
    from graphmert.kg.schema import RelationSchema
    from pipelines.stages.extract import ExtractInputs, _absolute, _build_extractor

    cfg = load_config(run / "config.yaml")
    assert "untrained" in cfg.extract.controls
    rmap = json.loads((run / "graphs" / "relation_map.json").read_text())
    schema = RelationSchema.load(run / "graphs" / "relation_schema.json").to_dict()
    inp = ExtractInputs(str(run / "train" / "model"), "ck", str(run / "tokenizer" / "tokenizer.json"), rmap,
                        _absolute(cfg.kg), schema, cfg.extract, cfg.graph.num_roots, cfg.graph.num_leaves,
                        sorted(rmap), "run", "cpu", seed=cfg.train.seed)
    ex = _build_extractor(inp)
    trained, untrained = ex.model, ex.untrained
    assert untrained is not None and untrained.config == trained.config
    assert (untrained.config.num_layers, untrained.config.hidden_size) == (1, 32)
    shapes = lambda m: {k: tuple(v.shape) for k, v in m.state_dict().items()}         # noqa: E731
    assert shapes(untrained) == shapes(trained)
    fresh, kept = untrained.state_dict(), trained.state_dict()
    assert not all(torch.equal(fresh[k], kept[k]) for k in kept)                        # not trained
    again = _build_extractor(inp).untrained.state_dict()
    assert all(torch.equal(again[k], fresh[k]) for k in fresh)                          # seeded


def test_the_documents_gold_relations_do_not_change_the_extraction(run, tmp_path):
    """The extraction documents' gold relations travel inside the Documents the extractor is given,
    and no code may read them: extracting the same file without its relation lines gives the same
    triples, in the KG and in the controls that read the model or the mentions (a copy named like the
    run, so run_ids agree too)."""
    from graphmert.corpus.readers import read_corpus

    cfg = load_config(run / "config.yaml")
    (dev,) = cfg.extract.paths
    lines = Path(dev).read_text().splitlines(keepends=True)
    stripped = tmp_path / "dev-without-relations.PubTator"
    stripped.write_text("".join(x for x in lines if x.count("\t") not in (3, 4)))   # relations: 4-5 fields
    assert all(d.relations for d in read_corpus([dev])) and not any(d.relations for d in read_corpus([stripped]))
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet",
               f"extract.paths=[{stripped}]", "extract.controls=[untrained,salience]")   # fewer passes: faster
    assert r.exit_code == 0, r.output
    m, before = manifest(copy, "extract"), manifest(run, "extract")
    assert m["status"] == "ran" and m["input_hash"] != before["input_hash"]          # extracted again
    assert (copy / "extract" / "triples.jsonl").read_text() == (run / "extract" / "triples.jsonl").read_text()
    assert set(m["controls"]) == {"untrained", "salience"}
    for name, rec in m["controls"].items():
        new, old = (list(read_triples(d / "extract" / rec["file"])) for d in (copy, run))
        assert [t.to_dict() for t in new] == [t.to_dict() for t in old] and old, name


# ------------------------------------------------------------------ bad raw input (issue #51)
def _abstract(pmid: str, text: str) -> str:
    return f"{pmid}|t|\n{pmid}|a|{text}\n\n"


@pytest.mark.parametrize("case, where, problem", [
    ("megabyte", "raw.PubTator: line 4, document 700002", "characters is longer than the 1,000,000"),
    ("utf8", "raw.PubTator: line 5, column 13", "invalid UTF-8 byte 0xe9"),
    ("duplicate", "raw2.PubTator: line 1, document 700001", "duplicate document id '700001'; first read at"),
])
def test_bad_raw_input_is_an_error_naming_file_and_record_and_writes_nothing(run, tmp_path, case, where, problem):
    """An extraction file with a 1 MB abstract, bytes that are not UTF-8, or an id another file has
    already: the command fails with the file, line and record, and the run's extract output is the
    one it had (no half-written folder, no temporary one left)."""
    good = _abstract("700001", "Metformin lowers glucose in diabetes.")
    bad = {"megabyte": _abstract("700002", "Metformin lowers glucose. " * 40400).encode(),
           "utf8": _abstract("700002", "Caf\udce9ine lowers glucose.").encode("utf-8", "surrogateescape"),
           "duplicate": _abstract("700003", "Insulin lowers glucose.").encode()}[case]
    (tmp_path / "raw.PubTator").write_bytes(good.encode() + bad)
    paths = [tmp_path / "raw.PubTator"]
    if case == "duplicate":
        (tmp_path / "raw2.PubTator").write_text(good)
        paths.append(tmp_path / "raw2.PubTator")
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    before = {p.relative_to(copy): p.read_bytes() for p in (copy / "extract").rglob("*") if p.is_file()}
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet",
               f"extract.paths=[{','.join(map(str, paths))}]", "extract.document_fraction=1.0")
    assert r.exit_code == 1 and where in r.output and problem in r.output, r.output
    after = {p.relative_to(copy): p.read_bytes() for p in (copy / "extract").rglob("*") if p.is_file()}
    assert after == before
    assert not list(copy.glob(".extract.*")) and not (copy / "work" / "extract").exists()


def test_empty_non_english_and_symbol_only_abstracts_are_extracted_like_any_other(run, tmp_path, monkeypatch):
    """On the raw path (a recognizer trained by the ner stage, extract.paths without mentions) an
    empty abstract, a Russian and Chinese one and one of symbols only are read, recognised and
    chunked without error: the empty one has no chunk (counted in documents_without_chunks), and no
    triple comes from a text in which the recognizer found no linked entities."""
    raw = tmp_path / "raw.PubTator"
    raw.write_text(_abstract("800001", "") + _abstract("800002", "Метформин снижает уровень глюкозы. 二甲双胍降低血糖。")
                   + _abstract("800003", "+++ ### %%% ^^^ &&& *** ((( ))) ---- ==== <<< >>> ~~~")
                   + _abstract("800004", "Patients given metformin developed obesity with high INSR expression. "
                                         "In mice, glucose-induced hypertension required PPARG."), encoding="utf-8")
    import random

    from graphmert.ner.recognizer import train_part
    from ner_corpus import template_document, to_pubtator
    from pipelines.stages import ner as stage

    def in_this_process(plan, shared, log_path, out):      # the raw path is under test, not the child
        nlp, report = train_part(plan, shared.cfg, deadline=float("inf"))
        Path(out).write_bytes(nlp.to_bytes())
        return report

    monkeypatch.setattr(stage, "train_in_child", in_this_process)

    rng = random.Random(3)
    (tmp_path / "ner.PubTator").write_text(to_pubtator([template_document(str(300 + i), rng) for i in range(40)]))
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    ner = [f"ner.paths=[{tmp_path / 'ner.PubTator'}]", "ner.epochs=6", "ner.patience=6", "ner.width=32", "ner.batch_size=2",
           "ner.selection_fraction=0.2"]
    common = ["--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet", *ner]
    r = invoke("ner", *common)
    assert r.exit_code == 0, r.output
    r = invoke("link", *common)
    assert r.exit_code == 0, r.output
    r = invoke("extract", *common, f"extract.paths=[{raw}]", "extract.document_fraction=1.0")
    assert r.exit_code == 0, r.output
    m = manifest(copy, "extract")
    assert m["documents"] == 4 and m["documents_without_chunks"] == 1 and m["recognized_documents"] == 4
    docs = {d.id: d for d in read_documents(copy / "extract" / "documents.parquet")}
    linked = {i for i, d in docs.items() if any(x.ids for x in d.mentions)}
    assert "800004" in linked, {i: d.mentions for i, d in docs.items()}
    evidence = {e.doc_id for t in read_triples([copy / "extract" / s for s in m["shards"]]) for e in t.evidence}
    assert evidence <= linked and "800001" not in evidence


def test_an_update_of_a_copied_run_names_the_copy_and_keeps_the_extraction(run, tmp_path):
    """graphmert update in a copied run directory rewrites the KG naming the copy (the manifest's
    run_id too), so the extract stage is then up to date and the update is not lost to a rerun."""
    copy = tmp_path / "updated"
    shutil.copytree(run, copy)
    gone = sorted(IN)[0]
    r = invoke("update", "--run-dir", copy, "--remove", gone, "--quiet")
    assert r.exit_code == 0, r.output
    m = manifest(copy, "extract")
    assert m["run_id"] == "updated" and m["updates"][-1]["removed"] == [gone]
    triples = list(read_triples([copy / "extract" / s for s in m["shards"]]))
    assert triples and {t.run_id for t in triples} == {"updated"}
    for rec in m["controls"].values():
        assert {t.run_id for t in read_triples(copy / "extract" / rec["file"])} <= {"updated"}
    r = invoke("extract", "--config", run.parent / "config.yaml", "--run-dir", copy, "--quiet")
    assert r.exit_code == 0, r.output
    assert manifest(copy, "extract")["status"] == "skipped" and manifest(copy, "extract")["updates"]


def _run_experiment(script: str, run: Path, tmp_path: Path, monkeypatch, *args: str) -> list[dict]:
    """experiments/<script> on the run (in this process), fitted on a small typer corpus; its rows."""
    import runpy
    import sys

    out = tmp_path / "rows.json"
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(sys, "argv", [script, "--config", str(run.parent / "config.yaml"), "--run-dir", str(run),
                                      "--models", "0", "--out", str(out), *args,
                                      f"extract.typer_files=[{typer_corpus(tmp_path)}]"])
    runpy.run_path(str(root / "experiments" / script), run_name="__main__")
    return json.loads(out.read_text())["rows"]


def test_the_typing_stack_changes_types_only(run, tmp_path, monkeypatch):
    """experiments/typing_stack.py: the shipped row, then one row per (feature set, C); stacking
    retypes the kept pairs (every relation admitted for every pair here) and never changes them, so
    pair F1 is one number."""
    from graphmert.kg.schema import RelationSchema

    # the fixture's schema admits one relation per category pair, which leaves nothing to choose
    monkeypatch.setattr(RelationSchema, "allows", lambda self, relation, a, b: True)
    rows = _run_experiment("typing_stack.py", run, tmp_path, monkeypatch, "--c", "1", "--folds", "2",
                           "--selection", "0,2,0.0", "extract.relation_choice=typer")
    assert json.loads((tmp_path / "rows.json").read_text())["pairs"] > 0
    assert rows[0]["features"] == "typer (shipped)"
    assert {"typer", "typer+model", "typer+kg"} <= {r["features"] for r in rows[1:]}
    assert len({r["F1"] for r in rows}) == 1
    assert all(0.0 <= r["type_acc"] <= 1.0 for r in rows)


def test_the_pair_stack_scores_every_feature_set(run, tmp_path, monkeypatch):
    """experiments/pair_stack.py: the shipped pooling at w 0, 0.5 and 1, then one row per (feature
    set, C), each at its best k and threshold of the grid."""
    rows = _run_experiment("pair_stack.py", run, tmp_path, monkeypatch, "--c", "1", "--folds", "2",
                           "--k", "1", "2", "--thresholds", "0.0", "0.5",
                           "--sets", "lexical", "model+lexical+document", "pooled+mentions")
    assert [r["features"] for r in rows] == ["pooled w=0.0", "pooled w=0.5", "pooled w=1.0", "lexical",
                                             "model+lexical+document", "pooled+mentions"]
    assert all(r["k"] in (1, 2) and r["t"] in (0.0, 0.5) and 0.0 <= r["F1"] <= 1.0 for r in rows)


def test_the_pair_stack_applies_each_set_at_its_tuned_settings_to_another_run(run, tmp_path, monkeypatch):
    """``--apply-to RUN``: one row per set on RUN (here the run itself, read with its own config), at
    the k and threshold its tuning row chose; a pooled score is fitted on nothing, so on the same
    questions it scores exactly what it scored there."""
    rows = _run_experiment("pair_stack.py", run, tmp_path, monkeypatch, "--c", "0.1", "1", "--folds", "2",
                           "--k", "1", "2", "--thresholds", "0.0", "0.5", "--sets", "lexical+document",
                           "--apply-to", str(run))
    tuned = [r for r in rows if "applied_to" not in r]
    applied = {r["features"]: r for r in rows if "applied_to" in r}
    assert list(applied) == ["pooled w=0.0", "pooled w=0.5", "pooled w=1.0", "lexical+document"]
    best_stack = max((r for r in tuned if r["features"] == "lexical+document"), key=lambda r: r["F1"])
    assert (applied["lexical+document"]["C"], applied["lexical+document"]["k"]) == (best_stack["C"], best_stack["k"])
    for r in tuned[:3]:
        assert {k: applied[r["features"]][k] for k in ("k", "t", "P", "R", "F1", "typed_F1")} == \
            {k: r[k] for k in ("k", "t", "P", "R", "F1", "typed_F1")}


def test_the_pair_heads_study_ranks_and_retypes_with_heads_fitted_on_the_typer_documents(run, tmp_path, monkeypatch):
    """experiments/pair_heads.py: both heads fitted on the typer's documents (a C each by document
    folds), one ranking row per (w, v) at its best k and threshold, then the typing rows, which
    retype the same pairs."""
    from graphmert.kg.schema import RelationSchema

    monkeypatch.setattr(RelationSchema, "allows", lambda self, relation, a, b: True)
    rows = _run_experiment("pair_heads.py", run, tmp_path, monkeypatch, "--folds", "2", "--c", "1",
                           "--type-c", "0.1", "1", "--related-c", "0.01", "--lexical-weights", "0", "0.5",
                           "--related-weights", "0", "1", "--k", "1", "2", "--thresholds", "0.0",
                           "--type-weights", "1", "extract.relation_choice=typer")
    out = json.loads((tmp_path / "rows.json").read_text())
    assert out["pairs"] > 0 and out["type_head"]["pairs"] > 0 and out["related_head"]["related"] > 0
    assert [c for c, _ in out["type_cv"]] == [0.1, 1] and [c for c, _ in out["related_cv"]] == [0.01]
    ranking, typing = rows[:4], rows[4:]
    assert [(r["w"], r["v"]) for r in ranking] == [(0.0, 0.0), (0.0, 1.0), (0.5, 0.0), (0.5, 1.0)]
    assert all(r["k"] in (1, 2) and 0.0 <= r["F1"] <= 1.0 for r in ranking)
    assert [r["types"] for r in typing[:2]] == ["typer", "blend b=1.0"]
    assert {"stacked: typer", "stacked: typer+head"} <= {r["types"] for r in typing}
    assert len({r["F1"] for r in typing}) == 1


def test_the_type_finetune_study_scores_the_typer_and_both_heads_on_the_same_pairs(run, tmp_path, monkeypatch):
    """experiments/type_finetune.py: the category-pair prior's and the typer's rows, then per seed a
    frozen-encoder head and a fine-tuned one, each alone and blended with the typer, all on the same
    gold typed pairs."""
    rows = _run_experiment("type_finetune.py", run, tmp_path, monkeypatch, "--epochs", "1", "--seeds", "0",
                           "--blends", "0.5")
    assert [r["types"] for r in rows] == [
        "category pair (majority type in the fit pairs)", "relation typer", "frozen encoder + head",
        "typer + frozen encoder + head, b=0.5", "fine-tuned encoder + head", "typer + fine-tuned encoder + head, b=0.5"]
    assert rows[0]["pairs"] > 0 and len({r["pairs"] for r in rows}) == 1
    assert all(0.0 <= r["type_acc"] <= 1.0 for r in rows)


def test_the_type_finetune_ablation_keeps_its_encoder_and_reads_graphs_without_leaves(run, tmp_path):
    """The study's frozen row trains the head alone, its fine-tuned row the encoder too, neither
    touches the run's model, and the graphs they read hold the chunk's roots and no leaf (a leaf
    would carry the question's relation into the pair's states)."""
    import runpy

    study = runpy.run_path(str(Path(__file__).resolve().parents[1] / "experiments" / "type_finetune.py"))
    cfg = load_config(run.parent / "config.yaml", [f"extract.typer_files=[{typer_corpus(tmp_path)}]"])
    docs, _, ex, plans, _ = study["tuning_questions"](cfg, run, [0])
    rows = study["type_rows"](ex, plans, docs)
    assert rows and all(r[4] in ex.relations for _, rs in rows for r in rs)
    before = {k: v.clone() for k, v in ex.model.state_dict().items()}
    kw = dict(epochs=1, lr=1e-2, head_lr=1e-2, batch=2, seed=0, device=torch.device("cpu"))
    frozen, _ = study["train"](ex, ex.model, rows, list(ex.relations), tune_encoder=False, **kw)
    tuned, _ = study["train"](ex, ex.model, rows, list(ex.relations), tune_encoder=True, **kw)
    assert all(torch.equal(frozen.state_dict()[k], v) for k, v in before.items())
    assert any(not torch.equal(tuned.state_dict()[k], v) for k, v in before.items())
    assert all(torch.equal(ex.model.state_dict()[k], v) for k, v in before.items())
    g = ex._graph(rows[0][0], [])
    assert int(g.leaf_length.sum()) == 0 and (g.relation_ids < 0).all() and g.num_roots > 2


def test_calibrate_fits_the_runs_pairs_and_prints_a_map_its_config_accepts(run, tmp_path):
    """`graphmert calibrate`: (a, b) fitted on graphmert's scored pairs against the run's gold, the
    record in RUN/calibrate/, and config lines that load on the run's config and are refused once a
    calibration setting changes; a run extracted with a map is refused."""
    from graphmert.eval.calibration import pair_confidences
    from graphmert.eval.gold import load_gold
    from graphmert.extract.calibrate import fit_platt

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    r = invoke("calibrate", "--run-dir", copy)
    assert r.exit_code == 0, r.output
    record = json.loads((copy / "calibrate" / "calibration.json").read_text())
    cfg = load_config(copy / "config.yaml")
    gold = load_gold(cfg.evaluate.gold).subset((copy / "extract" / "documents.txt").read_text().split())
    conf = pair_confidences(read_triples(sorted((copy / "extract").glob("triples-*.parquet"))))
    conf = {k: c for k, (c, _) in conf.items() if k[0] in gold.documents}
    a, b = fit_platt(list(conf.values()), [k in gold.untyped for k in conf])
    assert (record["a"], record["b"]) == (round(a, 3), round(b, 3)) and record["pairs"] == len(conf)
    assert record["right"] == sum(k in gold.untyped for k in conf) and record["gold"] == cfg.evaluate.gold
    lines = yaml.safe_load(r.output.split("\nthe fit's record:")[0])["extract"]
    assert lines == {"calibration": [record["a"], record["b"]], "calibration_fitted_with": record["fitted_with"]}
    mapped = tmp_path / "mapped.yaml"
    mapped.write_text(yaml.safe_dump({"base": str(run.parent / "config.yaml"), "extract": lines}))
    assert load_config(mapped).extract.calibration == [record["a"], record["b"]]
    with pytest.raises(ConfigError, match=r"was fitted with extract.tails_per_query=1 \(this config: 2\)"):
        load_config(mapped, ["extract.tails_per_query=2"])
    r = invoke("calibrate", "--run-dir", copy, "--quiet")
    assert r.exit_code == 0 and r.output.strip() == str(copy / "calibrate" / "calibration.json")
    r = invoke("extract", "--config", mapped, "--run-dir", copy, "--quiet")
    assert r.exit_code == 0, r.output
    r = invoke("calibrate", "--run-dir", copy)
    assert r.exit_code == 2 and "already mapped by extract.calibration" in r.output
    for command in ("calibrate", "load"):                 # a URL is refused as written, not as a folded path
        r = invoke(command, "--run-dir", "s3://bucket/run")
        assert r.exit_code == 2 and "s3://bucket/run: works on a local run directory only" in r.output, command
