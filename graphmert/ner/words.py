"""Whole-word matching shared by the recognizer (:mod:`graphmert.ner.recognizer`, one sense per
document) and the abbreviation rules (:mod:`graphmert.ner.abbreviations`, which the linker imports).

A module of its own so that the linker's code reaches none of the recognizer's: the link stage's
code fingerprint (:mod:`pipelines.fingerprint`) then leaves the recognizer out, and a change to it
does not rebuild the linker.
"""

from __future__ import annotations

import re

__all__ = ["whole_word_occurrences"]


def whole_word_occurrences(text: str, form: str) -> list[tuple[int, int]]:
    """(start, end) of every case-sensitive occurrence of ``form`` in ``text`` not inside a longer
    word (``-`` and ``/`` are edges, as the recognizer's infixes split there)."""
    return [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(form)}(?!\w)", text)]
