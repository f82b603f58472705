"""The lexicon (normalised name/synonym → node ids) and a phrase matcher over it.

:class:`Lexicon` maps :func:`normalize_name` of every node name and synonym to the sorted ids of the
nodes carrying it (several nodes may share a name, e.g. a MeSH and a DrugBank "Metformin"). It serves
exact look-ups (tail assembly in extraction) and feeds :class:`LexiconMatcher`.

:class:`LexiconMatcher` finds KG names in raw text with spaCy's ``PhraseMatcher`` on a blank English
pipeline with scispaCy's rule tokenizer (no model download):

* names are matched case-insensitively (``attr="LOWER"``), except all-uppercase names (gene symbols
  and acronyms such as ``CAT``, ``SET``, ``MET``), which match only as written (``attr="ORTH"``) so
  that ordinary words do not link to genes;
* names shorter than ``kg.lexicon_min_chars``, names without a letter, and English stop words
  (spaCy's list: ``was``, ``can``, ``all`` … are all gene symbols) are never matched;
* overlapping matches are resolved longest first, then leftmost (``spacy.util.filter_spans``); a
  span matched by several patterns gets the union of their ids.
"""

from __future__ import annotations

import pickle
import re
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Iterable

from graphmert.kg.graph import SeedKG

__all__ = ["normalize_name", "Lexicon", "LexiconMatch", "LexiconMatcher"]

_WS = re.compile(r"\s+")


def normalize_name(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed and stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _is_upper_form(form: str) -> bool:
    return any(c.isupper() for c in form) and not any(c.islower() for c in form)


class Lexicon:
    """Normalised name → sorted node ids; also keeps each surface form's ids for the matcher."""

    def __init__(self, forms: dict[str, set[str]]) -> None:
        self.forms: dict[str, list[str]] = {f: sorted(ids) for f, ids in sorted(forms.items())}
        entries: dict[str, set[str]] = {}
        for f, ids in self.forms.items():
            entries.setdefault(normalize_name(f), set()).update(ids)
        self.entries: dict[str, list[str]] = {k: sorted(v) for k, v in sorted(entries.items()) if k}

    @classmethod
    def from_kg(cls, kg: SeedKG) -> "Lexicon":
        forms: dict[str, set[str]] = {}
        for n in kg.nodes.values():
            for form in (n.name, *n.synonyms):
                form = _WS.sub(" ", form).strip()
                if form:
                    forms.setdefault(form, set()).add(n.id)
        return cls(forms)

    def lookup(self, text: str) -> list[str]:
        """Ids of the nodes named ``text`` (after normalisation); empty if none."""
        return self.entries.get(normalize_name(text), [])

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and normalize_name(text) in self.entries

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class LexiconMatch:
    start: int              # char offsets into the matched text
    end: int
    text: str
    ids: tuple[str, ...]


class LexiconMatcher:
    """Longest, non-overlapping KG-name matches in text (see module docstring for the rules)."""

    def __init__(self, lexicon: Lexicon, min_chars: int = 3, nlp=None) -> None:
        from spacy.lang.en.stop_words import STOP_WORDS
        from spacy.matcher import PhraseMatcher

        if nlp is None:
            from graphmert.corpus.nlp import blank_biomedical_nlp

            nlp = blank_biomedical_nlp()
        self.nlp = nlp
        self._ids: dict[str, tuple[str, ...]] = {}
        lower: dict[str, set[str]] = {}
        exact: dict[str, set[str]] = {}
        for form, ids in lexicon.forms.items():
            norm = normalize_name(form)
            if len(norm) < min_chars or norm in STOP_WORDS or not any(c.isalpha() for c in norm):
                continue
            (exact if _is_upper_form(form) else lower).setdefault(
                form if _is_upper_form(form) else norm, set()).update(ids)
        self._lower = PhraseMatcher(nlp.vocab, attr="LOWER")
        self._exact = PhraseMatcher(nlp.vocab, attr="ORTH")
        for matcher, table, tag in ((self._lower, lower, "L"), (self._exact, exact, "O")):
            keys = sorted(table)
            for key, doc in zip(keys, nlp.tokenizer.pipe(keys, batch_size=1000)):
                name = f"{tag}\t{key}"
                self._ids[name] = tuple(sorted(table[key]))
                matcher.add(name, [doc])
        self.num_patterns = len(self._ids)

    def __getstate__(self) -> dict:
        """Pickled for Dask workers with the spaCy objects in a nested pickle (:meth:`__setstate__`)."""
        state = self.__dict__.copy()
        state["_spacy"] = pickle.dumps((state.pop("nlp"), state.pop("_lower"), state.pop("_exact")))
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickling recompiles scispaCy's tokenizer regexes, and Python's ``re`` warns about them
        (FutureWarning "Possible set union", once per worker and stage): the spaCy objects are
        unpickled with that warning ignored, and only there."""
        state = dict(state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            self.nlp, self._lower, self._exact = pickle.loads(state.pop("_spacy"))
        self.__dict__.update(state)

    def _spans(self, doc) -> list[LexiconMatch]:
        from spacy.util import filter_spans

        found: dict[tuple[int, int], set[str]] = {}
        spans = []
        for matcher in (self._lower, self._exact):
            for match_id, s, e in matcher(doc):
                ids = self._ids[self.nlp.vocab.strings[match_id]]
                if (s, e) not in found:
                    found[(s, e)] = set()
                    spans.append(doc[s:e])
                found[(s, e)].update(ids)
        out = []
        for sp in sorted(filter_spans(spans), key=lambda x: x.start):
            out.append(LexiconMatch(sp.start_char, sp.end_char, sp.text,
                                    tuple(sorted(found[(sp.start, sp.end)]))))
        return out

    def match(self, text: str) -> list[LexiconMatch]:
        """Matches in ``text``, left to right."""
        return self._spans(self.nlp.make_doc(text))

    def match_many(self, texts: Iterable[str], batch_size: int = 256) -> list[list[LexiconMatch]]:
        return [self._spans(doc) for doc in self.nlp.tokenizer.pipe(texts, batch_size=batch_size)]
