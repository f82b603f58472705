"""The stage DAG, in execution order: ingest → tokenizer → chunks → graphs → train → extract → export
→ report → evaluate (``graphmert run`` runs evaluate only when ``evaluate.gold`` is set).

``STAGES`` is built on first access (PEP 562), so a Dask worker that unpickles a shard function of
``pipelines.stages.corpus`` or ``pipelines.stages.graphs`` does not import the training and
extraction stages (torch, transformers: seconds per worker process).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.stage import Stage

ORDER = (("corpus", "INGEST"), ("corpus", "TOKENIZER"), ("corpus", "CHUNKS"), ("graphs", "GRAPHS"),
         ("train", "TRAIN"), ("extract", "EXTRACT"), ("export", "EXPORT"), ("export", "REPORT"),
         ("evaluate", "EVALUATE"))

__all__ = ["STAGES", "ORDER"]


def __getattr__(name: str) -> "dict[str, Stage]":
    if name != "STAGES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    stages = [getattr(import_module(f"{__name__}.{module}"), attr) for module, attr in ORDER]
    globals()["STAGES"] = table = {s.name: s for s in stages}
    return table
