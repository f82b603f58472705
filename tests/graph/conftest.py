"""Session fixtures for graph tests (helpers live in graph_helpers.py)."""

from __future__ import annotations

import pytest

from graph_helpers import make_tiny_kg, make_tokenizer


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_kg():
    return make_tiny_kg()
