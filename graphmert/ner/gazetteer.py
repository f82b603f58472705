"""Gene symbols the seed KG names, found in raw text where the recognizer found nothing (issue #19).

The recognizer learns genes from 400 BioRED abstracts, so a symbol it never saw ("GADD45A",
"CX3CR1", "CYP11B1") is often missed in every one of its occurrences, though the seed KG names it
exactly. A gene symbol with a digit and an upper-case letter ("CYP2C19", "IL-6") is rarely anything
else, so :func:`symbol_mentions` makes every occurrence of such a KG symbol a gene mention:

* a candidate is a run of one to :data:`MAX_WORDS` words joined by single spaces or hyphens, of at
  least :data:`MIN_CHARS` characters, with a digit and an upper-case letter;
* its look-up key (:func:`graphmert.ner.linking.surface_key`: case, hyphens and spaces aside) must
  be a KG gene name and no form that the training documents annotate as another category
  (:meth:`~graphmert.ner.linking.EntityLinker.kg_gene_symbol`). The mouse "Cyp2c19" is found
  through the human CYP2C19: it is a gene too, and ``extract.kg_gene_species`` keeps the linker
  from giving it the human gene's id in a mouse paper;
* the longest candidates are taken first, and none overlaps a mention the document already has.

The mentions carry no ids; the linker links them as it links recognised ones. Only genes: the seed
KG's disease and chemical names include common words ("disease", "antibodies", "acids"), which no
digit-and-capital rule keeps out.
"""

from __future__ import annotations

import re
from dataclasses import replace

from graphmert.corpus.document import Document, Mention
from graphmert.ner.linking import EntityLinker, surface_key

__all__ = ["symbol_mentions", "MIN_CHARS", "MAX_WORDS"]

MIN_CHARS = 3                   # "C3" and "F2" are positions and coagulation factors alike
MAX_WORDS = 3
_WORD = re.compile(r"[A-Za-z0-9]+")
_JOIN = re.compile(r"[ -]")


def _symbol_like(text: str) -> bool:
    return len(text) >= MIN_CHARS and any(c.isdigit() for c in text) and any(c.isupper() for c in text)


def _candidates(text: str, linker: EntityLinker) -> list[tuple[int, int]]:
    """(start, end) of every word run of ``text`` that is a symbol-like KG gene name."""
    words = list(_WORD.finditer(text))
    out = []
    for i in range(len(words)):
        for j in range(i, min(i + MAX_WORDS, len(words))):
            if j > i and not _JOIN.fullmatch(text[words[j - 1].end():words[j].start()]):
                break
            start, end = words[i].start(), words[j].end()
            form = text[start:end]
            if _symbol_like(form) and linker.kg_gene_symbol(surface_key(form)):
                out.append((start, end))
    return out


def symbol_mentions(doc: Document, linker: EntityLinker, label: str = "Gene") -> Document:
    """A copy of ``doc`` with a ``label`` mention on every symbol-like seed-KG gene name of its text
    that overlaps none of its mentions (module docstring); ``doc`` itself when there is none."""
    taken: list[tuple[int, int]] = [(m.start, m.end) for m in doc.mentions]
    added = []
    for start, end in sorted(_candidates(doc.text, linker), key=lambda s: (s[0] - s[1], s[0])):
        if all(end <= a or start >= b for a, b in taken):
            taken.append((start, end))
            added.append(Mention(start=start, end=end, text=doc.text[start:end], type=label))
    if not added:
        return doc
    return replace(doc, mentions=sorted([*doc.mentions, *added], key=lambda m: (m.start, m.end)))
