"""The stage DAG, in execution order."""

from __future__ import annotations

from pipelines.stage import Stage
from pipelines.stages.corpus import CHUNKS, INGEST, TOKENIZER

STAGES: dict[str, Stage] = {s.name: s for s in (INGEST, TOKENIZER, CHUNKS)}

__all__ = ["STAGES"]
