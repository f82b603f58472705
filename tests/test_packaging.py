"""pyproject.toml's runtime dependencies are exactly what graphmert/ and pipelines/ import: a package
only the tests use belongs in the ``test`` extra, so a user's install does not pull it in."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# distribution name → the module it provides, where the two differ
MODULE_OF = {"scikit-learn": "sklearn", "pyyaml": "yaml", "dask": "dask"}
# imported only inside try/except ImportError, to offer an optional feature
OPTIONAL = {"bokeh"}
# imported by a dependency's extra rather than by name (dask[distributed] → distributed)
VIA_EXTRA = {"distributed"}


def _requirements(items: list[str]) -> dict[str, str]:
    names = {}
    for req in items:
        name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower()
        names[name] = MODULE_OF.get(name, name.replace("-", "_"))
    return names


def _imports(*folders: str) -> set[str]:
    mods: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    mods |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods.add(node.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m not in ("graphmert", "pipelines")}


def test_runtime_dependencies_are_what_the_code_imports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _requirements(project["dependencies"])
    test_extra = _requirements(project["optional-dependencies"]["test"])
    used = _imports("graphmert", "pipelines")
    unused = sorted(d for d, m in runtime.items() if m not in used)
    assert not unused, f"runtime dependencies never imported by graphmert/ or pipelines/: {unused} " \
                       "(move test-only ones to the 'test' extra)"
    undeclared = sorted(used - set(runtime.values()) - OPTIONAL - VIA_EXTRA)
    assert not undeclared, f"imported by graphmert/ or pipelines/ but not a runtime dependency: {undeclared}"
    assert "networkx" in test_extra and "networkx" in _imports("tests")
