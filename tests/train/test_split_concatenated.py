"""With corpus.chunk_mode=concatenate a chunk holds several documents; the train/held-out split must
still keep every document on one side (chunks list all their documents, graphs carry them through
the graph shards, and the split uses them)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from graphmert.config import CorpusConfig, GraphConfig, TokenizerConfig
from graphmert.corpus.chunk import read_chunks, write_chunks
from graphmert.corpus.windowing import chunk_documents
from graphmert.corpus.document import Document
from graphmert.corpus.tokenizer import special_ids, train_tokenizer
from graphmert.graph.io import SCHEMA, graphs_equal, read_graphs, write_graphs
from graphmert.graph.layout import LeafyChainGraph
from graphmert.corpus.fraction import document_fraction
from graphmert.train.data import split_by_document

SENTENCES = ["Metformin lowers hepatic glucose output in type 2 diabetes.",
             "Liraglutide activates GLP1R and reduces body weight in obesity.",
             "Insulin resistance precedes beta cell failure."]
R = 16


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(SENTENCES * 10, TokenizerConfig(vocab_size=200, min_frequency=1))


def _docs(n: int) -> list[Document]:
    return [Document(id=f"pmid{i}", text=" ".join(SENTENCES[: 1 + i % 3])) for i in range(n)]


def _chunks(tok, mode: str = "concatenate", n_docs: int = 40):
    return list(chunk_documents(_docs(n_docs), tok, CorpusConfig(chunk_mode=mode), GraphConfig(num_roots=R)))


def _graphs(chunks, tok) -> list[LeafyChainGraph]:
    pad = special_ids(tok)["pad"]
    return [LeafyChainGraph.from_roots(c.id, c.doc_id, c.input_ids, c.word_ids, R, 2, pad,
                                       documents=c.documents) for c in chunks]


def test_concatenated_chunks_list_every_document_they_hold(tok, tmp_path):
    chunks = _chunks(tok)
    assert any(len(c.documents) > 1 for c in chunks)
    for c in chunks:
        assert c.documents[0] == c.doc_id
        assert set(c.documents) == {d for d in c.doc_ids if d}
    # every document appears in the chunks, and the shard keeps the lists
    assert set().union(*(c.documents for c in chunks)) == {d.id for d in _docs(40)}
    write_chunks(chunks, tmp_path / "c.parquet")
    assert [c.documents for c in read_chunks(tmp_path / "c.parquet")] == [c.documents for c in chunks]
    assert all(c.documents == [c.doc_id] for c in _chunks(tok, "document"))


def test_no_document_on_both_sides_of_the_split(tok):
    graphs = _graphs(_chunks(tok), tok)
    side = lambda idx: set().union(*(graphs[i].documents for i in idx))   # noqa: E731
    held_docs = {d for g in graphs for d in g.documents if document_fraction(d) < 0.3}
    # the fixture is one where splitting by a chunk's first document (its doc_id) leaks
    naive_train = [i for i, g in enumerate(graphs) if g.doc_id not in held_docs]
    naive_held = [i for i, g in enumerate(graphs) if g.doc_id in held_docs]
    assert side(naive_train) & side(naive_held)

    train, held = split_by_document(graphs, 0.3)
    assert train and held and not set(train) & set(held)
    assert not side(train) & side(held)
    assert side(held) <= held_docs and not side(train) & held_docs
    # what is left out mixes held-out and training documents, and nothing else is
    for i in set(range(len(graphs))) - set(train) - set(held):
        assert set(graphs[i].documents) & held_docs and set(graphs[i].documents) - held_docs


def test_a_small_concatenated_corpus_still_gets_a_held_out_graph(tok):
    graphs = _graphs(_chunks(tok, n_docs=6), tok)
    train, held = split_by_document(graphs, 1e-9)
    assert held and train
    assert not set().union(*(graphs[i].documents for i in train)) & \
        set().union(*(graphs[i].documents for i in held))


def test_graph_shards_keep_the_documents_and_old_shards_fail_clearly(tok, tmp_path):
    graphs = _graphs(_chunks(tok), tok)
    write_graphs(graphs, tmp_path / "g.parquet")
    back = list(read_graphs(tmp_path / "g.parquet"))
    assert all(graphs_equal(a, b) and a.documents == b.documents for a, b in zip(graphs, back))
    # a shard written before the column existed: document chunks read, concatenated ones refuse
    table = pq.read_table(tmp_path / "g.parquet").drop_columns(["documents"])
    pq.write_table(table, tmp_path / "old.parquet")
    with pytest.raises(ValueError, match="concat#0.*rebuild the graphs"):
        list(read_graphs(tmp_path / "old.parquet"))
    doc_graphs = _graphs(_chunks(tok, "document"), tok)
    write_graphs(doc_graphs, tmp_path / "d.parquet")
    pq.write_table(pq.read_table(tmp_path / "d.parquet").drop_columns(["documents"]), tmp_path / "old_d.parquet")
    assert [g.documents for g in read_graphs(tmp_path / "old_d.parquet")] == [[g.doc_id] for g in doc_graphs]
    assert "documents" in SCHEMA.names
