"""Ingest + chunking throughput on the shared abstracts corpus: documents/s and MB/s per phase.

    .venv/bin/python benchmarks/ingest.py [--limit N] [--out FILE]

Phases, each timed on its own: read (parse + validate), annotate (sentences + abbreviations with the
scispaCy tokenizer), write Parquet shards, tokenizer training, chunking; and the whole pipeline.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, require_shared, write_json  # noqa: E402

from graphmert.config import CorpusConfig, GraphConfig, TokenizerConfig  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.corpus.document import write_documents  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.tokenizer import train_tokenizer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=None, help="input file (default: the shared abstracts corpus)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents")
    ap.add_argument("--vocab-size", type=int, default=30522)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    path = Path(args.corpus) if args.corpus else require_shared("biomed_abstracts_corpus",
                                                                 "abstracts.jsonl.gz")
    rows = []

    def row(phase, seconds, n_docs, n_chars, **extra):
        rows.append({"phase": phase, "seconds": seconds, "docs/s": n_docs / seconds,
                     "MB/s": n_chars / 1e6 / seconds, **extra})

    t = time.perf_counter()
    docs = []
    for d in read_corpus([str(path)]):
        docs.append(d)
        if args.limit and len(docs) >= args.limit:
            break
    t_read = time.perf_counter() - t
    n, mb = len(docs), sum(len(d.text.encode()) for d in docs)
    row("read+validate", t_read, n, mb)

    t = time.perf_counter()
    docs = list(TextAnalyzer().annotate(docs))
    row("sentences+abbreviations", time.perf_counter() - t, n, mb)

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_documents(docs, Path(tmp) / "docs.parquet")
        row("write parquet", time.perf_counter() - t, n, mb)

    t = time.perf_counter()
    tok = train_tokenizer((d.text for d in docs), TokenizerConfig(vocab_size=args.vocab_size))
    row("train tokenizer", time.perf_counter() - t, n, mb, vocab=tok.get_vocab_size())

    t = time.perf_counter()
    chunks = list(chunk_documents(docs, tok, CorpusConfig(), GraphConfig()))
    row("chunk (R=128)", time.perf_counter() - t, n, mb, chunks=len(chunks))

    total = sum(r["seconds"] for r in rows)
    row("total", total, n, mb)
    print_table(rows, f"ingest + chunking: {n} documents, {mb / 1e6:.2f} MB of text from {path.name}")
    write_json("ingest", rows, args.out, corpus=str(path), documents=n)


if __name__ == "__main__":
    main()
