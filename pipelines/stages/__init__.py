"""The stage DAG, in execution order."""

from __future__ import annotations

from pipelines.stage import Stage
from pipelines.stages.corpus import CHUNKS, INGEST, TOKENIZER
from pipelines.stages.graphs import GRAPHS
from pipelines.stages.train import TRAIN

STAGES: dict[str, Stage] = {s.name: s for s in (INGEST, TOKENIZER, CHUNKS, GRAPHS, TRAIN)}

__all__ = ["STAGES"]
