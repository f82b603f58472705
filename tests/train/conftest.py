"""Training tests run tiny models: one intra-op thread is faster than two on a shared machine
(OpenMP threads spin while another process holds the second core). Restored after each module."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
