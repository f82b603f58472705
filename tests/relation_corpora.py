"""Small PubTator relation corpora written into a test's tmp folder (BioRED-style relation lines with a
novelty flag, or BC5CDR-style ``CID`` lines with four fields), and PMIDs chosen by their slice hash.
(A uniquely named module in tests/, importable from every folder.)

A document is ``(pmid, title, abstract, mentions, relations)``: ``mentions`` are
``(surface, type, raw id)`` and every occurrence of each surface in ``title + " " + abstract`` is
annotated; ``relations`` are ``(type, raw id 1, raw id 2)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from graphmert.corpus.fraction import document_fraction

Doc = tuple[str, str, str, Sequence[tuple[str, str, str]], Sequence[tuple[str, str, str]]]


def pubtator(docs: Iterable[Doc]) -> str:
    out = []
    for pmid, title, abstract, mentions, relations in docs:
        text = f"{title} {abstract}"
        out += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        rows = []
        for surface, typ, eid in mentions:
            start = text.find(surface)
            assert start >= 0, f"{pmid}: {surface!r} is not in the text"
            while start >= 0:
                rows.append((start, start + len(surface), surface, typ, eid))
                start = text.find(surface, start + 1)
        out += [f"{pmid}\t{a}\t{b}\t{s}\t{t}\t{e}" for a, b, s, t, e in sorted(rows)]
        for r, h, t in relations:
            out.append(f"{pmid}\t{r}\t{h}\t{t}" + ("" if r == "CID" else "\tNovel"))
        out.append("")
    return "\n".join(out) + "\n"


def write_pubtator(path: Path, docs: Iterable[Doc]) -> Path:
    path.write_text(pubtator(docs), encoding="utf-8")
    return path


def pmids(n: int, inside: bool, fraction: float, start: int = 100000) -> list[str]:
    """The first ``n`` numeric ids from ``start`` on whose slice hash u(id) is below ``fraction``
    (``inside``) or not."""
    out, i = [], start
    while len(out) < n:
        if (document_fraction(str(i)) < fraction) == inside:
            out.append(str(i))
        i += 1
    return out
