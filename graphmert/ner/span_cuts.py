"""Recognised spans that join what annotators keep apart: a sentence end, and two genes a slash joins.

The recognizer's tokens split at every ``.`` and ``/`` (:mod:`graphmert.ner.recognizer`), and its
spans sometimes run across them:

* **A sentence end.** "… and Serpina 3g. EPO/EPOR signalling …" came out as one gene mention,
  "Serpina 3g. EPO/EPOR". No training mention of the shared corpus crosses a sentence end;
  the 11 of its 40,151 mentions that hold a full stop followed by a space and a capital or a digit
  write an abbreviation or a number there ("St. Anthony's fire", "c. 1093-1G>T", "EC 1. 1. 1. 49").
  :func:`sentence_cut` cuts a mention after a word of at least three characters, or of letters and
  digits ("3g"), that a full stop, spaces and a capital letter or a digit follow, and keeps the parts.
  It reads the mention's own text, not the document's sentences, so it cuts alike whether a
  document was split into sentences or not (``experiments/raw_entities.py`` recognises documents
  without them).
* **Two genes joined by a slash.** BioRED train annotates "EPO/EPOR", "CDC42/Rac1" and "APP/PS1" as
  two genes each (95 such pairs) and writes a slash inside one gene mention mostly for a numbered
  family ("ERK1/2", "Smad1/5/8", "F4/80": 57 mentions). :func:`slash_split` splits a gene mention
  ``A/B`` (no space, both parts at least two characters, ``B`` starting with a letter: 89 slashes of
  that shape lie between two gene mentions there, 8 inside one) where the linker links each part
  exactly as a gene, to different genes, and not the whole ("p85/PI3K", a form annotated whole).

Each piece is a mention of the original's label without ids; the linker links it as it links the
recognised ones, and one sense per document (``extract.propagate_mentions``) then finds its other
occurrences: the held-out abstract that wrote "EPO" ten times had it only inside "Serpina 3g.
EPO/EPOR". Written here: spaCy's and scispaCy's pipelines have no rule that repairs another model's
spans so.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

from graphmert.corpus.document import Document, Mention

__all__ = ["sentence_cut", "slash_split", "sentence_ends"]

# a word, a full stop, spaces and a capital or a digit: where a sentence may end inside a span
_STOP = re.compile(r"(\w+)\. +(?=[A-Z0-9])")
# two parts joined by one slash, without spaces; the second starts with a letter ("ERK1/2" keeps)
_SLASHED = re.compile(r"([^\s/]{2,})/([A-Za-z][^\s/]+)")


def sentence_ends(text: str) -> list[tuple[int, int]]:
    """(end of one part, start of the next) of each sentence end inside ``text``: a word of at least
    three characters, or of letters and digits, then a full stop, spaces and a capital or a digit.
    "St. Anthony's fire" and "EC 1. 1. 1. 49" have none."""
    out = []
    for m in _STOP.finditer(text):
        word = m.group(1)
        if len(word) >= 3 or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)):
            out.append((m.end(1), m.end()))
    return out


def sentence_cut(doc: Document) -> Document:
    """A copy of ``doc`` whose mentions are cut at the sentence ends inside them
    (:func:`sentence_ends`), each part a mention of the same label ("Serpina 3g. EPO/EPOR" →
    "Serpina 3g", "EPO/EPOR"); ``doc`` itself when none crosses one."""
    out, cut = [], False
    for m in doc.mentions:
        ends = sentence_ends(m.text)
        if not ends:
            out.append(m)
            continue
        cut = True
        starts = [0, *(b for _, b in ends)]
        stops = [*(a for a, _ in ends), len(m.text)]
        out += [Mention(start=m.start + a, end=m.start + b, text=m.text[a:b], type=m.type)
                for a, b in zip(starts, stops)]
    return replace(doc, mentions=out) if cut else doc


def slash_split(doc: Document, gene_ids: Callable[[str], tuple[str, ...]], gene: str = "Gene") -> Document:
    """A copy of ``doc`` whose ``gene`` mentions ``A/B`` are two mentions, ``A`` and ``B``, where
    ``gene_ids`` (a text's ids when the linker links it exactly as a gene, else ``()``) gives each
    part ids, different ones, and the whole none ("EPO/EPOR", "CDC42/Rac1"; not "ERK1/2", nor a
    slashed form the training documents annotate whole); ``doc`` itself when none is split."""
    out, split = [], False
    for m in doc.mentions:
        hit = _SLASHED.fullmatch(m.text) if m.type == gene else None
        if hit is not None and not gene_ids(m.text):
            a, b = gene_ids(hit.group(1)), gene_ids(hit.group(2))
            if a and b and set(a) != set(b):
                split = True
                cut = m.start + hit.start(2)
                out += [Mention(start=m.start, end=cut - 1, text=hit.group(1), type=m.type),
                        Mention(start=cut, end=m.end, text=hit.group(2), type=m.type)]
                continue
        out.append(m)
    return replace(doc, mentions=out) if split else doc
