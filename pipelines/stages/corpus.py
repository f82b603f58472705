"""Corpus stages: ingest → tokenizer → chunks.

* ``ingest``: the driver reads and validates the corpus (errors name file and record) and cuts it
  into batches of ``corpus.shard_size`` documents; each batch is one shard task (sentence split +
  abbreviations with spaCy/scispaCy, the pipeline built once per worker) writing a document shard.
* ``tokenizer``: one WordPiece tokenizer over the whole corpus, in the driver.
* ``chunks``: one shard task per document shard (``document`` mode: no chunk crosses a document, so
  shards are independent). ``concatenate`` mode joins all documents' tokens, so it is one task.
  Either way a task writes its chunks as it cuts them (a stream: the corpus is never in memory).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from pathlib import Path
from typing import Iterable, Iterator

from graphmert.config import Config, ConfigError, CorpusConfig, GraphConfig
from graphmert.corpus.chunk import Chunk, write_chunks
from graphmert.corpus.windowing import chunk_documents
from graphmert.corpus.document import Document, read_documents, write_documents
from graphmert.corpus.nlp import TextAnalyzer
from graphmert.corpus.readers import read_corpus
from graphmert.corpus.readers.text import text_files
from graphmert.corpus.tokenizer import load_tokenizer, save_tokenizer, train_tokenizer
from graphmert.io import file_sha256
from pipelines.scheduler import worker_cache
from pipelines.stage import Stage, StageContext

log = logging.getLogger("graphmert.pipeline")


def document_shards(ctx: StageContext) -> list[Path]:
    d = ctx.stage_dir("ingest")
    return [d / s for s in ctx.upstream["ingest"]["shards"]]


def shard_sha256(ctx: StageContext, stage: str, path: Path) -> str:
    """An upstream shard's sha256, from its manifest's ``shard_info`` (else read from disk)."""
    known = {e["file"]: e["sha256"] for e in ctx.upstream[stage].get("shard_info", [])}
    return known.get(path.name) or file_sha256(path)


# --------------------------------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------------------------------


def batches(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    """Consecutive lists of ``size`` documents (the last may be shorter)."""
    buf: list[Document] = []
    for d in docs:
        buf.append(d)
        if len(buf) == size:
            yield buf
            buf = []
    if buf:
        yield buf


def batch_key(index: int, docs: list[Document]) -> str:
    """Content hash of a batch of read documents: appending to the corpus leaves the shards of the
    unchanged batches in place."""
    h = hashlib.sha256()
    for d in docs:
        h.update(json.dumps(dataclasses.asdict(d), sort_keys=True, default=str).encode())
    return h.hexdigest()


def annotate_shard(docs: list[Document], options: tuple[bool, bool], path: Path) -> dict:
    """Shard task: sentences and abbreviations of ``docs`` → one document shard at ``path``."""
    sentences, abbreviations = options
    analyzer = worker_cache(("text-analyzer", sentences, abbreviations),
                            lambda: TextAnalyzer(sentences=sentences, abbreviations=abbreviations))
    docs = list(analyzer.annotate(docs))
    write_documents(docs, path)
    return {"documents": len(docs), "sentences": sum(len(d.sentences) for d in docs),
            "abbreviations": sum(len(d.abbreviations) for d in docs)}


def _ingest(ctx: StageContext) -> dict:
    c = ctx.cfg.corpus
    if not c.paths:
        raise ConfigError("corpus.paths: no input given; set it in the config or as an override, "
                          "e.g. 'corpus.paths=[data/demo/corpus.jsonl]'")
    reader = read_corpus(c.paths, format=c.format, skip_bad_records=c.skip_bad_records)
    shards = ctx.map_shards(annotate_shard, batches(reader, c.shard_size), name="documents",
                            shared=(c.sentences, c.abbreviations), key=batch_key)
    st = reader.stats.to_dict()
    if st["skipped_records"]:
        log.warning("ingest: skipped %d bad records (each is in the log and the manifest)",
                    st["skipped_records"])
    files = st.pop("files")
    return {**st, "sentences": sum(s.counts["sentences"] for s in shards),
            "abbreviations": sum(s.counts["abbreviations"] for s in shards),
            "source_files": [{"path": k, **v} for k, v in files.items()],
            "shards": [ctx.publish(s) for s in shards]}


# --------------------------------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# chunks
# --------------------------------------------------------------------------------------------------


def chunk_shard(doc_paths: list[str], shared: tuple[str, str, CorpusConfig, GraphConfig],
                path: Path) -> dict:
    """Shard task: the documents of ``doc_paths`` → one chunk shard at ``path``."""
    tok_path, tok_hash, corpus_cfg, graph_cfg = shared
    tok = worker_cache(("tokenizer", tok_path, tok_hash), lambda: load_tokenizer(tok_path))
    counts, documents = {"chunks": 0, "root_tokens": 0, "chunk_mentions": 0}, set()

    def counted(chunks: Iterable[Chunk]) -> Iterator[Chunk]:   # written as they are cut
        for c in chunks:
            counts["chunks"] += 1
            counts["root_tokens"] += c.num_roots
            counts["chunk_mentions"] += len(c.mentions)
            documents.add(c.doc_id)
            yield c

    write_chunks(counted(chunk_documents(read_documents(doc_paths), tok, corpus_cfg, graph_cfg)), path)
    return {**counts, "documents": len(documents)}


def _chunks(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    docs = document_shards(ctx)
    sha = {str(p): shard_sha256(ctx, "ingest", p) for p in docs}
    groups = [[str(p)] for p in docs] if cfg.corpus.chunk_mode == "document" else [list(sha)]
    tok = ctx.stage_dir("tokenizer") / "tokenizer.json"
    shared = (str(tok), ctx.upstream["tokenizer"]["output_hash"], cfg.corpus, cfg.graph)
    shards = ctx.map_shards(chunk_shard, groups, name="chunks", shared=shared,
                            key=lambda i, group: [[sha[p] for p in group], shared[1]])
    total = {k: sum(s.counts[k] for s in shards)
             for k in ("chunks", "documents", "root_tokens", "chunk_mentions")}
    return {**total, "shards": [ctx.publish(s) for s in shards]}


def _source_files(cfg: Config) -> list[Path]:
    """Every file ingest reads (a folder input contributes its .txt files)."""
    out: list[Path] = []
    for raw in cfg.corpus.paths:
        p = Path(raw)
        out.extend(text_files(p) if p.is_dir() else [p])
    return out


INGEST = Stage("ingest", sections=("corpus.paths", "corpus.format", "corpus.skip_bad_records",
                                   "corpus.shard_size", "corpus.sentences", "corpus.abbreviations"),
               upstream=(), run=_ingest, source_files=_source_files)
TOKENIZER = Stage("tokenizer", sections=("tokenizer",), upstream=("ingest",), run=_tokenizer)
CHUNKS = Stage("chunks", sections=("corpus.chunk_mode", "corpus.chunk_overlap", "corpus.repeat_title",
                                   "graph.num_roots"),
               upstream=("ingest", "tokenizer"), run=_chunks)
