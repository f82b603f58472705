"""The `graphmert` CLI and the run-directory contract (DESIGN §10) on a tiny corpus."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()

DOCS = [
    {"doc_id": "1", "title": "Metformin in type 2 diabetes.",
     "abstract": "Metformin lowers glucose in type 2 diabetes (T2D) patients. Insulin was unchanged.",
     "entities": [{"start": 0, "end": 9, "text": "Metformin", "type": "Chemical", "id": "D008687"},
                  {"start": 13, "end": 28, "text": "type 2 diabetes", "type": "Disease", "id": "D003924"}]},
    {"doc_id": "2", "title": "", "abstract": "Obesity raises TNF and IL6 levels. Weight loss lowers them.",
     "entities": [{"start": 15, "end": 18, "text": "TNF", "type": "Gene", "id": "7124"}]},
]


@pytest.fixture()
def corpus(tmp_path) -> Path:
    p = tmp_path / "docs.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    return p


def _invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def _args(corpus, run_dir):
    return ["--run-dir", run_dir, "--to", "chunks", f"corpus.paths=[{corpus}]", "tokenizer.vocab_size=120",
            "tokenizer.min_frequency=1", "graph.num_roots=16", "corpus.chunk_overlap=2", "--quiet"]


def test_ingest_tokenizer_chunks_and_skip(tmp_path, corpus):
    run_dir = tmp_path / "run"
    r = _invoke("run", *_args(corpus, run_dir))
    assert r.exit_code == 0, r.output
    ing = json.loads((run_dir / "ingest" / "manifest.json").read_text())
    assert (ing["documents"], ing["mentions"], ing["relations"]) == (2, 3, 0)
    assert ing["status"] == "ran" and ing["abbreviations"] == 1 and ing["sentences"] >= 4
    assert ing["source_files"][0]["documents"] == 2
    tok = json.loads((run_dir / "tokenizer" / "manifest.json").read_text())
    assert tok["vocab_size"] <= 120 and (run_dir / "tokenizer" / "tokenizer.json").exists()
    ch = json.loads((run_dir / "chunks" / "manifest.json").read_text())
    assert ch["chunks"] >= 3 and ch["documents"] == 2
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["graph"]["num_roots"] == 16 and saved["corpus"]["paths"] == [str(corpus)]
    assert (run_dir / "logs" / "graphmert.log").read_text().count("ingest: running") == 1

    # unchanged rerun: every stage skipped, outputs untouched
    shard = run_dir / "chunks" / ch["shards"][0]       # chunks-00000-<content id>.parquet
    before = shard.stat().st_mtime_ns
    r = _invoke("run", *_args(corpus, run_dir))
    assert r.exit_code == 0, r.output
    for stage in ("ingest", "tokenizer", "chunks"):
        assert json.loads((run_dir / stage / "manifest.json").read_text())["status"] == "skipped"
    assert shard.stat().st_mtime_ns == before

    # a chunking setting reruns chunks only
    r = _invoke("run", *_args(corpus, run_dir), "graph.num_roots=20")
    assert r.exit_code == 0, r.output
    status = {s: json.loads((run_dir / s / "manifest.json").read_text())["status"]
              for s in ("ingest", "tokenizer", "chunks")}
    assert status == {"ingest": "skipped", "tokenizer": "skipped", "chunks": "ran"}


def test_stage_needs_upstream(tmp_path):
    r = _invoke("chunks", "--run-dir", tmp_path / "empty")
    assert r.exit_code == 2
    assert "needs the output of stage 'ingest'" in r.output


def test_bad_override_and_config_errors(tmp_path, corpus):
    r = _invoke("ingest", "--run-dir", tmp_path / "r", "model.hiden_size=3")
    assert r.exit_code == 2 and "model.hiden_size: unknown key" in r.output
    r = _invoke("ingest", "--run-dir", tmp_path / "r")
    assert r.exit_code == 2 and "corpus.paths: no input given" in r.output
    r = _invoke("run", "--run-dir", tmp_path / "r", "--from", "nope")
    assert r.exit_code == 2 and "unknown stage 'nope'" in r.output


def test_bad_input_leaves_no_stage_folder(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DOCS[0]) + "\n{broken json\n")
    run_dir = tmp_path / "run"
    r = _invoke("ingest", "--run-dir", run_dir, f"corpus.paths=[{bad}]", "--quiet")
    assert r.exit_code == 1                         # failed on its input: one line, no traceback
    assert "bad.jsonl" in r.output and "line 2" in r.output and "Traceback" not in r.output
    assert not (run_dir / "ingest").exists()
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".ingest")]
    r = _invoke("ingest", "--run-dir", run_dir, f"corpus.paths=[{bad}]", "--skip-bad-records", "--quiet")
    assert r.exit_code == 0, r.output
    m = json.loads((run_dir / "ingest" / "manifest.json").read_text())
    assert m["documents"] == 1 and m["skipped_records"] == 1


def test_info_and_help():
    r = _invoke("info", "--json", "model.hidden_size=64", "model.num_heads=4")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["config"]["model"]["hidden_size"] == 64 and "torch" in data["versions"]
    p = data["parameters"]
    assert p["total"] == p["embeddings"] + p["encoder"] + p["relations"] + p["heads"]
    assert p["num_relations"] == 0 and p["relations"] == 0 and p["per_relation"] == 64 * 64 + 2 * 64


def test_info_parameters_of_the_paper_config(tmp_path):
    root = Path(__file__).resolve().parents[1]
    # the demo KG alone (8 relations) instead of the config's shared KG + relation corpora, so the
    # count is exact without ../shared (tests/model/test_sbo_decoder.py pins the shared case)
    r = _invoke("info", "--json", "--config", root / "configs" / "graphmert-80m.yaml", "kg.path=null",
                "kg.relation_files=[]",
                f"kg.nodes=[{root / 'data/demo/kg_nodes.tsv'}]", f"kg.edges=[{root / 'data/demo/kg_edges.tsv'}]")
    assert r.exit_code == 0, r.output
    p = json.loads(r.output)["parameters"]
    assert p["vocab_size"] == 30522 and p["num_relations"] == 8
    assert p["relations"] == 8 * p["per_relation"] == 8 * (512 * 512 + 2 * 512)
    # 12 post-LN layers of hidden 512 / FFN 2048 (+ one decay p per head)
    layer = 4 * (512 * 512 + 512) + 2 * 512 + (512 * 2048 + 2048) + (2048 * 512 + 512) + 2 * 512
    assert p["encoder"] == 12 * layer + 8
    assert p["total"] == 70_729_340 + 8 * 263_168       # untied SBO decoder: configs/graphmert-80m.yaml
    for cmd in ("ingest", "tokenizer", "chunks", "run", "info"):
        h = _invoke(cmd, "--help")
        assert h.exit_code == 0 and "--config" in h.output


# --------------------------------------------------------------------------------------------------
# Exit codes, tracebacks, --quiet, --version, info --keys (issue 14)
# --------------------------------------------------------------------------------------------------


def _ingested(tmp_path, corpus) -> Path:
    run_dir = tmp_path / "run"
    r = _invoke("ingest", "--run-dir", run_dir, f"corpus.paths=[{corpus}]", "--quiet")
    assert r.exit_code == 0, r.output
    return run_dir


def _tokenizer_raises(monkeypatch, exc: BaseException) -> None:
    from pipelines.stages import STAGES

    def broken_tokenizer_stage(ctx):
        raise exc

    monkeypatch.setattr(STAGES["tokenizer"], "run", broken_tokenizer_stage)


def test_ctrl_c_exits_130_and_keeps_finished_stages(tmp_path, corpus, monkeypatch):
    run_dir = _ingested(tmp_path, corpus)
    _tokenizer_raises(monkeypatch, KeyboardInterrupt())
    r = _invoke("tokenizer", "--run-dir", run_dir, f"corpus.paths=[{corpus}]")
    assert r.exit_code == 130, r.output
    assert "tokenizer: interrupted" in r.output and "the same command resumes" in r.output
    assert (run_dir / "ingest" / "manifest.json").exists() and not (run_dir / "tokenizer").exists()
    assert "tokenizer: interrupted (Ctrl-C)" in (run_dir / "logs" / "graphmert.log").read_text()


def test_an_unexpected_exception_exits_1_with_its_traceback_in_the_log(tmp_path, corpus, monkeypatch):
    run_dir = _ingested(tmp_path, corpus)
    _tokenizer_raises(monkeypatch, ZeroDivisionError("boom"))
    r = _invoke("run", "--run-dir", run_dir, f"corpus.paths=[{corpus}]", "--to", "tokenizer")
    assert r.exit_code == 1, r.output
    log_path = run_dir / "logs" / "graphmert.log"
    assert "error: tokenizer: unexpected ZeroDivisionError: boom" in r.output
    assert f"the full traceback is in {log_path}" in r.output
    assert "Traceback" not in r.output                  # the console keeps one line
    log = log_path.read_text()
    assert "ERROR graphmert.cli: tokenizer: unexpected ZeroDivisionError: boom" in log
    assert "Traceback (most recent call last)" in log and "in broken_tokenizer_stage" in log
    assert log.count("ZeroDivisionError: boom") == 2    # the line, and the traceback's last line


def test_an_exception_s_notes_follow_its_message(tmp_path, corpus, monkeypatch):
    """The record a loop was at (graphmert.errors.noting adds it as a note) ends the console line,
    for a bug and for an expected error alike."""
    from graphmert.errors import GraphmertError, noting

    run_dir = _ingested(tmp_path, corpus)
    for error, said in ((ZeroDivisionError("boom"), "unexpected ZeroDivisionError: boom (document 7)"),
                        (GraphmertError("no ids"), "error: tokenizer: no ids (document 7)")):
        try:
            with noting("document 7"):
                raise error
        except Exception as e:          # noqa: BLE001
            noted = e
        _tokenizer_raises(monkeypatch, noted)
        r = _invoke("tokenizer", "--run-dir", run_dir, f"corpus.paths=[{corpus}]")
        assert r.exit_code == 1 and said in r.output, r.output


def test_an_os_error_exits_1_with_its_message_and_the_traceback_in_the_log(tmp_path, corpus,
                                                                            monkeypatch):
    run_dir = _ingested(tmp_path, corpus)
    _tokenizer_raises(monkeypatch, PermissionError(13, "Permission denied", "/no/such/place"))
    r = _invoke("tokenizer", "--run-dir", run_dir, f"corpus.paths=[{corpus}]")
    assert r.exit_code == 1, r.output
    assert "error: tokenizer: [Errno 13] Permission denied: '/no/such/place'" in r.output
    assert "unexpected" not in r.output and "the full traceback is in" in r.output
    assert "in broken_tokenizer_stage" in (run_dir / "logs" / "graphmert.log").read_text()


def _plugin_error(msg: str) -> Exception:
    from graphmert.errors import GraphmertError

    class PluginError(GraphmertError):
        """An expected error of code outside the library: the base class alone decides."""

    return PluginError(msg)


@pytest.mark.parametrize("make_error", [
    lambda msg: __import__("graphmert.kg.graph", fromlist=["KGError"]).KGError(msg),
    lambda msg: __import__("graphmert.train.trainer", fromlist=["x"]).TrainingDiverged(msg),
    _plugin_error], ids=["KGError", "TrainingDiverged", "a GraphmertError subclass"])
def test_a_stage_failing_on_its_input_exits_1_with_one_line(tmp_path, corpus, monkeypatch, make_error):
    run_dir = _ingested(tmp_path, corpus)
    _tokenizer_raises(monkeypatch, make_error("kg.nodes: x.tsv line 3: no id"))
    r = _invoke("tokenizer", "--run-dir", run_dir, f"corpus.paths=[{corpus}]")
    assert r.exit_code == 1, r.output
    assert "error: tokenizer: kg.nodes: x.tsv line 3: no id" in r.output
    assert "traceback" not in r.output.lower()
    log = (run_dir / "logs" / "graphmert.log").read_text()
    assert "tokenizer: kg.nodes: x.tsv line 3: no id" in log and "Traceback" not in log


def test_quiet_prints_only_output_paths(tmp_path, corpus):
    run_dir = tmp_path / "run"
    r = _invoke("run", *_args(corpus, run_dir))                             # --quiet
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [str(run_dir)]
    r = _invoke("chunks", "--run-dir", run_dir, f"corpus.paths=[{corpus}]", "tokenizer.vocab_size=120",
                "tokenizer.min_frequency=1", "graph.num_roots=16", "corpus.chunk_overlap=2", "--quiet")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [str(run_dir / "chunks")]
    loud = _invoke("chunks", "--run-dir", run_dir, f"corpus.paths=[{corpus}]", "tokenizer.vocab_size=120",
                   "tokenizer.min_frequency=1", "graph.num_roots=16", "corpus.chunk_overlap=2")
    assert loud.exit_code == 0 and "chunks [skipped] chunks=" in loud.stdout


def test_version():
    from graphmert import __version__
    from pipelines.fingerprint import package_fingerprint

    r = _invoke("--version")
    assert r.exit_code == 0
    assert r.stdout.strip() == f"graphmert {__version__} (code fingerprint {package_fingerprint()})"


def test_info_keys_lists_every_key_with_default_and_help():
    from graphmert.config import describe

    rows = describe()
    r = _invoke("info", "--keys")
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stdout.splitlines() if x and not x.startswith("#")]
    assert [x.split("=", 1)[0] for x in lines] == [k for k, *_ in rows]
    assert "graph.num_roots=128  (int)  " in r.stdout
    assert "corpus.paths=[]  (list[str])  corpus files or folders" in r.stdout
    assert "tokenizer.path=null  (Optional[str])  " in r.stdout
    data = json.loads(_invoke("info", "--keys", "--json").stdout)
    assert [(d["key"], d["type"], d["default"], d["help"]) for d in data] == \
        [(k, t, json.loads(json.dumps(d, default=str)), h) for k, t, d, h in rows]


@pytest.mark.parametrize("command", ["ingest", "tokenizer", "chunks", "build-graphs", "train", "extract",
                                     "export", "report", "evaluate", "run"])
def test_every_stage_command_takes_scheduler(tmp_path, command):
    r = _invoke(command, "--run-dir", tmp_path / "run", "--scheduler", "bogus")
    assert r.exit_code == 2 and "--scheduler: 'bogus' is not a scheduler" in r.output, r.output


def test_help_paragraphs_wrap_at_the_terminal_not_at_the_docstring():
    """A command's help after its first paragraph is reflowed: a docstring line break inside a
    paragraph would show in a terminal of any width; list lines keep theirs. The command list puts
    what a user starts from before the stages."""
    from pipelines.cli import reflow

    wide = CliRunner(env={"COLUMNS": "300"})
    out = wide.invoke(app, ["update", "--help"]).stdout
    assert "their evidence merges into existing edges and confidences are recomputed." in out
    out = wide.invoke(app, ["run", "--help"]).stdout
    assert "everything downstream; an interrupted run resumes" in out
    assert reflow("Title.\n\n    One\n    two.\n\n    - a\n    - b\n") == "Title.\n\nOne two.\n\n- a\n- b"
    out = wide.invoke(app, ["--help"]).stdout               # user commands first, then the stages in run order
    names = ("│ run ", "│ serve ", "Stages, one at a time", "│ ner ", "│ ingest ", "│ train ", "│ extract ",
             "│ evaluate ")
    at = [out.index(s) for s in names]
    assert at == sorted(at)


def test_docs_quote_overrides_with_brackets():
    """zsh globs an unquoted ``corpus.paths=[a.txt]``: every such example is quoted."""
    import re

    root = Path(__file__).resolve().parents[1]
    unquoted = re.compile(r"(?<![\w.'\"])[a-z_]+\.[a-z_.]+=[\[{]")
    texts = {str(p.relative_to(root)): p.read_text(encoding="utf-8")
             for p in [root / "README.md", *(root / "docs").glob("*.md"), *(root / "configs").rglob("*.yaml")]}
    texts |= {f"graphmert {c} --help": _invoke(c, "--help").stdout
              for c in ("ingest", "run", "export", "evaluate", "info")}
    bad = [f"{where}: {m.group(0)}" for where, text in texts.items() for m in unquoted.finditer(text)]
    assert not bad


# --------------------------------------------------------------------------------------------------
# Startup: --help and --version import no stage module (torch, spaCy)
# --------------------------------------------------------------------------------------------------


def _heavy_modules_after(code: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of ``heavy`` a fresh interpreter has imported after running ``code``."""
    import subprocess
    import sys

    script = f"import sys\n{code}\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.splitlines()[-1])


def test_help_and_version_import_no_stage_module():
    code = ("from pipelines.cli import main\n"
            "for argv in (['--version'], ['--help'], ['train', '--help'], ['run', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit as e:\n        assert not e.code, (argv, e.code)")
    heavy = ("torch", "spacy", "dask", "pipelines.stages.corpus", "pipelines.stages.train")
    assert _heavy_modules_after(code, heavy) == []


def test_a_stage_command_imports_its_own_stage_module_only():
    """`graphmert tokenizer` (and the other corpus stages) starts without torch: the CLI imports the
    command's stage module, not the whole stage table; the export module (its shard tasks run on
    workers) does not import torch either."""
    code = ("from pipelines.cli import _stage\nassert _stage('tokenizer').name == 'tokenizer'\n"
            "import pipelines.stages.export")
    heavy = ("torch", "pipelines.stages.extract", "pipelines.stages.train")
    assert _heavy_modules_after(code, heavy) == []


def test_the_catalog_describes_every_stage():
    """The CLI's commands and help come from pipelines.stages.CATALOG; the Stage objects agree."""
    from pipelines.stages import CATALOG, STAGES

    assert list(CATALOG) == list(STAGES)
    for name, entry in CATALOG.items():
        stage = STAGES[name]
        assert (stage.name, stage.cli_name, stage.help) == (entry.name, entry.cli_name, entry.help)
        assert entry.help and entry.module in stage.run.__module__
        text = " ".join(_invoke(entry.cli_name, "--help").stdout.replace("│", " ").split())
        assert " ".join(entry.help.split()[:6]) in text, (name, text[:300])


def test_info_of_a_run_describes_the_run_not_the_defaults(tmp_path):
    """``info --run-dir RUN`` reads the config RUN's stages ran with (it counted the defaults' 12-layer
    model against a run's tiny one); ``--config`` and overrides still win."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("model: {hidden_size: 32, num_heads: 2, num_layers: 1}\n")
    data = json.loads(_invoke("info", "--json", "--run-dir", run).stdout)
    assert data["config"]["model"]["hidden_size"] == 32 and data["config"]["model"]["num_layers"] == 1
    r = _invoke("info", "--run-dir", run, "model.hidden_size=64")
    assert r.exit_code == 0, r.output
    assert f"# resolved config: {run / 'config.yaml'}, with the overrides" in r.output
    assert "hidden_size: 64" in r.output
    other = tmp_path / "other.yaml"
    other.write_text("model: {hidden_size: 48, num_heads: 2}\n")
    data = json.loads(_invoke("info", "--json", "--run-dir", run, "--config", other).stdout)
    assert data["config"]["model"]["hidden_size"] == 48
    assert "# resolved config: the defaults\n" in _invoke("info").output


def test_a_missing_input_file_is_one_line_naming_it_and_writes_no_stage_output(tmp_path, monkeypatch):
    """A mistyped path stops the stage before anything is written, on one line with the file and the
    folder relative paths are read from (it was a bare FileNotFoundError with a traceback)."""
    monkeypatch.chdir(tmp_path)
    r = _invoke("ingest", "--run-dir", tmp_path / "run", "corpus.paths=[nope.jsonl]", "--quiet")
    assert r.exit_code == 1, r.output
    assert f"ingest: input not found: nope.jsonl (a path the config gives this stage; a relative path is read " \
           f"from {tmp_path})" in r.output
    assert "traceback" not in r.output.lower()
    assert not (tmp_path / "run" / "ingest").exists()


def test_a_missing_input_stops_a_run_and_its_dry_run_before_the_first_stage(tmp_path, monkeypatch):
    """``graphmert run`` checks every stage's input files first: a mistyped corpus path used to stop
    the run at ingest, after the recognizer had trained on ``ner.paths``. A dry run of a fresh run
    directory fails the same way (it used to say every stage would run)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "annotated.txt").write_text("1|t|BRCA1 in breast cancer\n\n")
    args = ("--run-dir", tmp_path / "run", "ner.paths=[annotated.txt]", "corpus.paths=[nope.jsonl]", "--quiet")
    for extra in ((), ("--dry-run",)):
        r = _invoke("run", *args, *extra)
        assert r.exit_code == 1, r.output
        assert "ingest: input not found: nope.jsonl (a path the config gives this stage" in r.output
        assert not (tmp_path / "run").exists()                        # the ner stage never started


def test_the_raw_text_stages_say_they_are_off_without_ner_paths(tmp_path, corpus):
    """Without ``ner.paths`` the ner and link stages do nothing; the console says so rather than a
    bare "[ran]" (a newcomer's demo showed both as run in 0.0 s)."""
    r = _invoke("run", *[a for a in _args(corpus, tmp_path / "run") if a != "--quiet"])
    assert r.exit_code == 0, r.output
    for name in ("ner", "link"):
        assert f"{name} [ran] off: ner.paths is empty (documents keep their own mentions)" in r.stdout
    assert "chunks [ran] chunks=" in r.stdout


def test_dry_run_says_which_stages_would_run_and_why_and_writes_nothing(tmp_path, corpus):
    run_dir = tmp_path / "run"
    args = [a for a in _args(corpus, run_dir) if a != "--quiet"]
    assert _invoke("run", *args, "--quiet").exit_code == 0

    def plan(*extra) -> dict[str, str]:
        before = {p: p.read_bytes() for p in run_dir.rglob("manifest.json")}
        r = _invoke("run", *args, "--dry-run", *extra)
        assert r.exit_code == 0, r.output
        assert {p: p.read_bytes() for p in run_dir.rglob("manifest.json")} == before      # nothing touched
        assert r.stdout.splitlines()[-1] == f"run directory: {run_dir} (nothing was run)"
        return dict(line.split(maxsplit=1) for line in r.stdout.splitlines()[:-1])

    assert plan() == {s: "up to date: skipped" for s in ("ner", "link", "ingest", "tokenizer", "chunks")}
    got = plan("corpus.chunk_overlap=3")
    assert got["ingest"] == "up to date: skipped" and got["chunks"] == "would run: its config changed"
    got = plan("tokenizer.vocab_size=130")
    assert got["tokenizer"] == "would run: its config changed"
    assert got["chunks"] == "may run: after tokenizer (if its output changes)"
    assert plan("--force", "ingest")["ingest"] == "would run: forced"
    fresh = _invoke("run", *[a if a != run_dir else tmp_path / "new" for a in args], "--dry-run")
    assert "chunks  would run: no earlier output" in fresh.stdout and not (tmp_path / "new").exists()
    remote = _invoke("run", *[a if a != run_dir else "memory://runs/x" for a in args], "--dry-run")
    assert remote.exit_code == 2 and "--dry-run reads a local run directory; memory://runs/x is a URL" \
        in remote.output
