"""Section ``graph``: the leafy chain graph layout (DESIGN §4)."""

from __future__ import annotations

from dataclasses import dataclass

from graphmert.config.options import opt


@dataclass
class GraphConfig:
    """Leafy chain graph layout (DESIGN §4)."""

    num_roots: int = opt(128, min=4, help="R: root tokens per chunk including [CLS] and [SEP]")
    num_leaves: int = opt(7, min=1, help="K: leaf slots per root")
    layout: str = opt("packed", choices=("dense", "packed"), help="batch layout")
    shard_size: int = opt(1000, min=1, help="graphs per Parquet shard")
