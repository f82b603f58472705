"""The README's quickstart as a newcomer runs it: every command of its ``<!-- quickstart: NAME -->``
blocks, on the demo data those blocks name, with the run folders they write moved into a scratch
folder. The default suite shortens the model's training (:data:`SHORT`, appended to each
``graphmert run``), not the recognizer's; the ``slow`` variant runs the commands as written."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SCRATCH = "runs/"                   # where the quickstart writes, relative to the repository
SHORT = ["model.hidden_size=32", "model.num_layers=1", "model.num_heads=2", "model.intermediate_size=64",
         "train.max_steps=4", "train.eval_every=2", "train.checkpoint_every=2",
         "--scheduler", "synchronous"]       # the recognizer trains as configured: about a minute


def quickstart(name: str, text: str | None = None) -> list[list[str]]:
    """The commands of the README block after ``<!-- quickstart: name -->``, each as its words
    (backslash-continued lines joined, comments dropped)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    m = re.search(r"<!--\s*quickstart:\s*" + re.escape(name) + r"\s*-->\s*```bash\n(.*?)```", text, re.S)
    assert m, f"README.md has no ```bash block after <!-- quickstart: {name} -->"
    lines = m.group(1).replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if shlex.split(line, comments=True)]


def _moved(word: str, scratch: Path) -> str:
    """``word`` with a ``runs/…`` path (bare or inside an override) under ``scratch``."""
    return re.sub(r"(^|[=\[,])" + re.escape(SCRATCH), lambda m: m.group(1) + f"{scratch}/{SCRATCH}", word)


def run_commands(commands: list[list[str]], scratch: Path, short: bool) -> list[str]:
    """Run each ``graphmert`` command from the repository root, in-process (as the installed script
    would); the outputs, in order."""
    outputs = []
    for words in commands:
        words = [_moved(w, scratch) for w in words]
        assert words[0] == "graphmert", f"README quickstart: {words[0]!r} is not a graphmert command"
        args = words[1:] + (SHORT if short and words[1] == "run" else [])
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, f"{shlex.join(words)}:\n{r.output}"
        outputs.append(r.output)
    return outputs


def test_quickstart_parser_joins_continued_lines_and_drops_comments():
    text = ("<!-- quickstart: x -->\n```bash\ngraphmert run --run-dir runs/a \\\n  'corpus.paths=[b c.txt]'"
            "   # note\n\ngraphmert query --run-dir runs/a q.rq\n```\n")
    assert quickstart("x", text) == [["graphmert", "run", "--run-dir", "runs/a", "corpus.paths=[b c.txt]"],
                                     ["graphmert", "query", "--run-dir", "runs/a", "q.rq"]]
    assert _moved("extract.paths=[runs/o,runs/p]", Path("/t")) == "extract.paths=[/t/runs/o,/t/runs/p]"
    assert _moved("runs/a", Path("/t")) == "/t/runs/a" and _moved("data/runs/a", Path("/t")) == "data/runs/a"


def _check_annotated(scratch: Path, outputs: list[str], short: bool) -> None:
    run = scratch / "runs" / "mine"
    triples = json.loads((run / "extract" / "manifest.json").read_text())["triples"]
    assert (run / "export" / "kg.ttl").is_file() and (run / "report" / "report.html").is_file()
    if not short:                    # the demo model, trained in full, finds genes of type 2 diabetes
        assert triples > 20 and len(outputs[-1].splitlines()) > 1, outputs[-1]


def _check_raw(scratch: Path, short: bool) -> None:
    run = scratch / "runs" / "mine-raw"
    ner = json.loads((run / "ner" / "manifest.json").read_text())
    assert ner["status"] == "ran" and ner["enabled"] and ner["inputs"]["annotated"] == 60, ner
    assert ner["selection"]["f"] > 0.5, ner["selection"]       # the demo config's recognizer learns
    extract = json.loads((run / "extract" / "manifest.json").read_text())
    assert extract["documents"] == len(list((ROOT / "examples" / "raw").glob("*.txt")))
    assert extract["recognized_mentions"] > 20 and extract["linked_mentions"] > 20, extract
    if not short:                    # the demo model, trained in full, relates genes to type 2 diabetes
        assert extract["triples"] > 0, extract


@pytest.mark.parametrize("short", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["short", "full"])
def test_readme_quickstart_runs_on_the_demo_data(short, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)          # the commands' paths are relative to the repository
    _check_annotated(tmp_path, run_commands(quickstart("annotated"), tmp_path, short), short)
    run_commands(quickstart("raw"), tmp_path, short)
    _check_raw(tmp_path, short)
