"""Entity recognition on raw text: a spaCy NER trained in the project from gold mentions (issue #19).

Nothing is downloaded. The recognizer is spaCy's transition-based ``ner`` component on its default
``tok2vec`` (hashed NORM/PREFIX/SUFFIX/SHAPE embeddings + a CNN; :func:`tok2vec_config` sizes it,
swaps in character embeddings, adds word vectors learnt in the run, :mod:`graphmert.ner.vectors`, or
the reference vocabularies' flags, :mod:`graphmert.ner.dictionary`), trained from scratch on the gold
mentions of annotated corpora (BioRED train, BC5CDR, NCBI disease …). Labels are the Biolink
categories of :data:`LABELS` (``Gene``, ``Disease``, ``Chemical``), so recognised mentions flow
through :func:`graphmert.kg.schema.mention_category` like corpus mentions do.

**Tokens.** scispaCy's rule tokenizer keeps ``bleomycin-induced`` and ``EPO/EPOR`` whole, so 9% of the
gold mentions of the shared corpus would start or end inside a token and could never be found. The
recognizer's tokenizer also splits on ``- – / + ; : ( ) [ ] , . *`` between characters, which leaves
0.7% unaligned (:func:`recognizer_nlp`). Unaligned gold mentions are marked *missing* in training.
Splitting at brackets lets a found span stop inside a name or join a long form to its short form;
:func:`bracket_repair` mends the spans whose brackets do not balance ("5-fluorouracil (5-FU" →
"5-fluorouracil", "5-FU").

**Partial annotation.** BC5CDR annotates chemicals and diseases, NCBI disease only diseases: their
genes are unannotated, not absent. Teaching "O" on them would teach the model that genes are not
entities. For each training document, a category without a single gold mention counts as
unannotated there, and every token that matches a known surface form of that category (any gold
mention of it in the training set, matched case-insensitively; all-uppercase forms as written) and
lies outside the document's gold mentions is marked *missing* (BILUO ``-``): it teaches neither way.
Where only some corpora annotate a category at all (genes: BioRED only), ``ner.separate_categories``
gives it a model of its own, trained on just the documents that annotate it (:func:`train_recognizer`).

**Training** (:func:`train_part`, one model of :func:`plan_parts`) is spaCy's own
``Language.update`` loop rather than ``spacy train``: the scispaCy tokenizer is not a registered
function a ``spacy train`` config could name, and the loop reports each epoch (the pipeline's bar,
``--quiet``) and stops on one time budget for the whole recognizer. :func:`train_recognizer` trains
the models one after another in this process; the ``ner`` stage trains them at once, one per worker
(spaCy's loop keeps one core busy), and :func:`assemble_recognizer` joins them either way. A slice
of the training documents (by a salted hash of the id, :func:`selection_hash`, below
``ner.selection_fraction``) picks the best epoch; it is never an evaluation set.
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from graphmert.config import NERConfig
from graphmert.corpus.document import Document, Mention
from graphmert.corpus.fraction import document_fraction
from graphmert.corpus.nlp import blank_biomedical_nlp
from graphmert.errors import GraphmertError, noting
from graphmert.io import atomic_dir, check_file_sizes, file_sizes
from graphmert.kg.schema import mention_category
from graphmert.ner.dictionary import FILE as DICTIONARY_FILE
from graphmert.ner.dictionary import DictionaryFlags, build_dictionary_flags
from graphmert.ner.vectors import WordVectors, train_word_vectors, use_vectors
from graphmert.ner.words import whole_word_occurrences

__all__ = ["LABELS", "RecognizerError", "Recognizer", "RecognizerPart", "recognizer_nlp", "recognizer_groups",
           "part_extras", "tok2vec_config", "training_examples", "train_recognizer", "PartPlan", "plan_parts",
           "train_part", "assemble_recognizer", "pipeline_from_bytes", "propagate_mentions", "propagate_document",
           "whole_word_occurrences", "bracket_repair", "selection_scores", "selection_split",
           "TOKENIZER_VERSION", "SELECTION_VERSION", "selection_hash"]

log = logging.getLogger("graphmert.ner")

#: Biolink category → spaCy label (``mention_category(label)`` gives the category back)
LABELS: dict[str, str] = {"biolink:Gene": "Gene", "biolink:Disease": "Disease",
                          "biolink:ChemicalEntity": "Chemical"}
_EXTRA_INFIXES = r"[-–/+;:()\[\],.*]"
#: bump when the recognizer's tokenization changes: a saved recognizer then refuses to load
TOKENIZER_VERSION = 1
#: rows of the hashed embedding of the dictionary flags (``ner.dictionary_flags``), whose tags are 9 at most
DICTIONARY_ROWS = 100
#: the selection slice's hash (:func:`selection_hash`); recorded in a saved recognizer's metadata.
#: Version 1 hashed the bare id, the hash of ``extract.document_fraction``'s slice, so the ner stage,
#: which holds that slice out, found no selection document below the same fraction. Version 2 salts it.
SELECTION_VERSION = 2
_SELECTION_SALT = "graphmert-ner-selection-v2\x1f"
_META = "graphmert-recognizer.json"


class RecognizerError(GraphmertError, ValueError):
    """Bad recognizer input: no usable training mentions, unknown categories, a foreign model."""


def tok2vec_config(cfg: NERConfig) -> dict:
    """The ``ner`` component's tok2vec architecture for ``cfg`` (:class:`graphmert.config.NERConfig`):
    ``ner.embed`` "hash" is spaCy's default HashEmbedCNN (hashed NORM/PREFIX/SUFFIX/SHAPE, then a
    CNN), "characters" spaCy's CharacterEmbed (the first and last 4 characters of each word, and
    its hashed LOWER form) under the same CNN; ``width``, ``depth``, ``window_size`` and
    ``embed_rows`` size either. With ``ner.vectors`` either also reads the vocabulary's word vectors
    (:mod:`graphmert.ner.vectors`) through a learnt projection. With ``ner.dictionary_flags``
    "hash" embeds each token's dictionary flags too (its TAG, :mod:`graphmert.ner.dictionary`):
    HashEmbedCNN written out as spaCy builds it, one more hashed table in its MultiHashEmbed.
    ``ner.encoder`` "bilstm" puts spaCy's TorchBiLSTMEncoder (``depth`` bidirectional layers of
    ``width``, dropout ``ner.dropout`` between them) in the CNN's place (held-out BioRED train: it
    trains two to three times faster, at 0.007 lower recognition; docs/experiments/recognizer-training.md)."""
    static = cfg.vectors > 0
    window = {"width": cfg.width, "depth": cfg.depth, "window_size": cfg.window_size, "maxout_pieces": 3}
    if cfg.embed == "hash" and not cfg.dictionary_flags and cfg.encoder == "window":
        return {"@architectures": "spacy.HashEmbedCNN.v2", **window, "embed_size": cfg.embed_rows,
                "subword_features": True, "pretrained_vectors": static or None}   # spaCy's default
    if cfg.encoder == "bilstm":
        encode = {"@architectures": "spacy.TorchBiLSTMEncoder.v1", "width": cfg.width, "depth": cfg.depth,
                  "dropout": cfg.dropout if cfg.depth > 1 else 0.0}     # between layers only
    else:
        encode = {"@architectures": "spacy.MaxoutWindowEncoder.v2", **window}
    if cfg.embed == "characters":
        embed = {"@architectures": "spacy.CharacterEmbed.v2", "width": cfg.width, "rows": cfg.embed_rows,
                 "nM": 64, "nC": 8, "include_static_vectors": static}
    else:                                   # HashEmbedCNN's embedding written out, with the flags' table
        rows, flags = cfg.embed_rows, ["TAG"] if cfg.dictionary_flags else []
        embed = {"@architectures": "spacy.MultiHashEmbed.v2", "width": cfg.width,
                 "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE", *flags],
                 "rows": [rows, rows // 2, rows // 2, rows // 2] + [DICTIONARY_ROWS] * len(flags),
                 "include_static_vectors": static}
    return {"@architectures": "spacy.Tok2Vec.v2", "embed": embed, "encode": encode}


def recognizer_nlp(categories: Sequence[str], cfg: NERConfig | None = None):
    """A blank biomedical pipeline with the finer infixes and an untrained ``ner`` for ``categories``,
    its tok2vec sized by ``cfg`` (:class:`graphmert.config.NERConfig`; None: the defaults)."""
    unknown = [c for c in categories if c not in LABELS]
    if unknown:
        raise RecognizerError(f"ner.categories: {unknown} cannot be recognised; choose from {list(LABELS)}")
    nlp = blank_biomedical_nlp()
    pattern = nlp.tokenizer.infix_finditer.__self__.pattern
    nlp.tokenizer.infix_finditer = re.compile(f"{pattern}|{_EXTRA_INFIXES}").finditer
    ner = nlp.add_pipe("ner", config={"model": {"tok2vec": tok2vec_config(cfg or NERConfig())}})
    for c in categories:
        ner.add_label(LABELS[c])
    return nlp


def _disjoint(spans: Iterable[tuple], tiebreak: Callable[[tuple], tuple] = lambda s: ()) -> list[tuple]:
    """The spans ``(start, end, …)`` that overlap no longer one, in start order: taken greedily,
    longest first, then by ``tiebreak``, then by the whole tuple (the earlier start first; equal
    spans with different labels are decided by the label, never by the order they came in)."""
    taken: list[tuple] = []
    for s in sorted(spans, key=lambda s: (-(s[1] - s[0]), tiebreak(s), s)):
        if all(s[1] <= t[0] or s[0] >= t[1] for t in taken):
            taken.append(s)
    return sorted(taken)


def propagate_mentions(text: str, spans: Sequence[tuple]) -> list[tuple]:
    """``spans`` (disjoint ``(start, end, part, text, label)``) plus every other whole-word occurrence
    of a span's text in ``text`` that overlaps none of them, with the label that text has most often
    among ``spans`` (ties: the label's name), in start order.

    A model that tags a name once in an abstract often misses it elsewhere in the same abstract (a
    sentence with less context); one sense per document is the usual repair. Occurrences are matched
    case-sensitively, at the recognizer's token edges: not inside a longer word (``-`` and ``/`` are
    edges, as the recognizer's infixes split there)."""
    labels: dict[str, dict[str, int]] = {}
    part: dict[str, int] = {}
    for a, b, k, t, lab in spans:
        labels.setdefault(t, {})
        labels[t][lab] = labels[t].get(lab, 0) + 1
        part.setdefault(t, k)
    out = list(spans)
    for t in sorted(labels, key=lambda t: (-len(t), t)):            # longer texts claim their words first
        lab = min(labels[t], key=lambda x: (-labels[t][x], x))
        for start, end in whole_word_occurrences(text, t):
            if all(end <= s[0] or start >= s[1] for s in out):
                out.append((start, end, part[t], t, lab))
    return sorted(out)


def propagate_document(doc: Document) -> Document:
    """A copy of ``doc`` with a mention on every other whole-word occurrence of one of its mentions'
    texts that overlaps none of them (:func:`propagate_mentions`: the text's most frequent label, no
    ids); ``doc`` itself when there is none. One sense per document again after the entity rules
    have added, trimmed or relabelled mentions ("oral galactose" trimmed to "galactose" makes the
    abstract's other occurrences of "galactose" mentions too)."""
    spans = [(m.start, m.end, 0, m.text, m.type) for m in doc.mentions]
    have = {(m.start, m.end) for m in doc.mentions}
    added = [Mention(start=a, end=b, text=t, type=lab) for a, b, _, t, lab in propagate_mentions(doc.text, spans)
             if (a, b) not in have]
    if not added:
        return doc
    return replace(doc, mentions=sorted([*doc.mentions, *added], key=lambda m: (m.start, m.end)))


_PAIRS = {")": "(", "]": "["}
_TRAILING = ",.;:"


def _unmatched(t: str) -> tuple[list[int], list[int]]:
    """(positions of the opening brackets of ``t`` never closed, positions of the closing ones never
    opened), for ``()`` and ``[]``."""
    stack: list[int] = []
    stray: list[int] = []
    for i, c in enumerate(t):
        if c in "([":
            stack.append(i)
        elif c in _PAIRS:
            if stack and t[stack[-1]] == _PAIRS[c]:
                stack.pop()
            else:
                stray.append(i)
    return stack, stray


def bracket_repair(text: str, start: int, end: int,
                   _seen: frozenset[tuple[int, int]] = frozenset()) -> list[tuple[int, int]]:
    """The span(s) a recognised span ``text[start:end]`` with unbalanced brackets stands for.

    The recognizer's tokens split at every bracket, so a span can join a long form to its
    parenthesised short form ("5-fluorouracil (5-FU"), stop inside a name ("15-F(2t" of
    "15-F(2t)-IsoP") or swallow a closing bracket ("IL-8)" of "(IL-8)"). In turn:

    1. a bracket left open after a space splits the span into the part before it and the part
       inside it; the inside runs on to the bracket's closing one when no space comes first
       ("(17" of "(17-OHP)" is "17-OHP");
    2. a span that ends inside a word with a bracket left open runs to the end of that word (less
       trailing ``,.;:``);
    3. a stray closing bracket at the end is dropped.

    Each part is repaired again. A balanced span is returned as it is; so is one no rule settles (a
    stray closing bracket inside), and one the rules come back to, as it stands then: rules 2 and 3
    undo each other on a word whose bracket closes with the other kind ("10(3" of "10(3]," grows to
    "10(3]" and is cut back to "10(3")."""
    t = text[start:end]
    opened, stray = _unmatched(t)
    if (not opened and not stray) or (start, end) in _seen:
        return [(start, end)]
    _seen |= {(start, end)}
    if opened and opened[0] > 0 and t[opened[0] - 1].isspace():
        i = start + opened[0]
        left = (start, start + len(t[:opened[0]].rstrip()))
        close = _closing(text, i, end)
        inside = bracket_repair(text, i + 1, close) if close > i + 1 else []
        return [left] + inside
    if opened and end < len(text) and not text[end].isspace() and text[end] not in _TRAILING:
        stop = end
        while stop < len(text) and not text[stop].isspace():
            stop += 1
        while stop > end and text[stop - 1] in _TRAILING:
            stop -= 1
        return bracket_repair(text, start, stop, _seen)
    if stray and stray[-1] == len(t) - 1:
        cut = start + len(t[:-1].rstrip())
        return bracket_repair(text, start, cut, _seen) if cut > start else []
    return [(start, end)]


def _closing(text: str, i: int, end: int) -> int:
    """Where the bracket opened at ``text[i]`` closes, if that is at or after ``end`` with no space
    between; else ``end``."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c.isspace() and j >= end:
            return end
        depth += c in "(["
        depth -= c in _PAIRS
        if depth == 0:
            return j if j >= end else end
    return end


def _gold_spans(doc: Document, categories: Sequence[str]) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, label) of the document's mentions in ``categories``, longest first."""
    return _disjoint({(m.start, m.end, LABELS[c]) for m in doc.mentions
                      if (c := mention_category(m.type)) in categories and m.end > m.start})


def _surface_matcher(nlp, docs: Sequence[Document], categories: Sequence[str]):
    """A PhraseMatcher per category over every gold surface form of it (upper-case forms as written)."""
    from spacy.matcher import PhraseMatcher

    forms: dict[str, set[str]] = {c: set() for c in categories}
    for d in docs:
        for m in d.mentions:
            c = mention_category(m.type)
            if c in forms and len(m.text) > 2:
                forms[c].add(m.text)
    lower, exact = PhraseMatcher(nlp.vocab, attr="LOWER"), PhraseMatcher(nlp.vocab, attr="ORTH")
    for c, texts in forms.items():
        upper = [t for t in texts if t.isupper()]
        rest = [t for t in texts if not t.isupper()]
        exact.add(c, list(nlp.tokenizer.pipe(upper)))
        lower.add(c, list(nlp.tokenizer.pipe(rest)))
    return lower, exact


def training_examples(nlp, docs: Sequence[Document], categories: Sequence[str],
                      forms_from: Sequence[Document] | None = None,
                      dictionary: DictionaryFlags | None = None) -> tuple[list, dict]:
    """spaCy ``Example``s of ``docs`` (module docstring: unaligned and unannotated spans are missing)
    and counts: documents, mentions, unaligned mentions, tokens marked missing. The known surface
    forms are those of ``forms_from`` (default: ``docs``). With ``dictionary`` the predicted docs
    carry its flags, as :meth:`Recognizer.recognize`'s do."""
    from spacy.training import Example, offsets_to_biluo_tags

    lower, exact = _surface_matcher(nlp, docs if forms_from is None else forms_from, categories)
    out, counts = [], {"documents": 0, "mentions": 0, "unaligned": 0, "missing_tokens": 0}
    for d in docs:
        spans = _gold_spans(d, categories)
        sdoc = nlp.make_doc(d.text)
        if dictionary is not None:
            dictionary.flag(sdoc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)          # W030: unaligned spans become "-"
            tags = offsets_to_biluo_tags(sdoc, spans)
        counts["unaligned"] += sum(sdoc.char_span(a, b) is None for a, b, _ in spans)
        present = {mention_category(m.type) for m in d.mentions}
        absent = {c for c in categories if c not in present}
        for match_id, a, b in [*lower(sdoc), *exact(sdoc)]:
            if nlp.vocab.strings[match_id] in absent:
                for i in range(a, b):
                    if tags[i] == "O":
                        tags[i] = "-"
                        counts["missing_tokens"] += 1
        out.append(Example.from_dict(sdoc, {"entities": tags}))
        counts["documents"] += 1
        counts["mentions"] += len(spans)
    return out, counts


def _check_training_docs(docs: Sequence[Document], categories: Sequence[str], where: str) -> None:
    if not docs:
        raise RecognizerError(f"{where}: no training documents with entity mentions")
    seen: dict[str, int] = {}
    for d in docs:
        for m in d.mentions:
            seen[m.type] = seen.get(m.type, 0) + 1
    if not any(mention_category(t) in categories for t in seen):
        raise RecognizerError(f"{where}: none of the mention types {sorted(seen)} maps to "
                              f"{list(categories)} (graphmert.kg.schema.MENTION_TYPE_CATEGORIES)")


def selection_hash(doc_id: str) -> float:
    """u_sel(doc_id) ∈ [0, 1): the selection slice's hash, SHA-256 of the id salted with this module's
    salt (:data:`SELECTION_VERSION`), so it is independent of the unsalted hash that slices
    ``extract.document_fraction`` and the training split (:func:`graphmert.corpus.fraction.document_fraction`)."""
    return document_fraction(_SELECTION_SALT + doc_id)


def selection_split(docs: Sequence[Document], fraction: float) -> tuple[list[Document], list[Document]]:
    """(training, selection) documents: the selection slice is u_sel(id) < fraction (:func:`selection_hash`)."""
    u = {d.id: selection_hash(d.id) for d in docs}
    train = [d for d in docs if u[d.id] >= fraction]
    pick = [d for d in docs if u[d.id] < fraction]
    return train, pick


def _scores(nlp, examples: list) -> dict:
    """Strict-span precision/recall/F1 of ``nlp`` on ``examples`` (spaCy's Scorer), overall and per label."""
    s = nlp.evaluate(examples)
    per = {k: {m: round(float(v[m]), 4) for m in ("p", "r", "f")} for k, v in (s.get("ents_per_type") or {}).items()}
    return {"p": round(float(s["ents_p"] or 0), 4), "r": round(float(s["ents_r"] or 0), 4),
            "f": round(float(s["ents_f"] or 0), 4), "per_label": per}


def recognizer_groups(categories: Sequence[str], separate: Sequence[str]) -> list[list[str]]:
    """The categories each recognizer of a :class:`Recognizer` learns: one for those not in
    ``separate``, then one for each category of ``separate``, in ``categories`` order."""
    odd = [c for c in separate if c not in categories]
    if odd:
        raise RecognizerError(f"ner.separate_categories: {odd} are not in ner.categories {list(categories)}")
    joint = [c for c in categories if c not in separate]
    return ([joint] if joint else []) + [[c] for c in categories if c in separate]


def group_documents(docs: Sequence[Document], group: Sequence[str]) -> list[Document]:
    """The documents of ``docs`` that annotate at least one category of ``group``: its part's
    training (and selection) documents."""
    return [d for d in docs if any(mention_category(m.type) in group for m in d.mentions)]


@dataclass(kw_only=True)
class PartPlan:
    """One model of a recognizer, before training: the categories it finds, the documents that
    annotate them (its training documents and its selection slice) and the documents lent to it
    (``ner.part_sources``: training only), the word vectors its tok2vec reads (``ner.vectors``) and the
    dictionary flags its tokens carry (``ner.dictionary_flags``)."""

    categories: list[str]
    docs: list[Document]
    more: list[Document]
    vectors: WordVectors | None = None
    dictionary: DictionaryFlags | None = None

    @property
    def size(self) -> int:
        """Documents read per epoch, selection slice included (its share of the work)."""
        return len(self.docs) + len(self.more)


def plan_parts(docs: Sequence[Document], cfg, *, where: str = "ner.paths",
               extra: Mapping[str, Sequence[Document]] | None = None,
               texts: Sequence[str] = ()) -> list[PartPlan]:
    """The models of a recognizer for ``docs`` (``cfg``: :class:`graphmert.config.NERConfig`), one
    per group of :func:`recognizer_groups`, each with the documents that annotate at least one of
    its categories. ``ner.separate_categories`` is for partial annotation: BC5CDR and NCBI disease
    annotate no genes, so a gene recognizer of its own learns only from documents whose genes are
    annotated, where "not a gene" is a real label. ``extra`` (category → documents:
    ``ner.part_sources``, :func:`graphmert.ner.corpus.part_documents`) adds training documents to the
    part that finds the category only: never to another part or to a selection slice. With
    ``ner.vectors``, word vectors are learnt here from ``texts`` (every text the recognizer may
    read, annotated or not), once for all parts; with ``ner.dictionary_flags``, the flags of
    ``ner.vocabularies`` (:mod:`graphmert.ner.dictionary`) are built here too. Every input error (no
    documents, no category that maps, a part too small for its selection slice, no text for the
    vectors, no vocabulary for the flags) is raised here, before any model trains."""
    _check_training_docs(docs, cfg.categories, where)
    groups = recognizer_groups(cfg.categories, cfg.separate_categories)
    mine = [group_documents(docs, g) for g in groups]
    more = part_extras(groups, mine, extra or {}, cfg.categories)
    plans = [PartPlan(categories=g, docs=m, more=x) for g, m, x in zip(groups, mine, more)]
    for plan in plans:
        _part_split(plan, cfg, where)
    if cfg.vectors:
        vectors = _word_vectors(texts, cfg, where)
        plans = [replace(p, vectors=vectors) for p in plans]
    if cfg.dictionary_flags:
        dictionary = _dictionary(cfg)
        plans = [replace(p, dictionary=dictionary) for p in plans]
    return plans


def _dictionary(cfg) -> DictionaryFlags:
    """:func:`graphmert.ner.dictionary.build_dictionary_flags` of ``ner.vocabularies``."""
    start = time.monotonic()
    dictionary = build_dictionary_flags(cfg.vocabularies, cfg.dictionary_flags)
    if dictionary is None:
        raise RecognizerError(f"ner.dictionary_flags: no ner.vocabularies source gives the flag sets "
                              f"{cfg.dictionary_flags}")
    log.info("ner: dictionary flags from ner.vocabularies, %s (%.0f s)", dictionary.stats(),
             time.monotonic() - start)
    return dictionary


def _word_vectors(texts: Sequence[str], cfg, where: str) -> WordVectors:
    """:func:`graphmert.ner.vectors.train_word_vectors` on ``texts`` with the recognizer's tokenizer."""
    try:
        vectors = train_word_vectors(texts, recognizer_nlp([], cfg).tokenizer, dim=cfg.vectors, seed=cfg.seed)
    except ValueError as e:
        raise RecognizerError(f"{where}: ner.vectors={cfg.vectors} needs text to learn word vectors from: "
                              f"{e}") from None
    log.info("ner: %d word vectors of %d dimensions from %d tokens (%.0f s)", len(vectors.words),
             vectors.dim, vectors.tokens, vectors.seconds)
    return vectors


def train_recognizer(docs: Sequence[Document], cfg, *, where: str = "ner.paths",
                     on_epoch: Callable[[dict], None] | None = None,
                     extra: Mapping[str, Sequence[Document]] | None = None,
                     texts: Sequence[str] = (),
                     probe: Callable[[object, object], dict] | None = None) -> tuple["Recognizer", dict]:
    """Train the recognizer on ``docs`` (``cfg``: :class:`graphmert.config.NERConfig`) in this
    process: the models of :func:`plan_parts` one after another, the one with the fewest documents
    first, on one wall-clock cap of ``cfg.max_minutes``: a model stops before an epoch that would end
    past it, and the later ones get what the earlier ones left (``pipelines.stages.ner`` trains them at
    once instead, one per worker, with :func:`train_part` on the same budget).
    ``on_epoch`` receives each epoch's record (progress display). ``texts``: what ``ner.vectors``
    learns from (:func:`plan_parts`; the budget counts that time too). ``probe``: :func:`train_part`'s,
    for every model. The report is :func:`assemble_recognizer`'s.
    """
    start = time.monotonic()
    deadline = start + 60 * cfg.max_minutes
    plans = plan_parts(docs, cfg, where=where, extra=extra, texts=texts)
    trained: dict[int, tuple[object, dict]] = {}
    for k in sorted(range(len(plans)), key=lambda k: plans[k].size):            # smallest first
        trained[k] = train_part(plans[k], cfg, where=where, deadline=deadline, on_epoch=on_epoch, probe=probe)
    return assemble_recognizer(plans, [trained[k] for k in range(len(plans))], docs, cfg,
                               minutes=(time.monotonic() - start) / 60)


def assemble_recognizer(plans: Sequence[PartPlan], trained: Sequence[tuple[object, dict]],
                        docs: Sequence[Document], cfg, *, minutes: float) -> tuple["Recognizer", dict]:
    """The recognizer of the trained models (``trained[k]``: :func:`train_part`'s pipeline and report
    for ``plans[k]``) and its report: each part's report under ``parts``, and, under ``selection``,
    the whole recognizer's strict-span scores on the selection slice of ``docs``, each category
    scored on the selection documents that annotate it; ``minutes``: the training's wall time. A model
    the budget stopped before ``cfg.epochs``, or one that found nothing of its selection slice, is
    logged as a warning."""
    recognizer = Recognizer([RecognizerPart(nlp=nlp, categories=p.categories)
                             for p, (nlp, _) in zip(plans, trained)],
                            dictionary=plans[0].dictionary if plans else None)
    for p, (_, r) in zip(plans, trained):
        if not r.get("selection", {}).get("f", 1) and r.get("selection_documents"):
            log.warning("ner: the %s model found none of its selection slice's mentions in %d epochs (F1 0): "
                        "it may recognise nothing; give it more annotated documents (ner.paths) or more "
                        "epochs (ner.epochs)", " + ".join(p.categories), r["epochs_run"])
        if r.get("stopped") == "budget":            # a model reused from an older run has no "stopped"
            log.warning("ner: the %s model stopped at the ner.max_minutes budget (%g min) after %d of %d "
                        "epochs (best: epoch %d); slower cores train fewer epochs and a weaker model: "
                        "raise ner.max_minutes to train them all", " + ".join(p.categories),
                        cfg.max_minutes, r["epochs_run"], cfg.epochs, r["best_epoch"])
    train_docs, pick_docs = selection_split(docs, cfg.selection_fraction)
    report = {"documents": len(train_docs), "selection_documents": len(pick_docs),
              "selection_version": SELECTION_VERSION,
              "selection": selection_scores(recognizer, pick_docs, cfg.categories),
              "minutes": round(minutes, 2),
              "parts": [{"categories": p.categories, **r} for p, (_, r) in zip(plans, trained)]}
    if plans and plans[0].vectors is not None:
        report["vectors"] = plans[0].vectors.summary()
    if recognizer.dictionary is not None:
        report["dictionary"] = recognizer.dictionary.stats()
    return recognizer, report


def part_extras(groups: Sequence[Sequence[str]], mine: Sequence[Sequence[Document]],
                extra: Mapping[str, Sequence[Document]], categories: Sequence[str]) -> list[list[Document]]:
    """Per part (``groups[k]``, its documents ``mine[k]``): the documents of ``extra`` (category →
    documents) for its categories that it does not hold already, each once. A category lent no
    document (a misspelt source, or one without mentions of it) is an error, not a silent no-op."""
    unknown = sorted(set(extra) - set(categories))
    if unknown:
        raise RecognizerError(f"ner.part_sources: {unknown} are not in ner.categories {list(categories)}")
    empty = sorted(c for c, docs in extra.items() if not docs)
    if empty:
        raise RecognizerError(f"ner.part_sources: no document of the sources given for {empty} has a "
                              f"mention of that category (check the names against the corpus's "
                              f"'source' fields)")
    out = []
    for group, have in zip(groups, mine):
        seen = {d.id for d in have}
        out.append([d for c in group for d in extra.get(c, ()) if d.id not in seen and not seen.add(d.id)])
    return out


def _part_split(plan: PartPlan, cfg, where: str) -> tuple[list[Document], list[Document]]:
    """(training, selection) documents of ``plan``'s own documents; too few for both is an error."""
    train_docs, pick_docs = selection_split(plan.docs, cfg.selection_fraction)
    if not train_docs or not pick_docs:
        raise RecognizerError(f"{where}: {len(plan.docs)} documents annotating {plan.categories} are too few to "
                              f"hold out ner.selection_fraction={cfg.selection_fraction} of them for selection "
                              f"(the documents whose salted id hash is below the fraction): annotate more "
                              f"documents of these categories or raise ner.selection_fraction")
    return train_docs, pick_docs


def train_part(plan: PartPlan, cfg, *, where: str = "ner.paths", deadline: float,
               on_epoch: Callable[[dict], None] | None = None,
               probe: Callable[[object, object], dict] | None = None) -> tuple[object, dict]:
    """One pipeline for ``plan.categories`` on ``plan.docs``, and on ``plan.more`` (training only:
    never in the selection slice). The random seed is ``cfg.seed`` at the start of every part, so a
    part trains the same wherever and after whatever it runs. Each epoch shuffles the training
    documents, updates in batches of ``cfg.batch_size`` documents and scores the selection slice;
    the best epoch's weights are kept. With ``cfg.average_weights`` the weights scored and kept are
    the optimizer's moving average of every update's (thinc's ``use_averages``: the weight ``w_t`` of
    update ``t`` enters ``w̄ ← w̄ + (1 − d_t)(w_t − w̄)``, from ``w̄ = 0``, with
    ``d_t = min((1 + t) / (10 + t), 0.9999)``), which moves less from one epoch to the next than
    the last update's. Training stops after ``cfg.epochs``, after ``cfg.patience`` epochs without a
    better F1 once it has found anything (:func:`epochs_without_gain`; until then the latest epoch is
    the one kept), or when another epoch as long as the last would end after ``deadline``
    (``time.monotonic()``; the first epoch always runs); the report's ``stopped`` says which
    (``"epochs"``, ``"patience"``, ``"budget"``). The budget is a safety cap (``ner.max_minutes``)
    that a model should not reach: on slower cores it stops a model earlier, and it is a weaker one,
    where epochs and patience give the same model however busy or slow the machine is.

    ``on_epoch`` receives each epoch's record once it is scored (progress display). ``probe``, when
    given, is called with ``(nlp, optimizer)`` after each epoch's updates, before the selection
    slice scores it; the dict it returns joins the epoch's record in the report's ``history`` (a
    benchmark's extra scores: docs/experiments/recognizer-training.md). It must leave the weights as
    it found them.

    It trains with one BLAS thread, as a Dask worker of ``--scheduler local`` does
    (``OPENBLAS_NUM_THREADS=1``): the loop keeps one core busy either way, and two models training
    at once on two cores then do not contend for them. spaCy's parser also draws from Python's
    process-wide ``random``: run it where no other thread does (``pipelines.stages.ner`` gives each
    model a process of its own)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _train_part(plan, cfg, where, deadline, on_epoch, probe)


def _train_part(plan: PartPlan, cfg, where: str, deadline: float,
                on_epoch: Callable[[dict], None] | None,
                probe: Callable[[object, object], dict] | None) -> tuple[object, dict]:
    import spacy
    from spacy.util import minibatch

    train_docs, pick_docs = _part_split(plan, cfg, where)
    spacy.util.fix_random_seed(cfg.seed)
    nlp = recognizer_nlp(plan.categories, cfg)
    if plan.vectors is not None:
        use_vectors(nlp, plan.vectors)
    train_docs = [*train_docs, *plan.more]
    train, counts = training_examples(nlp, train_docs, plan.categories, dictionary=plan.dictionary)
    pick, _ = training_examples(nlp, pick_docs, plan.categories, forms_from=train_docs,
                                dictionary=plan.dictionary)
    nlp.config["training"]["optimizer"]["use_averages"] = cfg.average_weights
    optimizer = nlp.initialize(lambda: train)
    rng, start = random.Random(cfg.seed), time.monotonic()
    best, history, stopped = None, [], "epochs"
    for epoch in range(1, cfg.epochs + 1):
        began = time.monotonic()
        rng.shuffle(train)
        losses: dict[str, float] = {}
        for batch in minibatch(train, size=cfg.batch_size):
            nlp.update(batch, drop=cfg.dropout, sgd=optimizer, losses=losses)
        extra = probe(nlp, optimizer) if probe is not None else {}
        with nlp.use_params(optimizer.averages or {}):      # the moving average, when kept
            rec = {"categories": plan.categories, "epoch": epoch, "loss": round(losses.get("ner", 0.0), 2),
                   **_scores(nlp, pick), **extra, "minutes": round((time.monotonic() - start) / 60, 2)}
            history.append(rec)
            if not epochs_without_gain(history):        # a better F1, or none found yet: this epoch's
                best = (rec, nlp.to_bytes())
        if on_epoch is not None:
            on_epoch(rec)
        now = time.monotonic()
        if epoch < cfg.epochs:              # "budget": another epoch as long as this one would end past it
            stopped = ("patience" if epochs_without_gain(history) >= cfg.patience else
                       "budget" if now + (now - began) > deadline else "epochs")
        if stopped != "epochs":
            break
    nlp.from_bytes(best[1])
    return nlp, {**counts, "part_source_documents": len(plan.more), "selection_documents": len(pick_docs),
                 "epochs_run": len(history), "stopped": stopped,
                 "best_epoch": best[0]["epoch"],
                 "selection": {k: best[0][k] for k in ("p", "r", "f", "per_label")},
                 "history": history, "minutes": history[-1]["minutes"]}


def epochs_without_gain(history: Sequence[dict]) -> int:
    """The epochs scored since the first of the best selection F1 (``history``: :func:`train_part`'s
    epoch records, in order), which ``ner.patience`` bounds; 0 while no epoch has found anything
    (F1 0). An epoch at 0 is the one training keeps (the best, or the latest while nothing is found).
    The averaged weights start from zero, and on a small corpus, or with the LSTM, they find
    nothing for several epochs (the demo's 47 documents: 9): patience counted from the first epoch
    would stop such a model before it learns, and the recognizer would find no mention."""
    scores = [h["f"] for h in history]
    best = max(scores, default=0.0)
    return len(scores) - 1 - scores.index(best) if best > 0 else 0


def pipeline_from_bytes(categories: Sequence[str], cfg, data: bytes, vectors: WordVectors | None = None):
    """The pipeline :func:`train_part` trained for ``categories``, from its ``to_bytes()`` (what a
    worker process sends back; ``cfg`` must be the one it trained with, ``vectors`` its plan's)."""
    nlp = recognizer_nlp(categories, cfg)
    if vectors is not None:
        use_vectors(nlp, vectors)           # the tok2vec's projection is sized from the table
    nlp.initialize()                        # sizes the layers for the labels, so the trained weights fit
    return nlp.from_bytes(data)


def selection_scores(recognizer: "Recognizer", docs: Sequence[Document], categories: Sequence[str]) -> dict:
    """Micro and per-category strict-span P/R/F1 of ``recognizer`` (anything with a ``recognize``
    method: a :class:`Recognizer` or one part) on annotated ``docs``, their mentions hidden from it;
    what training selects an epoch by. A category is scored only on the documents with a mention of
    it (elsewhere it may be unannotated, not absent), so its predictions elsewhere are left out.

    Returns ``{"p", "r", "f", "per_label": {label: {"p", "r", "f"}}}``, rounded to 4 places.
    """
    from graphmert.eval.entities import MICRO, recognition_scores

    kept = []
    for f, d in zip(recognizer.recognize([replace(d, mentions=[]) for d in docs]), docs):
        annotated = {mention_category(m.type) for m in d.mentions}
        kept.append(replace(f, mentions=[m for m in f.mentions if mention_category(m.type) in annotated]))
    s = recognition_scores(kept, docs, categories)

    def row(x: dict) -> dict:
        return {"p": round(x["precision"], 4), "r": round(x["recall"], 4), "f": round(x["f1"], 4)}

    return {**row(s[MICRO]), "per_label": {LABELS[c]: row(s[c]) for c in categories}}


@dataclass(kw_only=True)
class RecognizerPart:
    """One trained spaCy pipeline and the categories it finds."""

    nlp: object
    categories: list[str]


@dataclass
class Recognizer:
    """A trained recognizer: finds the mentions of documents that have none.

    Its parts (:func:`recognizer_groups`) each find their own categories; where two parts' mentions
    overlap, the longer one is kept (ties: the earlier part, then the earlier start). With
    ``dictionary`` (``ner.dictionary_flags``) every part reads its flags."""

    parts: list[RecognizerPart]
    dictionary: DictionaryFlags | None = None

    @property
    def categories(self) -> list[str]:
        return [c for p in self.parts for c in p.categories]

    def recognize(self, docs: Iterable[Document], batch_size: int = 32,
                  propagate: bool = False) -> Iterator[Document]:
        """The documents in order; those without mentions get the recognised ones (no ids yet).
        With ``propagate`` (``extract.propagate_mentions``), each document's other occurrences of a
        recognised text become mentions too (:func:`propagate_mentions`)."""
        docs = list(docs)
        todo = [d for d in docs if not d.mentions]
        found: dict[int, list[tuple[int, int, int, str, str]]] = {id(d): [] for d in todo}
        tags = self._tags(todo)
        for k, part in enumerate(self.parts):
            for d, sdoc in zip(todo, part.nlp.pipe(self._inputs(part.nlp, todo, tags), batch_size=batch_size)):
                with noting(f"document {d.id}"):
                    found[id(d)] += [(a, b, k, d.text[a:b], e.label_) for e in sdoc.ents
                                     for a, b in bracket_repair(d.text, e.start_char, e.end_char)]
        for d in docs:
            if id(d) in found:
                kept = _disjoint(found[id(d)], tiebreak=lambda s: (s[2],))      # ties: the earlier part
                if propagate:
                    kept = propagate_mentions(d.text, kept)
                d = replace(d, mentions=[Mention(start=a, end=b, text=t, type=lab) for a, b, _, t, lab in kept])
            yield d

    def _tags(self, docs: Sequence[Document]) -> list[list[str]] | None:
        """With :attr:`dictionary`, each document's token flags, computed once for every part (the
        parts share one tokenizer, :func:`recognizer_nlp`); else None."""
        if self.dictionary is None:
            return None
        make_doc = self.parts[0].nlp.make_doc
        return [self.dictionary.tags(make_doc(d.text)) for d in docs]

    def _inputs(self, nlp, docs: Sequence[Document], tags: list[list[str]] | None) -> Iterator:
        """What ``nlp.pipe`` reads: the texts, or the spaCy docs carrying ``tags`` (:meth:`_tags`)."""
        if tags is None:
            return (d.text for d in docs)
        return (self.dictionary.flag(nlp.make_doc(d.text), t) for d, t in zip(docs, tags))

    def save(self, path: str | Path, report: dict | None = None) -> None:
        """Write the spaCy models, the dictionary flags and the metadata under ``path`` (atomically:
        all or nothing)."""
        import spacy

        with atomic_dir(path) as tmp:
            parts = []
            for k, part in enumerate(self.parts):
                part.nlp.to_disk(tmp / f"model-{k}")
                parts.append({"dir": f"model-{k}", "categories": part.categories})
            if self.dictionary is not None:
                self.dictionary.save(tmp / DICTIONARY_FILE)
            meta = {"tokenizer_version": TOKENIZER_VERSION, "spacy_version": spacy.__version__,
                    "selection_version": SELECTION_VERSION, "parts": parts, "report": report or {},
                    "dictionary": self.dictionary is not None, "files": file_sizes(tmp)}
            (tmp / _META).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "Recognizer":
        """Load a saved recognizer; refuses one saved with another tokenization or spaCy major version."""
        import spacy

        path = Path(path)
        meta = _read_meta(path)
        advice = "; retrain it (`graphmert ner`)"
        check_file_sizes(path, meta.get("files") or {}, what="the recognizer", error=RecognizerError,
                         advice=advice)
        parts = meta.get("parts") or [{"dir": "model", "categories": meta["categories"]}]  # one-part saves
        loaded = []
        for p in parts:
            try:
                nlp = spacy.load(path / p["dir"])
            except Exception as e:  # noqa: BLE001 - spaCy, thinc and srsly raise many types here
                msg = " ".join(str(e).split())[:300]
                raise RecognizerError(f"{path / p['dir']}: cannot load the spaCy model "
                                      f"({type(e).__name__}: {msg}){advice}") from None
            loaded.append(RecognizerPart(nlp=nlp, categories=list(p["categories"])))
        dictionary = None
        if meta.get("dictionary"):
            try:
                dictionary = DictionaryFlags.load(path / DICTIONARY_FILE)
            except ValueError as e:
                raise RecognizerError(f"{e}{advice}") from None
        return cls(loaded, dictionary=dictionary)


def _read_meta(path: Path) -> dict:
    """The metadata of a saved recognizer, checked against this code's tokenizer and spaCy."""
    import spacy

    meta_path = path / _META
    if not meta_path.is_file():
        raise RecognizerError(f"{path}: not a saved recognizer (no {_META}); train one with "
                              f"`graphmert ner`")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RecognizerError(f"{meta_path}: unreadable recognizer metadata ({e})") from None
    if meta.get("tokenizer_version") != TOKENIZER_VERSION:
        raise RecognizerError(f"{path}: saved with recognizer tokenizer version "
                              f"{meta.get('tokenizer_version')}, this code tokenizes as version "
                              f"{TOKENIZER_VERSION}; retrain it (`graphmert ner`)")
    if str(meta.get("spacy_version", "")).split(".")[0] != spacy.__version__.split(".")[0]:
        raise RecognizerError(f"{path}: saved by spaCy {meta.get('spacy_version')}, this is spaCy "
                              f"{spacy.__version__}; retrain it (`graphmert ner`)")
    return meta
