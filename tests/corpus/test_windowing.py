"""Chunking: [CLS] + ≤ R−2 tokens + [SEP]; offsets and mention spans point at the right text."""

from __future__ import annotations

import pytest

from graphmert.config import CorpusConfig, GraphConfig, TokenizerConfig
from graphmert.corpus.chunk import read_chunks, write_chunks
from graphmert.corpus.windowing import chunk_documents, window_starts
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.tokenizer import special_ids, train_tokenizer

SENT = ("Metformin lowers hepatic glucose output in type 2 diabetes. "
        "Liraglutide activates GLP1R and reduces body weight in obesity. ")


def _doc(doc_id: str, repeats: int) -> Document:
    text = SENT * repeats
    mentions = []
    for name, typ, cid in (("Metformin", "Chemical", "MESH:D008687"),
                           ("type 2 diabetes", "Disease", "MESH:D003924"),
                           ("GLP1R", "Gene", "NCBIGene:2740")):
        start = 0
        while (i := text.find(name, start)) >= 0:
            mentions.append(Mention(i, i + len(name), name, typ, [cid]))
            start = i + 1
    return Document(id=doc_id, text=text, mentions=mentions)


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer([SENT] * 20, TokenizerConfig(vocab_size=200, min_frequency=1))


def test_window_starts_cover_everything():
    for n in range(1, 200):
        for width, overlap in ((10, 0), (10, 3), (30, 8)):
            starts = window_starts(n, width, overlap)
            covered = set()
            for s in starts:
                covered |= set(range(s, min(s + width, n)))
            assert covered == set(range(n))
            assert starts == sorted(set(starts))
            assert starts[-1] + min(width, n) == n


@pytest.mark.parametrize("mode", ["document", "concatenate"])
def test_chunk_shape_offsets_and_mentions(tok, mode):
    docs = [_doc("d1", 1), _doc("d2", 6)]
    graph = GraphConfig(num_roots=24)
    chunks = list(chunk_documents(docs, tok, CorpusConfig(chunk_mode=mode, chunk_overlap=4), graph))
    sp = special_ids(tok)
    by_id = {d.id: d for d in docs}
    vocab = {v: k for k, v in tok.get_vocab().items()}
    assert chunks
    for ch in chunks:
        assert 3 <= ch.num_roots <= graph.num_roots
        assert ch.input_ids[0] == sp["cls"] and ch.input_ids[-1] == sp["sep"]
        assert len(ch.offsets) == len(ch.word_ids) == ch.num_roots
        assert ch.offsets[0] == (-1, -1) and ch.word_ids[0] == -1
        for i in range(1, ch.num_roots - 1):
            doc = by_id[ch.doc_ids[i]] if mode == "concatenate" else by_id[ch.doc_id]
            s, e = ch.offsets[i]
            assert doc.text[s:e].lower() == vocab[ch.input_ids[i]].lstrip("#")
        for m in ch.mentions:
            doc = by_id[m.doc_id]
            assert doc.text[m.char_start:m.char_end] == m.text
            s = ch.offsets[m.token_start][0]
            e = ch.offsets[m.token_end - 1][1]
            assert doc.text[s:e] == m.text   # the token span covers exactly the mention
    if mode == "document":
        assert {c.doc_id for c in chunks} == {"d1", "d2"}
        assert all(not c.doc_ids for c in chunks)
        assert [c.id for c in chunks if c.doc_id == "d1"] == ["d1#0"]
    else:
        assert sum(c.num_roots - 2 for c in chunks) == sum(
            len(tok.encode(d.text, add_special_tokens=False).ids) for d in docs)


def test_every_mention_lands_in_some_window(tok):
    doc = _doc("long", 10)
    chunks = list(chunk_documents([doc], tok, CorpusConfig(chunk_overlap=8), GraphConfig(num_roots=32)))
    assert len(chunks) > 3
    seen = {(m.char_start, m.char_end) for c in chunks for m in c.mentions}
    assert seen == {(m.start, m.end) for m in doc.mentions}


def test_empty_document_gives_no_chunk(tok):
    assert list(chunk_documents([Document(id="e", text="   ")], tok, CorpusConfig(),
                                GraphConfig())) == []


def test_chunk_shards_round_trip(tmp_path, tok):
    chunks = list(chunk_documents([_doc("d", 3)], tok, CorpusConfig(chunk_mode="concatenate"),
                                  GraphConfig(num_roots=16)))
    write_chunks(chunks, tmp_path / "c.parquet")
    assert list(read_chunks(tmp_path / "c.parquet")) == chunks
    assert not list(tmp_path.glob(".*tmp"))
