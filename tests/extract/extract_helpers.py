"""Helpers for extraction tests: two tiny annotated documents, a tokenizer trained on them, their
chunks, a tiny seed KG and schema, and a tiny random GraphMERT. (A uniquely named module.)"""

from __future__ import annotations

import torch

from graphmert.config import CorpusConfig, GraphConfig, ModelConfig, TokenizerConfig, build_section
from graphmert.corpus.windowing import chunk_documents
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.tokenizer import train_tokenizer
from graphmert.kg.graph import Edge, Node, SeedKG
from graphmert.kg.schema import RelationSchema
from graphmert.model.graphmert import build_model

TEXT_A = ("Metformin lowers glucose in type 2 diabetes. Obesity raises the risk of type 2 diabetes, "
          "and metformin reduces weight in obesity.")
TEXT_B = "Aspirin relieves pain. The INS gene is linked to neonatal diabetes and insulin resistance."


def _mentions(text: str, spec) -> list[Mention]:
    out, cursor = [], {}
    for surface, typ, ids in spec:
        start = text.index(surface, cursor.get(surface, 0))
        cursor[surface] = start + 1
        out.append(Mention(start, start + len(surface), surface, typ, list(ids)))
    return out


def make_docs() -> list[Document]:
    a = Document("docA", TEXT_A, mentions=_mentions(TEXT_A, [
        ("Metformin", "Chemical", ["MESH:D008687"]), ("glucose", "Chemical", ["MESH:D005947"]),
        ("type 2 diabetes", "Disease", ["MESH:D003924"]), ("Obesity", "Disease", ["MESH:D009765"]),
        ("type 2 diabetes", "Disease", ["MESH:D003924"]), ("metformin", "Chemical", ["MESH:D008687"]),
        ("obesity", "Disease", ["MESH:D009765"])]),
        sentences=[(0, 44), (45, len(TEXT_A))])
    b = Document("docB", TEXT_B, mentions=_mentions(TEXT_B, [
        ("Aspirin", "Chemical", ["MESH:D001241"]), ("pain", "Disease", []),
        ("INS", "Gene", ["NCBIGene:3630"]), ("neonatal diabetes", "Disease", ["MESH:C563425"])]),
        sentences=[(0, 22), (23, len(TEXT_B))])
    return [a, b]


def make_tokenizer(docs):
    cfg = build_section(TokenizerConfig, {"vocab_size": 200, "min_frequency": 1}, "tokenizer")
    return train_tokenizer([d.text for d in docs] * 3, cfg)


def make_chunks(docs, tok, R: int = 32, overlap: int = 4):
    corpus = build_section(CorpusConfig, {"chunk_overlap": overlap}, "corpus")
    graph = build_section(GraphConfig, {"num_roots": R, "num_leaves": 4}, "graph")
    return list(chunk_documents(docs, tok, corpus, graph))


def make_kg() -> SeedKG:
    nodes = [Node("MESH:D008687", "metformin", "biolink:ChemicalEntity"),
             Node("MESH:D005947", "glucose", "biolink:ChemicalEntity"),
             Node("MESH:D003924", "type 2 diabetes mellitus", "biolink:Disease"),
             Node("MESH:D009765", "obesity", "biolink:Disease"),
             Node("MESH:D001241", "aspirin", "biolink:ChemicalEntity"),
             Node("NCBIGene:3630", "INS", "biolink:Gene")]
    edges = [Edge("MESH:D008687", "treats", "MESH:D003924"),
             Edge("MESH:D009765", "associated_with", "MESH:D003924"),
             Edge("NCBIGene:3630", "associated_with", "MESH:D003924")]
    return SeedKG(nodes, edges)


def make_schema(kg: SeedKG) -> RelationSchema:
    return RelationSchema.from_kg(kg, {"associated_with": [["biolink:Disease", "biolink:Disease"],
                                                           ["biolink:Gene", "biolink:Disease"]]})


def make_model(vocab: int, num_relations: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = ModelConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, dropout=0.0,
                      attention_dropout=0.0, relation_dropout=0.0, sbo_head=False).validate()
    return build_model(cfg, vocab, num_relations).eval()
