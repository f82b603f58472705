"""benchmarks/scale.py: its corpora, its memory sampler and its arithmetic (fast), and the whole
benchmark on the demo run at two corpus sizes (``slow``)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import scale  # noqa: E402
from graphmert.config import load_config  # noqa: E402


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def texts(tmp_path):
    path = tmp_path / "texts.jsonl"
    recs = [{"doc_id": "1", "pmid": "1", "title": "T1", "abstract": "A1",
             "entities": [{"start": 0, "end": 2, "text": "T1", "type": "Gene", "id": "7"}]},
            {"doc_id": "PMID:2", "title": "T2", "abstract": "A2", "source": "jnlpba"},
            {"id": "x:3", "text": "T3 A3"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_a_scale_corpus_repeats_the_texts_with_new_ids(texts, tmp_path):
    out = tmp_path / "c.jsonl.gz"
    assert scale.write_corpus([texts], 7, "gold", out, shuffle=False) == 3
    docs = _read(out)
    assert [d["doc_id"] for d in docs] == ["1", "PMID:2", "x:3", "1.r1", "PMID:2.r1", "x:3.r1", "1.r2"]
    assert docs[3]["entities"] == docs[0]["entities"] and docs[3]["abstract"] == "A1"
    assert "pmid" not in docs[0] and docs[1]["source"] == "jnlpba" and docs[2]["text"] == "T3 A3"
    assert not out.with_name(out.name + ".tmp").exists()


def test_a_shuffled_scale_corpus_repeats_one_order(tmp_path):
    """Every size takes the same shuffled order of the texts (the same mix of files), and each
    repeat follows it."""
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps({"doc_id": str(i), "abstract": f"text {i}"}) + "\n"
                            for i in range(20)))
    scale.write_corpus([path], 50, "gold", tmp_path / "a.jsonl.gz")
    scale.write_corpus([path], 10, "gold", tmp_path / "b.jsonl.gz")
    ids = [d["doc_id"] for d in _read(tmp_path / "a.jsonl.gz")]
    assert ids[:20] != [str(i) for i in range(20)] and sorted(ids[:20], key=int) == [str(i) for i in range(20)]
    assert ids[20:40] == [f"{i}.r1" for i in ids[:20]] and ids[40:] == [f"{i}.r2" for i in ids[:10]]
    assert [d["doc_id"] for d in _read(tmp_path / "b.jsonl.gz")] == ids[:10]


def test_a_raw_scale_corpus_has_no_entities(texts, tmp_path):
    out = tmp_path / "c.jsonl.gz"
    assert scale.write_corpus([texts], 2, "raw", out, shuffle=False) == 2
    assert [sorted(d) for d in _read(out)] == [["abstract", "doc_id", "title"],
                                               ["abstract", "doc_id", "source", "title"]]


def test_a_scale_corpus_needs_texts(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(SystemExit, match="no texts in"):
        scale.write_corpus([empty], 5, "gold", tmp_path / "c.jsonl.gz")


def test_a_reference_run_must_hold_what_every_size_reuses(tmp_path):
    (tmp_path / "tokenizer").mkdir()
    (tmp_path / "tokenizer" / "tokenizer.json").write_text("{}")
    with pytest.raises(SystemExit, match=r"not a finished run to reuse; missing .*train/manifest.json"):
        scale.check_reference(tmp_path, ["gold"])
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "manifest.json").write_text("{}")
    with pytest.raises(SystemExit, match=r"missing .*graphs/manifest.json$"):
        scale.check_reference(tmp_path, ["gold"])
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "manifest.json").write_text(json.dumps(
        {"injections_per_relation": {"treats": 3, "isa": 0, "binds": 1}}))
    assert scale.check_reference(tmp_path, ["gold"]) == tmp_path
    with pytest.raises(SystemExit, match=r"ner/manifest.json, .*link/manifest.json"):
        scale.check_reference(tmp_path, ["gold", "raw"])
    assert scale.trained_relations(tmp_path) == ["binds", "treats"]      # every size asks these
    model = tmp_path / "train" / "model"                # a checkpoint that records its relations
    model.mkdir()
    (model / "relation_map.json").write_text(json.dumps({"treats": 0, "isa": 1, "binds": 2}))
    (model / "config.json").write_text(json.dumps({"trained_relations": ["treats", "isa"]}))
    assert scale.trained_relations(tmp_path) == ["isa", "treats"]
    assert scale.asked_relations(tmp_path, None) == ["isa", "treats"]
    assert scale.asked_relations(tmp_path, ["treats"]) == ["treats"]         # --relations treats
    with pytest.raises(SystemExit, match=r"not trained on binds, causes; it knows isa, treats"):
        scale.asked_relations(tmp_path, ["binds", "treats", "causes"])


def test_the_sampler_tells_the_driver_from_the_processes_it_started():
    """A driver holding ~150 MB starts a child holding ~60 MB: each peak is its own."""
    child = "import time; y = b'y' * (60 * 2**20); time.sleep(1.5)"
    driver = (f"import subprocess, sys, time; x = b'x' * (150 * 2**20); "
              f"subprocess.run([sys.executable, '-c', {child!r}]); time.sleep(0.3)")
    proc = subprocess.Popen([sys.executable, "-c", driver])
    with scale.RssSampler(proc.pid, interval=0.05) as rss:
        assert proc.wait(timeout=60) == 0
    assert 150 <= rss.driver_mb < 400, rss.driver_mb
    assert 60 <= rss.workers_mb < 140, rss.workers_mb
    assert rss.processes == 1


def _row(stage: str, documents: int, stage_s: float, task_s: float, driver: int, worker: int) -> dict:
    return {"mode": "gold", "documents": documents, "stage": stage, "stage_s": stage_s,
            "task_s": task_s, "driver_MB": driver, "worker_MB": worker}


def test_measured_sizes_are_kept_as_they_finish_and_resume_skips_them(tmp_path, monkeypatch):
    ran: list[tuple[str, int]] = []

    def run_size(work, ref, config, texts, mode, size, common, last, relations=None):
        assert last == "export"
        ran.append((mode, size))
        if size == 30:
            raise SystemExit("killed")
        return [{"mode": mode, "documents": size, "stage": "ingest"}]

    monkeypatch.setattr(scale, "run_size", run_size)
    configs = {"gold": tmp_path / "g.yaml", "raw": tmp_path / "r.yaml"}
    with pytest.raises(SystemExit):
        scale.measure(tmp_path, tmp_path, configs, [], ["gold"], [10, 20, 30], [], resume=False)
    assert ran == [("gold", 10), ("gold", 20), ("gold", 30)]
    ran.clear()
    rows = scale.measure(tmp_path, tmp_path, configs, [], ["gold"], [10, 20, 40], [], resume=True)
    assert ran == [("gold", 40)]                            # 10 and 20 were kept in rows.jsonl
    assert [r["documents"] for r in rows] == [10, 20, 40]
    scale.measure(tmp_path, tmp_path, configs, [], ["gold"], [10], [], resume=False)
    assert ran[-1] == ("gold", 10)                         # without --resume, every size runs again


def test_a_size_runs_the_stages_up_to_the_last_one_asked(tmp_path, monkeypatch):
    """--to graphs: each size runs ingest … build-graphs (after the empty ner and link), not extract."""
    commands: list[str] = []
    asked: set[str] = set()

    def run_command(args, log):
        commands.append(args[0])
        asked.update(a for a in args if a.startswith("extract.relations="))
        stage = {v: k for k, v in scale.STAGES.items()}.get(args[0], args[0])
        run_dir = Path(args[args.index("--run-dir") + 1])
        (run_dir / stage).mkdir(parents=True, exist_ok=True)
        tasks = {"part": {"ran": 4, "seconds": 1.5, "task_seconds": 2.8}, "merge": {"ran": 2, "seconds": 0.25,
                                                                                "task_seconds": 0.4}}
        (run_dir / stage / "manifest.json").write_text(json.dumps({"elapsed_s": 2.0, "documents": 5,
                                                                   "tasks": tasks}))
        return 1.0, SimpleNamespace(driver_mb=100.0, workers_mb=0.0, processes=0)

    monkeypatch.setattr(scale, "run_command", run_command)
    monkeypatch.setattr(scale, "trained_relations", lambda ref: ["treats"])
    monkeypatch.setattr(scale, "write_corpus", lambda *a: 5)
    (tmp_path / "ref" / "train").mkdir(parents=True)
    rows = scale.run_size(tmp_path, tmp_path / "ref", tmp_path / "g.yaml", [], "gold", 5, [], "graphs")
    assert commands == ["ner", "link", "ingest", "tokenizer", "chunks", "build-graphs"]
    assert [r["stage"] for r in rows] == ["ingest", "tokenizer", "chunks", "graphs"]
    assert rows[0]["outputs"] == "documents=5" and rows[0]["s_per_1k_docs"] == 400.0
    # the task groups summed: their own seconds, their phases' wall, one mean task of each (0.7 + 0.2)
    assert (rows[0]["task_s"], rows[0]["phase_s"], rows[0]["tail_s"]) == (3.2, 1.8, 0.9)
    assert asked == {"extract.relations=[treats]"}                      # the reference's, by default
    asked.clear()
    scale.run_size(tmp_path, tmp_path / "ref", tmp_path / "g.yaml", [], "gold", 5, [], "ingest",
                   relations=["isa", "binds"])
    assert asked == {"extract.relations=[isa,binds]"}


def test_the_benchmark_configs_keep_every_proposed_triple(tmp_path):
    import yaml

    paths = scale.write_configs(tmp_path, ROOT / "configs" / "small.yaml", 30, 3.0)
    for mode in ("gold", "raw"):
        extract = yaml.safe_load(paths[mode].read_text())["extract"]
        assert {k: extract[k] for k in scale.KEEP_ALL} == {"min_confidence": 0.0, "beta": 0.0}
    raw = yaml.safe_load(paths["raw"].read_text())
    assert raw["ner"]["max_minutes"] == 3.0 and "paths" not in raw["extract"]
    assert raw["extract"]["propagate_mentions"] is True and "controls" not in raw["extract"]
    for mode in ("gold", "raw"):            # valid configs: the raw one asks no control needing BioRED
        assert load_config(paths[mode]).extract.controls == load_config(ROOT / "configs" / "small.yaml").extract.controls


def test_scaling_divides_by_the_smallest_size():
    rows = [_row("ingest", 10_000, 50.0, 90.0, 400, 300), _row("ingest", 1_000, 5.0, 9.0, 400, 200),
            _row("extract", 1_000, 10.0, 16.0, 500, 600), _row("extract", 10_000, 130.0, 200.0, 1500, 600)]
    got = {r["stage"]: r for r in scale.scaling(rows)}
    assert got["ingest"] == {"mode": "gold", "stage": "ingest", "sizes": "1000 → 10000",
                             "time_per_doc_ratio": 1.0, "driver_MB_ratio": 1.0, "worker_MB_ratio": 1.5}
    assert got["extract"]["time_per_doc_ratio"] == 1.3 and got["extract"]["driver_MB_ratio"] == 3.0


def test_scaling_has_no_ratio_where_the_smallest_size_has_no_base():
    """A stage that ran in the driver alone at the smallest size has no worker peak to divide by."""
    rows = [_row("ingest", 1_000, 5.0, 9.0, 400, 0), _row("ingest", 3_000, 15.0, 27.0, 400, 500),
            _row("tokenizer", 1_000, 0.0, 0.0, 100, 0), _row("tokenizer", 3_000, 0.0, 0.0, 100, 0)]
    got = {r["stage"]: r for r in scale.scaling(rows)}
    assert got["ingest"]["worker_MB_ratio"] is None and got["ingest"]["time_per_doc_ratio"] == 1.0
    assert got["tokenizer"]["time_per_doc_ratio"] is None and got["tokenizer"]["driver_MB_ratio"] == 1.0


def test_the_projection_spreads_only_the_task_time_over_workers():
    """extract at 10,000 documents: 100 s, of which 160 task-seconds on 2 workers → 20 s in the driver.
    36,000 documents on 4 workers: 3.6 × (20 + 160 / 4) = 216 s; ingest all tasks: 3.6 × 40 / 4."""
    rows = [_row("extract", 10_000, 100.0, 160.0, 0, 0), _row("ingest", 10_000, 20.0, 40.0, 0, 0),
            _row("extract", 1_000, 1.0, 1.0, 0, 0)]
    (proj,) = scale.projection(rows, 36_000, workers_measured=2, workers=[4])
    assert proj["from"] == 10_000 and proj["workers"] == 4
    assert proj["hours"] == round((216 + 36) / 3600, 1)
    (one,) = scale.projection(rows, 36_000_000, workers_measured=2, workers=[1000])
    assert one["hours"] == round(3600 * (20 + 0.16 + 0.04) / 3600, 1)


def test_the_projection_charges_the_serial_work_per_document_and_the_tail_once():
    """extract at 10,000 documents: 100 s, 90 of them in its task phases (160 task-seconds on 2
    workers: 80 s of work, a 10 s tail) and 10 s in the driver alone; its mean task is 8 s.
    3.6M documents on 4 workers: 360 × (10 + 160 / 4) + 8 = 18,008 s (5.0 h), where charging the
    tail per document (rows without phase seconds) gives 360 × (20 + 40) = 21,600 s (6.0 h)."""
    rows = [{**_row("extract", 10_000, 100.0, 160.0, 0, 0), "phase_s": 90.0, "tail_s": 8.0},
            _row("extract", 1_000, 1.0, 1.0, 0, 0)]
    (proj,) = scale.projection(rows, 3_600_000, workers_measured=2, workers=[4])
    assert proj["hours"] == 5.0
    old = [{k: v for k, v in r.items() if k not in ("phase_s", "tail_s")} for r in rows]
    assert scale.projection(old, 3_600_000, workers_measured=2, workers=[4])[0]["hours"] == 6.0
    (many,) = scale.projection(rows, 36_000_000, workers_measured=2, workers=[1000])
    assert many["hours"] == round((3600 * (10 + 0.16) + 8) / 3600, 1) == 10.2


@pytest.mark.slow
def test_the_scale_benchmark_on_the_demo_run(demo_run, tmp_path):
    out = tmp_path / "scale.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"),
                          "--config", "configs/demo.yaml", "--texts", "data/demo/corpus.jsonl", "--reference", str(demo_run[0]),
                          "--sizes", "20", "70", "--modes", "gold", "--scheduler", "synchronous",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = report["rows"]
    assert [(r["documents"], r["stage"]) for r in rows] == [(n, s) for n in (20, 70) for s in scale.STAGES]
    ingest = {r["documents"]: r for r in rows if r["stage"] == "ingest"}
    assert ingest[20]["outputs"] == "documents=20" and ingest[70]["outputs"] == "documents=70"
    extract = [r for r in rows if r["stage"] == "extract"]
    assert all(int(r["outputs"].split(",")[0].split("=")[1]) > 0 for r in extract)   # triples
    assert all(r["driver_MB"] > 50 and r["stage_s"] > 0 for r in rows)
    assert len(report["scaling"]) == len(scale.STAGES) and len(report["projection"]) == 3
