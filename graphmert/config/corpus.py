"""Sections ``corpus`` (ingestion and chunking of the text corpus) and ``tokenizer`` (its WordPiece
tokenizer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from graphmert.config.options import opt


@dataclass
class CorpusConfig:
    """Ingestion and chunking of the text corpus."""

    paths: list[str] = opt(factory=list, help="corpus files or folders (a folder of .txt files is one input)")
    format: str = opt("auto", help="reader name, or 'auto' to choose by file suffix")
    skip_bad_records: bool = opt(False, help="count and log bad records instead of failing")
    shard_size: int = opt(1000, min=1, help="documents per Parquet shard")
    sentences: bool = opt(True, help="record sentence boundaries (spaCy blank 'en' + scispaCy tokenizer)")
    abbreviations: bool = opt(True, help="run scispaCy's abbreviation detector")
    chunk_mode: str = opt("document", choices=("document", "concatenate"),
                          help="'document': chunks never cross documents; 'concatenate': the paper's")
    chunk_overlap: int = opt(32, min=0, help="tokens shared by consecutive windows of a long document")
    repeat_title: bool = opt(False, help="'document' mode: every window of a long document starts with "
                             "the document's title (at most half a window), so title entities share a "
                             "chunk with every sentence")


@dataclass
class TokenizerConfig:
    """WordPiece tokenizer: trained on the ingested corpus, or loaded from a path."""

    path: Optional[str] = opt(None, help="existing tokenizer.json or vocab.txt; None trains one")
    vocab_size: int = opt(30522, min=16, help="vocabulary size when training")
    min_frequency: int = opt(2, min=1, help="when training: merge a WordPiece pair only while it "
                             "occurs at least this often")
    lowercase: bool = opt(True, help="lowercase text before tokenising (BERT normaliser)")
