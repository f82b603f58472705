"""The whole configuration: :class:`Config`, one field per section, each section defined in its own
module of :mod:`graphmert.config`."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphmert.config.corpus import CorpusConfig, TokenizerConfig
from graphmert.config.evaluate import EvaluateConfig
from graphmert.config.export import ExportConfig
from graphmert.config.extract import ExtractConfig
from graphmert.config.graph import GraphConfig
from graphmert.config.kg import KGConfig
from graphmert.config.model import ModelConfig
from graphmert.config.ner import NERConfig
from graphmert.config.pipeline import PipelineConfig
from graphmert.config.train import TrainConfig


@dataclass
class Config:
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    kg: KGConfig = field(default_factory=KGConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    ner: NERConfig = field(default_factory=NERConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
