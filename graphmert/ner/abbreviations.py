"""Abbreviations as evidence for mentions: a short form names what its long form names (issue #19).

An abstract defines an abbreviation once, "complement factor H (CFH)", and then writes the short
form alone. The recognizer often finds the long form and misses the short one, which has no context
of its own ("CFH" seven times, never tagged), or tags a short form with another label in one
sentence ("IBD" as a chemical). scispaCy's detector (``Document.abbreviations``, the Schwartz–Hearst
algorithm) pairs each short form with its long form, and :func:`abbreviation_mentions` uses the
pairs:

* the **long form's label**: the label of the recognised mention that ends where the long form ends
  and starts inside it (English noun phrases are head-final: "oxygen-induced retinopathy" is a
  retinopathy, whose mention ends the long form), or covers it;
* every whole-word occurrence of the short form (or of its other number: "AVSD" for "AVSDs",
  :func:`short_form_variants`) that overlaps no mention becomes a mention with that label, and a
  short-form mention recognised with another label takes it (one sense per abbreviation, as one
  sense per document in :func:`graphmert.ner.recognizer.propagate_mentions`).
  A short form whose long forms' heads disagree takes the label most of them have.

:func:`abbreviation_veto` reads the same pairs the other way: a short form that the document
defines as something no recognised mention heads ("room air (RA)", "conditioned media (CM)") is
not an entity there, though the recognizer or a dictionary knows it as one elsewhere (rheumatoid
arthritis, cardiomyopathy).

The mentions carry no ids yet; :meth:`graphmert.ner.linking.EntityLinker.link_document` links them:
a short form takes its long form's link, and a long form that no look-up links takes its short
form's. Written here because spaCy and
scispaCy detect abbreviations but do not use them to add or relabel entities.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Callable

from graphmert.corpus.document import Document, Mention
from graphmert.ner.words import whole_word_occurrences

__all__ = ["abbreviation_mentions", "abbreviation_pairs", "short_form_variants", "abbreviation_veto",
           "initials_of", "is_short_form", "spelled_by"]

_INITIAL_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+|\d+")
_SHORT_FORM = re.compile(r"[A-Z][A-Za-z0-9]{1,7}")


def abbreviation_pairs(doc: Document) -> list[tuple[str, int, int]]:
    """The distinct (short-form text, long-form start, long-form end) of ``doc``'s abbreviations,
    sorted (the detector lists a pair once per occurrence of its short form)."""
    return sorted({(doc.text[a.short_start:a.short_end], a.long_start, a.long_end) for a in doc.abbreviations})


def short_form_variants(short: str) -> list[str]:
    """``short`` and its other number: a short form of capital letters and a final "s" ("AVSDs")
    also stands for its singular ("AVSD"), and one of capital letters only ("DRM") for its plural
    ("DRMs"), as abstracts define a form once and then write either. Other forms ("IL-6") stand
    for themselves."""
    letters = short[:-1] if short.endswith("s") else short
    if len(letters) < 2 or not (letters.isalpha() and letters.isupper()):
        return [short]
    return [short, letters] if letters != short else [short, short + "s"]


def _letters(short: str) -> str:
    """``short`` without a final plural "s" after capitals ("DRMs" → "DRM")."""
    return short[:-1] if short.endswith("s") and short[:-1].isupper() else short


def initials_of(short: str, long: str) -> bool:
    """Whether ``short`` (2–8 letters, a capital first: "POAG", "XLMR"; a final plural "s" dropped)
    spells the initials of ``long``'s words and hyphen-joined parts, in order ("primary open-angle
    glaucoma", "X-linked mental retardation"): the abbreviations an abstract defines where the
    detector paired the short form with another span or missed the pair. Digits must match
    whole ("type 2 diabetes" is T2D)."""
    letters = _letters(short)
    if not _SHORT_FORM.fullmatch(letters):
        return False
    initials = "".join(w if w.isdigit() else w[0] for w in _INITIAL_WORD.findall(long))
    return len(initials) > 1 and initials.casefold() == letters.casefold()


def is_short_form(text: str) -> bool:
    """Whether ``text`` looks like an abbreviation: 2–8 letters and digits, a capital first, and
    another capital or a digit ("ITP", "NPHP", "IL6"; a final plural "s" dropped)."""
    letters = _letters(text)
    return bool(_SHORT_FORM.fullmatch(letters)) and any(c.isupper() or c.isdigit() for c in letters[1:])


def spelled_by(short: str, long: str) -> bool:
    """Whether ``short`` (a :func:`is_short_form`) can abbreviate ``long`` the way the
    Schwartz–Hearst algorithm pairs forms: its letters and digits occur in ``long`` in order, the
    first at the start of a word ("ITP" and "immune thrombocytopenia", whose P is inside a word;
    "NPHP" and "nephronophthisis"). Looser than :func:`initials_of`, so read only against names
    of the same abstract."""
    if not is_short_form(short):
        return False
    letters = _letters(short)
    text, at = long.casefold(), len(long)
    for k, ch in enumerate(reversed(letters.casefold())):
        at = text.rfind(ch, 0, at)
        while k == len(letters) - 1 and at > 0 and text[at - 1].isalnum():
            at = text.rfind(ch, 0, at)        # the first letter must start a word
        if at < 0:
            return False
    return True


def _head_label(mentions: list[Mention], start: int, end: int, labels: frozenset[str]) -> str | None:
    """The label of the mention that ends at ``end`` and starts in [start, end), or covers the span."""
    for m in mentions:
        if m.type in labels and ((m.end == end and start <= m.start < end) or (m.start <= start and m.end >= end)):
            return m.type
    return None


def _majority(counts: Counter) -> str:
    return min(counts, key=lambda lab: (-counts[lab], lab))


def abbreviation_mentions(doc: Document, labels: frozenset[str]) -> Document:
    """A copy of ``doc`` in which every occurrence of an abbreviation's short form is a mention with
    its long form's label (module docstring).

    ``labels`` are the recognizer's labels (``Gene``, ``Disease``, ``Chemical``): only mentions of
    those lend or take a label. Mentions stay in start order; a document without abbreviations is
    returned as it is."""
    if not doc.abbreviations:
        return doc
    mentions = list(doc.mentions)
    votes: dict[str, Counter] = {}
    for short, start, end in abbreviation_pairs(doc):
        label = _head_label(mentions, start, end, labels)
        if label is not None:
            votes.setdefault(short, Counter())[label] += 1
    for short, counts in sorted(votes.items()):
        label = _majority(counts)
        for form in short_form_variants(short):
            for start, end in whole_word_occurrences(doc.text, form):
                over = [i for i, m in enumerate(mentions) if m.start < end and start < m.end]
                if not over:
                    mentions.append(Mention(start=start, end=end, text=form, type=label))
                elif (len(over) == 1 and (m := mentions[over[0]]).text == form and m.type in labels
                      and not m.ids):
                    mentions[over[0]] = replace(m, type=label)
    return replace(doc, mentions=sorted(mentions, key=lambda m: (m.start, m.end)))


def abbreviation_veto(doc: Document, labels: frozenset[str],
                      known: Callable[[str, str], bool] = lambda text, label: False) -> Document:
    """A copy of ``doc`` without the mentions of a short form (or of its other number) that the
    document defines, when no long form of it is headed by a recognised mention (:func:`_head_label`)
    and ``known(long form, label)`` holds for none of them with the mention's label (the stage asks
    the linker: a long form the recognizer missed but a look-up links, "oxygen-induced retinopathy"
    of "OIR", keeps its short form). Only unlinked mentions of ``labels`` go; a document without
    abbreviations is returned as it is."""
    if not doc.abbreviations:
        return doc
    longs: dict[str, list[tuple[int, int]]] = {}
    for short, start, end in abbreviation_pairs(doc):
        longs.setdefault(short, []).append((start, end))
    vetoed: dict[str, list[tuple[int, int]]] = {}
    for short, spans in longs.items():
        if all(_head_label(doc.mentions, a, b, labels) is None for a, b in spans):
            for form in short_form_variants(short):
                vetoed.setdefault(form, []).extend(spans)

    def kept(m: Mention) -> bool:
        spans = vetoed.get(m.text)
        return (spans is None or m.ids or m.type not in labels
                or any(known(doc.text[a:b], m.type) for a, b in spans))

    mentions = [m for m in doc.mentions if kept(m)]
    return doc if len(mentions) == len(doc.mentions) else replace(doc, mentions=mentions)
