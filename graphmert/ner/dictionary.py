"""Dictionary flags: where a reference vocabulary names a run of words, as a feature the recognizer
reads (``ner.dictionary_flags``; issue #49).

Why: the recognizer learns from about 1,900 annotated abstracts, so a gene symbol or a drug it
never saw there ("GADD45A", "tolvaptan") looks to it like any other word, though NCBI Gene or MeSH
names it. Matched beside the recognizer, those vocabularies cost precision, for their synonyms
name common words ("mice", "large" and "was" are synonyms of some gene) and MeSH names far more
than diseases and chemicals ("Mutation", "Time"). As a feature of each token, the model learns from
the annotations how far to trust a flag in its context and with its word. Measured
(docs/experiments/recognizer-training.md, "Measured, not kept: dictionary flags as a recognizer
feature"): the gene flags raise recognition on the
raw slice 0.813 → 0.824 (two recognizer draws), but the mentions they add are mostly ones the
linker cannot place, so pair F1 does not gain and ``configs/biored-raw.yaml`` leaves the option off.

Each token gets one tag, spaCy's ``Token.tag_`` (the recognizer's pipeline has no tagger), that
its tok2vec embeds beside the word's norm, prefix, suffix and shape
(:func:`graphmert.ner.recognizer.tok2vec_config`): for each flag set S that has a run covering
the token, S's letter followed by ``B`` on the run's first token and ``I`` on the others ("GB",
"GITI"); ``O`` where no run covers it. The flag sets ``ner.dictionary_flags`` names, from the
``ner.vocabularies`` sources (:data:`graphmert.config.ner.FLAG_SETS`):

* **G** (``genes``) — a symbol, synonym or full name of a protein-coding gene of the ``gene_info`` and
  ``gene_table`` sources (:class:`~graphmert.ner.vocabularies.genes.GeneVocabulary` ranks up to
  ``FULL_NAME``); a symbol or synonym only where the run is not written in lower-case letters
  alone (the gene symbols that are English words: "was", "large"; a full name may be: "leptin");
* **T** (``terms``) — a name or entry term of a ``terms`` source (MeSH descriptors: diseases, chemicals and
  much else), as :func:`graphmert.ner.vocabularies.terms.read_terms` keys them.

A run is 1 to :data:`MAX_TOKENS` tokens that starts and ends with a token that is neither
punctuation nor space; from each start the longest run of each set is taken. Its key is its
tokens' :func:`~graphmert.ner.vocabularies.surface.fold_key` joined, which for such a run is the
linker's :func:`~graphmert.ner.vocabularies.surface.surface_key` of its text (case, Greek letters,
hyphens and spaces folded: "TNF-alpha", "TNF alpha" and "TNFα" agree), the key the
vocabularies are indexed by; keys shorter than :data:`MIN_KEY` characters are left out.

Written here, not spaCy's ``PhraseMatcher``: a matcher over the vocabularies' 370,000 names would
tokenize each of them when built and match case and hyphen variants only by listing them; one set
of folded keys serves every variant.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from graphmert.config.ner import FLAG_SETS
from graphmert.io import check_format
from graphmert.ner.vocabularies.genes import FULL_NAME, SYNONYM, build_gene_vocabulary
from graphmert.ner.vocabularies.surface import fold_key
from graphmert.ner.vocabularies.terms import read_terms

__all__ = ["DictionaryFlags", "build_dictionary_flags", "flag_sources", "MAX_TOKENS", "MIN_KEY", "OUTSIDE", "FILE"]

MAX_TOKENS = 6                  # the longest run tried (tokens, punctuation inside included)
MIN_KEY = 2                     # one-character keys ("a", "t") are no names
OUTSIDE = "O"                   # the tag of a token no run covers
FILE = "dictionary.json.gz"     # a saved recognizer's flag sets
_FORMAT, _VERSION = "graphmert-dictionary-flags", 1
_LOWER_WORDS = re.compile(r"[a-z\s\-]+")


@functools.lru_cache(maxsize=200_000)
def _token_key(text: str) -> str:
    return fold_key(text)


@dataclass(frozen=True, kw_only=True)
class DictionaryFlags:
    """The flag sets of the module docstring: ``symbols`` (G where the run is not all lower-case
    letters), ``names`` (G anywhere) and ``terms`` (T), each a set of surface keys."""

    symbols: frozenset[str]
    names: frozenset[str]
    terms: frozenset[str]

    def tags(self, doc) -> list[str]:
        """The tag of each token of the spaCy ``doc`` (see the module docstring)."""
        toks = list(doc)
        keys = [_token_key(t.text) for t in toks]
        edge = [not (t.is_punct or t.is_space) and bool(k) for t, k in zip(toks, keys)]
        marks: list[dict[str, str]] = [{} for _ in toks]
        for i in range(len(toks)):
            if not edge[i]:
                continue
            for flag, j in self._longest(doc, toks, keys, edge, i).items():
                marks[i].setdefault(flag, "B")
                for k in range(i + 1, j + 1):
                    marks[k].setdefault(flag, "I")
        return ["".join(f + m[f] for f in sorted(m)) or OUTSIDE for m in marks]

    def _longest(self, doc, toks, keys, edge, i: int) -> dict[str, int]:
        """Flag → the last token of the longest run from token ``i`` that the flag's sets hold."""
        found: dict[str, int] = {}
        key = ""
        for j in range(i, min(len(toks), i + MAX_TOKENS)):
            if toks[j].is_space:
                break
            key += keys[j]
            if not edge[j] or len(key) < MIN_KEY:
                continue
            if key in self.terms:
                found["T"] = j
            if key in self.names or (key in self.symbols and not _LOWER_WORDS.fullmatch(
                    doc.text[toks[i].idx:toks[j].idx + len(toks[j])])):
                found["G"] = j
        return found

    def flag(self, doc, tags: list[str] | None = None):
        """Write :meth:`tags` (or ``tags``, computed for a doc of the same tokens) into ``doc``'s
        tokens' ``tag_``; returns ``doc``."""
        tags = self.tags(doc) if tags is None else tags
        if len(tags) != len(doc):
            raise ValueError(f"dictionary flags: {len(tags)} tags for a doc of {len(doc)} tokens")
        for token, tag in zip(doc, tags):
            token.tag_ = tag
        return doc

    def stats(self) -> dict:
        return {"gene_symbols": len(self.symbols), "gene_names": len(self.names), "terms": len(self.terms)}

    def save(self, path: str | Path) -> None:
        """Write the sets, sorted, as gzipped JSON (the same sets give the same bytes)."""
        data = {"format": _FORMAT, "format_version": _VERSION, "symbols": sorted(self.symbols),
                "names": sorted(self.names), "terms": sorted(self.terms)}
        with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as f:
            f.write(json.dumps(data, separators=(",", ":")).encode("utf-8"))

    @classmethod
    def load(cls, path: str | Path) -> "DictionaryFlags":
        """:meth:`save`'s file read back; ``ValueError`` naming the file when it is not one."""
        try:
            with gzip.open(Path(path), "rt", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, EOFError, ValueError) as e:
            raise ValueError(f"{path}: not a readable dictionary-flags file ({type(e).__name__}: {e})") from None
        check_format(data, path, format=_FORMAT, version=_VERSION, what="a dictionary-flags file", error=ValueError)
        try:
            return cls(**{k: frozenset(map(str, data[k])) for k in ("symbols", "names", "terms")})
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: corrupt dictionary-flags file ({type(e).__name__}: {e})") from None


def flag_sources(sources: Sequence, sets: Sequence[str]) -> list:
    """The ``ner.vocabularies`` ``sources`` (:class:`~graphmert.config.ner.VocabularySource`) that the
    flag ``sets`` read."""
    kinds = {k for name in sets for k in FLAG_SETS[name]}
    return [s for s in sources if s.kind in kinds]


def build_dictionary_flags(sources: Sequence, sets: Sequence[str]) -> DictionaryFlags | None:
    """The flag ``sets`` (``ner.dictionary_flags``: "genes", "terms") of the ``ner.vocabularies``
    ``sources``, or None when no source gives one of them (a set not asked for is empty)."""
    read = flag_sources(sources, sets)
    if not read:
        return None
    genes = build_gene_vocabulary([s for s in read if s.kind in FLAG_SETS["genes"]])
    symbols: set[str] = set()
    names: set[str] = set()
    for key, entry in (genes.keys.items() if genes is not None else ()):
        best = min(int(part.rsplit(" ", 1)[1]) for part in entry.split(";"))
        if len(key) >= MIN_KEY and best <= FULL_NAME:
            (symbols if best <= SYNONYM else names).add(key)
    terms = {k for s in read if s.kind in FLAG_SETS["terms"] for k in read_terms(s.path, s.prefix)
             if len(k) >= MIN_KEY}
    return DictionaryFlags(symbols=frozenset(symbols), names=frozenset(names), terms=frozenset(terms))
