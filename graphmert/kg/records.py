"""Shared plumbing of the seed-KG readers: opening (gzipped) text, bad-record policy, edge checks.

Every reader reports a bad record through :class:`BadRecords`, which either raises :class:`KGError`
naming the file, the line (or record) and the problem, or — with ``kg.skip_bad_records`` — counts it
under a reason and goes on. The counts end up in :attr:`SeedKG.skipped`.
"""

from __future__ import annotations

import gzip
import io
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from graphmert.kg.graph import Edge, KGError, Node

__all__ = ["BadRecords", "open_text", "keep_known_edges"]


class BadRecords:
    """Raise on the first bad record, or count it by reason when ``skip`` is set."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.counts: Counter[str] = Counter()

    def report(self, where: str, reason: str, problem: str) -> None:
        """``where`` is ``"file: line N"``; ``reason`` a short key for the count."""
        if not self.skip:
            raise KGError(f"{where}: {problem} (set kg.skip_bad_records=true to count and skip such rows)")
        self.counts[reason] += 1

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def open_text(path: str | Path) -> TextIO:
    """Open a UTF-8 text file, transparently gunzipping it when it starts with the gzip magic."""
    path = Path(path)
    if not path.is_file():
        raise KGError(f"{path}: seed-KG file not found")
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def keep_known_edges(nodes: dict[str, Node], located: Iterable[tuple[str, Edge]],
                     bad: BadRecords) -> Iterator[Edge]:
    """Yield the edges whose subject and object are nodes; report the others (``where`` first)."""
    for where, e in located:
        missing = [x for x in (e.subject, e.object) if x not in nodes]
        if missing:
            bad.report(where, "edge_node_unknown",
                       f"edge ({e.subject}, {e.predicate}, {e.object}) refers to "
                       f"{' and '.join(repr(m) for m in missing)}, not a node of the seed KG")
            continue
        yield e
