"""extract → evaluate through the CLI on the demo corpus with a tiny, briefly trained model: manifests,
determinism, the metrics table, and the bad inputs of the extraction issue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmert.extract.triples import read_triples_jsonl
from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.hidden_size=32", "model.num_layers=1", "model.num_heads=2", "model.intermediate_size=64",
        "train.max_steps=4", "train.eval_every=2", "train.checkpoint_every=2", "train.nproc=1"]

# Two gold abstracts in PubTator with demo-KG ids; the second has a relation id no mention carries
DOCS = [
    ("901", "Metformin in type 2 diabetes",
     "Metformin lowers glucose in patients with type 2 diabetes and obesity. TCF7L2 variants raise "
     "the risk of type 2 diabetes.",
     [("Metformin", "Chemical", "D008687"), ("type 2 diabetes", "Disease", "D003924"),
      ("obesity", "Disease", "D009765"), ("TCF7L2", "Gene", "6934")],
     [("Negative_Correlation", "D008687", "D003924"), ("Association", "6934", "D003924")]),
    ("902", "Obesity and insulin resistance",
     "Obesity causes insulin resistance, and FTO variants are linked to obesity in children.",
     [("Obesity", "Disease", "D009765"), ("obesity", "Disease", "D009765"),
      ("insulin resistance", "Disease", "D007333"), ("FTO", "Gene", "79068")],
     [("Association", "D009765", "D007333"), ("Association", "79068", "D009765"),
      ("Association", "99999", "D009765")]),
]


def pubtator(docs=DOCS) -> str:
    """PubTator text with every occurrence of each mention surface annotated."""
    out = []
    for pmid, title, abstract, mentions, relations in docs:
        text = f"{title} {abstract}"
        out += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        rows = []
        for surface, typ, eid in mentions:
            start = text.find(surface)
            while start >= 0:
                rows.append((start, start + len(surface), surface, typ, eid))
                start = text.find(surface, start + 1)
        out += [f"{pmid}\t{a}\t{b}\t{s}\t{t}\t{e}" for a, b, s, t, e in sorted(rows)]
        out += [f"{pmid}\t{r}\t{h}\t{t}\tNo" for r, h, t in relations]
        out.append("")
    return "\n".join(out) + "\n"


def invoke(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A demo run trained for 4 steps (module scope: trained once)."""
    run_dir = tmp_path_factory.mktemp("run") / "demo"
    r = invoke("run", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--to", "train",
               "--quiet", "--scheduler", "synchronous", *TINY)      # no LocalCluster to start: faster
    assert r.exit_code == 0, r.output
    return run_dir


@pytest.fixture()
def gold(tmp_path):
    p = tmp_path / "gold.PubTator"
    p.write_text(pubtator(), encoding="utf-8")
    return p


def extract_args(run_dir, gold, *extra):
    return ["extract", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--quiet", *TINY,
            f"extract.paths=[{gold}]", "extract.beta=0.0", "extract.min_confidence=0.0", *extra]


def test_extract_then_evaluate(trained, gold, monkeypatch):
    monkeypatch.chdir(ROOT)
    run_dir = trained
    r = invoke(*extract_args(run_dir, gold))
    assert r.exit_code == 0, r.output
    m = json.loads((run_dir / "extract" / "manifest.json").read_text())
    assert m["documents"] == 2 and m["triples"] > 0
    assert m["triples"] == sum(m["triples_per_relation"].values())
    assert set(m["filters"]["dropped"]) == {"confidence", "range", "similarity", "tail_not_in_document"}
    triples = list(read_triples_jsonl(run_dir / "extract" / "triples.jsonl"))
    assert len(triples) == m["triples"]
    assert all(t.evidence and t.evidence_count == len(t.evidence) for t in triples)
    assert {t.checkpoint_id for t in triples} == {m["checkpoint_id"]}
    from graphmert.config import load_config
    from pipelines.stages import stage

    # export cites this without importing the extract stage
    assert m["settings_hash"] == stage("extract").settings_hash(load_config(run_dir / "config.yaml"))
    first = (run_dir / "extract" / "triples.jsonl").read_bytes()

    # deterministic: a forced rerun writes byte-identical triples
    r = invoke(*extract_args(run_dir, gold), "--force")
    assert r.exit_code == 0, r.output
    assert (run_dir / "extract" / "triples.jsonl").read_bytes() == first

    r = invoke("evaluate", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir, "--gold", gold,
               *TINY, f"extract.paths=[{gold}]", "extract.beta=0.0", "extract.min_confidence=0.0",
               "evaluate.relation_map={associated_with: Association, treats: Negative_Correlation}")
    assert r.exit_code == 0, r.output
    metrics = json.loads((run_dir / "evaluate" / "metrics.json").read_text())
    assert set(metrics["systems"]) == {"graphmert", "cooccurrence", "seed_kg"}
    for s in metrics["systems"].values():
        for kind in ("untyped", "typed"):
            for split in ("all", "seed_known", "novel"):
                assert {"precision", "recall", "f1"} <= set(s[kind][split])
    assert metrics["gold_pairs"] == 5
    assert metrics["unknown_relation_ids"] == 1          # NCBIGene:99999 is on no mention: counted
    table = (run_dir / "evaluate" / "metrics.md").read_text()
    assert "graphmert" in table and "cooccurrence" in table
    assert "| graphmert" in r.output                        # the CLI prints the table


def test_evaluate_needs_gold(trained, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = invoke("evaluate", "--config", ROOT / "configs/demo.yaml", "--run-dir", trained, "--quiet", *TINY)
    assert r.exit_code != 0 and ("evaluate.gold" in r.output or "extract" in r.output)


def test_checkpoint_that_does_not_match_the_run_is_refused(trained, gold, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "ckpt"
    shutil.copytree(trained / "train" / "model", bad)
    rmap = json.loads((bad / "relation_map.json").read_text())
    (bad / "relation_map.json").write_text(json.dumps({f"{k}_x": v for k, v in rmap.items()}))
    r = invoke(*extract_args(trained, gold, f"extract.checkpoint={bad}"))
    assert r.exit_code != 0 and "relation map does not match" in r.output
    shutil.copytree(trained / "train" / "model", tmp_path / "ckpt2")
    (tmp_path / "ckpt2" / "tokenizer.json").write_text(
        (tmp_path / "ckpt2" / "tokenizer.json").read_text().replace('"[UNK]"', '"[UNKNOWN]"', 1))
    r = invoke(*extract_args(trained, gold, f"extract.checkpoint={tmp_path / 'ckpt2'}"))
    assert r.exit_code != 0 and "different tokenizer" in r.output


def test_extraction_asks_the_relations_the_checkpoint_learned(trained, gold, tmp_path, monkeypatch):
    """The checkpoint records the relations its training graphs injected, and extraction asks those
    wherever the checkpoint runs (extract.checkpoint), not the ones this run's graphs inject."""
    monkeypatch.chdir(ROOT)
    graphs = json.loads((trained / "graphs" / "manifest.json").read_text())
    injected = sorted(r for r, n in graphs["injections_per_relation"].items() if n)
    config = json.loads((trained / "train" / "model" / "config.json").read_text())
    assert config["trained_relations"] == injected and len(injected) > 1
    ckpt = tmp_path / "ckpt"
    shutil.copytree(trained / "train" / "model", ckpt)
    (ckpt / "config.json").write_text(json.dumps({**config, "trained_relations": injected[:1]}))
    r = invoke(*extract_args(trained, gold, f"extract.checkpoint={ckpt}"), "--force")
    assert r.exit_code == 0, r.output
    m = json.loads((trained / "extract" / "manifest.json").read_text())
    assert m["relations"] == injected[:1]
    assert set(m["triples_per_relation"]) <= set(injected[:1])


def test_empty_and_long_documents(trained, tmp_path, monkeypatch):
    """An empty document is counted, a document longer than one chunk is cut into windows."""
    monkeypatch.chdir(ROOT)
    long_text = " ".join(["Metformin lowers glucose in type 2 diabetes and obesity."] * 30)
    docs = [{"id": "empty", "text": ""}, {"id": "long", "text": long_text,
                                           "mentions": [{"start": 0, "end": 9, "text": "Metformin",
                                                         "type": "Chemical", "ids": ["MESH:D008687"]}]}]
    p = tmp_path / "docs.jsonl"
    p.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    r = invoke(*extract_args(trained, p))
    assert r.exit_code == 0, r.output
    m = json.loads((trained / "extract" / "manifest.json").read_text())
    assert m["documents"] == 2 and m["documents_without_chunks"] == 1 and m["chunks"] > 1


def test_interrupted_extraction_reuses_finished_parts(trained, gold, monkeypatch):
    """A crash in the second part leaves the first part's shard; the rerun only does the second."""
    from graphmert.extract.extractor import Extractor

    monkeypatch.chdir(ROOT)
    real = Extractor.extract
    calls: list[str] = []

    def crash_on_second(self, docs, chunks, progress=None):
        calls.append(docs[0].id)
        if len(calls) == 2:
            raise RuntimeError("killed mid-run")
        return real(self, docs, chunks, progress)

    args = extract_args(trained, gold, "extract.part_documents=1", "--scheduler", "synchronous")
    monkeypatch.setattr(Extractor, "extract", crash_on_second)
    r = invoke(*args)
    assert r.exit_code != 0 and calls == ["901", "902"]
    parts = sorted(p.name for p in (trained / "work" / "extract").glob("part-*.parquet"))
    assert len(parts) == 1 and parts[0].startswith("part-00000-")

    calls.clear()
    monkeypatch.setattr(Extractor, "extract", lambda self, d, c, progress=None:
                        (calls.append(d[0].id), real(self, d, c, progress))[1])
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert calls == ["902"]                                  # part 0 was reused, not recomputed
    m = json.loads((trained / "extract" / "manifest.json").read_text())
    assert m["documents"] == 2 and m["parts"] == 2 and m["triples"] > 0


def test_extraction_on_a_local_cluster_equals_synchronous(trained, gold, monkeypatch):
    """Parts on two LocalCluster workers (model loaded per worker) give the same triples."""
    monkeypatch.chdir(ROOT)
    r = invoke(*extract_args(trained, gold, "extract.part_documents=1", "--scheduler", "synchronous",
                             "--force"))
    assert r.exit_code == 0, r.output
    sync = (trained / "extract" / "triples.jsonl").read_bytes()
    r = invoke(*extract_args(trained, gold, "extract.part_documents=1", "pipeline.workers=2", "--force"))
    assert r.exit_code == 0, r.output
    assert (trained / "extract" / "triples.jsonl").read_bytes() == sync


def test_abbreviation_veto_drops_the_configured_categories_short_forms_unless_the_linker_knows_them():
    """extract.abbreviation_veto reaches the recognised documents: "RA" defined as "room air" stops
    being a disease; "MO", whose long form the linker links exactly, stays; off, both stay."""
    from graphmert.config import ExtractConfig
    from graphmert.corpus.document import Abbreviation, Document, Mention
    from graphmert.ner.linking import UNLINKED, LinkResult
    from pipelines.stages.extract_parts import more_mentions

    class Linker:
        def link(self, text, category, species=None):
            known = text == "multiple osteochondromas"
            return LinkResult(("MESH:D005097",), 1.0, "dictionary") if known else UNLINKED

    text = "room air (RA) and RA; multiple osteochondromas (MO) and MO."
    mentions = [Mention(start=text.index(t, 12), end=text.index(t, 12) + len(t), text=t, type="Disease")
                for t in ("RA", "MO")]
    abbr = [Abbreviation(10, 12, 0, 8), Abbreviation(48, 50, 22, 46)]
    doc = Document(id="d", text=text, mentions=mentions, abbreviations=abbr)
    assert text[48:50] == "MO" and text[22:46] == "multiple osteochondromas"
    on = more_mentions(doc, Linker(), ExtractConfig(abbreviation_veto=["biolink:Disease"]))
    assert [m.text for m in on.mentions] == ["MO"]
    off = more_mentions(doc, Linker(), ExtractConfig())
    assert [m.text for m in off.mentions] == ["RA", "MO"]


def test_parts_name_their_documents_and_a_merge_in_passes_gives_the_same_kg(trained, monkeypatch):
    """The run's own corpus in parts of 5 documents, merged 2 runs at a time (several passes through
    scratch files), gives the KG of one part per document shard merged at once: the same triples in
    the same order, every field equal, confidences to float32 precision (other parts batch other
    chunks together, and a CPU's kernels may round a padded batch differently in the last bits);
    each part that reaches the scheduler names its shards and ids instead of carrying documents."""
    import pickle

    import graphmert.extract.sorted_merge as sorted_merge
    from pipelines.stage import StageContext
    from pipelines.stages.extract_parts import Part

    monkeypatch.chdir(ROOT)
    args = ["extract", "--config", ROOT / "configs/demo.yaml", "--run-dir", trained, "--quiet", *TINY,
            "extract.beta=0.0", "extract.min_confidence=0.0", "--scheduler", "synchronous", "--force"]
    r = invoke(*args, "extract.part_documents=1000")
    assert r.exit_code == 0, r.output
    whole = (trained / "extract" / "triples.jsonl").read_bytes()
    shards = json.loads((trained / "ingest" / "manifest.json").read_text())["shards"]
    assert json.loads((trained / "extract" / "manifest.json").read_text())["parts"] == len(shards) < 5

    items: list = []
    real = StageContext.map_shards

    def recording(self, fn, parts, **kw):
        items.extend(parts if kw.get("name") == "part" else [])
        return real(self, fn, parts, **kw)

    monkeypatch.setattr(StageContext, "map_shards", recording)
    monkeypatch.setattr(sorted_merge, "FAN_IN", 2)
    r = invoke(*args, "extract.part_documents=5")
    assert r.exit_code == 0, r.output
    m = json.loads((trained / "extract" / "manifest.json").read_text())
    assert m["parts"] == len(items) >= 8 and m["triples"] > 0
    assert all(isinstance(p, Part) and len(p.ids) <= 5 and len(pickle.dumps(p)) < 2048 for p in items)
    parts = (trained / "extract" / "triples.jsonl").read_bytes()
    assert same_to_float32(_lines(parts), _lines(whole)) and parts.count(b"\n") == whole.count(b"\n") > 0


def _lines(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines()]


def same_to_float32(a, b) -> bool:
    """Whether two parsed JSON values are equal, floats within a relative 1e-5."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == pytest.approx(b, rel=1e-5)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_to_float32(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_to_float32(x, y) for x, y in zip(a, b))
    return a == b


def test_a_part_in_the_driver_runs_on_one_torch_and_one_blas_thread(monkeypatch):
    """A part the driver computes runs as a Dask worker's does: torch and every BLAS pool on one
    thread inside it, the driver's own settings back after it."""
    import torch
    from types import SimpleNamespace

    from threadpoolctl import threadpool_info, threadpool_limits

    import pipelines.stages.extract as stage

    def blas() -> set[int]:
        return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}

    seen = []

    class Recorder:
        def extract(self, docs, chunks):
            seen.append((torch.get_num_threads(), blas()))
            return [], {}

    monkeypatch.setattr(stage, "_build_extractor", lambda inp: Recorder())
    inp = SimpleNamespace(key=("test: one thread", id(seen)), similarity=None)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threadpool_limits(limits=2, user_api="blas"):             # the driver: two of each
            assert stage._extract_chunks([], [], inp, "graphmert") == ({"graphmert": []}, {})
            assert (torch.get_num_threads(), blas()) == (2, {2})
    finally:
        torch.set_num_threads(threads)
    assert seen == [(1, {1})]


def test_the_lexical_document_control_fits_its_fold_typers_without_types(monkeypatch):
    """The extract stage's lexical_document fit asks the stack for typers that fit relatedness alone
    (its q), with the run's typer options otherwise."""
    from types import SimpleNamespace

    import pipelines.stages.extract as stage
    from graphmert.config import ExtractConfig
    from graphmert.extract.relation_typer import RelationTyper

    got = {}
    monkeypatch.setattr(stage, "fit_stack", lambda ex, docs, chunks, new_typer, folds, c: got.setdefault(
        "typer", new_typer()) and SimpleNamespace(fit_counts={}))
    ex = ExtractConfig(controls=["lexical", "lexical_document"], typer_window=3, typer_shared=True)
    stage.fit_lexical_document(SimpleNamespace(cfg=SimpleNamespace(extract=ex)), None, frozenset(),
                               typer_set=lambda: (None, [], []))
    assert got["typer"] == RelationTyper(window=3, c=ex.typer_c, related=True, learn_apart=ex.typer_apart,
                                         shared=True, roles=ex.typer_roles, type_regression=False)
