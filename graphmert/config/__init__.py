"""Typed configuration: one dataclass per concern, every default defined exactly once.

A run's configuration is built in three layers, each overriding the one before:

1. the dataclass defaults (the paper's values where the paper has one);
2. a YAML file (``configs/*.yaml``) that only *overrides* — read with ``yaml.safe_load``;
3. dotted command-line overrides in OmegaConf dotlist syntax (``model.hidden_size=256``,
   ``'corpus.paths=[a.txt,b.txt]'``, quoted because zsh globs brackets).

Validation happens in one place (:func:`build`): an unknown key, a value of the wrong type, or a value
outside its allowed range/choices raises :class:`ConfigError` naming the dotted key and what is allowed.
Range and choice constraints are declared next to the default with :func:`opt`.

One module per concern; every name below is exported here, so ``from graphmert.config import X``
is how the rest of the code reads them:

* the sections, one dataclass each — :mod:`~graphmert.config.corpus` (``corpus``, ``tokenizer``),
  :mod:`~graphmert.config.kg`, :mod:`~graphmert.config.graph`, :mod:`~graphmert.config.model`,
  :mod:`~graphmert.config.train`, :mod:`~graphmert.config.ner`, :mod:`~graphmert.config.extract`,
  :mod:`~graphmert.config.evaluate`, :mod:`~graphmert.config.export`,
  :mod:`~graphmert.config.pipeline` — and :mod:`~graphmert.config.sections`, the :class:`Config`
  that holds them;
* :mod:`~graphmert.config.options` — :func:`opt`, :class:`ConfigError`, and the checks of one
  key's value (type, range, choices);
* :mod:`~graphmert.config.checks` — the constraints between keys;
* :mod:`~graphmert.config.loading` — :func:`build`, :func:`load_config` (YAML layers and
  overrides), saving, hashing and describing a config.

Names of swappable parts that live in registries (backbones, kernels, readers, scorers) are validated
where the registry is consulted (:mod:`graphmert.registry`), so this package imports from the rest of
the library only :mod:`graphmert.errors` and, inside :func:`save_config`, :mod:`graphmert.io`; neither
imports anything from the library.
"""

from graphmert.config.checks import category_pair, check_outside_scope
from graphmert.config.corpus import CorpusConfig, TokenizerConfig
from graphmert.config.evaluate import EvaluateConfig
from graphmert.config.export import ExportConfig
from graphmert.config.extract import NAME_CATEGORIES, TYPER_CHOICES, ExtractConfig
from graphmert.config.graph import GraphConfig
from graphmert.config.kg import KGConfig
from graphmert.config.loading import (
    build, describe, from_dict, load_config, parse_overrides, read_layers, read_yaml, save_config,
    section_hash, to_dict,
)
from graphmert.config.model import ModelConfig
from graphmert.config.ner import NERConfig, VocabularySource
from graphmert.config.options import ConfigError, build_section, field_choices, opt
from graphmert.config.pipeline import PipelineConfig
from graphmert.config.sections import Config
from graphmert.config.train import TrainConfig

__all__ = [
    "ConfigError",
    "CorpusConfig",
    "TokenizerConfig",
    "KGConfig",
    "GraphConfig",
    "ModelConfig",
    "TrainConfig",
    "NERConfig",
    "VocabularySource",
    "ExtractConfig",
    "EvaluateConfig",
    "ExportConfig",
    "PipelineConfig",
    "Config",
    "opt",
    "build",
    "build_section",
    "load_config",
    "to_dict",
    "save_config",
    "section_hash",
    # also read elsewhere: option vocabularies, single checks, and the loading steps
    "TYPER_CHOICES",
    "NAME_CATEGORIES",
    "category_pair",
    "check_outside_scope",
    "field_choices",
    "describe",
    "from_dict",
    "parse_overrides",
    "read_yaml",
    "read_layers",
]
