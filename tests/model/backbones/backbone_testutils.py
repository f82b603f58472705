"""Shared helpers of the backbone tests: tiny configs, GraphMERT models, per-node outputs."""

from __future__ import annotations

import dataclasses

import torch

from graphmert.config import ModelConfig
from graphmert.model import build_model
from model_testgraphs import collate, random_graphs

R, K, V, NREL = 12, 3, 60, 4

TINY = ModelConfig(hidden_size=32, num_layers=3, num_heads=4, intermediate_size=64, max_leaf_slots=K)

# every registered backbone, with option sets that exercise its variants
VARIANTS = [
    ("roberta", {}),
    ("neobert", {}),
    ("neobert", {"normalized": True}),
    ("recurrent", {"recurrent_depth": 2, "residual_scale": 0.5}),
    ("recurrent", {"recurrent_depth": 2, "share_weights_across_depth": False}),
    ("bridges", {"mode": "hybrid", "route_last_n": 2, "top_k": 2}),
    ("bridges", {"mode": "qkv", "pool": "cls"}),
    ("bridges", {"mode": "hdim", "fusion": "concat_only", "route_last_n": 3}),
    ("bridges", {"fusion": "value_mlp", "softplus_gates": True}),
]


def variant_id(v) -> str:
    name, opts = v
    return name + "".join(f"-{k}={val}" for k, val in opts.items())


def tiny(**kw) -> ModelConfig:
    return dataclasses.replace(TINY, **kw)


def make(backbone: str, options: dict | None = None, seed: int = 0, **kw):
    torch.manual_seed(seed)
    return build_model(tiny(backbone=backbone, backbone_options=dict(options or {}), **kw), V, NREL)


GRAPHS = random_graphs(4, R, K, V, NREL, fill=0.4, seed=11)


def outputs_by_node(model, layout: str, graphs=GRAPHS) -> dict:
    """(graph, (root, slot)) → hidden [H] of the node, whatever its position in the layout."""
    batch, positions = collate(graphs, R, K, layout)
    with torch.no_grad():
        hidden = model(batch).hidden
    return {(b, key): hidden[b, pos] for b, p in enumerate(positions) for key, pos in p.items()}


def batch_of(layout: str = "packed", graphs=GRAPHS):
    return collate(graphs, R, K, layout)[0]
