"""Backbone tests: make the model-test helpers (tests/model/model_testgraphs.py) importable, and run
tiny models on one intra-op thread (faster than two on a shared machine; restored per module)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

for folder in (Path(__file__).resolve().parent, Path(__file__).resolve().parents[1]):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
