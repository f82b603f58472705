"""Suite-wide test set-up: shared helpers in tests/ (``numerics``) importable from every test folder,
and one finished demo run shared by the whole session (``demo_run``).

``make test`` spreads the suite over two pytest-xdist workers (``--dist loadfile``): each test file runs
on one worker, so its module-scoped fixtures are built once, and the files that use ``demo_run`` run
together on one worker, so the three-minute demo run is built once (``xdist_scope``).

Test folders without ``__init__.py`` are imported with their own folder on ``sys.path``, not tests/;
this puts tests/ there too, so ``from numerics import assert_close_f32`` works from any of them.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parent)
ROOT = Path(__file__).resolve().parents[1]
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


def xdist_scope(nodeid: str) -> str:
    """The unit ``make test`` hands one xdist worker: the test's file, or ``"demo_run"`` for every file
    whose tests may use the ``demo_run`` fixture (its source names it), so that one worker builds the
    demo run once and runs all of them."""
    path = nodeid.split("::", 1)[0]
    return "demo_run" if _names_demo_run(path) else path


@functools.cache
def _names_demo_run(path: str) -> bool:
    file = ROOT / path
    return file.suffix == ".py" and "demo_run" in file.read_text(encoding="utf-8")


#: seconds a ``slow`` test may take (pyproject.toml sets the default suite's ``timeout``)
SLOW_TIMEOUT = 3600


def pytest_collection_modifyitems(config, items):
    """A ``slow`` test without a timeout of its own gets :data:`SLOW_TIMEOUT`."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


@pytest.hookimpl(optionalhook=True)         # a hook of pytest-xdist, absent without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the files of ``demo_run`` as one unit (``xdist_scope``). Written here
    because xdist's own grouping (``--dist loadgroup``) renames node ids, which pytest 9.2 ignores."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class DemoRunScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return DemoRunScheduling(config, log)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> tuple[Path, str]:
    """One `graphmert run --config configs/demo.yaml` (train, extract, export, report; about three
    minutes on 2 cores) shared by every test module that needs a finished demo run: (run dir, the
    command's output). Tests must not change it; copy it (``shutil.copytree``) to change it."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    run_dir = tmp_path_factory.mktemp("demo") / "run"
    old = os.getcwd()
    os.chdir(ROOT)                          # the demo config's paths are relative to the repository
    try:
        r = CliRunner().invoke(app, ["run", "--config", str(ROOT / "configs/demo.yaml"), "--run-dir",
                                     str(run_dir), "--quiet"])
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.output
    return run_dir, r.output
