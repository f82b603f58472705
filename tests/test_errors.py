"""Every expected error derives from graphmert.errors.GraphmertError (and keeps its built-in base)."""

from __future__ import annotations

import importlib

import pytest

from graphmert.errors import GraphmertError

#: (module, class, the built-in base it had before GraphmertError existed)
EXPECTED = [
    ("graphmert.config", "ConfigError", ValueError),
    ("graphmert.registry", "RegistryError", ValueError),
    ("graphmert.corpus.tokenizer", "TokenizerError", ValueError),
    ("graphmert.model.checkpoint", "CheckpointError", ValueError),
    ("graphmert.corpus.readers.base", "CorpusError", ValueError),
    ("graphmert.kg.graph", "KGError", ValueError),
    ("graphmert.graph.builder", "InjectionError", ValueError),
    ("graphmert.extract.extractor", "ExtractionError", ValueError),
    ("graphmert.extract.llm", "LLMError", RuntimeError),
    ("graphmert.train.trainer", "TrainingDiverged", RuntimeError),
    ("pipelines.stage", "StageError", RuntimeError),
    ("pipelines.stage", "UpstreamMissing", RuntimeError),
    ("pipelines.scheduler", "SchedulerError", RuntimeError),
    ("pipelines.store", "RunDirBusy", RuntimeError),
]


@pytest.mark.parametrize("module,name,builtin", EXPECTED, ids=[e[1] for e in EXPECTED])
def test_expected_errors_derive_from_graphmert_error(module, name, builtin):
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, GraphmertError) and issubclass(cls, builtin)


def test_graphmert_error_is_not_a_builtin_category():
    """Catching GraphmertError must not catch ValueError/RuntimeError raised by bugs."""
    assert not issubclass(GraphmertError, (ValueError, RuntimeError, OSError))
    assert not issubclass(ValueError, GraphmertError)
