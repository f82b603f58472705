"""Swappable encoder stacks behind one interface (:class:`Backbone`), chosen by ``model.backbone``.

Importing this package registers every backbone in :data:`BACKBONES`: ``roberta`` (the paper's),
``neobert`` (pre-norm RMSNorm / SwiGLU / RoPE), ``recurrent`` (N layers × D iterations) and
``bridges`` (RoBERTa + routed cross-layer bridges). Stand-alone LM / classification heads over plain
token sequences live in :mod:`graphmert.model.backbones.sequence`.
"""

from graphmert.model.backbones.base import BACKBONES, Backbone, build_backbone
from graphmert.model.backbones.roberta import RobertaBackbone, RobertaLayer, load_hf_roberta_weights
from graphmert.model.backbones.neobert import NeoBERTBackbone, NeoBERTOptions
from graphmert.model.backbones.recurrent import RecurrentBackbone, RecurrentOptions
from graphmert.model.backbones.bridges import BridgesBackbone, BridgesOptions

__all__ = ["BACKBONES", "Backbone", "build_backbone", "RobertaBackbone", "RobertaLayer",
           "load_hf_roberta_weights", "NeoBERTBackbone", "NeoBERTOptions", "RecurrentBackbone",
           "RecurrentOptions", "BridgesBackbone", "BridgesOptions"]
