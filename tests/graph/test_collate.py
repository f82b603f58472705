"""Collation into GraphBatch (dense and packed), round trips, H-GAT edge indexing, PyG conversion,
and Parquet shards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphmert.config import ConfigError
from graphmert.graph.collate import Collator, collate_graphs, uncollate
from graphmert.graph.io import graphs_equal, read_graphs, write_graph_shards, write_graphs
from graphmert.graph.layout import Injection, LeafyChainGraph, layout_arrays
from graphmert.graph.pyg import to_pyg

from graph_helpers import random_graph

R, K = 12, 4


def batch_of(seed, B=5):
    rng = np.random.default_rng(seed)
    return [random_graph(rng, R, K, fill=0.6) for _ in range(B)]


def test_dense_positions_follow_the_paper():
    g = LeafyChainGraph.from_roots("c", "d", [2, 10, 11, 12, 3], [-1, 0, 1, 1, -1], R, K, pad_id=0)
    g.inject(2, [40, 41, 42], relation_id=1, head_length=2)
    a = layout_arrays(g, "dense")
    assert len(a.input_ids) == R + R * K
    assert a.input_ids[:5].tolist() == [2, 10, 11, 12, 3] and not a.attention_mask[5:R].any()
    leaf = R + K * 2
    assert a.input_ids[leaf:leaf + 3].tolist() == [40, 41, 42]
    assert a.leaf_slot[leaf:leaf + 4].tolist() == [0, 1, 2, -1]
    assert a.root_index[leaf:leaf + 3].tolist() == [2, 2, 2]
    assert a.attention_mask.sum() == 5 + 3
    p = layout_arrays(g, "packed")
    assert p.input_ids.tolist() == [2, 10, 11, 12, 3, 40, 41, 42]
    assert p.root_index.tolist() == [0, 1, 2, 3, 4, 2, 2, 2] and p.leaf_slot.tolist()[5:] == [0, 1, 2]


@pytest.mark.parametrize("layout", ["dense", "packed"])
@pytest.mark.parametrize("seed", range(20))
def test_round_trip(layout, seed):
    graphs = batch_of(seed)
    batch = collate_graphs(graphs, layout)
    B = len(graphs)
    L = R + R * K if layout == "dense" else max(g.num_roots + g.num_filled_leaves for g in graphs)
    assert batch.shape == (B, L) and batch.layout == layout
    assert batch.relation_ids.shape == (B, R) and batch.head_length.shape == (B, R)
    for t in (batch.input_ids, batch.root_index, batch.leaf_slot, batch.relation_ids,
              batch.head_length, batch.hgat_edge_index, batch.hgat_edge_type):
        assert t.dtype == torch.long
    assert batch.attention_mask.dtype == torch.bool
    assert batch.attention_mask.sum(1).tolist() == [g.num_roots + g.num_filled_leaves for g in graphs]
    pad = ~batch.attention_mask
    assert (batch.input_ids[pad] == 0).all() and (batch.leaf_slot[pad] == -1).all()
    assert (batch.root_index[pad] == 0).all()
    for a, b in zip(graphs, uncollate(batch, K, pad_id=0)):
        for f in ("root_ids", "leaf_ids", "leaf_length", "relation_ids", "head_length"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_hgat_edges(layout):
    graphs = batch_of(7, B=6)
    batch = collate_graphs(graphs, layout)
    L = batch.shape[1]
    src, dst = batch.hgat_edge_index
    flat_root, flat_slot = batch.root_index.reshape(-1), batch.leaf_slot.reshape(-1)
    flat_mask = batch.attention_mask.reshape(-1)
    assert flat_mask[src].all() and flat_mask[dst].all()
    assert (src // L == dst // L).all()                                   # same graph
    assert (flat_slot[src] == -1).all() and (flat_slot[dst] >= 0).all()  # root → leaf
    expected = set()
    for b, g in enumerate(graphs):
        for i in np.flatnonzero(g.leaf_length):
            for j in range(i, i + g.head_length[i]):
                for k in range(g.leaf_length[i]):
                    expected.add((b, j, i, k, int(g.relation_ids[i])))
    got = {(int(s // L), int(flat_root[s]), int(flat_root[d]), int(flat_slot[d]), int(t))
           for s, d, t in zip(src, dst, batch.hgat_edge_type)}
    assert got == expected and len(expected) == batch.hgat_edge_index.shape[1]


def test_packed_and_dense_hold_the_same_tokens():
    graphs = batch_of(3)
    d, p = collate_graphs(graphs, "dense"), collate_graphs(graphs, "packed")
    for b in range(len(graphs)):
        def items(x):
            m = x.attention_mask[b]
            return sorted(zip(x.root_index[b][m].tolist(), x.leaf_slot[b][m].tolist(), x.input_ids[b][m].tolist()))
        assert items(d) == items(p)
    assert torch.equal(d.relation_ids, p.relation_ids) and torch.equal(d.head_length, p.head_length)


def test_collate_errors():
    with pytest.raises(ConfigError, match="graph.layout: unknown layout 'sparse'"):
        collate_graphs(batch_of(0), "sparse")
    with pytest.raises(ConfigError, match="graph.layout: unknown layout 'sparse'"):
        Collator("sparse")
    with pytest.raises(ConfigError, match="graph.layout: unknown layout 'sparse'"):
        layout_arrays(batch_of(0)[0], "sparse")
    gs = batch_of(0, 2) + [LeafyChainGraph.from_roots("odd", "d", [2, 3], [], R + 1, K, 0)]
    with pytest.raises(ValueError, match="graph of chunk odd has"):
        collate_graphs(gs)
    assert Collator("packed")(batch_of(0)).layout == "packed"


def test_inject_rejects_bad_spans():
    g = LeafyChainGraph.from_roots("c", "d", [2, 10, 11, 3], [], 6, 2, 0)
    with pytest.raises(ValueError, match="does not fit K = 2"):
        g.inject(1, [5, 6, 7], 0, 1)
    with pytest.raises(ValueError, match="head roots"):
        g.inject(2, [5], 0, 2)            # would cover [SEP]
    g.inject(1, [5], 0, 1)
    with pytest.raises(ValueError, match="already has an injection"):
        g.inject(1, [6], 0, 1)
    g.validate()


def test_pyg_data():
    from torch_geometric.data import Batch

    graphs = batch_of(11, B=3)
    datas = [to_pyg(g) for g in graphs]
    for g, d in zip(graphs, datas):
        n, t = g.num_roots, g.num_filled_leaves
        assert d.num_nodes == n + t
        # undirected chain graph: (n−1) root edges, t leaf–root, Σ(t_i − 1) leaf–leaf, both directions
        chained = int(np.clip(g.leaf_length - 1, 0, None).sum())
        assert d.edge_index.shape[1] == 2 * ((n - 1) + t + chained)
        e = set(map(tuple, d.edge_index.T.tolist()))
        assert all((b, a) in e for a, b in e)
        assert d.hgat_edge_index.shape[1] == int((g.head_length * g.leaf_length).sum())
        assert (d.node_leaf_slot[d.hgat_edge_index[0]] == -1).all()
        assert (d.node_leaf_slot[d.hgat_edge_index[1]] >= 0).all()
    batch = Batch.from_data_list(datas)
    offsets = np.cumsum([0] + [d.num_nodes for d in datas])
    assert torch.equal(batch.hgat_edge_index,
                       torch.cat([d.hgat_edge_index + int(o) for d, o in zip(datas, offsets)], dim=1))
    assert torch.equal(batch.node_root, torch.cat([d.node_root for d in datas]))   # not offset


def test_parquet_round_trip(tmp_path):
    graphs = batch_of(5, B=7)
    graphs[0].chunk_id, graphs[0].doc_id = "doc9#0", "doc9"
    graphs[0].injections = [Injection(1, 2, "MESH:D1", "treats", "MESH:D2", 0.25)]
    p = tmp_path / "g.parquet"
    assert write_graphs(graphs, p) == 7
    back = list(read_graphs(p))
    assert len(back) == 7 and all(graphs_equal(a, b) for a, b in zip(graphs, back))
    for g in back:
        g.validate()
    paths = write_graph_shards(graphs, tmp_path / "shards", shard_size=3)
    assert [len(list(read_graphs(x))) for x in paths] == [3, 3, 1]
    assert sorted(f.name for f in (tmp_path / "shards").iterdir()) == [x.name for x in paths]


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    def half_write(table, path, **kw):
        Path(path).write_bytes(b"PAR1 partial")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", half_write)
    with pytest.raises(OSError, match="disk full"):
        write_graphs(batch_of(0, 2), tmp_path / "g.parquet")
    assert list(tmp_path.iterdir()) == []


def test_hgat_edges_are_the_per_injection_loops_in_order():
    """Every injection's m·t edges at once equal a loop over the injections (head-major, root order),
    in the same order, so H-GAT's scatter sums add in the same order."""
    for g in batch_of(11, B=8):
        src, troot, tslot, rel = [], [], [], []
        for i in np.flatnonzero(g.leaf_length):
            for j in range(i, i + g.head_length[i]):
                for k in range(g.leaf_length[i]):
                    src.append(j), troot.append(i), tslot.append(k), rel.append(g.relation_ids[i])
        got = g.hgat_edges()
        for a, b in zip(got, (src, troot, tslot, rel)):
            assert a.dtype == np.int64
            np.testing.assert_array_equal(a, np.array(b, dtype=np.int64))
    empty = LeafyChainGraph.from_roots("c", "d", [1, 2, 3], [], 4, 2, 0)
    assert all(len(a) == 0 and a.dtype == np.int64 for a in empty.hgat_edges())


def test_collate_reads_the_callers_layouts_when_given():
    graphs = batch_of(5)
    arrays = [layout_arrays(g, "packed") for g in graphs]
    a, b = collate_graphs(graphs, "packed"), collate_graphs(graphs, "packed", arrays)
    for f in ("input_ids", "attention_mask", "root_index", "leaf_slot", "hgat_edge_index", "entity_type"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f
    with pytest.raises(ValueError, match="collate_graphs: 4 layouts for 5 graphs"):
        collate_graphs(graphs, "packed", arrays[:4])
