"""build_graphs end to end on a tiny tokenizer, hand-made chunks and a tiny seed KG; bad inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphmert.config import build
from graphmert.graph.builder import InjectionError, build_graphs
from graphmert.graph.io import graphs_equal
from graphmert.kg.graph import Edge, KGError, Node, SeedKG

from graph_helpers import make_chunk, make_tokenizer

R, K = 24, 7


def cfgs(**kg):
    c = build({"kg": {"alpha": 0.0, "min_relation_count": 1} | kg,
               "graph": {"num_roots": R, "num_leaves": K}, "corpus": {"chunk_overlap": 4}})
    return c.kg, c.graph


def chunks_of(tok):
    return [
        make_chunk(tok, "Metformin treats type 2 diabetes mellitus and lowers blood glucose.", "a#0",
                   [("Metformin", "Chemical", ["MESH:D008687"]),
                    ("type 2 diabetes mellitus", "Disease", ["MESH:D003924"]),
                    ("glucose", "Chemical", ["MESH:D005947"])]),
        make_chunk(tok, "Insulin resistance and obesity are associated with type 2 diabetes.", "b#0",
                   [("Insulin", "Gene", ["NCBIGene:3630"]), ("obesity", "Disease", ["MESH:D009765"])]),
        make_chunk(tok, "Aspirin treats pain and inhibits platelet aggregation in patients.", "c#0"),
        make_chunk(tok, "Obesity increases the risk of hypertension and heart disease.", "d#0",
                   [("Obesity", "Disease", ["MESH:D009765", "OMIM:1"])]),
    ]


def test_build_graphs_end_to_end(tokenizer, tiny_kg):
    chunks = chunks_of(tokenizer)
    kg_cfg, graph_cfg = cfgs()
    graphs, rep = build_graphs(chunks, tiny_kg, tokenizer, kg_cfg, graph_cfg)
    json.dumps(rep)
    assert rep["graphs"] == len(graphs) == 4
    for key in ("graphs", "chunks_with_leaves", "injections", "tokens_dense", "tokens_packed"):
        assert isinstance(rep[key], int)
    assert rep["tokens_dense"] == 4 * R * (1 + K)
    assert rep["tokens_packed"] == sum(g.num_roots + g.num_filled_leaves for g in graphs)
    assert rep["injections"] == sum(len(g.injections) for g in graphs) == sum(rep["injections_per_relation"].values())
    assert rep["chunks_with_leaves"] == sum(1 for g in graphs if g.num_filled_leaves)
    assert rep["heads"]["chunks_lexicon"] == 1 and rep["heads"]["chunks_annotated"] == 3
    assert rep["relation_map"] == {"associated_with": 0, "lowers": 1, "treats": 2}

    seen_triples = set()
    for g, c in zip(graphs, chunks):
        g.validate()
        assert g.chunk_id == c.id and g.root_ids[:g.num_roots].tolist() == c.input_ids
        for inj in g.injections:
            i = inj.root
            tail = tiny_kg.nodes[inj.object].name
            leaves = g.leaf_ids[i, :g.leaf_length[i]].tolist()
            assert leaves == tokenizer.encode(tail, add_special_tokens=False).ids
            assert g.relation_ids[i] == tiny_kg.relation_map[inj.predicate]
            assert (inj.subject, inj.predicate, inj.object) not in seen_triples
            seen_triples.add((inj.subject, inj.predicate, inj.object))
            heads = [m for m in c.mentions if m.token_start == i and inj.subject in m.ids]
            if c.mentions:
                assert heads and g.head_length[i] == heads[0].token_end - heads[0].token_start
    # the lexicon-linked chunk: "Aspirin" → Aspirin treats pain, head at root 1
    c_graph = graphs[2]
    assert [(x.root, x.subject, x.object) for x in c_graph.injections] == [(1, "MESH:D001241", "MESH:D010146")]
    # deterministic
    again, rep2 = build_graphs(chunks, tiny_kg, tokenizer, kg_cfg, graph_cfg)
    assert all(graphs_equal(a, b) for a, b in zip(graphs, again)) and rep == rep2


def test_relation_left_without_triples_is_counted(tokenizer, tiny_kg):
    kg_cfg, graph_cfg = cfgs(min_relation_count=2)
    graphs, rep = build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg)
    assert "lowers" not in rep["injections_per_relation"]
    assert "lowers" in rep["injection"]["relations_without_injections"]
    assert rep["injection"]["per_relation"]["lowers"]["rare_relation"] == 1


def test_lexicon_matching_off_and_no_heads(tokenizer, tiny_kg):
    kg_cfg, graph_cfg = cfgs(lexicon_matching=False)
    _, rep = build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg)
    assert rep["heads"]["chunks_none"] == 1
    plain = [make_chunk(tokenizer, "Aspirin treats pain and inhibits platelet aggregation in patients.", "x")]
    with pytest.raises(InjectionError, match="no chunk has a head linked to a seed-KG node"):
        build_graphs(plain, tiny_kg, tokenizer, kg_cfg, graph_cfg)


def test_everything_filtered_is_an_error(tokenizer, tiny_kg):
    kg_cfg, graph_cfg = cfgs(alpha=0.99)
    with pytest.raises(InjectionError, match=r"no seed triple was injected: .*Lower kg.alpha \(now 0.99\)"):
        build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg)


def test_long_tails_are_skipped(tokenizer, tiny_kg):
    kg_cfg, _ = cfgs()
    graph_cfg = build({"graph": {"num_roots": R, "num_leaves": 2}, "corpus": {"chunk_overlap": 4}}).graph
    graphs, rep = build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg)
    assert all(int(g.leaf_length.max()) <= 2 for g in graphs)
    t2dm = len(tokenizer.encode("type 2 diabetes mellitus", add_special_tokens=False).ids)
    assert t2dm > 2 and rep["injection"]["dropped"]["tail_too_long"] >= 1


def test_tails_that_are_only_unknown_tokens(tokenizer, tiny_kg):
    nodes = list(tiny_kg.nodes.values())
    weird = [Node(f"X:{i}", "糖尿病" + "ж" * i, "biolink:Disease") for i in range(3)]
    edges = [Edge("MESH:D008687", "treats", f"X:{i}") for i in range(3)] + [
        Edge("MESH:D001241", "treats", "MESH:D010146")]
    kg = SeedKG(nodes + weird, edges)
    kg_cfg, graph_cfg = cfgs()
    with pytest.raises(KGError, match=r"tokenizer/KG mismatch: 3 of 4 candidate tail names tokenise "
                                      r"entirely to \[UNK\]"):
        build_graphs(chunks_of(tokenizer), kg, tokenizer, kg_cfg, graph_cfg)
    kg_cfg, graph_cfg = cfgs(max_unknown_tail_fraction=0.8)
    graphs, rep = build_graphs(chunks_of(tokenizer), kg, tokenizer, kg_cfg, graph_cfg)
    assert rep["tails"]["only_unknown_tokens"] == 3 and rep["injection"]["dropped"]["tail_unknown"] == 3
    assert all(not x.object.startswith("X:") for g in graphs for x in g.injections)


def test_chunks_must_match_tokenizer_and_R(tokenizer, tiny_kg):
    kg_cfg, graph_cfg = cfgs()
    chunks = chunks_of(tokenizer)
    chunks[1].input_ids = chunks[1].input_ids[1:]
    with pytest.raises(KGError, match=r"chunk b#0: does not start with \[CLS\]"):
        build_graphs(chunks, tiny_kg, tokenizer, kg_cfg, graph_cfg)
    small = build({"graph": {"num_roots": 8}, "corpus": {"chunk_overlap": 2}}).graph
    with pytest.raises(KGError, match=r"chunk a#0: \d+ root tokens exceed graph.num_roots = 8"):
        build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, small)
    no_mask = make_tokenizer()
    vocab = no_mask.get_vocab()
    from tokenizers import Tokenizer, models
    bare = Tokenizer(models.WordPiece({t: i for t, i in vocab.items() if t != "[MASK]"}, unk_token="[UNK]"))
    with pytest.raises(KGError, match=r"tokenizer lacks special tokens \['\[MASK\]'\]"):
        build_graphs(chunks_of(tokenizer), tiny_kg, bare, kg_cfg, graph_cfg)
    with pytest.raises(KGError, match="no chunks"):
        build_graphs([], tiny_kg, tokenizer, kg_cfg, graph_cfg)


def test_unknown_scorer(tokenizer, tiny_kg):
    from graphmert.config import ConfigError

    kg_cfg, graph_cfg = cfgs(scorer="embeddings")
    with pytest.raises(ConfigError, match="kg.scorer: unknown triple scorer 'embeddings'"):
        build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg)


def test_progress_callback(tokenizer, tiny_kg):
    calls = []
    kg_cfg, graph_cfg = cfgs()
    build_graphs(chunks_of(tokenizer), tiny_kg, tokenizer, kg_cfg, graph_cfg,
                 progress=lambda phase, done, total: calls.append((phase, done, total)))
    assert calls[-1] == ("graphs", 4, 4) and any(c[0] == "score" for c in calls)
    assert np.all([d <= t for _, d, t in calls])
