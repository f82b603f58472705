"""The GraphMERT network: H-GAT, graph-distance attention decay, swappable backbones, heads.

Importing this package registers the built-in backbones, attention kernels and decay modes.
"""

from graphmert.model.attention import ATTENTION_KERNELS, AttentionSpec, build_attention_spec
from graphmert.model.backbones import BACKBONES, Backbone, load_hf_roberta_weights
from graphmert.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from graphmert.model.decay import DECAY_MODES
from graphmert.model.graphmert import GraphMERT, GraphMERTOutput, build_model, parameter_breakdown
from graphmert.model.hgat import HGAT

__all__ = ["ATTENTION_KERNELS", "AttentionSpec", "BACKBONES", "Backbone", "CheckpointError",
           "DECAY_MODES", "GraphMERT", "GraphMERTOutput", "HGAT", "build_attention_spec", "build_model",
           "load_checkpoint", "load_hf_roberta_weights", "parameter_breakdown", "save_checkpoint"]
