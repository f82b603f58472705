"""A found pair's relation type from the words around its mentions (issue #15, deliverable 4).

Why. The query-group model finds pairs well, but types them no better than their two categories do
(docs/experiments/relation-typer.md: type accuracy 0.609 against 0.599 for the category-pair prior). A probe on
the model's frozen states adds nothing on unseen documents, and a bag of the sentence's words adds
0.008. What the bag misses is *which* entity the cue words attach to: in "X-induced Y was treated
with Z", X–Y is a positive correlation and Z–Y a negative one, with the same sentence words.

This typer keeps the entities apart. Each sentence that mentions both entities of a pair gives one
row, built around the closest pair of their mentions (a, then b, in text order), with every entity
mention replaced by its category token (``@Disease``, ``@ChemicalEntity``, ...):

- ``pair``: the two categories (sorted), and their order in the sentence;
- ``between``: the words and word bigrams from a to b;
- ``window``: the ``window`` words before a and after b;
- ``mention``: the words of each mention, and the word attached right after it ("-induced");
- ``sentence``: the sentence's words, at weight 0.3 (the bag the probe measured).

Every word feature is keyed by the category pair, so "treated" between a chemical and a disease is
not "treated" between a gene and a disease. A multinomial logistic regression (scikit-learn, L2,
``C``) is fitted on the rows of gold typed document-level relations (BioRED train); a pair's type
distribution over its sentences is

    log P(type | pair) = Σ_s log p(type | features(s)) − log Z

(independent sentence evidence). A pair whose entities share no sentence gets one row of its
``pair`` features alone: the category-pair prior as the regression learnt it. With ``learn_apart``
(``extract.typer_apart``) such pairs are learnt too, from one *apart* row each: the category pair,
the words of each entity's mentions (digit runs as 0, so "rs1234" and "p.Arg12Cys" read as forms),
and the document's words at weight 0.3, all keyed by the category pair. About one gold pair in seven
shares no sentence, most of them disease–variant pairs (BioRED train: 129 Association, 132
Positive_Correlation), which the category pair alone cannot tell apart.

Shared cue words (``shared``, ``extract.typer_shared``). Keying every word by the category pair
means that "increased" learnt between a chemical and a gene says nothing between two genes, and the
rarer pairs (chemical–chemical, gene–gene) have few rows to learn from. With ``shared`` each type
row's ``between`` and ``window`` words also appear once more keyed by ``*`` instead of the pair: the
feature augmentation of Daumé III (2007, "Frustratingly easy domain adaptation"), with the category
pairs as the domains. The regression then learns what a word means for every pair, and what it
means for this one beyond that. Only the type regression reads the shared copies.

Entity roles (``roles``, ``extract.typer_roles``). A sentence row sees its own words only, so in
"X-induced Y ... Z reduced Y and X levels" the row of X and Z does not know X as an inducer. With
``roles`` each type row also holds, for each entity of the pair, the word before each of its
mentions anywhere in the abstract and the word attached after it (as a set, at weight
:data:`ROLE_WEIGHT`), keyed by the entity's category token and the category pair. Only the type
regression reads them.

Whether a pair is related at all. A second, binary regression on the same features learns
p(related | sentence) from every pair of entities that share a sentence in a relation-annotated
document (positive when the document relates them). A pair's probability of being related is the
noisy-OR over its sentences, 1 − Π_s (1 − p(related | s)): one sentence that states it is enough.
Extraction can drop the model's pairs this scores low (``extract.typer_min_relation``).

A pair whose entities share no sentence has no row to read. :meth:`RelationTyper.relatedness` gives
it the share of such pairs that the fit documents relate, per category pair, add-one smoothed:
(related + 1) / (pairs + 2). With it every candidate pair has a probability, and ranking the
extraction's candidates by it is the ``lexical`` control (:mod:`graphmert.extract.pairs`): the
supervised word-feature baseline trained on the same labels as the model's candidate head.

Hand-written because the field's relation-extraction tools need pretrained language models, which
this project cannot download; the features are the classic ones of distant-supervision relation
extraction (Mintz et al., 2009), fitted by scikit-learn.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy import sparse

from graphmert.config import ExtractConfig
from graphmert.corpus.document import Document, Mention
from graphmert.errors import GraphmertError
from graphmert.kg.schema import mention_category

__all__ = ["RelationTyper", "TyperError", "needs_relatedness", "pair_sentence_features"]

_WORD = re.compile(r"[a-z0-9]+")
_DIGITS = re.compile(r"[0-9]+")
_ATTACHED = re.compile(r"[-\s]?([a-z]+)")
SENTENCE_WEIGHT = 0.3
ROLE_WEIGHT = 0.5              # the entity-role words' weight (module docstring, "Entity roles")


class TyperError(GraphmertError, ValueError):
    """The typer cannot be fitted or asked (no typed relations, no sentences)."""


def needs_relatedness(ex: ExtractConfig) -> bool:
    """Whether extraction reads the typer's related-or-not regression: ``typer_min_relation``, the
    ``lexical`` or ``lexical_document`` control, or graphmert's score pooled with it (``lexical_weight``)."""
    return (ex.typer_min_relation > 0 or ex.lexical_weight > 0
            or any(c in ex.controls for c in ("lexical", "lexical_document")))


def _token(m: Mention) -> str:
    return _type_token(m.type)


@functools.lru_cache(maxsize=4096)
def _type_token(mention_type: str) -> str:
    """A mention type's category token (``@Disease``); cached, as the rows ask it for every mention
    of every span they read."""
    cat = mention_category(mention_type)
    return "@" + (cat.split(":", 1)[-1] if cat else "Other")


def _words(doc: Document, lo: int, hi: int, mentions: Sequence[Mention]) -> list[str]:
    """Lower-cased words of ``doc.text[lo:hi]``, each entity mention inside replaced by its token."""
    out, pos = [], lo
    for m in mentions:                                          # sorted by start
        if m.end <= lo or m.start >= hi:
            continue
        out += _WORD.findall(doc.text[pos:max(pos, m.start)].lower())
        out.append(_token(m))
        pos = max(pos, m.end)
    return out + _WORD.findall(doc.text[pos:hi].lower())


class _DocWords:
    """What the rows of one document's pairs read again and again, each built once however many pairs
    read it: the mentions in text order, each entity id's mentions (in that order) by the sentences
    that hold them, the words of each span asked (:func:`_words`, memoised by span: a sentence's
    words serve every pair in it), and each pair's sentence rows (:func:`pair_sentence_features`).
    Kept for one call of the typer, or for the calls given one ``cache`` (:meth:`RelationTyper.
    relatedness`): an extraction asks the relatedness of its candidate pairs and then the types of
    those it keeps, and reads each pair's rows once. A document edited between calls needs a new
    cache."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.mentions = sorted(doc.mentions, key=lambda m: (m.start, m.end))
        self.of_id: dict[str, list[Mention]] = {}
        for m in self.mentions:
            for i in dict.fromkeys(m.ids):
                self.of_id.setdefault(i, []).append(m)
        self._spans: dict[tuple[int, int], tuple[str, ...]] = {}
        self._sets: dict[tuple[int, int], set[str]] = {}
        self._bags: dict[tuple[int, int, str], dict[str, float]] = {}
        self._by_sentence: dict[str, dict[int, list[Mention]]] = {}
        self.pair_rows: dict[tuple[str, str, int], list[Counter]] = {}

    def by_sentence(self, entity: str) -> dict[int, list[Mention]]:
        """Sentence number → the mentions of ``entity`` that lie within that sentence (text order)."""
        got = self._by_sentence.get(entity)
        if got is None:
            got = self._by_sentence[entity] = {}
            for m in self.of_id.get(entity, ()):
                for k, (s0, s1) in enumerate(self.doc.sentences):
                    if s0 <= m.start and m.end <= s1:
                        got.setdefault(k, []).append(m)
        return got

    def words(self, lo: int, hi: int) -> tuple[str, ...]:
        """:func:`_words` of ``doc.text[lo:hi]``."""
        got = self._spans.get((lo, hi))
        if got is None:
            got = self._spans[(lo, hi)] = tuple(_words(self.doc, lo, hi, self.mentions))
        return got

    def sentence_bag(self, sentence: tuple[int, int], pair: str) -> dict[str, float]:
        """The sentence-bag features of a row (module docstring, ``sentence``): each distinct word of
        the ``sentence`` span as ``s:<pair>:<word>`` at :data:`SENTENCE_WEIGHT` (do not modify)."""
        key = (*sentence, pair)
        got = self._bags.get(key)
        if got is None:
            got = self._bags[key] = {f"s:{pair}:{w}": SENTENCE_WEIGHT for w in self.word_set(*sentence)}
        return got

    def word_set(self, lo: int, hi: int) -> set[str]:
        """The distinct :meth:`words` of ``doc.text[lo:hi]`` (do not modify)."""
        got = self._sets.get((lo, hi))
        if got is None:
            got = self._sets[(lo, hi)] = set(self.words(lo, hi))
        return got


def _doc_words(cache: dict[int, _DocWords], doc: Document) -> _DocWords:
    """``doc``'s :class:`_DocWords` in ``cache`` (keyed by object: the documents outlive the call)."""
    got = cache.get(id(doc))
    if got is None or got.doc is not doc:
        got = cache[id(doc)] = _DocWords(doc)
    return got


def _row(words: _DocWords, sentence: tuple[int, int], x: Mention, y: Mention, window: int) -> Counter:
    """The features of one sentence around the mention pair (x, y) (module docstring). The word
    features are counted by ``Counter.update`` over their names (counted in C) and the sentence's bag
    is copied from :meth:`_DocWords.sentence_bag`, built once per sentence and category pair."""
    doc = words.doc
    a, b = (x, y) if (x.start, x.end) <= (y.start, y.end) else (y, x)
    ta, tb = _token(a), _token(b)
    pair = "|".join(sorted((ta, tb)))
    between = words.words(a.end, b.start)
    names = [f"b:{pair}:{w}" for w in between]
    names += [f"bb:{pair}:{w1}_{w2}" for w1, w2 in zip(between, between[1:])]
    names += [f"l{ta}:{pair}:{w}" for w in (words.words(sentence[0], a.start)[-window:] if window else ())]
    names += [f"r{tb}:{pair}:{w}" for w in words.words(b.end, sentence[1])[:window]]
    for m, t in ((a, ta), (b, tb)):
        names += [f"m{t}:{w}" for w in _WORD.findall(m.text.lower())]
        if attached := _ATTACHED.match(doc.text[m.end:m.end + 16].lower()):
            names.append(f"after{t}:{attached.group(1)}")
    f = Counter(words.sentence_bag(sentence, pair))          # the "s:" features: no other name starts so
    f.update(names)
    f[f"pair={pair}"] = 1.0
    f[f"order={ta}<{tb}"] = 1.0
    f["distance"] = min(len(between), 30) / 30.0
    return f


def _shared(row: Counter) -> Counter:
    """``row`` plus a copy of its between and window word features keyed by ``*`` instead of the
    category pair (module docstring, "Shared cue words"): ``b:@A|@B:w`` also as ``b:*:w``, ``bb:`` as
    ``bb:*:``, ``l@A:@A|@B:w`` as ``l:*:w`` and ``r@B:…`` as ``r:*:w``."""
    out = Counter(row)
    for key, value in row.items():
        if key[0] == "b" or key[:2] in ("l@", "r@"):                 # b:, bb:, and the window words
            group, _, rest = key.partition(":")
            out[f"{group if group in ('b', 'bb') else group[0]}:*:{rest.partition(':')[2]}"] += value
    return out


def _roles(doc: Document, head: str, tail: str, pair: str) -> Counter:
    """The role words of ``head`` and ``tail`` in ``doc`` (module docstring, "Entity roles"): for
    each, the word before each of its mentions and the word attached after it, keyed by its category
    token and the category ``pair``."""
    f: Counter = Counter()
    for entity in (head, tail):
        own = [m for m in doc.mentions if entity in m.ids]
        if not own:
            continue
        words = set()
        for m in own:
            words.update(_WORD.findall(doc.text[max(0, m.start - 24):m.start].lower())[-1:])
            if attached := _ATTACHED.match(doc.text[m.end:m.end + 16].lower()):
                words.add(attached.group(1))
        token = _token(own[0])
        for w in words:
            f[f"ro{token}:{pair}:{w}"] = ROLE_WEIGHT
    return f


def pair_sentence_features(doc: Document, head: str, tail: str, window: int,
                           words: _DocWords | None = None) -> list[Counter]:
    """One feature row per sentence of ``doc`` that mentions entity ids ``head`` and ``tail`` (their
    closest mentions there); [] when no sentence mentions both. ``words``: ``doc``'s look-ups when
    the caller reads many pairs of it (built here otherwise), which then keep the rows (do not
    modify them)."""
    if words is not None and (got := words.pair_rows.get((head, tail, window))) is not None:
        return got
    words = _DocWords(doc) if words is None else words
    heads, tails = words.by_sentence(head), words.by_sentence(tail)
    rows = []
    for k in sorted(heads.keys() & tails.keys()):
        x, y = min(((x, y) for x in heads[k] for y in tails[k]),
                   key=lambda p: (abs(p[0].start - p[1].start), p[0].start, p[1].start))
        s0, s1 = doc.sentences[k]
        rows.append(_row(words, (s0, s1), x, y, window))
    words.pair_rows[(head, tail, window)] = rows
    return rows


def _entity_pairs(doc: Document) -> list[tuple[str, str]]:
    """Every unordered pair of entity ids that share a sentence of ``doc`` (sorted)."""
    pairs = set()
    for s0, s1 in doc.sentences:
        ids = sorted({i for m in doc.mentions if s0 <= m.start and m.end <= s1 for i in m.ids})
        pairs.update((a, b) for k, a in enumerate(ids) for b in ids[k + 1:])
    return sorted(pairs)


def _categories(doc: Document) -> dict[str, str]:
    """Entity id → the category token of its first mention in ``doc``."""
    out: dict[str, str] = {}
    for m in doc.mentions:
        for i in m.ids:
            out.setdefault(i, _token(m))
    return out


def _apart_pairs(doc: Document) -> list[tuple[str, str]]:
    """Every unordered pair of entity ids of ``doc`` that share no sentence (sorted)."""
    ids = sorted(_categories(doc))
    together = set(_entity_pairs(doc))
    return [(a, b) for k, a in enumerate(ids) for b in ids[k + 1:] if (a, b) not in together]


def _pair_only(words: _DocWords, head: str, tail: str) -> Counter | None:
    """The ``pair`` features of two entities that share no sentence (None when either is absent)."""
    x = next((m for m in words.doc.mentions if head in m.ids), None)
    y = next((m for m in words.doc.mentions if tail in m.ids), None)
    if x is None or y is None:
        return None
    ta, tb = sorted((_token(x), _token(y)))
    return Counter({f"pair={ta}|{tb}": 1.0})


def _apart_row(words: _DocWords, head: str, tail: str) -> Counter | None:
    """The row of two entities that share no sentence (module docstring, "apart"): their category
    pair, the words of each one's mentions with digit runs as 0 ("rs0", "arg0cys"), and the
    document's words at :data:`SENTENCE_WEIGHT`, keyed by the pair. None when either is absent."""
    doc = words.doc
    own = {e: [m for m in doc.mentions if e in m.ids] for e in (head, tail)}
    if not own[head] or not own[tail]:
        return None
    pair = "|".join(sorted((_token(own[head][0]), _token(own[tail][0]))))
    f: Counter = Counter({f"apart={pair}": 1.0})
    for e, ms in own.items():
        t = _token(ms[0])
        for w in {_DIGITS.sub("0", w) for m in ms for w in _WORD.findall(m.text.lower())}:
            f[f"am{t}:{pair}:{w}"] = 1.0
    for w in words.word_set(0, len(doc.text)):
        f[f"d:{pair}:{w}"] += SENTENCE_WEIGHT
    return f


@dataclass
class RelationTyper:
    """Fitted typer (module docstring). ``window``: words kept before and after the pair; ``c``: the
    inverse L2 strength of the regressions; ``related``: fit the related-or-not regression too
    (:meth:`relation_probabilities`); ``learn_apart``: learn and type the pairs that share no sentence
    from their apart rows; ``shared``: the type rows' shared cue words; ``roles``: the type rows'
    entity-role words (module docstring); ``type_regression``: fit the type regression (False: the
    related-or-not regression alone, for a caller that reads :meth:`relatedness` only, as the
    ``lexical_document`` control's out-of-fold typers do)."""

    window: int = ExtractConfig.typer_window
    c: float = ExtractConfig.typer_c
    related: bool = False
    learn_apart: bool = ExtractConfig.typer_apart
    shared: bool = ExtractConfig.typer_shared
    roles: bool = ExtractConfig.typer_roles
    type_regression: bool = True
    fit_counts: Counter = field(default_factory=Counter)     # documents, relations, rows of the fit
    apart: dict[str, tuple[int, int]] = field(default_factory=dict)   # category pair → (related, pairs)

    @classmethod
    def from_config(cls, ex: ExtractConfig) -> "RelationTyper":
        """The unfitted typer the ``extract`` section asks for (``related`` when
        ``typer_min_relation``, the ``lexical`` control or ``lexical_weight`` reads it)."""
        return cls(window=ex.typer_window, c=ex.typer_c, related=needs_relatedness(ex),
                   learn_apart=ex.typer_apart, shared=ex.typer_shared, roles=ex.typer_roles)

    def fit(self, docs: Iterable[Document], where: str = "typer documents") -> "RelationTyper":
        """Fit on the typed relations of ``docs`` (sentence spans filled in); ``where`` names the
        source in errors."""
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        rows, labels, pair_rows, related, self.fit_counts = [], [], [], [], Counter()
        self.apart = {}
        for doc in docs:
            if doc.relations and not doc.sentences:
                raise TyperError(f"{where}: document {doc.id} has relations but no sentence spans")
            self.fit_counts["documents"] += 1
            words = _DocWords(doc)
            for rel in doc.relations if self.type_regression else ():
                found = self._type_rows(words, rel.head, rel.tail)
                self.fit_counts["relations"] += 1
                self.fit_counts["relations_in_one_sentence"] += bool(found)
                if not found and self.learn_apart:
                    found = [r for r in [_apart_row(words, rel.head, rel.tail)] if r is not None]
                    self.fit_counts["apart_rows"] += len(found)
                rows += found
                labels += [rel.type] * len(found)
            gold = {frozenset((r.head, r.tail)) for r in doc.relations}
            for x, y in _entity_pairs(doc) if gold and self.related else []:
                found = pair_sentence_features(doc, x, y, self.window, words=words)
                pair_rows += found
                related += [frozenset((x, y)) in gold] * len(found)
            if gold and self.related:
                self._count_apart(doc, gold)
        if not (self.type_regression or self.related):
            raise TyperError("a relation typer without its type regression needs its related-or-not one "
                             "(RelationTyper(related=True))")
        if self.type_regression and len(set(labels)) < 2:
            raise TyperError(f"{where}: the typer needs typed relations of at least two types whose "
                             f"entities share a sentence; found {dict(Counter(labels)) or 'none'} in "
                             f"{self.fit_counts['documents']} documents")
        if self.related and len(set(related)) < 2:
            raise TyperError(f"{where}: the related-or-not regression needs related and unrelated pairs "
                             f"that share a sentence; found {sum(related)} related of {len(related)}")
        self.fit_counts["rows"] = len(rows)
        # each regression over the features its own rows hold: a column no row of a regression holds
        # would keep a zero weight under L2 and only lengthen L-BFGS's vectors (the type regression's
        # by 8 classes a column)
        self._vec = self._clf = self._related = self._vec_related = None
        if self.type_regression:
            self._vec = DictVectorizer().fit(rows)
            self._clf = LogisticRegression(C=self.c, max_iter=3000).fit(self._design(rows), labels)
        if self.related:
            self.fit_counts.update(pair_rows=len(pair_rows), related_pair_rows=sum(related))
            self._vec_related = DictVectorizer().fit(pair_rows)
            self._related = LogisticRegression(C=self.c, max_iter=3000).fit(
                self._design(pair_rows, self._vec_related), related)
        return self

    def _type_rows(self, words: _DocWords, head: str, tail: str) -> list[Counter]:
        """The type regression's rows of a pair's sentences: :func:`pair_sentence_features`, with
        their shared copies when :attr:`shared` and the entities' role words when :attr:`roles`."""
        doc = words.doc
        rows = pair_sentence_features(doc, head, tail, self.window, words=words)
        rows = [_shared(r) if self.shared else Counter(r) for r in rows] if self.roles or self.shared else rows
        if self.roles and rows:                 # the copies above: the words' rows stay as they were
            pair = next(k.removeprefix("pair=") for k in rows[0] if k.startswith("pair="))
            role = _roles(doc, head, tail, pair)
            for r in rows:
                r.update(role)
        return rows

    def _count_apart(self, doc: Document, gold: set[frozenset]) -> None:
        """Count the pairs of ``doc`` that share no sentence, and the related ones, per category pair."""
        cats = _categories(doc)
        for x, y in _apart_pairs(doc):
            key = "|".join(sorted((cats[x], cats[y])))
            hits, total = self.apart.get(key, (0, 0))
            self.apart[key] = (hits + (frozenset((x, y)) in gold), total + 1)

    def apart_probability(self, doc: Document, head: str, tail: str) -> float:
        """P(related) of two entities of ``doc`` that share no sentence: the smoothed share of such
        pairs of their category pair that the fit documents relate (module docstring)."""
        cats = _categories(doc)
        key = "|".join(sorted((cats.get(head, "@Other"), cats.get(tail, "@Other"))))
        hits, total = self.apart.get(key, (0, 0))
        return (hits + 1) / (total + 2)

    def relatedness(self, items: Sequence[tuple[Document, str, str]], cache: dict | None = None) -> list[float]:
        """Per (document, head id, tail id): :meth:`relation_probabilities`, and for a pair that shares
        no sentence :meth:`apart_probability` — a probability for every pair. ``cache``: a dict the
        caller gives every call about the same, unedited documents, so that what they read (each
        pair's rows among it) is built once for all of them (:class:`_DocWords`); a new one per call
        otherwise."""
        found = self.relation_probabilities(items, cache)
        return [p if p is not None else self.apart_probability(doc, head, tail)
                for p, (doc, head, tail) in zip(found, items)]

    def relation_probabilities(self, items: Sequence[tuple[Document, str, str]], cache: dict | None = None
                               ) -> list[float | None]:
        """Per (document, head id, tail id): the noisy-OR over the pair's sentences of p(related |
        sentence) (module docstring), or None when no sentence mentions both entities. ``cache``: as
        :meth:`relatedness` takes it."""
        self._check_fitted()
        if self._related is None:
            raise TyperError("the relation typer was fitted without its related-or-not regression "
                             "(RelationTyper(related=True); extract.typer_min_relation > 0)")
        cache = {} if cache is None else cache
        rows = [pair_sentence_features(doc, head, tail, self.window, words=_doc_words(cache, doc))
                for doc, head, tail in items]
        flat = [r for found in rows for r in found]
        p = self._related.predict_proba(self._design(flat, self._vec_related))[:, 1] if flat else np.zeros(0)
        out, i = [], 0
        for found in rows:
            out.append(float(1.0 - np.prod(1.0 - p[i:i + len(found)])) if found else None)
            i += len(found)
        return out

    def _design(self, rows: Sequence[Counter], vec=None) -> sparse.csr_matrix:
        """``vec.transform(rows)`` (``vec``: the type regression's vectorizer unless given): the same
        float64 matrix, indices sorted, features the fit never saw dropped. Written out because the
        vectorizer checks every value's type through ``isinstance`` (over half a second on 100 BioRED
        abstracts); these rows hold numbers only. Every name of every row is looked up in one ``map``
        (C-level calls of the vocabulary's ``get``), not in a Python loop per feature."""
        names = list(itertools.chain.from_iterable(rows))
        vocabulary = (self._vec if vec is None else vec).vocabulary_
        column = np.fromiter(map(vocabulary.get, names, itertools.repeat(-1)), dtype=np.intc,
                             count=len(names))                                            # [names]
        values = np.fromiter(itertools.chain.from_iterable(r.values() for r in rows), dtype=np.float64,
                             count=len(names))                                            # [names]
        seen = column >= 0
        owner = np.repeat(np.arange(len(rows)), [len(r) for r in rows])                   # [names]
        indptr = np.zeros(len(rows) + 1, dtype=np.intc)
        np.cumsum(np.bincount(owner[seen], minlength=len(rows)), out=indptr[1:])
        m = sparse.csr_matrix((values[seen], column[seen], indptr), shape=(len(rows), len(vocabulary)))
        m.sort_indices()
        return m

    def _check_fitted(self, types: bool = False) -> None:
        """Raise unless fitted, and (``types``) fitted with its type regression."""
        if not hasattr(self, "_clf"):
            raise TyperError("the relation typer was asked before it was fitted")
        if types and self._clf is None:
            raise TyperError("the relation typer was fitted without its type regression "
                             "(RelationTyper(type_regression=False)): it can tell related pairs only")

    @property
    def types(self) -> list[str]:
        self._check_fitted(types=True)
        return [str(t) for t in self._clf.classes_]

    def log_probabilities(self, items: Sequence[tuple[Document, str, str]], cache: dict | None = None
                          ) -> list[dict[str, float] | None]:
        """Per (document, head id, tail id): log P(type | pair) over :attr:`types` (normalised), or
        None when either entity has no mention in the document. ``cache``: as :meth:`relatedness`
        takes it."""
        self._check_fitted(types=True)
        rows, owner, out = [], [], []
        cache = {} if cache is None else cache
        for i, (doc, head, tail) in enumerate(items):
            words = _doc_words(cache, doc)
            found = self._type_rows(words, head, tail) or \
                [r for r in [(_apart_row if self.learn_apart else _pair_only)(words, head, tail)] if r is not None]
            rows += found
            owner += [i] * len(found)
            out.append(bool(found))
        total = np.zeros((len(items), len(self.types)))                                # [items, types]
        if rows:
            logp = np.log(self._clf.predict_proba(self._design(rows)) + 1e-12)         # [rows, types]
            np.add.at(total, np.asarray(owner), logp)
        total -= np.logaddexp.reduce(total, axis=1, keepdims=True)                      # normalise
        return [None if not found else dict(zip(self.types, row.tolist()))
                for found, row in zip(out, total)]
