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


def test_a_chunk_shard_is_written_as_a_stream(tmp_path, tok):
    """A concatenate-mode shard holds the whole corpus: chunks go to the file a row group at a
    time, from a generator, never a list of them all."""
    import pyarrow.parquet as pq

    chunks = list(chunk_documents([_doc("d", 3)], tok, CorpusConfig(chunk_mode="concatenate"),
                                  GraphConfig(num_roots=16)))
    many = [c for _ in range(4096 // len(chunks) + 2) for c in chunks]
    assert write_chunks(iter(many), tmp_path / "c.parquet") == len(many) > 4096
    assert pq.ParquetFile(tmp_path / "c.parquet").metadata.num_row_groups == 2
    assert list(read_chunks(tmp_path / "c.parquet")) == many


# ---------------------------------------------------------------- corpus.repeat_title
TITLE = "Metformin in type 2 diabetes."


def _titled(repeats: int, title: str = TITLE) -> Document:
    body = _doc("t", repeats)
    shift = len(title) + 1
    mentions = [Mention(m.start + shift, m.end + shift, m.text, m.type, m.ids) for m in body.mentions]
    for name, typ, cid in (("Metformin", "Chemical", "MESH:D008687"),
                           ("type 2 diabetes", "Disease", "MESH:D003924")):
        i = title.find(name)
        if i >= 0:
            mentions.append(Mention(i, i + len(name), name, typ, [cid]))
    return Document(id="t", title=title, text=title + " " + body.text,
                    mentions=sorted(mentions, key=lambda m: m.start))


def test_repeat_title_windows_start_with_the_title(tok):
    doc, graph = _titled(8), GraphConfig(num_roots=32)
    plain = list(chunk_documents([doc], tok, CorpusConfig(chunk_overlap=4), graph))
    titled = list(chunk_documents([doc], tok, CorpusConfig(chunk_overlap=4, repeat_title=True), graph))
    title_ids = tok.encode(TITLE, add_special_tokens=False).ids
    t = len(title_ids)
    assert titled[0] == plain[0]                      # the first window is the document's start
    assert len(titled) > len(plain) > 2
    vocab = {v: k for k, v in tok.get_vocab().items()}
    body_tokens = set()
    for ch in titled[1:]:
        assert ch.title_roots == t and ch.num_roots <= graph.num_roots
        assert ch.input_ids[1:1 + t] == title_ids
        for i in range(1, ch.num_roots - 1):          # every root points at its own text
            s, e = ch.offsets[i]
            assert doc.text[s:e].lower() == vocab[ch.input_ids[i]].lstrip("#")
        body_tokens |= {ch.offsets[i] for i in range(1 + t, ch.num_roots - 1)}
        title_mentions = {m.text for m in ch.mentions if m.token_end <= 1 + t}
        assert title_mentions == {"Metformin", "type 2 diabetes"}
        for m in ch.mentions:                         # the roots of a mention spell it
            assert doc.text[ch.offsets[m.token_start][0]:ch.offsets[m.token_end - 1][1]] == m.text
        (a0, b0), (a1, b1) = ch.char_ranges()
        assert (a0, b0) == (0, len(TITLE)) and ch.char_start == 0
        assert ch.text == TITLE + " " + doc.text[a1:b1]
        assert ch.doc_offset(3) == 3 and ch.doc_offset(len(TITLE) + 1) == a1
        assert ch.doc_offset(len(ch.text)) == b1
    enc = tok.encode(doc.text, add_special_tokens=False)
    assert body_tokens | {tuple(o) for o in enc.offsets[:titled[0].num_roots - 2]} == \
        {tuple(o) for o in enc.offsets}               # every token is in some window


def test_a_title_is_not_repeated_when_it_fills_more_than_half_a_window(tok):
    long_title = " ".join(["Metformin lowers hepatic glucose output"] * 3) + "."
    doc = _titled(8, title=long_title)
    cfg = CorpusConfig(chunk_overlap=4, repeat_title=True)
    chunks = list(chunk_documents([doc], tok, cfg, GraphConfig(num_roots=32)))
    assert len(tok.encode(long_title, add_special_tokens=False).ids) > 15
    assert all(c.title_roots == 0 for c in chunks)
    assert chunks == list(chunk_documents([doc], tok, CorpusConfig(chunk_overlap=4), GraphConfig(num_roots=32)))


def test_a_short_document_is_one_window_either_way(tok):
    doc = _titled(1)
    cfg = CorpusConfig(repeat_title=True)
    assert list(chunk_documents([doc], tok, cfg, GraphConfig())) == \
        list(chunk_documents([doc], tok, CorpusConfig(), GraphConfig()))


def test_title_roots_round_trip_and_old_shards_read_as_none(tmp_path, tok):
    import pyarrow.parquet as pq

    cfg = CorpusConfig(chunk_overlap=4, repeat_title=True)
    chunks = list(chunk_documents([_titled(8)], tok, cfg, GraphConfig(num_roots=32)))
    write_chunks(chunks, tmp_path / "c.parquet")
    assert list(read_chunks(tmp_path / "c.parquet")) == chunks
    table = pq.read_table(tmp_path / "c.parquet").drop_columns(["title_roots"])
    pq.write_table(table, tmp_path / "old.parquet")            # a shard written before the column
    assert [c.title_roots for c in read_chunks(tmp_path / "old.parquet")] == [0] * len(chunks)


def test_repeat_title_needs_document_mode():
    from graphmert.config import ConfigError, build

    with pytest.raises(ConfigError, match="corpus.repeat_title: needs corpus.chunk_mode 'document'"):
        build({"corpus": {"repeat_title": True, "chunk_mode": "concatenate"}})


# ---------------------------------------------------------------- sentence ids (kg.candidate_scope)
def _sentenced(repeats: int) -> Document:
    doc = _titled(repeats)
    at, spans = 0, []
    for piece in doc.text.rstrip().split(". "):          # every ". " ends a sentence
        spans.append((at, at + len(piece) + 1))
        at += len(piece) + 2
    doc.sentences = spans
    return doc


def _sentence_of(doc: Document, char: int) -> int:
    return next((i for i, (a, b) in enumerate(doc.sentences) if a <= char < b), -1)


@pytest.mark.parametrize("cfg", [CorpusConfig(chunk_overlap=4),
                                 CorpusConfig(chunk_overlap=4, repeat_title=True),
                                 CorpusConfig(chunk_mode="concatenate")])
def test_each_root_knows_its_document_sentence(tok, cfg):
    doc = _sentenced(8)
    chunks = list(chunk_documents([doc], tok, cfg, GraphConfig(num_roots=32)))
    assert len(chunks) > 2
    for ch in chunks:
        assert len(ch.sentence_ids) == ch.num_roots and ch.sentence_ids[0] == ch.sentence_ids[-1] == -1
        assert ch.sentence_ids[1:-1] == [_sentence_of(doc, s) for s, _ in ch.offsets[1:-1]]
        assert ch.title_chars == (len(TITLE) if cfg.chunk_mode == "document" else 0)
    assert {i for ch in chunks for i in ch.sentence_ids} == {-1, *range(len(doc.sentences))}


def test_sentence_ids_round_trip_and_old_shards_read_as_unknown(tmp_path, tok):
    import pyarrow.parquet as pq

    chunks = list(chunk_documents([_sentenced(8), _titled(2)], tok, CorpusConfig(chunk_overlap=4),
                                  GraphConfig(num_roots=32)))
    assert chunks[-1].sentence_ids == []                  # a document without sentences
    write_chunks(chunks, tmp_path / "c.parquet")
    assert list(read_chunks(tmp_path / "c.parquet")) == chunks
    table = pq.read_table(tmp_path / "c.parquet").drop_columns(["sentence_ids", "title_chars"])
    pq.write_table(table, tmp_path / "old.parquet")            # a shard written before the columns
    old = list(read_chunks(tmp_path / "old.parquet"))
    assert [(c.sentence_ids, c.title_chars) for c in old] == [([], 0)] * len(chunks)


def test_cross_references_are_not_chunk_entities(tok):
    """A linked mention's xrefs name its one entity: the chunk's entity table (what extraction
    pairs) holds the mention's ids only."""
    from graphmert.graph.distant import chunk_entities
    from graphmert.kg.graph import SeedKG

    doc = _doc("d1", 1)
    doc.mentions[0].xrefs = ["DRUGBANK:DB00331"]
    (chunk,) = chunk_documents([doc], tok, CorpusConfig(), GraphConfig(num_roots=64))
    assert all("DRUGBANK:DB00331" not in m.ids for m in chunk.mentions)
    ents = chunk_entities(chunk, SeedKG([], []), R=4)
    assert set(ents.index) == {"MESH:D008687", "MESH:D003924", "NCBIGene:2740"}
