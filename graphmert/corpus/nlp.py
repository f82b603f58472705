"""Sentence boundaries and abbreviations, with no model download.

spaCy's blank English pipeline with scispaCy's biomedical tokenizer (``combined_rule_tokenizer``),
a rule-based ``sentencizer``, and scispaCy's ``AbbreviationDetector`` (Schwartz & Hearst), which links
each short form ("T2DM") to its long form ("type 2 diabetes mellitus").

    analyzer = TextAnalyzer(sentences=True, abbreviations=True)
    docs = list(analyzer.annotate(docs))       # fills Document.sentences / .abbreviations
"""

from __future__ import annotations

import itertools
import re
import warnings
from typing import Any, Iterable, Iterator

from graphmert.corpus.document import Abbreviation, Document

__all__ = ["TextAnalyzer", "blank_biomedical_nlp", "detector_text"]


def blank_biomedical_nlp():
    """``spacy.blank("en")`` with scispaCy's tokenizer (no trained components)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # scispaCy's tokenizer regexes
        import spacy
        from scispacy.custom_tokenizer import combined_rule_tokenizer

        nlp = spacy.blank("en")
        nlp.tokenizer = combined_rule_tokenizer(nlp)
    return nlp


# a bracketed short form joined by a hyphen to the next word: "nitroglycerin (NTG)-induced
# hypotension", "lipopolysaccharide (LPS)-stimulated cells" (32 in BioRED train's texts). The
# tokenizer keeps ")-induced" as one token, so the detector sees no closing bracket there and misses
# the pair, and the short form then takes whatever the recognizer makes of it elsewhere in the
# abstract ("NTG" a gene twelve times). The detector reads the hyphen as a space, at the same offset;
# not before a Greek letter, which belongs to the name ("interferon (IFN)-gamma", "(IFN)-g")
_JOINED_SHORT_FORM = re.compile(r"(\((?=[^()\s,]*[A-Z])[^()\s,]{2,10}\))-(?=[a-z]{2})"
                                r"(?!(?:alpha|beta|gamma|delta|epsilon|kappa|lambda|theta|sigma|omega)\b)")


def detector_text(text: str) -> str:
    """``text`` with the hyphen after each bracketed short form of :data:`_JOINED_SHORT_FORM` a space:
    what the abbreviation detector reads (same length, so every offset holds)."""
    return _JOINED_SHORT_FORM.sub(r"\1 ", text)


class TextAnalyzer:
    """Fills ``Document.sentences`` and ``Document.abbreviations``."""

    def __init__(self, sentences: bool = True, abbreviations: bool = True, batch_size: int = 64) -> None:
        self.sentences = sentences
        self.abbreviations = abbreviations
        self.batch_size = batch_size
        self._nlp = None

    @property
    def enabled(self) -> bool:
        return self.sentences or self.abbreviations

    def _pipeline(self):
        if self._nlp is None:
            nlp = blank_biomedical_nlp()
            nlp.add_pipe("sentencizer")
            if self.abbreviations:
                import scispacy.abbreviation  # noqa: F401  (registers "abbreviation_detector")

                nlp.add_pipe("abbreviation_detector")
            self._nlp = nlp
        return self._nlp

    def _parsed(self, nlp, docs: Iterable[Document]) -> Iterator[tuple[Any, Document]]:
        """``(spaCy doc, document)`` pairs in order, parsed ``batch_size`` documents at a time.

        The abbreviation detector runs a matcher it never fills, so spaCy warns W036 ("no patterns
        defined") as it parses; that warning is ignored while a batch is parsed, and only then: no
        filter is left in the process's warning filters."""
        it = iter(docs)
        while batch := list(itertools.islice(it, self.batch_size)):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*\[W036\]")
                texts = [detector_text(d.text) if self.abbreviations else d.text for d in batch]
                parsed = list(nlp.pipe(texts, batch_size=self.batch_size))
            yield from zip(parsed, batch)

    def annotate(self, docs: Iterable[Document]) -> Iterator[Document]:
        """Yield the documents with sentence spans and abbreviations filled in (in order)."""
        if not self.enabled:
            yield from docs
            return
        nlp = self._pipeline()
        for sdoc, doc in self._parsed(nlp, docs):
            if self.sentences:
                doc.sentences = [(s.start_char, s.end_char) for s in sdoc.sents]
            if self.abbreviations:
                seen = set()
                out = []
                for short in sdoc._.abbreviations:
                    long = short._.long_form
                    key = (short.start_char, short.end_char)
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append(Abbreviation(short.start_char, short.end_char,
                                            long.start_char, long.end_char))
                doc.abbreviations = sorted(out, key=lambda a: (a.short_start, a.short_end))
            yield doc
