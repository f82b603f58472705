"""Documents whose relations must never become seed triples: what extraction and evaluation use.

A seed triple taken from the relation annotations of a document that the run later extracts from, or
is scored on, leaks the answer into training. Several BC5CDR abstracts are BioRED dev documents, and a
user who extracts from a corpus must never be scored on seed triples taken from that same corpus. So
every stage that loads the seed KG leaves out the ``kg.relation_files`` relations of

* the extraction documents: ``extract.paths`` (the slice ``extract.document_fraction`` selects), or
  the run's own corpus when ``extract.paths`` is empty;
* the gold documents of ``evaluate.gold`` in that slice (evaluation scores only the documents that
  were extracted from).

The ids are read once per process and cached by the files' paths and sizes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable

from graphmert.config import Config
from graphmert.corpus.readers import read_corpus
from graphmert.corpus.fraction import document_fraction

__all__ = ["held_out_documents", "in_slice", "document_ids", "relation_document_ids"]


def in_slice(doc_id: str, fraction: float) -> bool:
    """Whether ``doc_id`` is in the deterministic slice u(id) < fraction (all documents at 1.0)."""
    return fraction >= 1.0 or document_fraction(doc_id) < fraction


@lru_cache(maxsize=16)
def _ids(paths: tuple[tuple[str, int], ...], format: str, skip_bad_records: bool) -> frozenset[str]:
    reader = read_corpus([p for p, _ in paths], format=format, skip_bad_records=skip_bad_records)
    return frozenset(d.id for d in reader)


def document_ids(paths: Iterable[str], format: str = "auto", skip_bad_records: bool = False) -> frozenset[str]:
    """Ids of the documents in ``paths`` (any corpus format)."""
    key = tuple((str(Path(p).resolve()), Path(p).stat().st_size if Path(p).is_file() else -1)
                for p in paths)
    return _ids(key, format, skip_bad_records) if key else frozenset()


def held_out_documents(cfg: Config, corpus_ids: Iterable[str] = ()) -> frozenset[str]:
    """The documents whose relations stay out of the seed KG (module docstring). ``corpus_ids`` are
    the run's own documents; they count as extraction documents when ``extract.paths`` is empty."""
    skip = cfg.corpus.skip_bad_records
    if cfg.extract.paths:
        extract = {d for d in document_ids(cfg.extract.paths, cfg.extract.format, skip)
                   if in_slice(d, cfg.extract.document_fraction)}
    else:
        extract = {d for d in corpus_ids if in_slice(d, cfg.extract.document_fraction)}
    gold = {d for d in document_ids(cfg.evaluate.gold, cfg.evaluate.format, skip)
            if in_slice(d, cfg.extract.document_fraction)}
    return frozenset(extract | gold)


def relation_document_ids(cfg: Config) -> frozenset[str]:
    """Ids of the documents of ``kg.relation_files``, each file read on its own as
    :func:`graphmert.kg.corpus_relations.read_relation_files` reads them (BioRED and BC5CDR share
    abstracts): the documents whose relations a hold-out can take out of the seed KG."""
    return frozenset().union(*(document_ids([p], cfg.kg.relation_files_format, cfg.kg.skip_bad_records)
                               for p in cfg.kg.relation_files))
