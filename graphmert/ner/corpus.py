"""Which documents teach the recognizer and the linker: those with gold mentions, from the sources
``ner.sources`` names (the shared corpus marks each document's ``source``; its ``tmvar3_pubtator``
mentions are PubTator's silver annotations, which configs/biored-raw.yaml leaves out)."""

from __future__ import annotations

from typing import Collection, Iterable, Iterator

from graphmert.corpus.document import Document

__all__ = ["annotated_documents"]


def annotated_documents(docs: Iterable[Document], sources: Collection[str] = ()) -> Iterator[Document]:
    """The documents with mentions whose ``metadata["source"]`` is in ``sources``; with ``sources``
    empty, every document with mentions. A document without a source field (one annotated corpus
    file, such as BioRED's ``Train.PubTator``) always passes."""
    for d in docs:
        src = d.metadata.get("source")
        if d.mentions and (not sources or src is None or src in sources):
            yield d
