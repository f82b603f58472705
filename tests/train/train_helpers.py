"""Helpers for training tests: a tiny WordPiece tokenizer, random leafy chain graphs with whole words,
tiny configs, and an on-disk run layout (graph shards, tokenizer.json, relation_map.json).
(A uniquely named module, so test files can import it whatever other conftest.py files exist.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from graphmert.config import Config, build
from graphmert.corpus.tokenizer import SPECIAL_TOKENS, load_tokenizer, save_tokenizer
from graphmert.graph.io import write_graph_shards
from graphmert.graph.layout import LeafyChainGraph

PAD, UNK, CLS, SEP, MASK = range(5)
FIRST_WORD_ID = len(SPECIAL_TOKENS)
RELATIONS = {"treats": 0, "causes": 1, "associated_with": 2}


def write_tokenizer(path: Path, vocab_size: int = 64) -> Path:
    """A WordPiece tokenizer.json with the 5 special tokens at ids 0..4 and tokens w5 … w{V−1}."""
    vocab = path.with_suffix(".vocab.txt")
    vocab.write_text("\n".join(SPECIAL_TOKENS + [f"w{i}" for i in range(FIRST_WORD_ID, vocab_size)]) + "\n")
    return save_tokenizer(load_tokenizer(vocab), path)


def random_graph(rng: np.random.Generator, R: int, K: int, vocab: int, n: int | None = None,
                 fill: float = 0.3, num_relations: int = len(RELATIONS), chunk_id: str = "c",
                 doc_id: str = "d", word_lengths=(0.7, 0.2, 0.1)) -> LeafyChainGraph:
    """[CLS] words… [SEP] with words of 1–3 tokens, random injections (head 1–2 roots, tail 1..K)."""
    n = int(rng.integers(max(4, R // 2), R + 1)) if n is None else n
    body = n - 2
    sizes = rng.choice(len(word_lengths), size=body, p=word_lengths) + 1
    words = np.repeat(np.arange(body), sizes)[:body].tolist()
    ids = [CLS] + rng.integers(FIRST_WORD_ID, vocab, body).tolist() + [SEP]
    g = LeafyChainGraph.from_roots(chunk_id, doc_id, ids, [-1] + words + [-1], R, K, PAD)
    u, heads = rng.random(n), rng.integers(1, 3, n)
    tails, lengths = rng.integers(FIRST_WORD_ID, vocab, (n, K)), rng.integers(1, K + 1, n)
    rels = rng.integers(num_relations, size=n)
    i = 1
    while i < n - 1:
        if u[i] < fill:
            m = int(min(heads[i], n - 1 - i))
            g.inject(i, tails[i, :lengths[i]], int(rels[i]), m)
            i += m
        else:
            i += 1
    g.validate()
    return g


def random_graphs(count: int, R: int = 16, K: int = 3, vocab: int = 64, seed: int = 0,
                  chunks_per_doc: int = 2, **kw) -> list[LeafyChainGraph]:
    rng = np.random.default_rng(seed)
    return [random_graph(rng, R, K, vocab, chunk_id=f"doc{i // chunks_per_doc}#{i % chunks_per_doc}",
                         doc_id=f"doc{i // chunks_per_doc}", **kw) for i in range(count)]


def tiny_config(R: int = 16, K: int = 3, layout: str = "packed", model: dict | None = None,
                **train) -> Config:
    """hidden 32, 2 layers, 2 heads; ``train`` overrides the train section."""
    t = {"batch_size": 4, "effective_batch_size": 8, "max_steps": 6, "warmup_steps": 2, "lr": 1e-3,
         "min_lr": 1e-4, "eval_every": 3, "checkpoint_every": 3, "eval_fraction": 0.2, **train}
    m = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64,
         "sbo_max_span_length": 8, **(model or {})}
    return build({"graph": {"num_roots": R, "num_leaves": K, "layout": layout},
                  "corpus": {"chunk_overlap": 2}, "model": m, "train": t})


def write_inputs(folder: Path, graphs: list[LeafyChainGraph], vocab: int = 64) -> dict:
    """Graph shards, tokenizer.json and relation_map.json under ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    shards = write_graph_shards(graphs, folder / "graphs", shard_size=max(1, len(graphs) // 2))
    tok = write_tokenizer(folder / "tokenizer.json", vocab)
    rmap = folder / "relation_map.json"
    rmap.write_text(json.dumps(RELATIONS))
    return {"graphs": [str(p) for p in shards], "tokenizer": str(tok), "relation_map": str(rmap)}
