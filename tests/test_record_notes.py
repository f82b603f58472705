"""A bug met while chunking or building graphs names the record it was at (a PEP 678 note that
pipelines/stage.py's ShardTaskError carries to the console): the document being tokenised or cut
into windows, the chunk whose heads are linked or whose graph is built."""

from __future__ import annotations

import pytest

import graphmert.corpus.windowing as windowing
import pipelines.stages.graphs as graphs_stage
from graphmert.config import CorpusConfig, GraphConfig, TokenizerConfig
from graphmert.corpus.chunk import write_chunks
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.tokenizer import special_ids, train_tokenizer
from graphmert.graph.distant import DistantSupervision
from graphmert.kg.graph import Edge, Node, SeedKG
from graphmert.kg.schema import RelationSchema

TEXT = "Metformin treats diabetes in adults."


def _docs(n: int = 3) -> list[Document]:
    return [Document(id=f"pmid{i}", text=TEXT,
                     mentions=[Mention(0, 9, "Metformin", "Chemical", ["MESH:D008687"]),
                               Mention(17, 25, "diabetes", "Disease", ["MESH:D003924"])]) for i in range(n)]


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer([TEXT] * 10, TokenizerConfig(vocab_size=100, min_frequency=1))


def _failing_on(real, bad: str, of):
    def call(*args, **kwargs):
        if of(*args) == bad:
            raise KeyError("gene")
        return real(*args, **kwargs)
    return call


@pytest.mark.parametrize("where", ["tokenize_document", "_window"])
def test_chunking_names_the_document(tok, monkeypatch, where):
    """Tokenising (shared by both chunk modes) and cutting windows (document mode, the default) note
    the document."""
    monkeypatch.setattr(windowing, where, _failing_on(getattr(windowing, where), "pmid1",
                                                      lambda td, *rest: td.id if where == "tokenize_document"
                                                      else td.doc.id))
    with pytest.raises(KeyError) as caught:
        list(windowing.chunk_documents(_docs(), tok, CorpusConfig(), GraphConfig(num_roots=16)))
    assert caught.value.__notes__ == ["document pmid1"]


@pytest.fixture
def chunk_shard(tmp_path, tok):
    graph = GraphConfig(num_roots=16, num_leaves=3)
    chunks = list(windowing.chunk_documents(_docs(), tok, CorpusConfig(), graph))
    write_chunks(chunks, tmp_path / "chunks-00000.parquet")
    kg = SeedKG([Node("MESH:D008687", "metformin", "biolink:ChemicalEntity"),
                 Node("MESH:D003924", "diabetes", "biolink:Disease")],
                [Edge("MESH:D008687", "treats", "MESH:D003924")])
    return tmp_path / "chunks-00000.parquet", chunks, kg, graph


def test_the_link_task_names_the_chunk(tok, chunk_shard, monkeypatch, tmp_path):
    path, chunks, kg, graph = chunk_shard
    monkeypatch.setattr(graphs_stage, "link_heads", _failing_on(graphs_stage.link_heads, chunks[1].id,
                                                                lambda c, *rest: c.id))
    shared = graphs_stage.LinkInputs(kg=kg, matcher=None, scorer=None, tokenizer=tok, graph=graph,
                                     alpha=None)
    with pytest.raises(KeyError) as caught:
        graphs_stage.link_shard((str(path), 0), shared, tmp_path / "link.npz")
    assert caught.value.__notes__ == [f"chunk {chunks[1].id}"]


def test_the_distant_task_names_the_chunk(tok, chunk_shard, monkeypatch, tmp_path):
    path, chunks, kg, graph = chunk_shard
    ds = DistantSupervision(kg, RelationSchema.from_kg(kg), tok, graph.num_leaves)
    monkeypatch.setattr(DistantSupervision, "graph", _failing_on(DistantSupervision.graph, chunks[2].id,
                                                                 lambda self, c, *rest: c.id))
    shared = graphs_stage.DistantInputs(ds, graph, tok, special_ids(tok)["pad"], frozenset())
    with pytest.raises(KeyError) as caught:
        graphs_stage.distant_shard(str(path), shared, tmp_path / "graphs.parquet")
    assert caught.value.__notes__ == [f"chunk {chunks[2].id}"]
