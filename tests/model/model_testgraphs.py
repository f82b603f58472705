"""Random leafy chain graphs and their collation into GraphBatch (dense and packed) for model tests.

A graph has ``n`` real roots (token ids), and for some roots i an injection: relation r, head length
m (head tokens = roots i..i+m−1) and 1..K tail tokens in leaf slots 0..n_tail−1 of root i.
Dense layout: root i at i, leaf k of root i at R + K·i + k. Packed: the n roots, then the filled
leaves in (root, slot) order. H-GAT edges: every head token → every tail token of the injection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from graphmert.graph.batch import GraphBatch

PAD = 0


@dataclass
class Graph:
    roots: list[int]
    injections: dict[int, tuple[int, int, list[int]]] = field(default_factory=dict)  # i → (r, m, tails)


def random_graphs(n_graphs: int, R: int, K: int, vocab: int, num_relations: int, fill: float = 0.3,
                  seed: int = 0, min_roots: int | None = None) -> list[Graph]:
    """Graphs with random lengths; each root (not [CLS]/[SEP]) gets an injection with prob ``fill``."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_graphs):
        n = int(torch.randint(min_roots or max(3, R // 2), R + 1, (1,), generator=g))
        roots = torch.randint(1, vocab, (n,), generator=g).tolist()
        inj = {}
        i = 1
        while i < n - 1:
            if float(torch.rand((), generator=g)) < fill:
                m = int(torch.randint(1, 4, (1,), generator=g))
                m = min(m, n - 1 - i)
                n_tail = int(torch.randint(1, K + 1, (1,), generator=g))
                r = int(torch.randint(0, num_relations, (1,), generator=g)) if num_relations else 0
                inj[i] = (r, m, torch.randint(1, vocab, (n_tail,), generator=g).tolist())
                i += m
            else:
                i += 1
        out.append(Graph(roots, inj))
    return out


def collate(graphs: list[Graph], R: int, K: int, layout: str) -> tuple[GraphBatch, list[dict]]:
    """GraphBatch of ``graphs`` and, per graph, a map (root i, slot k or −1) → position."""
    B = len(graphs)
    if layout == "dense":
        L = R + R * K
    else:
        L = max(len(gr.roots) + sum(len(t) for _, _, t in gr.injections.values()) for gr in graphs)
    input_ids = torch.full((B, L), PAD, dtype=torch.long)
    mask = torch.zeros(B, L, dtype=torch.bool)
    root_index = torch.zeros(B, L, dtype=torch.long)
    leaf_slot = torch.full((B, L), -1, dtype=torch.long)
    relation_ids = torch.full((B, R), -1, dtype=torch.long)
    head_length = torch.zeros(B, R, dtype=torch.long)
    src, dst, etype, positions = [], [], [], []
    for b, gr in enumerate(graphs):
        pos = {}
        for i, tok in enumerate(gr.roots):
            pos[(i, -1)] = i
            input_ids[b, i], mask[b, i], root_index[b, i] = tok, True, i
        nxt = len(gr.roots)
        for i in sorted(gr.injections):
            r, m, tails = gr.injections[i]
            relation_ids[b, i], head_length[b, i] = r, m
            for k, tok in enumerate(tails):
                if layout == "dense":
                    p = R + K * i + k
                else:
                    p, nxt = nxt, nxt + 1
                pos[(i, k)] = p
                input_ids[b, p], mask[b, p], root_index[b, p], leaf_slot[b, p] = tok, True, i, k
                for j in range(i, i + m):
                    src.append(b * L + j)
                    dst.append(b * L + p)
                    etype.append(r)
        positions.append(pos)
    batch = GraphBatch(input_ids=input_ids, attention_mask=mask, root_index=root_index,
                       leaf_slot=leaf_slot, relation_ids=relation_ids, head_length=head_length,
                       hgat_edge_index=torch.tensor([src, dst], dtype=torch.long).reshape(2, -1),
                       hgat_edge_type=torch.tensor(etype, dtype=torch.long), layout=layout)
    return batch, positions


def chain_graph_distances(n_roots: int, leaves: dict[int, int]) -> dict:
    """networkx shortest paths of a leafy chain graph: roots in a chain, every leaf of root i joined
    to root i and leaf k to leaf k − 1. Nodes ('r', i) and ('l', i, k); returns {a: {b: d}}."""
    import networkx as nx

    g = nx.Graph()
    for i in range(n_roots):
        g.add_node(("r", i))
        if i:
            g.add_edge(("r", i - 1), ("r", i))
    for i, n in leaves.items():
        for k in range(n):
            g.add_edge(("l", i, k), ("r", i))
            if k:
                g.add_edge(("l", i, k - 1), ("l", i, k))
    return dict(nx.all_pairs_shortest_path_length(g))
