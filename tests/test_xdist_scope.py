"""``make test``'s split over xdist workers (tests/conftest.py): every file that uses the three-minute
``demo_run`` fixture goes to one worker, so the demo run is built once; any other file is one unit."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = str(Path(__file__).resolve().parent / "conftest.py")


class _Config:
    """What xdist's schedulers read of a pytest config: the dist mode and the worker specs."""

    def __init__(self, dist: str):
        self.values = {"dist": dist, "tx": ["2*popen"]}

    def getvalue(self, name):
        return self.values[name]


def test_files_of_the_demo_run_form_one_unit_and_every_other_file_its_own(request):
    pytest.importorskip("xdist")
    conftest = request.config.pluginmanager.get_plugin(CONFTEST)
    sched = conftest.pytest_xdist_make_scheduler(config=_Config("loadfile"), log=None)
    demo = ["tests/test_update.py::test_a", "tests/export/test_store.py::test_b[x-1]",
            "tests/test_demo_end_to_end.py::test_c"]
    assert {sched._split_scope(n) for n in demo} == {"demo_run"}
    assert sched._split_scope("tests/test_io.py::test_d") == "tests/test_io.py"
    assert sched._split_scope("tests/graph/test_builder.py::T::test_e[1]") == "tests/graph/test_builder.py"
    # other --dist modes keep xdist's own schedulers
    assert conftest.pytest_xdist_make_scheduler(config=_Config("load"), log=None) is None
