"""Candidate tails and their scores — tail assembly without an LLM (DESIGN §8, step 4).

The paper asks a 32B LLM to combine the top-k tokens of the leaf slots into a tail. We instead
*score* candidate tails by the model's own likelihood of their tokens in the leaf slots. For a
candidate c with token forms F(c) (each a sequence of t ≤ K tokens) and the length-t query q::

    s(c) = max_{f ∈ F(c)}  (1/t) Σ_{k<t} log p_q(k, f_k)          length-normalised log-likelihood
    confidence(c) = exp(s(c))                                       geometric-mean token probability

Candidate sources (``extract.tail_sources``):

``mention``  every entity of the document (mentions grouped by id, or by normalised text when
             unlinked); forms are its surface forms and, for a KG node, its KG name
``lexicon``  KG names/synonyms whose every token is in the top-k of its slot for a query of its
             length (found through an index on the first token)
``phrase``   word n-grams (1..``extract.max_phrase_words`` words) of the chunk that neither start
             nor end with a stop word and contain no punctuation; untyped, without an id
``llm``      phrases proposed by the optional helper LLM (:mod:`graphmert.extract.llm`)

``paper`` mode (:func:`paper_tails`) instead turns each top-k token of leaf slot 0 (whole-word
tokens only) into a single-token tail with its probability as confidence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from torch import Tensor

from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.kg.graph import SeedKG
from graphmert.kg.lexicon import normalize_name
from graphmert.kg.schema import mention_category

__all__ = ["TailCandidate", "FORM_CACHE", "FormTokenizer", "mention_candidates", "phrase_candidates",
           "LexiconIndex", "score_forms", "best_form_scores", "paper_tails", "name_key"]


def name_key(name: str) -> str:
    return "name:" + normalize_name(name)


@dataclass(kw_only=True)
class TailCandidate:
    key: str                               # merge key: the id, or "name:<normalised name>"
    id: str                                # "" when none
    name: str
    category: str                          # Biolink category, "" when untyped
    source: str                            # mention | lexicon | phrase | llm | token
    forms: list[tuple[int, ...]] = field(default_factory=list)    # token ids, each 1..K long
    spans: list[tuple[int, int]] = field(default_factory=list)    # document char spans


#: surface forms whose token ids an extractor keeps (a worker keeps its extractor for a whole corpus)
FORM_CACHE = 200_000


class FormTokenizer:
    """Tokenises surface forms (cached), keeping those of 1..K tokens that are not all ``[UNK]``.
    The cache holds at most ``cache_size`` forms (or one call's, when more) and then keeps only those
    of the current call: an extractor kept by a worker for a whole corpus meets ever more phrases."""

    def __init__(self, tokenizer, num_leaves: int, unk_id: int, cache_size: int = FORM_CACHE) -> None:
        self.tok, self.K, self.unk = tokenizer, num_leaves, unk_id
        self.cache: dict[str, tuple[int, ...] | None] = {}
        self.cache_size = cache_size
        self.too_long = 0

    def forms(self, texts: Iterable[str]) -> list[tuple[int, ...]]:
        texts = list(dict.fromkeys(texts))
        new = [t for t in texts if t not in self.cache]
        if new:
            if len(self.cache) + len(new) > self.cache_size:
                self.cache = {t: self.cache[t] for t in texts if t in self.cache}
            for t, enc in zip(new, self.tok.encode_batch(new, add_special_tokens=False)):
                ids = tuple(enc.ids)
                if len(ids) > self.K:
                    self.too_long += 1
                ok = 1 <= len(ids) <= self.K and any(i != self.unk for i in ids)
                self.cache[t] = ids if ok else None
        return list(dict.fromkeys(f for t in texts if (f := self.cache[t]) is not None))


def mention_candidates(doc: Document, kg: SeedKG, forms: FormTokenizer) -> list[TailCandidate]:
    """One candidate per entity of ``doc`` (sorted by key)."""
    groups: dict[str, list] = {}
    for m in doc.mentions:
        key = m.ids[0] if m.ids else name_key(m.text)
        if key == "name:":
            continue
        groups.setdefault(key, []).append(m)
    out = []
    for key in sorted(groups):
        ms = groups[key]
        eid = ms[0].ids[0] if ms[0].ids else ""
        texts = Counter(m.text for m in ms)
        surface = sorted(texts, key=lambda t: (-texts[t], t))
        in_kg = eid in kg.nodes
        name = kg.name(eid) if in_kg else surface[0]
        types = Counter(m.type for m in ms)
        category = mention_category(sorted(types, key=lambda t: (-types[t], t))[0])
        if not category and in_kg:
            category = kg.category(eid)
        f = forms.forms(surface + ([name] if in_kg else []))
        if f:
            out.append(TailCandidate(key=key, id=eid, name=name, category=category, source="mention",
                                     forms=f, spans=sorted((m.start, m.end) for m in ms)))
    return out


def phrase_candidates(chunk: Chunk, doc_text: str, max_words: int, num_leaves: int,
                      stop_words: set[str], entity_spans: Sequence[tuple[int, int]] = ()
                      ) -> list[TailCandidate]:
    """Word n-grams of the chunk's roots as untyped candidates (see module docstring). An n-gram
    that cuts into an entity mention (``entity_spans``, document offsets) without being exactly it
    is not a phrase ("type" of "type 2 diabetes")."""
    entities = set(entity_spans)
    words: list[tuple[int, int]] = []            # (first root, last root + 1) per whole word
    for i, w in enumerate(chunk.word_ids):
        if w < 0 or chunk.offsets[i][0] < 0:
            continue
        if words and chunk.word_ids[words[-1][0]] == w:
            words[-1] = (words[-1][0], i + 1)
        else:
            words.append((i, i + 1))
    text_of = [doc_text[chunk.offsets[a][0]:chunk.offsets[b - 1][1]] for a, b in words]
    ok_word = [any(c.isalnum() for c in t) for t in text_of]
    out: dict[str, TailCandidate] = {}
    for a in range(len(words)):
        for n in range(1, max_words + 1):
            b = a + n
            if b > len(words) or not all(ok_word[a:b]):
                break
            first, last = text_of[a].lower(), text_of[b - 1].lower()
            if first in stop_words or last in stop_words:
                continue
            r0, r1 = words[a][0], words[b - 1][1]
            if r1 - r0 > num_leaves:
                break
            c0, c1 = chunk.offsets[r0][0], chunk.offsets[r1 - 1][1]
            if (c0, c1) not in entities and _cuts(entity_spans, c0, c1):
                continue
            phrase = doc_text[c0:c1]
            if not any(c.isalpha() for c in phrase) or len(phrase) < 3:
                continue
            key = name_key(phrase)
            cand = out.get(key)
            if cand is None:
                out[key] = TailCandidate(key=key, id="", name=phrase, category="", source="phrase",
                                         forms=[tuple(chunk.input_ids[r0:r1])], spans=[(c0, c1)])
            else:
                cand.spans.append((c0, c1))
                form = tuple(chunk.input_ids[r0:r1])
                if form not in cand.forms:
                    cand.forms.append(form)
    return [out[k] for k in sorted(out)]


def _cuts(spans: Sequence[tuple[int, int]], a: int, b: int) -> bool:
    """Does [a, b) overlap any of ``spans``?"""
    return any(s < b and e > a for s, e in spans)


class LexiconIndex:
    """KG names and synonyms as token forms, indexed by (length, first token)."""

    def __init__(self, kg: SeedKG, forms: FormTokenizer) -> None:
        self.kg = kg
        self.index: dict[tuple[int, int], list[tuple[tuple[int, ...], str]]] = {}
        self.by_category: dict[str, set[int]] = {}          # category → form lengths
        for nid in sorted(kg.nodes):
            n = kg.nodes[nid]
            for f in forms.forms((n.name, *n.synonyms)):
                self.index.setdefault((len(f), f[0]), []).append((f, nid))
                self.by_category.setdefault(n.category, set()).add(len(f))

    def lengths(self, categories: set[str] | None = None) -> set[int]:
        """Form lengths of the names of nodes in ``categories`` (None: all)."""
        cats = self.by_category if categories is None else categories
        return {t for c in cats for t in self.by_category.get(c, ())}

    def matches(self, top_ids: np.ndarray) -> list[TailCandidate]:
        """Candidates whose form of length t = len(top_ids) has token k among ``top_ids[k]`` ∀k."""
        t = len(top_ids)
        allowed = [set(row.tolist()) for row in top_ids]
        found: dict[str, TailCandidate] = {}
        for first in top_ids[0].tolist():
            for form, nid in self.index.get((t, first), ()):
                if t == 1 or all(form[k] in allowed[k] for k in range(1, t)):
                    c = found.get(nid)
                    if c is None:
                        found[nid] = TailCandidate(key=nid, id=nid, name=self.kg.name(nid),
                                                   category=self.kg.category(nid), source="lexicon",
                                                   forms=[form])
                    elif form not in c.forms:
                        c.forms.append(form)
        return [found[k] for k in sorted(found)]


def score_forms(logp: Tensor | np.ndarray, forms: np.ndarray) -> np.ndarray:
    """Length-normalised log-likelihood of each form: [C, t] token ids, logp [t, V] (CPU) → [C].

    A NumPy gather: extraction scores a handful of forms per query, tens of thousands of times, where
    torch's fixed cost per operation was most of the time (6.3 s of the demo's 50 s profile;
    docs/experiments/extract-host-work.md)."""
    lp = logp.numpy() if isinstance(logp, Tensor) else logp                          # [t, V]
    idx = np.asarray(forms, dtype=np.int64)                                          # [C, t]
    return lp[np.arange(lp.shape[0]), idx].mean(axis=1)                              # [C]


def best_form_scores(logp: Tensor | np.ndarray, candidates: Sequence[TailCandidate]) -> np.ndarray:
    """Each candidate's best :func:`score_forms` over its forms, all of length t: logp [t, V] → [M],
    in one gather of every form."""
    if not candidates:
        return np.zeros(0, dtype=np.float32)
    forms = np.array([f for c in candidates for f in c.forms])                       # [F, t]
    first = np.cumsum([0] + [len(c.forms) for c in candidates[:-1]])                 # [M]
    return np.maximum.reduceat(score_forms(logp, forms), first)                      # [M]


def paper_tails(logp: Tensor, top_k: int, tokenizer, stop_words: set[str],
                special_ids: Sequence[int]) -> list[TailCandidate]:
    """The paper's mode: each whole-word top-k token of slot 0 as a single-token tail.

    Scores are stored as the candidate's only form; the caller reads the probability from ``logp``.
    """
    vals, ids = logp[0].topk(min(top_k, logp.shape[1]))
    out = []
    for v, i in zip(vals.tolist(), ids.tolist()):
        if i in special_ids:
            continue
        token = tokenizer.id_to_token(i)
        if token is None or token.startswith("##") or not any(c.isalpha() for c in token) \
                or token.lower() in stop_words or len(token) < 2:
            continue
        out.append(TailCandidate(key=name_key(token), id="", name=token, category="", source="token",
                                 forms=[(i,)]))
    return out
