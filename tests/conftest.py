"""Suite-wide test set-up: shared helpers in tests/ (``numerics``) importable from every test folder,
and one finished demo run shared by the whole session (``demo_run``).

Test folders without ``__init__.py`` are imported with their own folder on ``sys.path``, not tests/;
this puts tests/ there too, so ``from numerics import assert_close_f32`` works from any of them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parent)
ROOT = Path(__file__).resolve().parents[1]
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


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
