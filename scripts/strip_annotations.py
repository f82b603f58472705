#!/usr/bin/env python
"""Strip every annotation from a corpus: write its documents as PubTator title/abstract lines only.

    python scripts/strip_annotations.py ../shared/datasets/biored/Dev.PubTator --output Dev.raw.PubTator

Reads any input the project's readers read (``read_corpus(paths, format="auto")``: PubTator, BioC
XML/JSON, PubMed XML, JSON Lines, plain-text folders) and writes, per document::

    ID|t|title
    ID|a|abstract

and a blank line — no mention or relation lines — so the document ids and texts are unchanged and
nothing annotated remains (the input for recognising and linking entities from raw text, with the
original file as the gold).

The PubTator reader rebuilds ``text`` as ``title + " " + abstract`` (only whichever exists when one
is empty). A document whose text is its title followed by a space and more text is written with
that title and the rest as abstract; any other document (no title, or a text that does not start
with its title) is written with an empty title and its whole text as abstract, which keeps the text
exactly (the title is then lost). A document that PubTator lines cannot hold — an id containing
``|``, a tab or a line break, or a text containing a newline or ending a line with ``\\r`` — is an
error naming it, and nothing is written. The output is written atomically and may not be one of
the inputs (nor lie inside an input folder).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Sequence

from graphmert.corpus.document import Document
from graphmert.corpus.readers import read_corpus
from graphmert.errors import GraphmertError
from graphmert.io import atomic_path

__all__ = ["title_abstract", "pubtator_lines", "strip_annotations", "main"]


class StripError(GraphmertError, ValueError):
    """A document or an output path the script cannot handle."""


def title_abstract(doc: Document) -> tuple[str, str]:
    """(title, abstract) whose PubTator reading gives back ``doc.text`` exactly."""
    title, text = doc.title, doc.text
    if title and text == title:
        return title, ""
    if title and text.startswith(title + " ") and len(text) > len(title) + 1:
        return title, text[len(title) + 1:]
    return "", text


def pubtator_lines(doc: Document) -> list[str]:
    """The title and abstract lines of ``doc`` (without line ends)."""
    if not doc.id or any(c in doc.id for c in "|\t\r\n") or doc.id.startswith("\ufeff"):
        raise StripError(f"document {doc.id!r} ({doc.source}): its id cannot be written as a "
                         f"PubTator id (empty, or contains '|', a tab or a line break)")
    title, abstract = title_abstract(doc)
    for part in (title, abstract):
        if "\n" in part or part.endswith("\r"):
            raise StripError(f"document {doc.id!r} ({doc.source}): its text contains a line break "
                             f"that a PubTator line cannot hold")
    return [f"{doc.id}|t|{title}", f"{doc.id}|a|{abstract}"]


def _check_output(inputs: Sequence[Path], output: Path) -> None:
    out = output.resolve()
    for p in inputs:
        src = p.resolve()
        if out == src or (output.exists() and p.exists() and output.samefile(p)):
            raise StripError(f"{output}: refusing to overwrite the input {p}")
        if src.is_dir() and src in out.parents:
            raise StripError(f"{output}: refusing to write inside the input folder {p}")


def strip_annotations(inputs: str | Path | Iterable[str | Path], output: str | Path,
                      format: str = "auto") -> int:
    """Write the documents of ``inputs`` to ``output`` as title/abstract-only PubTator (atomically).
    Returns the number of documents written."""
    paths = [Path(inputs)] if isinstance(inputs, (str, Path)) else [Path(p) for p in inputs]
    output = Path(output)
    _check_output(paths, output)
    reader = read_corpus(paths, format=format)
    n = 0
    with atomic_path(output) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for doc in reader:
            f.write("\n".join(pubtator_lines(doc)) + "\n\n")
            n += 1
    return n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="corpus files or folders (any format "
                        "the project reads, detected from the name/content)")
    parser.add_argument("--output", "-o", type=Path, required=True, help="PubTator file to write")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)
    try:
        n = strip_annotations(args.inputs, args.output)
    except GraphmertError as e:
        print(f"strip_annotations: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"wrote {n} documents to {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
