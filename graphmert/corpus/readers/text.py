"""Plain text: a folder of ``.txt`` files (one document each) or a single ``.txt`` file.

A document's id is the file name without ``.txt`` / ``.txt.gz``; its text is the file's content with
leading and trailing whitespace removed; it has no title and no mentions. Files of a folder are read in
sorted name order (deterministic); other files in the folder are ignored, sub-folders are not entered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from graphmert.corpus.document import Document
from graphmert.corpus.readers.base import READERS, Location, ReadContext, ReadRecord, open_text

__all__ = ["read_text", "text_files"]

_SUFFIXES = (".txt", ".txt.gz")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def text_files(folder: Path) -> list[Path]:
    """The ``.txt`` / ``.txt.gz`` files directly inside ``folder``, sorted by name."""
    return sorted((p for p in folder.iterdir()
                   if p.is_file() and p.name.lower().endswith(_SUFFIXES)), key=lambda p: p.name)


@READERS.register("text")
def read_text(path: Path, ctx: ReadContext) -> Iterator[ReadRecord]:
    """One document per text file of a folder, or the one document of a text file."""
    for file in text_files(path) if path.is_dir() else [path]:
        where = Location(str(file), record=f"document {_stem(file)}")
        with open_text(file, ctx) as f:
            text = f.read_all()
        if text is None:                # undecodable, already reported and skipped
            continue
        text = text.strip()
        if not text:
            ctx.bad(where, "text file is empty")
            continue
        yield ReadRecord(Document(id=_stem(file), text=text, source=str(file)), where)
