"""Corpus stages: ingest → tokenizer → chunks."""

from __future__ import annotations

import logging
from pathlib import Path

from graphmert.config import Config, ConfigError
from graphmert.corpus.chunk import write_chunks
from graphmert.corpus.chunking import chunk_documents
from graphmert.corpus.document import read_documents, write_documents
from graphmert.corpus.nlp import TextAnalyzer
from graphmert.corpus.readers import read_corpus
from graphmert.corpus.readers.text import text_files
from graphmert.corpus.tokenizer import load_tokenizer, save_tokenizer, train_tokenizer
from graphmert.io import write_shards
from pipelines.stage import Stage, StageContext

log = logging.getLogger("graphmert.pipeline")


def document_shards(ctx: StageContext) -> list[Path]:
    d = ctx.stage_dir("ingest")
    return [d / s for s in ctx.upstream["ingest"]["shards"]]


def _ingest(ctx: StageContext) -> dict:
    c = ctx.cfg.corpus
    if not c.paths:
        raise ConfigError("corpus.paths: no input given; set it in the config or as an override, "
                          "e.g. corpus.paths=[data/demo/corpus.jsonl]")
    reader = read_corpus(c.paths, format=c.format, skip_bad_records=c.skip_bad_records)
    analyzer = TextAnalyzer(sentences=c.sentences, abbreviations=c.abbreviations)
    n_sent = n_abbr = 0

    def counted(docs):
        nonlocal n_sent, n_abbr
        for doc in docs:
            n_sent += len(doc.sentences)
            n_abbr += len(doc.abbreviations)
            yield doc

    docs = ctx.progress(counted(analyzer.annotate(reader)), desc="ingest", unit="doc")
    shards = write_shards(docs, ctx.out, "documents", c.shard_size, write_documents)
    st = reader.stats.to_dict()
    if st["skipped_records"]:
        log.warning("ingest: skipped %d bad records (each is in the log and the manifest)",
                    st["skipped_records"])
    files = st.pop("files")
    return {**st, "sentences": n_sent, "abbreviations": n_abbr,
            "source_files": [{"path": k, **v} for k, v in files.items()],
            "shards": [p.name for p in shards]}


def _tokenizer(ctx: StageContext) -> dict:
    t = ctx.cfg.tokenizer
    if t.path:
        tok = load_tokenizer(t.path, lowercase=t.lowercase)
        origin = str(t.path)
    else:
        texts = (d.text for d in read_documents(document_shards(ctx)))
        tok = train_tokenizer(texts, t)
        origin = "trained"
    save_tokenizer(tok, ctx.out / "tokenizer.json")
    return {"vocab_size": tok.get_vocab_size(), "origin": origin}


def _chunks(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    tok = load_tokenizer(ctx.stage_dir("tokenizer") / "tokenizer.json")
    docs = read_documents(document_shards(ctx))
    n = tokens = mentions = 0
    docs_with_chunks: set[str] = set()

    def counted(chunks):
        nonlocal n, tokens, mentions
        for ch in chunks:
            n += 1
            tokens += ch.num_roots
            mentions += len(ch.mentions)
            docs_with_chunks.add(ch.doc_id)
            yield ch

    chunks = ctx.progress(counted(chunk_documents(docs, tok, cfg.corpus, cfg.graph)), desc="chunks",
                          unit="chunk")
    shards = write_shards(chunks, ctx.out, "chunks", 4 * cfg.corpus.shard_size, write_chunks)
    return {"chunks": n, "documents": len(docs_with_chunks), "root_tokens": tokens,
            "chunk_mentions": mentions, "shards": [p.name for p in shards]}


def _source_files(cfg: Config) -> list[Path]:
    """Every file ingest reads (a folder input contributes its .txt files)."""
    out: list[Path] = []
    for raw in cfg.corpus.paths:
        p = Path(raw)
        out.extend(text_files(p) if p.is_dir() else [p])
    return out


INGEST = Stage("ingest", sections=("corpus.paths", "corpus.format", "corpus.skip_bad_records",
                                   "corpus.shard_size", "corpus.sentences", "corpus.abbreviations"), upstream=(), run=_ingest, source_files=_source_files,
               help="Read the corpus into Parquet document shards (sentences, abbreviations).")
TOKENIZER = Stage("tokenizer", sections=("tokenizer",), upstream=("ingest",), run=_tokenizer,
                  help="Train a WordPiece tokenizer on the ingested corpus, or load one.")
CHUNKS = Stage("chunks", sections=("corpus.chunk_mode", "corpus.chunk_overlap", "corpus.shard_size",
                                   "graph.num_roots"), upstream=("ingest", "tokenizer"), run=_chunks,
               help="Cut documents into chunks of graph.num_roots root tokens.")
