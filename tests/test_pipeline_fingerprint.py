"""Caches notice code changes (issue 14): every stage's config hash and shard ids include a
fingerprint of the source it runs, and the manifest records it."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines import fingerprint
from pipelines.cli import app
from pipelines.scheduler import SchedulerError, check_workers
from pipelines.stage import Stage
from pipelines.stages import STAGES
from pipelines.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
TO_GRAPHS = ("ingest", "tokenizer", "chunks", "graphs")


def manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


def status(run_dir: Path) -> dict[str, str]:
    return {s: manifest(run_dir, s)["status"] for s in TO_GRAPHS}


@pytest.fixture(autouse=True)
def _fresh_fingerprints():
    fingerprint.clear_cache()
    yield
    fingerprint.clear_cache()


# --------------------------------------------------------------------------------------------------
# What a fingerprint covers
# --------------------------------------------------------------------------------------------------


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_fingerprint_follows_imports_and_changes_with_their_source(tmp_path, monkeypatch):
    """A stage module outside the library imports fakelib.a, whose function imports .b lazily;
    fakelib.c is imported by nobody, fakelib.sub.d only as ``from fakelib.sub import d``."""
    _write(tmp_path, "fakelib/__init__.py", "VERSION = 1\n")
    _write(tmp_path, "fakelib/a.py", """
        from fakelib.sub import d
        def f():
            from . import b
            return b.g() + d.h()
    """)
    b = _write(tmp_path, "fakelib/b.py", "def g():\n    return 1\n")
    c = _write(tmp_path, "fakelib/c.py", "X = 1\n")
    _write(tmp_path, "fakelib/sub/__init__.py", "")
    _write(tmp_path, "fakelib/sub/d.py", """
        import os
        try:
            from ..optional import thing         # names no module here: left out
        except ImportError:
            thing = None
        def h():
            return 2
    """)
    _write(tmp_path, "fake_stage.py", "import json\nfrom fakelib.a import f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(fingerprint, "FOLLOWED", ("fakelib",))
    for name in ("fake_stage", "fakelib", "fakelib.a", "fakelib.sub", "fakelib.sub.d"):
        monkeypatch.delitem(sys.modules, name, raising=False)      # removed again after the test
    __import__("fake_stage")

    closure = fingerprint.module_closure("fake_stage")
    assert list(closure) == ["fake_stage", "fakelib", "fakelib.a", "fakelib.b", "fakelib.sub",
                             "fakelib.sub.d"]
    assert closure["fakelib.b"] == b
    before = fingerprint.module_fingerprint("fake_stage")
    assert fingerprint.module_fingerprint("fake_stage") == before           # stable

    c.write_text("X = 2\n")                                                  # not imported
    fingerprint.clear_cache()
    assert fingerprint.module_fingerprint("fake_stage") == before
    b.write_text("def g():\n    return 10\n")                               # imported lazily
    assert fingerprint.module_fingerprint("fake_stage") == before            # cached per process
    fingerprint.clear_cache()
    assert fingerprint.module_fingerprint("fake_stage") != before
    with pytest.raises(ValueError, match="no source file for module 'no_such_module'"):
        fingerprint.module_closure("no_such_module")


def test_code_drops_docstrings_comments_and_blank_lines_and_keeps_every_other_string(tmp_path):
    src = _write(tmp_path, "m.py", '''
        """Module doc, with # no comment."""
        import os  # a comment

        X = "a # kept: a string"
        Y = """not a docstring
        # kept: inside a string
        """


        class C:
            """Class doc."""

            def f(self):
                """Method doc
                on two lines."""
                return "é"  # comment after a non-ASCII string
        def g(): "é doc"; return 1
        def h():
            if True:
                def inner():
                    "inner doc"
                    return 2
            return "doc-like but second"
    ''')
    code = fingerprint.code_of(src).decode()
    assert not any(doc in code for doc in ("Module doc", "Class doc", "Method doc", "on two lines", "é doc",
                                           "inner doc", "comment"))
    assert 'X = "a # kept: a string"' in code and "# kept: inside a string" in code
    assert '        return "é"\ndef g(): ; return 1' in code
    assert "\n\n" not in code and not any(line != line.rstrip() for line in code.splitlines())


def test_a_docstring_or_comment_edit_keeps_the_fingerprint_and_a_code_edit_does_not(tmp_path, monkeypatch):
    _write(tmp_path, "fakedoc/__init__.py", "")
    mod = _write(tmp_path, "fakedoc/m.py", '''
        """Doc."""
        def f():
            """Doc of f."""
            return "text"  # why
    ''')
    _write(tmp_path, "fake_doc_stage.py", "from fakedoc.m import f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(fingerprint, "FOLLOWED", ("fakedoc",))
    monkeypatch.delitem(sys.modules, "fake_doc_stage", raising=False)
    __import__("fake_doc_stage")

    def after(text: str) -> str:
        mod.write_text(textwrap.dedent(text))
        fingerprint.clear_cache()
        return fingerprint.module_fingerprint("fake_doc_stage")

    before = fingerprint.module_fingerprint("fake_doc_stage")
    assert after('''
        """Another doc, longer, citing docs/X.md."""

        def f():
            """Doc of f, rewritten."""
            # a new comment
            return "text"
    ''') == before
    assert after('''
        """Doc."""
        def f():
            """Doc of f."""
            return "other text"
    ''') != before


def test_a_help_text_is_not_code_but_a_default_or_a_bound_is(tmp_path):
    """A config key's ``help=`` (printed by ``graphmert info --keys`` only) is left out of the code
    a fingerprint reads; the other arguments of the same call are not."""
    def code(text: str) -> bytes:
        return fingerprint.code_of(_write(tmp_path, "cfg.py", text))

    base = code('''
        x: int = opt(3, min=1, help="how many; "   # why three
                                    "the second line")
        y: str = opt("a", help=f"{X} stays: an f-string is code")
    ''')
    assert b"how many" not in base and b"second line" not in base and b"f-string is code" in base
    assert code('''
        x: int = opt(3, min=1, help="how many, reworded over "
                                    "two lines")
        y: str = opt("a", help=f"{X} stays: an f-string is code")
    ''') == base
    for call, same in (("opt(3, min=1,", True), ("opt(4, min=1,", False), ("opt(3, min=2,", False),
                       ("opt(3, max=1,", False)):
        assert (code(f'''
            x: int = {call} help="how many; "
                                        "the second line")
            y: str = opt("a", help=f"{{X}} stays: an f-string is code")
        ''') == base) is same, call


CONFIG_MODULE = textwrap.dedent('''
    import dataclasses
    from dataclasses import dataclass
    from typing import ClassVar
    LIMIT = 3
    @dataclass
    class A:
        """Doc."""
        x: int = opt(3, min=1, help="how many")   # why three
        y: str = opt("a", help="which "
                     "one")  # why a
        def twice(self) -> int:
            return 2 * self.x * LIMIT
    @dataclasses.dataclass(frozen=True)
    class B:
        z: float = 1.0; w: int = 2
        kind: ClassVar[str] = "b"
    class Plain:
        n: int = 4
    @dataclass
    class C: k: int = 1
''')


def test_in_a_config_module_a_dataclass_field_is_a_value_and_the_rest_is_code(tmp_path):
    """``code_of(fields=False)``, as the fingerprint reads ``graphmert.config``: a new field, a
    changed default, bound or type of a dataclass field leave the code alone (the stages' config hash
    holds the resolved values); a constant, a method, a ``ClassVar`` or another class's attribute do not."""
    path = tmp_path / "cfg.py"

    def code(text: str = CONFIG_MODULE, fields: bool = False, **edits: str) -> bytes:
        for old, new in edits.items():
            assert old in text, old
            text = text.replace(old, new)
        path.write_text(textwrap.dedent(text))
        return fingerprint.code_of(path, fields=fields)

    base = code()
    assert b"LIMIT = 3" in base and b"return 2 * self.x * LIMIT" in base and b"n: int = 4" in base
    assert b'kind: ClassVar[str] = "b"' in base
    assert not any(s in base for s in (b"x: int", b"opt(", b"z: float", b"w: int", b"k: int", b"why"))
    assert code(fields=True) != base and b"x: int = opt(3, min=1, help=)" in code(fields=True)
    assert code() == base                              # the two are cached apart
    same = {"new field": {'    """Doc."""\n': '    """Doc."""\n    v: bool = opt(True, help="new")\n'},
            "default": {"opt(3, min=1,": "opt(4, min=1,"}, "bound": {"opt(3, min=1,": "opt(3, min=2,"},
            "type": {"x: int": "x: float"}, "line": {'help="which "\n': 'help="which "  # a comment\n'},
            "two fields": {"z: float = 1.0; w: int = 2": "z: float = 2.0; w: int = 3; u: int = 4"},
            "one-line class": {"class C: k: int = 1": "class C: k: int = 2"}}
    for what, edits in same.items():
        assert code(**edits) == base, what
    other = {"constant": {"LIMIT = 3": "LIMIT = 4"}, "method": {"2 * self.x": "3 * self.x"},
             "class variable": {'= "b"': '= "c"'}, "plain class": {"n: int = 4": "n: int = 5"},
             "decorator": {"(frozen=True)": "(frozen=False)"}}
    for what, edits in other.items():
        assert code(**edits) != base, what
    assert code(**same["new field"], fields=True) != code(fields=True)      # outside graphmert.config


def test_only_the_packages_named_values_leave_their_fields_out_of_a_fingerprint(tmp_path, monkeypatch):
    """A fake config package named in ``fingerprint.VALUES``: a new field or default changes neither
    the stage's fingerprint nor the module's digest (but does change what workers compare); a constant
    does, and so does a field once the package is not named."""
    _write(tmp_path, "fakecfg/__init__.py", "from fakecfg.sec import Sec\n")
    sec = _write(tmp_path, "fakecfg/sec.py", CONFIG_MODULE)
    _write(tmp_path, "fake_cfg_stage.py", "def run():\n    import fakecfg\n")     # not imported here
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(fingerprint, "FOLLOWED", ("fakecfg",))
    monkeypatch.delitem(sys.modules, "fake_cfg_stage", raising=False)
    __import__("fake_cfg_stage")

    def prints(text: str, values: tuple[str, ...] = ("fakecfg",)) -> tuple[str, dict[str, str], str]:
        sec.write_text(textwrap.dedent(text))
        monkeypatch.setattr(fingerprint, "VALUES", values)
        fingerprint.clear_cache()
        return (fingerprint.module_fingerprint("fake_cfg_stage"), fingerprint.module_digests("fake_cfg_stage"),
                fingerprint.package_fingerprint())

    before = prints(CONFIG_MODULE)
    added = prints(CONFIG_MODULE.replace("x: int = opt(3,", "x: int = opt(5,").replace(
        "class B:\n", "class B:\n    q: int = 1\n    r: list = opt(factory=list)\n"))
    assert added[:2] == before[:2]
    assert added[2] != before[2]                  # what workers compare is the raw source
    constant = prints(CONFIG_MODULE.replace("LIMIT = 3", "LIMIT = 4"))
    assert constant[0] != before[0] and fingerprint.changed_modules(before[1], constant[1]) == ["fakecfg.sec"]
    assert prints(CONFIG_MODULE, values=())[0] != before[0]          # its fields are code again
    assert prints(CONFIG_MODULE.replace("x: int = opt(3,", "x: int = opt(5,"), values=())[0] != \
        prints(CONFIG_MODULE, values=())[0]


def test_a_new_config_key_changes_only_the_config_hash_of_the_stages_that_declare_it(tmp_path, monkeypatch):
    """The real stages, on a copy of ``graphmert`` whose ``extract`` section gains a key and changes a
    default: no stage's code fingerprint changes; the config hash of ``extract`` (which declares the
    whole section) changes with the key's value and that of ``ner`` (which declares three of its keys)
    does not. A changed constant of the same module still changes every fingerprint."""
    import dataclasses
    import functools
    import shutil

    from graphmert.config import ExtractConfig
    from graphmert.config.loading import build

    real = {name: s.code_fingerprint for name, s in STAGES.items()}
    copy = tmp_path / "graphmert"                         # the fingerprints read it, not the real one
    shutil.copytree(ROOT / "graphmert", copy, ignore=shutil.ignore_patterns("__pycache__"))
    real_dir = fingerprint._package_dir
    monkeypatch.setattr(fingerprint, "_package_dir", functools.lru_cache(maxsize=None)(
        lambda top: copy if top == "graphmert" else real_dir(top)))

    def prints() -> dict[str, str]:
        fingerprint.clear_cache()
        return {name: fingerprint.module_fingerprint(s.run.__module__) for name, s in STAGES.items()}

    assert prints() == real
    extract = copy / "config" / "extract.py"
    assert fingerprint.module_closure("pipelines.stages.ner")["graphmert.config.extract"] == extract
    text = extract.read_text()
    assert "    top_k: int = opt(20, min=1," in text
    text = text.replace("    top_k: int = opt(20, min=1,", '    new_key: int = opt(7, min=1, help="new")\n'
                                                           "    top_k: int = opt(30, min=1,")
    extract.write_text(text)
    assert prints() == real
    extract.write_text(text.replace('TYPER_CHOICES = ("typer", "typer_score")',
                                    'TYPER_CHOICES = ("typer", "typer_score", "other")'))
    changed = prints()
    assert all(changed[name] != real[name] for name in STAGES), (changed, real)

    @dataclasses.dataclass
    class WithNewKey(ExtractConfig):
        new_key: int = 7

    cfg = build()
    new = dataclasses.replace(cfg, extract=WithNewKey(**vars(cfg.extract)))
    assert STAGES["extract"].config_hash(new) != STAGES["extract"].config_hash(cfg)
    assert STAGES["ner"].config_hash(new) == STAGES["ner"].config_hash(cfg)


def test_stage_fingerprints_cover_the_library_code_each_stage_runs():
    ingest = fingerprint.module_closure(STAGES["ingest"].run.__module__)
    extract = fingerprint.module_closure(STAGES["extract"].run.__module__)
    assert {"graphmert", "graphmert.config", "graphmert.corpus.readers.jsonl",
            "pipelines.stages.corpus"} <= set(ingest)
    assert not any(m.startswith(("graphmert.model", "graphmert.extract", "graphmert.train",
                                 "graphmert.kg")) for m in ingest)
    # lazily imported (inside a function) and through another stage module
    assert {"graphmert.extract.llm", "graphmert.model.graphmert", "pipelines.stages.corpus"} <= set(extract)
    for closure in (ingest, extract):        # the runner is in no fingerprint
        assert not {"pipelines", "pipelines.stage", "pipelines.scheduler", "pipelines.cli"} & set(closure)
    prints = {name: s.code_fingerprint for name, s in STAGES.items()}
    assert prints["ingest"] == prints["tokenizer"] == prints["chunks"]      # one module defines them
    assert len({prints[s] for s in ("ingest", "graphs", "train", "extract", "export", "evaluate")}) == 6
    assert all(len(p) == 16 for p in prints.values())


def test_the_recognizer_stage_follows_the_recognizer_not_the_model_nor_the_linker():
    """A change to the GraphMERT model, its training, the evaluation report or the linker's gene
    variants must not retrain the ``ner`` stage's recognizer (17 minutes on BioRED): what the
    recognizer reads (the document split, entity scores, the gene index of its dictionary flags)
    lives in modules that import none of them."""
    ner = set(fingerprint.module_closure(STAGES["ner"].run.__module__))
    link = set(fingerprint.module_closure(STAGES["link"].run.__module__))
    assert {"graphmert.ner.recognizer", "graphmert.corpus.fraction", "graphmert.eval.entities",
            "graphmert.ner.vocabularies.genes"} <= ner
    assert not any(m.startswith(("graphmert.model", "graphmert.train", "graphmert.graph", "graphmert.ner.linking"))
                   for m in ner)
    assert not {"graphmert.eval.report", "graphmert.eval.baselines", "graphmert.eval.losses",
                "graphmert.ner.vocabularies.gene_forms"} & ner
    assert "graphmert.ner.vocabularies.gene_forms" in link       # the linker asks the variants


def test_training_follows_the_graphs_it_reads_not_the_code_that_builds_them():
    """The model's training (the longest stage) reads built graphs: an edit to the graph builder,
    the seed-KG readers, lexicon, linking or injection, or the corpus readers reruns ``build-graphs``,
    and ``train`` only when the graphs it reads change."""
    train = set(fingerprint.module_closure(STAGES["train"].run.__module__))
    graphs = set(fingerprint.module_closure(STAGES["graphs"].run.__module__))
    assert {"graphmert.model.graphmert", "graphmert.train.trainer", "graphmert.graph.io",
            "graphmert.kg.schema"} <= train
    builder = {"graphmert.graph.builder", "graphmert.kg.loaders", "graphmert.kg.lexicon",
               "graphmert.kg.linking", "graphmert.kg.injection", "graphmert.corpus.readers",
               "graphmert.corpus.nlp"}
    assert not builder & train
    assert {"graphmert.graph.builder", "graphmert.kg.loaders", "graphmert.kg.injection"} <= graphs


def test_a_worker_running_other_code_is_refused(tmp_path):
    class Client:
        def __init__(self, code: str) -> None:
            self.code = code

        def run(self, fn, where, marker):
            return {"tcp://w:1": {"version": "0.1.0", "code": self.code, "sees_run_dir": True,
                                  "cwd": "/"}}

    store = RunStore(tmp_path / "run")
    assert check_workers(Client(fingerprint.package_fingerprint()), store, "the test cluster") == 1
    with pytest.raises(SchedulerError, match=r"worker tcp://w:1 runs other graphmert code .*"
                                             r"code fingerprint 0123456789abcdef"):
        check_workers(Client("0123456789abcdef"), store, "the test cluster")


# --------------------------------------------------------------------------------------------------
# A code change reruns its stage and what its outputs feed, nothing upstream
# --------------------------------------------------------------------------------------------------


def _edit_code(monkeypatch, *stages: str, tag: str) -> None:
    """As if the source of ``stages`` had been edited: their fingerprint changes."""
    real = Stage.code_fingerprint.fget
    monkeypatch.setattr(Stage, "code_fingerprint",
                        property(lambda self: f"edited-{tag}" if self.name in stages else real(self)))


def _demo_run(tmp_path: Path, documents: int, to: str, *overrides: str) -> tuple[Path, list[str]]:
    """(run directory, ``graphmert run`` arguments) for the demo config on its first ``documents``
    documents, up to the stage ``to``, synchronously."""
    lines = (ROOT / "data" / "demo" / "corpus.jsonl").read_text().splitlines()[:documents]
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    run_dir = tmp_path / "run"
    return run_dir, ["run", "--config", str(ROOT / "configs" / "demo.yaml"), "--run-dir", str(run_dir),
                     "--to", to, "--quiet", "--scheduler", "synchronous", f"corpus.paths=[{corpus}]",
                     "tokenizer.vocab_size=400", *overrides]


def test_a_code_change_reruns_its_stage_and_downstream_but_nothing_upstream(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    run_dir, args = _demo_run(tmp_path, 12, "graphs", "corpus.shard_size=4", "kg.min_relation_count=1")
    invoke = lambda: CliRunner().invoke(app, args)       # noqa: E731
    r = invoke()
    assert r.exit_code == 0, r.output
    assert set(status(run_dir).values()) == {"ran"}
    for s in TO_GRAPHS:
        m = manifest(run_dir, s)
        assert m["code_fingerprint"] == STAGES[s].code_fingerprint
        assert m["code_modules"] == STAGES[s].code_modules
    log = run_dir / "logs" / "graphmert.log"

    # the tokenizer's code changes but not its output (tokenizer.json, no shards): it alone reruns
    _edit_code(monkeypatch, "tokenizer", tag="tok1")
    size = len(log.read_text())
    r = invoke()
    assert r.exit_code == 0, r.output
    assert status(run_dir) == {"ingest": "skipped", "tokenizer": "ran", "chunks": "skipped",
                               "graphs": "skipped"}
    assert manifest(run_dir, "tokenizer")["code_fingerprint"] == "edited-tok1"
    assert "tokenizer: running (its code changed)" in log.read_text()[size:]

    # ... and now its output too: it and everything after it rerun, ingest does not
    from pipelines.stages import corpus as corpus_stages

    real_train = corpus_stages.train_tokenizer
    monkeypatch.setattr(corpus_stages, "train_tokenizer",
                        lambda texts, cfg: real_train(texts, type(cfg)(**{**vars(cfg), "vocab_size": 300})))
    _edit_code(monkeypatch, "tokenizer", tag="tok2")
    size = len(log.read_text())
    r = invoke()
    assert r.exit_code == 0, r.output
    assert status(run_dir) == {"ingest": "skipped", "tokenizer": "ran", "chunks": "ran", "graphs": "ran"}
    new_log = log.read_text()[size:]
    assert "chunks: running (its inputs changed)" in new_log and "ingest: up to date" in new_log
    r = invoke()                                            # the same code again: nothing runs
    assert r.exit_code == 0, r.output
    assert set(status(run_dir).values()) == {"skipped"}

    # pipelines/stages/corpus.py changes: ingest, tokenizer and chunks rerun and write the same bytes
    # under new shard ids; a shard counts in the output hash by its content and position, not its id,
    # so graphs, which reads those shards, stays up to date
    before = {s: manifest(run_dir, s) for s in ("ingest", "chunks")}
    _edit_code(monkeypatch, "ingest", "tokenizer", "chunks", tag="corpus")
    r = invoke()
    assert r.exit_code == 0, r.output
    assert status(run_dir) == {"ingest": "ran", "tokenizer": "ran", "chunks": "ran", "graphs": "skipped"}
    assert manifest(run_dir, "ingest")["code_fingerprint"] == "edited-corpus"
    for s, old in before.items():
        new = manifest(run_dir, s)
        assert not set(new["shards"]) & set(old["shards"]), s                    # renamed ...
        assert [e["sha256"] for e in new["shard_info"]] == [e["sha256"] for e in old["shard_info"]], s
        assert new["output_hash"] == old["output_hash"], s                       # ... the same output

    # only the graphs stage's code changes: it reruns (new shard ids), nothing upstream does
    before = manifest(run_dir, "graphs")
    _edit_code(monkeypatch, "graphs", tag="graphs")
    r = invoke()
    assert r.exit_code == 0, r.output
    assert status(run_dir) == {"ingest": "skipped", "tokenizer": "skipped", "chunks": "skipped",
                               "graphs": "ran"}
    after = manifest(run_dir, "graphs")
    assert after["code_fingerprint"] == "edited-graphs" != before["code_fingerprint"]
    assert after["config_hash"] != before["config_hash"]
    assert not set(after["shards"]) & set(before["shards"])
    assert after["tasks"]["graphs"]["reused"] == 0


def test_a_rerun_names_the_modules_whose_code_changed():
    """The manifest keeps each module's digest (``code_modules``), so the log says which edit made a
    stage rerun; a manifest written before them, or a fingerprint changed without a module's source
    (monkeypatched above), still says only that the code changed."""
    from pipelines.stage import _stale

    stage = STAGES["chunks"]
    mods = stage.code_modules
    assert mods == fingerprint.module_digests(stage.run.__module__)
    assert set(mods) == set(fingerprint.module_closure(stage.run.__module__))
    assert "graphmert.config.train" in mods and all(len(d) == 12 for d in mods.values())
    new = {"input_hash": "i", "config_hash": "c", "code_fingerprint": "new", "code_modules": mods}
    old = {**new, "code_fingerprint": "old",
           "code_modules": {**mods, "graphmert.config.train": "0" * 12, "graphmert.gone": "1" * 12}}
    assert _stale(old, new, Path("unused")) == "its code changed in graphmert.config.train, graphmert.gone"
    old["code_modules"] = {k: "0" * 12 for k in mods}
    assert _stale(old, new, Path("unused")).endswith(f" and {len(mods) - 3} more")
    del old["code_modules"]
    assert _stale(old, new, Path("unused")) == "its code changed"


def test_a_command_stops_before_a_stage_once_the_code_changed_under_it(tmp_path, monkeypatch):
    """Source edited while a run goes: the stage that would import the new code next is refused with
    a clear error, the finished one is kept, and the same command then resumes."""
    from pipelines import cli

    monkeypatch.chdir(ROOT)
    run_dir, args = _demo_run(tmp_path, 6, "tokenizer")

    def edited_after_ingest() -> str:          # the source is edited once ingest has finished
        return "fedcba9876543210" if (run_dir / "ingest" / "manifest.json").exists() else "0123456789abcdef"

    monkeypatch.setattr(cli, "package_fingerprint", edited_after_ingest)
    r = CliRunner().invoke(app, args)
    assert r.exit_code != 0
    assert ("tokenizer: the graphmert code changed while this command ran (code fingerprint "
            "0123456789abcdef -> fedcba9876543210)") in r.output
    assert manifest(run_dir, "ingest")["status"] == "ran" and not (run_dir / "tokenizer" / "manifest.json").exists()

    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert manifest(run_dir, "ingest")["status"] == "skipped" and manifest(run_dir, "tokenizer")["status"] == "ran"
