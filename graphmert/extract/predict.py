"""Masked-leaf tail prediction: the model's distribution over each leaf slot of a (head, relation) query.

A query q = (chunk, head, relation r, length t) asks: "which t-token tail hangs on this head under r?"
It is answered exactly as MNM was trained. The chunk's roots are the text; the head's root i gets t
leaves, all ``[MASK]``, with relation r (fused into the leaves by H-GAT over the edges head token →
leaf) and head length m; the model's MNM/MLM decoder gives, for each slot k < t::

    log p_q(k, v) = log_softmax(W · h_leaf(i, k))_v          [t, V]   per query

The number of masked leaves tells the model the tail's length, as in training (a masked leaf group
keeps its size), so candidate tails of length t are scored by a length-t query (see
:mod:`graphmert.extract.tails`).

Batching (``extract.pack_queries``):

* packed — the queries of one (chunk, relation, length) share one graph: every head of the group
  gets its masked leaves on its own root (a root hosts one injection), so one forward answers them all;
* single — one graph per query (the reference; ``benchmarks/extract.py`` compares the two).

Graphs are collated in the packed layout (roots + only the filled leaves) and run ``batch_size``
graphs per forward, fewer when their masked leaves would pass ``max_leaves``; logits are computed
only at the masked leaves. The budget bounds the forward's [N, V] log-probabilities (N masked
leaves), which dominate its memory: on ``configs/small.yaml`` N ranged from 64 to 3,357 over the
forwards of 64 graphs, so the tensors' sizes varied by 50× and fragmented a long-lived worker's
heap. With at most 256 leaves a forward, 40 documents extract in 43 s at a 937 MB peak, against
52 s and 1,923 MB without a budget (``benchmarks/extract.py --leaves-per-forward``;
docs/experiments/scale-memory.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from graphmert.config import ExtractConfig
from graphmert.corpus.chunk import Chunk
from graphmert.graph.collate import collate_graphs
from graphmert.graph.layout import LeafyChainGraph
from graphmert.model.graphmert import GraphMERT

__all__ = ["Query", "LeafPredictor"]


@dataclass(frozen=True, kw_only=True)
class Query:
    chunk: int          # index into the chunk list given to :meth:`LeafPredictor.predict`
    root: int           # the head's first root
    head_length: int    # m: head roots root..root+m−1
    relation: int       # relation id (the model's relation map)
    length: int         # t: masked leaf slots


class LeafPredictor:
    """Runs queries through a trained :class:`GraphMERT` (eval mode, no gradients).

    Args:
        model: the model (moved to ``device`` by the caller).
        num_roots, num_leaves: R and K of the graphs the model was trained on.
        pad_id, mask_id: special token ids of its tokenizer.
        batch_size: graphs per forward pass at most.
        pack: several queries per graph (see module docstring).
        max_leaves: masked leaves per forward pass at most (a graph with more runs alone).
    """

    def __init__(self, model: GraphMERT, num_roots: int, num_leaves: int, pad_id: int, mask_id: int,
                 batch_size: int = 64, pack: bool = True,
                 max_leaves: int = ExtractConfig.leaves_per_forward) -> None:
        self.model = model.eval()
        self.R, self.K = num_roots, num_leaves
        self.pad_id, self.mask_id = pad_id, mask_id
        self.batch_size, self.max_leaves = batch_size, max_leaves
        self.pack = pack
        self.device = next(model.parameters()).device
        self.forwards = 0
        self.graphs = 0

    def _groups(self, queries: Sequence[Query]) -> list[list[int]]:
        """Query indices per graph: by (chunk, relation, length) when packing, else one each."""
        if not self.pack:
            return [[q] for q in range(len(queries))]
        groups: dict[tuple[int, int, int], list[int]] = {}
        for qi, q in enumerate(queries):
            groups.setdefault((q.chunk, q.relation, q.length), []).append(qi)
        out = []
        for key in sorted(groups):
            # a root hosts one query: a second query on the same root opens another graph
            pending = groups[key]
            while pending:
                seen: set[int] = set()
                graph, rest = [], []
                for qi in pending:
                    (rest if queries[qi].root in seen else graph).append(qi)
                    seen.add(queries[qi].root)
                out.append(graph)
                pending = rest
        return out

    def _blocks(self, groups: list[list[int]], queries: Sequence[Query]) -> Iterator[list[list[int]]]:
        """``groups`` in order, cut into forwards of at most ``batch_size`` graphs and ``max_leaves``
        masked leaves (a graph with more leaves than that forms a forward alone)."""
        block: list[list[int]] = []
        leaves = 0
        for g in groups:
            n = sum(queries[qi].length for qi in g)
            if block and (len(block) == self.batch_size or leaves + n > self.max_leaves):
                yield block
                block, leaves = [], 0
            block.append(g)
            leaves += n
        if block:
            yield block

    def _graph(self, chunk: Chunk, queries: Sequence[Query], members: list[int]) -> LeafyChainGraph:
        g = LeafyChainGraph.from_roots(chunk.id, chunk.doc_id, chunk.input_ids, chunk.word_ids,
                                       self.R, self.K, self.pad_id)
        for qi in members:
            q = queries[qi]
            g.inject(q.root, [self.mask_id] * q.length, q.relation, q.head_length)
        return g

    @torch.inference_mode()
    def predict(self, chunks: Sequence[Chunk], queries: Sequence[Query],
                progress: Callable[[int], None] | None = None) -> Iterator[tuple[int, Tensor]]:
        """Yield ``(query index, log p [t, V] float32 on CPU)`` for every query, in the order of the
        graphs sorted by length; log p is a slice of its forward's rows, not a copy."""
        for q in queries:
            if not 1 <= q.length <= self.K:
                raise ValueError(f"query length {q.length} outside [1, K = {self.K}]")
        # graphs of similar length share a batch, which pads every graph to its longest
        groups = sorted(self._groups(queries),
                        key=lambda g: chunks[queries[g[0]].chunk].num_roots + sum(queries[i].length for i in g))
        use_bf16 = self.device.type == "cuda"
        for block in self._blocks(groups, queries):
            graphs = [self._graph(chunks[queries[g[0]].chunk], queries, g) for g in block]
            batch = collate_graphs(graphs, layout="packed").to(self.device)
            B, L = batch.input_ids.shape
            leaf = (batch.leaf_slot >= 0) & batch.attention_mask                   # [B, L]
            flat = leaf.reshape(-1).nonzero().squeeze(1)                            # [N]
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
                out = self.model(batch, logits_at=flat)                             # logits [N, V]
                logp = self.model.leaf_log_probs(out.hidden, batch, flat, out.logits).cpu()  # [N, V]
            self.forwards += 1
            self.graphs += len(graphs)
            b = (flat // L).cpu().numpy()
            root = batch.root_index.reshape(-1)[flat].cpu().numpy()
            slot = batch.leaf_slot.reshape(-1)[flat].cpu().numpy()
            order = np.lexsort((slot, root, b))                                     # rows by (b, root, slot)
            logp, b, root = logp[torch.from_numpy(order)], b[order], root[order]    # a query's rows: a slice
            owner = {(gi, queries[qi].root): qi for gi, g in enumerate(block) for qi in g}
            bounds = [0, *(np.flatnonzero(np.diff(b * self.R + root)) + 1).tolist(), len(order)]
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                yield owner[(int(b[lo]), int(root[lo]))], logp[lo:hi]               # [t, V]
            if progress is not None:
                progress(sum(len(g) for g in block))
