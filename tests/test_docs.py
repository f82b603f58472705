"""The written house's contracts (issue #50): the README and the user guides stay short enough for a
newcomer, and every link and file path they give points at something that exists.

The user guides (``docs/*.md``) say how a part works, how to use it and its current numbers; the
studies behind them, with their history, live in ``docs/experiments/``. Without a budget the guides
had grown back into lab notebooks (docs/PERFORMANCE.md reached 944 lines), hence the limits below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_LINES = 200
GUIDE_LINES = 300
GUIDES = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *GUIDES, *sorted((ROOT / "docs" / "experiments").glob("*.md"))]

_LINK = re.compile(r"\]\(([^)\s]+)\)")                     # [text](target)
_PATH = re.compile(r"(?<![\w./:-])((?:docs|benchmarks|experiments|configs|examples|pipelines|graphmert)"
                   r"/[\w./-]*\w\.(?:md|py|yaml|rq))\b")     # a repository file named in the text


def _code_free(text: str) -> str:
    """``text`` without its fenced code blocks (commands there may name files a run writes)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _missing_files(page: Path) -> set[str]:
    """The repository files ``page``'s prose names that do not exist and that it does not say were
    deleted (anywhere in the page: "`benchmarks/x.py` (deleted …)")."""
    text = _code_free(page.read_text(encoding="utf-8"))
    found = list(_PATH.finditer(text))
    deleted = {m.group(1) for m in found if text[m.end():m.end() + 12].lstrip("` ").startswith("(deleted")}
    return {p for p in (m.group(1) for m in found)
            if p not in deleted and not (ROOT / p).exists() and not (page.parent / p).exists()}


def test_the_readme_and_each_guide_keep_to_their_length():
    assert GUIDES, "docs/ has no guide"
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
               for p in [ROOT / "README.md", *GUIDES]}
    over = {name: n for name, n in lengths.items()
            if n > (README_LINES if name == "README.md" else GUIDE_LINES)}
    assert not over, (f"over budget (README ≤ {README_LINES} lines, each docs/*.md guide ≤ {GUIDE_LINES}; "
                      f"move study history to docs/experiments/): {over}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    text = _code_free(page.read_text(encoding="utf-8"))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):     # http:, mailto:, in-page anchors
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to nothing: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_repository_file_the_prose_names_exists(page):
    """A path such as ``benchmarks/extract.py`` or ``docs/experiments/raw-slice.md`` in the prose
    (outside code blocks) names a file of the repository, from its root or from the page's folder;
    a record may name a script it says was deleted ("`benchmarks/x.py` (deleted …; `git show
    REV:benchmarks/x.py`)")."""
    missing = sorted(_missing_files(page))
    assert not missing, f"{page.relative_to(ROOT)}: names files that do not exist: {missing}"


def test_the_link_checks_catch_a_broken_link_and_a_missing_file(tmp_path):
    """The two patterns above find what they are for (a check that finds nothing passes anything)."""
    page = tmp_path / "page.md"
    page.write_text("See [the study](experiments/nope.md), [web](https://x.org) and `benchmarks/nope.py`;\n"
                    "`benchmarks/old.py` (deleted after it; `git show abc123:benchmarks/old.py`), as was\n"
                    "`benchmarks/old.py --flag`.\n"
                    "```bash\npython benchmarks/ran.py\n```\n", encoding="utf-8")
    assert _LINK.findall(page.read_text(encoding="utf-8")) == ["experiments/nope.md", "https://x.org"]
    assert _missing_files(page) == {"experiments/nope.md", "benchmarks/nope.py"}


def test_every_experiment_record_is_in_the_index():
    """docs/experiments/README.md's table lists every record, so a study moved out of a guide is found."""
    folder = ROOT / "docs" / "experiments"
    index = set(_LINK.findall((folder / "README.md").read_text(encoding="utf-8")))
    unlisted = sorted(p.name for p in folder.glob("*.md") if p.name != "README.md" and p.name not in index)
    assert not unlisted, f"docs/experiments/README.md does not list: {unlisted}"


_SECTION = re.compile(r'(docs/(?:experiments/)?[\w.-]+\.md),?\s*\(?\s*(?:§\s*)?"([^"\n]{3,80})"')


def _cited_sections(text: str) -> list[tuple[str, str]]:
    """(doc, title) of every ``docs/X.md, "Title"`` or ``docs/X.md ("Title")`` in ``text``, lines
    joined (a citation may wrap inside a docstring or a YAML comment)."""
    return _SECTION.findall(re.sub(r"\s*\n\s*#?\s*", " ", text))


def _has_section(doc: Path, title: str) -> bool:
    """Whether ``doc`` has a heading, or a bold run-in heading, that contains ``title``."""
    text = doc.read_text(encoding="utf-8")
    names = [h.lstrip("#").strip() for h in text.splitlines() if h.startswith("#")]
    names += re.findall(r"\*\*([^*]+)\*\*", text)
    want = title.lower().rstrip(".,")
    return any(want in name.lower() for name in names)


def test_every_cited_section_exists():
    """Code, configs and docs cite guide sections by title; a trimmed or renamed section must not
    leave them pointing at nothing."""
    files = [p for d in ("graphmert", "pipelines", "benchmarks", "experiments", "configs", "scripts", "tests", "docs")
             for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md", ".yaml")
             and p.resolve() != Path(__file__).resolve()] + [ROOT / "README.md"]     # not this file's examples
    broken = sorted({(p.relative_to(ROOT).as_posix(), doc, title) for p in files
                     for doc, title in _cited_sections(p.read_text(encoding="utf-8", errors="replace"))
                     if not (ROOT / doc).exists() or not _has_section(ROOT / doc, title)})
    assert not broken, f"citations of sections that do not exist (file, doc, title): {broken}"


def test_the_section_check_reads_wrapped_citations():
    assert _cited_sections('see docs/PERFORMANCE.md, "Corpus\n    # scale" and docs/NER.md ("Using it")') == [
        ("docs/PERFORMANCE.md", "Corpus scale"), ("docs/NER.md", "Using it")]
    assert _has_section(ROOT / "docs" / "NER.md", "Using it")
    assert not _has_section(ROOT / "docs" / "NER.md", "Vocabularies")


def _run_commands(text: str) -> list[list[str]]:
    """The ``graphmert run`` commands of ``text``'s fenced bash blocks, each as its words."""
    import shlex

    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    lines = [line for b in blocks for line in b.replace("\\\n", " ").splitlines()]
    return [w for w in (shlex.split(line, comments=True) for line in lines) if w[:2] == ["graphmert", "run"]]


def test_the_readmes_run_commands_load_their_configs_and_overrides():
    """Each README ``graphmert run --config C overrides…`` names keys the config knows: a renamed key
    fails here, not in a newcomer's shell."""
    from graphmert.config import load_config

    commands = _run_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(commands) >= 3
    for words in commands:
        config = words[words.index("--config") + 1]
        overrides = [w for w in words[2:] if "=" in w and not w.startswith("-")]
        load_config(ROOT / config, overrides)                 # raises on an unknown key or a bad value
