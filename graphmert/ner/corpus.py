"""Which documents teach the recognizer and the linker: those with gold mentions, from the sources
``ner.sources`` names (the shared corpus marks each document's ``source``; its ``tmvar3_pubtator``
mentions are PubTator's silver annotations, which configs/biored-raw.yaml keeps out of
``ner.sources``), and, for one recognizer model only, the documents of ``ner.part_sources``."""

from __future__ import annotations

from typing import Collection, Iterable, Iterator, Mapping, Sequence

from graphmert.corpus.document import Document
from graphmert.kg.schema import mention_category

__all__ = ["annotated_documents", "part_documents"]


def annotated_documents(docs: Iterable[Document], sources: Collection[str] = ()) -> Iterator[Document]:
    """The documents with mentions whose ``metadata["source"]`` is in ``sources``; with ``sources``
    empty, every document with mentions. A document without a source field (one annotated corpus
    file, such as BioRED's ``Train.PubTator``) always passes."""
    for d in docs:
        src = d.metadata.get("source")
        if d.mentions and (not sources or src is None or src in sources):
            yield d


def part_documents(docs: Sequence[Document], part_sources: Mapping[str, Sequence[str]],
                   exclude: Collection[str] = ()) -> dict[str, list[Document]]:
    """Category → the documents of ``docs`` whose ``metadata["source"]`` is one of
    ``part_sources[category]`` and that have a mention of the category, less the ids in ``exclude``
    (``ner.part_sources``: documents for one recognizer model only)."""
    out: dict[str, list[Document]] = {}
    for cat, sources in part_sources.items():
        out[cat] = [d for d in docs if d.id not in exclude and d.metadata.get("source") in sources
                    and any(mention_category(m.type) == cat for m in d.mentions)]
    return out
