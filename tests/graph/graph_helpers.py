"""Helpers for graph tests: a WordPiece tokenizer trained on a few sentences, hand-made chunks,
a tiny seed KG, and random leafy chain graphs. (A uniquely named module, so test files can import it
whatever other conftest.py files exist.)"""

from __future__ import annotations

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.graph.layout import LeafyChainGraph
from graphmert.kg.graph import Edge, Node, SeedKG

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TEXTS = [
    "Metformin treats type 2 diabetes mellitus and lowers blood glucose.",
    "Insulin resistance and obesity are associated with type 2 diabetes.",
    "Aspirin treats pain and inhibits platelet aggregation in patients.",
    "The INS gene encodes insulin; mutations in INS cause neonatal diabetes.",
    "Obesity increases the risk of hypertension and heart disease.",
    "Glucose tolerance improved in patients who took metformin daily.",
] * 3


def make_tokenizer(texts=TEXTS, vocab_size=300) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                                             show_progress=False))
    v = tok.get_vocab()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", v["[CLS]"]), ("[SEP]", v["[SEP]"])])
    return tok


def make_chunk(tok: Tokenizer, text: str, chunk_id: str, mentions=(), doc_id: str | None = None) -> Chunk:
    """One chunk for a whole text; ``mentions`` are (surface text, type, ids), found by first occurrence."""
    enc = tok.encode(text)
    offsets = [tuple(o) for o in enc.offsets]
    offsets[0], offsets[-1] = (-1, -1), (-1, -1)          # [CLS], [SEP]
    words = [-1 if w is None else w for w in enc.word_ids]
    cms = []
    for surface, typ, ids in mentions:
        a = text.index(surface)
        b = a + len(surface)
        toks = [i for i, (s, e) in enumerate(offsets) if s >= 0 and s < b and e > a]
        cms.append(ChunkMention(toks[0], toks[-1] + 1, a, b, surface, typ, list(ids), doc_id or chunk_id))
    return Chunk(id=chunk_id, doc_id=doc_id or chunk_id, input_ids=list(enc.ids), offsets=offsets,
                 word_ids=words, mentions=cms, text=text, char_start=0)


def make_tiny_kg() -> SeedKG:
    nodes = [
        Node("MESH:D003924", "type 2 diabetes mellitus", "biolink:Disease"),
        Node("MESH:D008687", "Metformin", "biolink:ChemicalEntity"),
        Node("MESH:D001241", "Aspirin", "biolink:ChemicalEntity"),
        Node("MESH:D010146", "pain", "biolink:PhenotypicFeature"),
        Node("MESH:D009765", "obesity", "biolink:Disease"),
        Node("MESH:D006973", "hypertension", "biolink:Disease"),
        Node("NCBIGene:3630", "INS", "biolink:Gene", ("insulin",)),
        Node("MESH:D005947", "glucose", "biolink:ChemicalEntity"),
    ]
    edges = [
        Edge("MESH:D008687", "treats", "MESH:D003924"),
        Edge("MESH:D001241", "treats", "MESH:D010146"),
        Edge("NCBIGene:3630", "associated_with", "MESH:D003924"),
        Edge("NCBIGene:3630", "associated_with", "MESH:D009765"),
        Edge("MESH:D009765", "associated_with", "MESH:D006973"),
        Edge("MESH:D008687", "lowers", "MESH:D005947"),
    ]
    return SeedKG(nodes, edges, ["<tiny>"])


def random_graph(rng: np.random.Generator, R: int, K: int, n: int | None = None,
                 fill: float = 0.5, num_relations: int = 3, pad_id: int = 0) -> LeafyChainGraph:
    """A valid graph: n real roots, random injections (random tail length 1..K, head length 1..3)."""
    n = int(rng.integers(2, R + 1)) if n is None else n
    ids = rng.integers(5, 100, n).tolist()
    g = LeafyChainGraph.from_roots("c", "d", ids, list(range(n)), R, K, pad_id)
    for i in range(1, n - 1):
        if rng.random() < fill:
            m = int(rng.integers(1, min(3, n - 1 - i) + 1))
            t = int(rng.integers(1, K + 1))
            g.inject(i, rng.integers(5, 100, t), int(rng.integers(0, num_relations)), m)
    return g
