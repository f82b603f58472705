"""Code fingerprints: which source a stage's outputs depend on, so caches notice code changes.

A stage's fingerprint is a SHA-256 over the code of the module that defines its ``run`` function
(``pipelines/stages/<x>.py``) and of every module of ``graphmert`` and ``pipelines.stages`` that
module imports, transitively: their source without docstrings, ``help=`` texts, comments and
blank lines (:func:`code_of`), so an edit to those reruns nothing. Imports are found by reading the
import statements (those inside functions too), not by importing, so computing it imports nothing; it is
computed once per process (about 1.2 s for every stage at once on 2 cores). Importing ``a.b.c``
runs ``a/__init__.py`` and ``a/b/__init__.py`` too, so those are part of it
(``graphmert/__init__.py``, with ``__version__``, is part of every stage's). Files are labelled by
module name, not path, so every installation of the same code — an editable checkout, a Dask
worker's site-packages — has the same fingerprint.

The granularity is the module: a change anywhere in ``pipelines/stages/corpus.py`` reruns ingest,
tokenizer and chunks, which it defines. Every stage imports ``graphmert.config``, whose
``__init__.py`` imports each of its modules, so their code is in every fingerprint, but the fields
of its dataclasses (``name: type = opt(default, ...)``) are not (:data:`VALUES`): they are values,
which a stage's ``config_hash`` already covers where the stage declares their section or key. A new
config key or a changed default thus reruns only the stages that declare it; a change to the rest of
``graphmert/config/`` (a constant such as ``TYPER_CHOICES``, the checks, the loading) reruns every
stage. Over-invalidation costs a rerun; the alternative (a stale output after a code change) costs trust.
A package whose ``__init__.py`` imports its modules puts all of them into the fingerprint of whatever
imports one, so those of ``graphmert.eval``, ``graphmert.graph`` and ``graphmert.kg`` import none.
The two longest stages then follow what they read: ``ner`` (the recognizer, 17 minutes on BioRED)
reads entity scores, the document split (``graphmert.corpus.fraction``) and the gene index, never the
model, its training, the report or the linker's gene variants; ``train`` reads built graphs, the
model and the KG's schema, never the graph builder, the seed-KG readers, lexicon, linking and
injection or the corpus readers, whose edits rerun ``build-graphs`` and reach ``train`` only through
graphs that changed (tests/test_pipeline_fingerprint.py pins both).

The runner (``pipelines/stage.py``, ``scheduler.py``, ``store.py``, ``cli.py``) is not part of any
fingerprint: it decides where and when stage code runs, never what it writes (outputs are
byte-identical on every scheduler), and editing it should not retrain a model.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import io
import re
import sys
import tokenize
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["FOLLOWED", "VALUES", "module_closure", "module_fingerprint", "module_digests", "changed_modules",
           "package_fingerprint", "clear_cache"]

FOLLOWED = ("graphmert", "pipelines.stages")     # packages whose modules are part of a fingerprint
# packages whose dataclass fields are config values, hashed by a stage's config_hash where it declares
# them, so left out of the code (code_of(fields=False)); a test's fake package may be named here
VALUES = ("graphmert.config",)


def _under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def _followed(name: str) -> bool:
    return _under(name, FOLLOWED)


def _code(name: str, path: Path) -> bytes:
    """:func:`code_of` the module ``name`` at ``path``: without its dataclass fields in :data:`VALUES`."""
    return code_of(path, fields=not _under(name, VALUES))


@functools.lru_cache(maxsize=None)
def _package_dir(top: str) -> Path | None:
    """The folder of the top-level package ``top`` (finding a top-level spec imports nothing)."""
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _source(name: str) -> tuple[Path, bool] | None:
    """``(source file, is a package)`` of the module ``name``, or None when ``name`` names no module
    (e.g. a function in ``from graphmert.io import file_sha256``)."""
    if not _followed(name):
        mod = sys.modules.get(name)          # a stage defined outside the library (tests): imported
        file = getattr(mod, "__file__", None)
        return (Path(file), Path(file).name == "__init__.py") if file else None
    top, *rest = name.split(".")
    base = _package_dir(top)
    if base is None:
        return None
    folder = base.joinpath(*rest)
    if (folder / "__init__.py").is_file():
        return folder / "__init__.py", True
    if rest and folder.with_suffix(".py").is_file():
        return folder.with_suffix(".py"), False
    return None


@functools.lru_cache(maxsize=None)
def _imported(name: str, path: Path, is_package: bool) -> frozenset[str]:
    """Every module name the import statements of ``path`` may refer to: the modules themselves,
    their parent packages, and ``pkg.name`` for each ``from pkg import name`` (kept by the caller
    only where it is a module)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            mods = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for mod in mods:
            parts = mod.split(".")
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(found)


@functools.lru_cache(maxsize=None)
def module_closure(module: str) -> dict[str, Path]:
    """``module`` and every ``graphmert`` / ``pipelines.stages`` module it imports, transitively,
    with their parent packages: module name → source file."""
    start = _source(module)
    if start is None:
        raise ValueError(f"code fingerprint: no source file for module {module!r}")
    files: dict[str, Path] = {}
    todo: list[tuple[str, tuple[Path, bool]]] = [(module, start)]
    while todo:
        name, (path, is_package) = todo.pop()
        if name in files:
            continue
        files[name] = path
        for dep in _imported(name, path, is_package):
            if dep not in files and _followed(dep) and (src := _source(dep)) is not None:
                todo.append((dep, src))
    return dict(sorted(files.items()))


def _digest(files: dict[str, Path],
            read: Callable[[str, Path], bytes] = lambda name, path: path.read_bytes()) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + read(name, files[name]) + b"\0")
    return h.hexdigest()[:16]


_CODE: dict[bytes, bytes] = {}     # SHA-256 of a module's source + fields flag → its code (code_of)


def code_of(path: Path, fields: bool = True) -> bytes:
    """:func:`_code_of` of ``path``, remembered by the SHA-256 of its source and ``fields``, so that
    :func:`clear_cache` (before every stage of a command) costs a read and a hash per module.
    ``fields=False`` also leaves out the fields of its dataclasses (:func:`_fields`): the fingerprint
    reads a module of :data:`VALUES` (``graphmert.config``) so."""
    source = path.read_bytes()
    key = hashlib.sha256(source).digest() + (b"F" if fields else b"V")
    if key not in _CODE:
        _CODE[key] = _code_of(source, path, fields)
    return _CODE[key]


def _code_of(source: bytes, path: Path, fields: bool = True) -> bytes:
    """The source of ``path`` without what cannot change what it computes: its docstrings (the
    first string statement of the module and of each class and function), the text of every
    ``help="..."`` keyword (a config key's or a command option's help, which only ``graphmert info
    --keys`` and ``--help`` print), its comments, trailing blanks and blank lines. A stage's
    fingerprint is taken over this, so editing a docstring, a key's help, a citation or a comment
    reruns no stage (a 30-minute training, an 18-minute recognizer). Nothing in the stages reads a
    ``__doc__`` or a field's ``help``. Spans come from :mod:`ast` (docstrings, help texts) and :mod:`tokenize`
    (comments), whose positions do not change between Python versions, so neither does the result.
    Written here: no library strips Python source this way without also reformatting it.

    ``fields=False`` (:data:`VALUES`) also drops each dataclass field statement (:func:`_fields`),
    with the ``;`` after it if any (so that fields sharing a line leave nothing however many they
    are); its help texts and comments then lie inside a dropped span, so overlapping spans are merged
    (:func:`_merged`) and each text is removed once, at positions that still hold."""
    lines = source.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n").split("\n")   # as ast counts rows
    char = lambda row, b: len(lines[row - 1].encode("utf-8")[:b].decode("utf-8"))  # noqa: E731  (ast: UTF-8 bytes)
    tree = ast.parse(source, filename=str(path))

    def span(d: ast.AST) -> tuple[int, int, int, int]:                        # (row, col, end row, end col)
        return d.lineno, char(d.lineno, d.col_offset), d.end_lineno, char(d.end_lineno, d.end_col_offset)

    spans = [span(d) for d in (*_docstrings(tree), *_help_texts(tree))]
    for row, col, end_row, end_col in map(span, () if fields else _fields(tree)):
        semicolon = re.match(r"\s*;", lines[end_row - 1][end_col:])          # ``x: int = 1; y: int = 2``
        spans.append((row, col, end_row, end_col + (semicolon.end() if semicolon else 0)))
    for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
        if tok.type == tokenize.COMMENT:
            spans.append((*tok.start, *tok.end))
    for row, col, end_row, end_col in reversed(_merged(spans)):               # last first: positions hold
        head, tail = lines[row - 1][:col], lines[end_row - 1][end_col:]
        lines[row - 1:end_row] = [head + tail] + [""] * (end_row - row)
    return "\n".join(line.rstrip() for line in lines if line.strip()).encode("utf-8")


def _merged(spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """``spans`` (row, col, end row, end col) in order, those that overlap one joined into one: a
    comment or a help text inside a dropped field. Docstrings, help texts and comments never overlap
    one another, so without fields this is ``sorted(spans)``."""
    out: list[tuple[int, int, int, int]] = []
    for span in sorted(spans):
        if out and span[:2] < out[-1][2:]:                  # starts before the last one ends
            out[-1] = (*out[-1][:2], *max(out[-1][2:], span[2:]))
        else:
            out.append(span)
    return out


def _fields(tree: ast.AST) -> Iterator[ast.AnnAssign]:
    """The field statements (``name: type = opt(default, ...)``) directly in the body of each class
    decorated ``@dataclass`` or ``@dataclasses.dataclass`` (called or not) in ``tree``. In
    :data:`VALUES` a field is a config value that ``config_hash`` hashes as resolved, so a new key or a
    changed default or bound need not change the code. A ``ClassVar`` or ``InitVar`` annotation is
    no field the resolved config holds, and is kept; so is everything else in the class (methods)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(map(_is_dataclass, node.decorator_list)):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and not _pseudo_field(stmt.annotation):
                    yield stmt


def _is_dataclass(decorator: ast.expr) -> bool:
    d = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(d, ast.Name) and d.id == "dataclass") or (
        isinstance(d, ast.Attribute) and d.attr == "dataclass" and isinstance(d.value, ast.Name)
        and d.value.id == "dataclasses")


def _pseudo_field(annotation: ast.expr) -> bool:
    """A ``ClassVar[...]`` or ``InitVar[...]`` annotation (qualified, or a string, too)."""
    text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) \
        else ast.unparse(annotation)
    return re.match(r"\s*(\w+\.)*(ClassVar|InitVar)\b", text) is not None


def _docstrings(node: ast.AST) -> Iterator[ast.Expr]:
    """The docstring statements of ``node`` (a module) and of every class and function in it, at
    any depth; only statements are visited (a def can sit in an ``if`` or a ``try``, not in an
    expression), which is most of the cost saved over :func:`ast.walk`."""
    body = getattr(node, "body", None)
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
            and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        yield body[0]
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, None) or ():
            if isinstance(child, (ast.stmt, ast.excepthandler)) or type(child).__name__ == "match_case":
                yield from _docstrings(child)


def _help_texts(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string literal of every ``help=`` keyword argument in ``tree`` (adjacent literals joined
    by the parser are one constant, its span all of them); an f-string or a name is code and kept."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "help" and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            yield node.value


@functools.lru_cache(maxsize=None)
def module_fingerprint(module: str) -> str:
    """16 hex digits of SHA-256 over the code (:func:`code_of`, without the fields of :data:`VALUES`)
    of :func:`module_closure` (``module``)."""
    return _digest(module_closure(module), _code)


@functools.lru_cache(maxsize=None)
def _module_digests(module: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, hashlib.sha256(_code(name, path)).hexdigest()[:12])
                 for name, path in module_closure(module).items())


def module_digests(module: str) -> dict[str, str]:
    """Module name → 12 hex digits of SHA-256 over its code (:func:`code_of`), for every module of
    :func:`module_closure` (``module``): what a manifest records beside the fingerprint, so that a
    rerun can name the modules whose edit made it (:func:`changed_modules`)."""
    return dict(_module_digests(module))


def changed_modules(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """The modules whose digest differs between two :func:`module_digests`, or that only one has."""
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


@functools.lru_cache(maxsize=None)
def package_fingerprint() -> str:
    """The fingerprint of every module of the followed packages: what the driver and each Dask
    worker compare, so a worker running other code is refused before it writes a shard."""
    files: dict[str, Path] = {}
    for root in FOLLOWED:
        top, *rest = root.split(".")
        base = _package_dir(top)
        if base is None:
            continue
        folder = base.joinpath(*rest)
        for path in folder.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            files[".".join((top, *parts))] = path
    return _digest(files)


def clear_cache() -> None:
    """Forget every computed fingerprint (tests that edit source files; a process that reloads
    code)."""
    for fn in (_package_dir, _imported, module_closure, module_fingerprint, _module_digests,
               package_fingerprint):
        fn.cache_clear()
