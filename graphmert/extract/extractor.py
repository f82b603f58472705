"""Knowledge extraction with a trained GraphMERT: documents + chunks → triples with provenance.

    ex = Extractor(model, tokenizer, kg, schema, relation_map, cfg.extract, num_roots=R,
                   num_leaves=K, relations=trained_relations, checkpoint_id=..., run_id=...)
    ex.fit_similarity(all_chunk_texts)           # the β filter's TF-IDF, fitted once per corpus
    triples, report = ex.extract(docs, chunks)   # per-chunk triples that passed the filters
    merged = merge_triples(triples)

:meth:`Extractor.extract` runs DESIGN §8 as named steps over one query plan (:class:`_QueryPlan`).
A *question* is a (chunk, head, relation); a *query* asks it for tails of one token length t::

    plan        per chunk: heads (:mod:`~graphmert.extract.heads`, plus the helper LLM's), candidate
                tails (:mod:`~graphmert.extract.tails`) and each head's candidate relations; one
                Query per (head, relation, length t) that an admissible candidate needs
    answer      the model answers every query (:mod:`~graphmert.extract.predict`); each candidate of
                length t gets s(c) = mean_k log p_q(k, c_k), and a question keeps each candidate's
                best s over its queries
    llm_tails   (tail source ``llm`` only) the helper LLM combines the top-k tokens of each
                question's K-slot query into phrases, answered and scored like any candidate
    select      per question, the best ``extract.tails_per_query`` candidates that are not the head
                itself, lie in the tail scope (mention tails: the head's sentence, that sentence or
                the title, the chunk or the document, per category pair:
                :mod:`~graphmert.extract.scope`) and fit the relation's range;
                ``extract.ranking=pmi`` ranks by s minus the tail's mean s over the chunk's heads.
                Each becomes a Triple with its Evidence
    filters     :func:`~graphmert.extract.filters.apply_filters`

Everything is deterministic: candidates and queries are built in sorted order, ties broken by key,
and the model runs in eval mode; the same checkpoint and config give the same triples.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from graphmert.config import ExtractConfig
from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.corpus.tokenizer import special_ids
from graphmert.extract.filters import Pending, apply_filters
from graphmert.extract.heads import Head, candidate_relations, evidence_passage, find_heads
from graphmert.extract.scope import Ranges, TailScopes, within
from graphmert.extract.predict import LeafPredictor, Query
from graphmert.extract.tails import (FormTokenizer, LexiconIndex, TailCandidate, best_form_scores,
                                     mention_candidates, name_key, paper_tails, phrase_candidates,
                                     score_forms)
from graphmert.extract.triples import Evidence, Triple, is_stated
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.lexicon import Lexicon, LexiconMatcher
from graphmert.kg.schema import RelationSchema
from graphmert.kg.scoring import SCORERS
from graphmert.model.graphmert import GraphMERT

__all__ = ["Extractor", "ExtractionError", "TAIL_SOURCE_NAMES"]

TAIL_SOURCE_NAMES = ("mention", "lexicon", "phrase", "llm")

#: (chunk index, head index within the chunk, relation): one question
Question = tuple[int, int, str]
#: a question's candidate tails so far: candidate key → (best score s, candidate)
Scored = dict[str, tuple[float, TailCandidate]]


class ExtractionError(KGError):
    """Extraction cannot run with these inputs (relations unknown to the model, bad sources)."""


def _stop_words() -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return set(STOP_WORDS)


# ---------------------------------------------------------------------- the plan and its answers
@dataclass(kw_only=True)
class _FormTable:
    """The candidate tails of one chunk, and their forms by length: t → (forms [C_t, t] token ids,
    candidate index of each row)."""

    candidates: list[TailCandidate]
    by_length: dict[int, tuple[np.ndarray, list[int]]]


@dataclass(kw_only=True)
class _ChunkPlan:
    """One chunk's part of the plan: its heads and candidate tails."""

    chunk: Chunk
    doc: Document
    heads: list[Head]
    table: _FormTable                    # the candidate tails, by form length


@dataclass(frozen=True, kw_only=True)
class _Ask:
    """One model query and the question it answers."""

    question: Question
    query: Query


@dataclass(kw_only=True)
class _QueryPlan:
    """What one :meth:`Extractor.extract` call asks the model (step ``plan``)."""

    chunks: list[_ChunkPlan]             # one per input chunk, same order
    asks: list[_Ask]                     # in plan order: chunk, head, relation, length

    def head(self, q: Question) -> Head:
        return self.chunks[q[0]].heads[q[1]]


@dataclass(kw_only=True)
class _Answers:
    """The model's answers to a plan (steps ``answer`` and ``llm_tails``)."""

    tails: dict[Question, Scored] = field(default_factory=dict)
    top_tokens: dict[Question, list[list[str]]] = field(default_factory=dict)  # [K][k] per question

    def merged(self, more: "_Answers") -> "_Answers":
        """These answers with ``more``'s: a candidate keeps its better score (ties: the first)."""
        tails = {q: dict(s) for q, s in self.tails.items()}
        for q, scored in more.tails.items():
            _keep_best(tails.setdefault(q, {}), scored.values())
        return _Answers(tails=tails, top_tokens={**self.top_tokens, **more.top_tokens})


def _keep_best(scored: Scored, found: Iterable[tuple[float, TailCandidate]]) -> None:
    """Fold ``found`` (score, candidate) into ``scored``: the best score per key, the first of ties."""
    for score, cand in found:
        old = scored.get(cand.key)
        if old is None or score > old[0]:
            scored[cand.key] = (score, cand)


class Extractor:
    """Turns documents and their chunks into filtered per-chunk triples (module docstring)."""

    def __init__(self, model: GraphMERT, tokenizer, kg: SeedKG, schema: RelationSchema,
                 relation_map: dict[str, int], cfg: ExtractConfig, num_roots: int, num_leaves: int,
                 relations: Sequence[str] | None = None, checkpoint_id: str = "", run_id: str = "",
                 llm=None) -> None:
        bad = [s for s in cfg.tail_sources if s not in TAIL_SOURCE_NAMES]
        if bad:
            raise ExtractionError(f"extract.tail_sources: unknown source(s) {bad}; choose from "
                                  f"{list(TAIL_SOURCE_NAMES)}")
        if "llm" in cfg.tail_sources and llm is None:
            raise ExtractionError("extract.tail_sources: 'llm' needs extract.llm_url")
        allowed = list(cfg.relations) if cfg.relations else list(relations or relation_map)
        unknown = [r for r in allowed if r not in relation_map]
        if unknown:
            raise ExtractionError(f"extract.relations: {unknown} are not relations of the model "
                                  f"checkpoint (it knows {sorted(relation_map)})")
        self.scopes = TailScopes(cfg.tail_scope, cfg.tail_scope_by_category).check(schema)
        self.cfg, self.kg, self.schema, self.tok = cfg, kg, schema, tokenizer
        self.relation_map, self.relations = relation_map, sorted(allowed)
        self.K = num_leaves
        self.sp = special_ids(tokenizer)
        self.predictor = LeafPredictor(model, num_roots, num_leaves, self.sp["pad"], self.sp["mask"],
                                       cfg.batch_size, cfg.pack_queries, cfg.leaves_per_forward)
        self.forms = FormTokenizer(tokenizer, num_leaves, self.sp["unk"])
        self.stop = _stop_words()
        self.checkpoint_id, self.run_id, self.llm = checkpoint_id, run_id, llm
        self._names: Lexicon | None = None
        self._matcher: LexiconMatcher | None = None
        self._lexicon: LexiconIndex | None = None
        self._scorer = None
        self._scorer_rows: dict[str, int] = {}

    # ------------------------------------------------------------------ set-up
    @property
    def names(self) -> Lexicon:
        """Normalised KG name → node ids (links token and LLM tails/heads to the KG)."""
        if self._names is None:
            self._names = Lexicon.from_kg(self.kg)
        return self._names

    @property
    def matcher(self) -> LexiconMatcher:
        if self._matcher is None:
            self._matcher = LexiconMatcher(self.names)
        return self._matcher

    @property
    def lexicon(self) -> LexiconIndex:
        if self._lexicon is None:
            self._lexicon = LexiconIndex(self.kg, self.forms)
        return self._lexicon

    def fit_similarity(self, chunks: Sequence[Chunk]) -> None:
        """Fit the β filter's scorer on the texts of every chunk extraction will see."""
        if self.cfg.beta <= 0:
            return
        scorer_cls = SCORERS.get(self.cfg.similarity_scorer)
        self.set_similarity(scorer_cls().fit([c.text or " " for c in chunks]),
                            {c.id: i for i, c in enumerate(chunks)})

    def set_similarity(self, scorer, rows: dict[str, int]) -> None:
        """Use a β scorer fitted elsewhere (e.g. once over a whole corpus, shared by workers);
        ``rows`` maps chunk id → the scorer's row of that chunk."""
        self._scorer, self._scorer_rows = scorer, dict(rows)

    # ------------------------------------------------------------------ extraction
    def extract(self, docs: Sequence[Document], chunks: Sequence[Chunk],
                progress: Callable[[int], None] | None = None) -> tuple[list[Triple], dict]:
        """Per-chunk triples of ``chunks`` (their documents in ``docs``) that pass the filters."""
        by_id = {d.id: d for d in docs}
        missing = sorted({c.doc_id for c in chunks} - set(by_id))
        if missing:
            raise ExtractionError(f"chunks refer to documents that were not given: {missing[:5]}")
        if self.cfg.beta > 0 and self._scorer is None:
            self.fit_similarity(chunks)
        stats: Counter = Counter()
        forwards, graphs = self.predictor.forwards, self.predictor.graphs   # this call's, not the life's
        plan = self._plan(chunks, by_id, stats)
        answers = self._answer(plan, plan.asks, {ci: c.table for ci, c in enumerate(plan.chunks)},
                               progress, keep_tokens="llm" in self.cfg.tail_sources)
        if "llm" in self.cfg.tail_sources:
            answers = self._llm_tails(plan, answers, stats)
        pending, out_of_range = self._select(plan, answers)
        kept, rep = apply_filters(pending, self.cfg, self.schema, self._scorer)
        rep.dropped["range"] += out_of_range
        stats["forwards"] = self.predictor.forwards - forwards
        stats["graphs"] = self.predictor.graphs - graphs
        return kept, {"counts": dict(sorted(stats.items())), "filters": rep.to_dict()}

    # ------------------------------------------------------------------ step: plan
    def _plan(self, chunks: Sequence[Chunk], by_id: Mapping[str, Document], stats: Counter) -> _QueryPlan:
        """Heads, candidate tails and the queries of every chunk."""
        doc_cands: dict[str, list[TailCandidate]] = {}         # mention candidates, once per document
        plans: list[_ChunkPlan] = []
        asks: list[_Ask] = []
        for ci, chunk in enumerate(chunks):
            doc = by_id[chunk.doc_id]
            heads = find_heads(chunk, self.kg, None if chunk.mentions else self.matcher)
            if self.llm is not None:
                heads = self._llm_heads(chunk, doc, heads, stats)
            cands = self._candidates(chunk, doc, doc_cands)
            stats["chunks"] += 1
            stats["heads"] += len(heads)
            asks += self._queries(ci, heads, cands, stats)
            plans.append(_ChunkPlan(chunk=chunk, doc=doc, heads=heads, table=_form_table(cands)))
        stats["queries"] = len(asks)
        return _QueryPlan(chunks=plans, asks=asks)

    def _queries(self, ci: int, heads: Sequence[Head], cands: Sequence[TailCandidate],
                 stats: Counter) -> list[_Ask]:
        """The queries of one chunk: per head, candidate relation and needed tail length."""
        asks = []
        for hi, h in enumerate(heads):
            rels = candidate_relations(h.category, self.schema, self.relations)
            if not h.category:
                stats["heads_untyped"] += 1
            elif not rels:
                stats["heads_without_relation"] += 1
            for r in rels:
                stats["head_relation_pairs"] += 1
                for t in self._lengths(cands, self._range(h.category, r)):
                    asks.append(_Ask(question=(ci, hi, r), query=self._query(ci, h, r, t)))
        return asks

    def _query(self, ci: int, head: Head, relation: str, length: int) -> Query:
        return Query(chunk=ci, root=head.token_start, head_length=head.token_end - head.token_start,
                     relation=self.relation_map[relation], length=length)

    def _candidates(self, chunk: Chunk, doc: Document,
                    doc_cands: dict[str, list[TailCandidate]]) -> list[TailCandidate]:
        """Candidate tails of one chunk from ``extract.tail_sources`` (none in ``paper`` mode)."""
        if self.cfg.tail_mode == "paper":
            return []
        out: list[TailCandidate] = []
        if "mention" in self.cfg.tail_sources:
            if doc.id not in doc_cands:
                doc_cands[doc.id] = mention_candidates(doc, self.kg, self.forms)
            out.extend(doc_cands[doc.id])
        if "phrase" in self.cfg.tail_sources:
            seen = {c.key for c in out}
            spans = [(m.start, m.end) for m in doc.mentions]
            out.extend(c for c in phrase_candidates(chunk, doc.text, self.cfg.max_phrase_words, self.K,
                                                    self.stop, spans) if c.key not in seen)
        return out

    def _range(self, head_category: str, relation: str) -> set[str] | None:
        """Tail categories the schema admits after (head category, relation); None: no range check."""
        if not self.cfg.check_range:
            return None
        return {o for s, o in self.schema.pairs.get(relation, ()) if s == head_category}

    def _lengths(self, cands: Sequence[TailCandidate], ok: set[str] | None) -> list[int]:
        """Query lengths one (head, relation) needs: the token lengths of its admissible candidates
        (typed candidates outside the range ``ok`` need no query)."""
        if self.cfg.tail_mode == "paper":
            return [1]
        if "llm" in self.cfg.tail_sources:
            return list(range(1, self.K + 1))
        lengths = {len(f) for c in cands if ok is None or not c.category or c.category in ok
                   for f in c.forms}
        if "lexicon" in self.cfg.tail_sources:
            lengths |= self.lexicon.lengths(ok)
        return sorted(lengths)

    def _llm_heads(self, chunk: Chunk, doc: Document, heads: list[Head], stats: Counter) -> list[Head]:
        """Add the helper LLM's heads: spans of the chunk text on free roots, typed by the lexicon
        (an LLM head the lexicon cannot type has no candidate relation and is counted, not kept)."""
        from graphmert.extract.llm import discover_heads

        taken = {h.token_start for h in heads}
        out = list(heads)
        for a, b, surface in discover_heads(self.llm, chunk.text):
            stats["llm_heads_proposed"] += 1
            da, db = chunk.doc_offset(a), chunk.doc_offset(b)         # document offsets
            roots = [i for i, (x, y) in enumerate(chunk.offsets) if x >= 0 and x < db and y > da]
            ids = self.names.lookup(surface)
            if not roots or roots[0] in taken or not ids or roots[-1] + 1 > chunk.num_roots - 1:
                stats["llm_heads_unusable"] += 1
                continue
            taken.add(roots[0])
            out.append(Head(token_start=roots[0], token_end=roots[-1] + 1, char_start=da, char_end=db,
                            text=surface, category=self.kg.category(ids[0]), ids=tuple(ids),
                            doc_id=doc.id, how="llm"))
        return sorted(out, key=lambda h: h.token_start)

    # ------------------------------------------------------------------ step: answer
    def _answer(self, plan: _QueryPlan, asks: Sequence[_Ask], tables: Mapping[int, _FormTable],
                progress: Callable[[int], None] | None = None, keep_tokens: bool = False) -> _Answers:
        """Run ``asks`` through the model; score each query's candidates (``tables``: per chunk
        index) and keep each candidate's best score per question. ``keep_tokens``: also keep the
        top-k tokens of each question's K-slot query (for :meth:`_llm_tails`)."""
        out = _Answers()
        chunks = [c.chunk for c in plan.chunks]
        for qi, logp in self.predictor.predict(chunks, [a.query for a in asks], progress):   # logp [t, V]
            ask = asks[qi]
            scored = out.tails.setdefault(ask.question, {})
            _keep_best(scored, self._score_query(ask.query, logp, tables[ask.query.chunk]))
            if keep_tokens and ask.query.length == self.K:
                top = logp.topk(min(self.cfg.top_k, logp.shape[1]), dim=-1).indices.tolist()  # [K, k]
                out.top_tokens[ask.question] = [[self.tok.id_to_token(i) for i in row] for row in top]
        return out

    def _score_query(self, q: Query, logp, table: _FormTable) -> list[tuple[float, TailCandidate]]:
        """(s, candidate) for the candidates one query answers: those of its length in ``table``,
        ``lexicon`` names whose every token is in its slot's top-k, or (``paper`` mode) the top-k
        whole-word tokens of slot 0."""
        out: list[tuple[float, TailCandidate]] = []
        if self.cfg.tail_mode == "paper":
            for c in paper_tails(logp, self.cfg.top_k, self.tok, self.stop, list(self.sp.values())):
                out.append((float(logp[0, c.forms[0][0]]), self._link_token(c)))
            return out
        lp = logp.numpy()                                                            # [t, V]
        entry = table.by_length.get(q.length)
        if entry is not None:
            forms, idx = entry                                                       # [C_t, t], C_t
            out += [(s, table.candidates[i]) for s, i in zip(score_forms(lp, forms).tolist(), idx)]
        if "lexicon" in self.cfg.tail_sources:
            top = logp.topk(min(self.cfg.top_k, logp.shape[1]), dim=-1).indices.numpy()   # [t, k]
            found = self.lexicon.matches(top)
            out += list(zip(best_form_scores(lp, found).tolist(), found))
        return out

    def _link_token(self, c: TailCandidate) -> TailCandidate:
        """A ``paper``-mode token tail, linked to the KG node of that name when there is one."""
        ids = self.names.lookup(c.name)
        if ids:
            nid = ids[0]
            return TailCandidate(key=nid, id=nid, name=self.kg.name(nid), category=self.kg.category(nid),
                                 source="token", forms=c.forms)
        return c

    # ------------------------------------------------------------------ step: llm_tails
    def _llm_tails(self, plan: _QueryPlan, answers: _Answers, stats: Counter) -> _Answers:
        """Ask the helper LLM to combine each question's top-k tokens into tail phrases, then score
        those phrases with the model like any other candidate (a second pass)."""
        from graphmert.extract.llm import combine_tail

        asks: list[_Ask] = []
        extra: dict[int, list[TailCandidate]] = {}            # chunk index → its LLM candidates
        for question in sorted(answers.top_tokens):
            ci, _, rel = question
            head = plan.head(question)
            phrases = combine_tail(self.llm, head.text, rel, answers.top_tokens[question],
                                   plan.chunks[ci].chunk.text)
            stats["llm_tail_requests"] += 1
            new = [TailCandidate(key=name_key(ph), id="", name=ph, category="", source="llm", forms=forms)
                   for ph in phrases if (forms := self.forms.forms([ph]))]
            stats["llm_tails"] += len(new)
            if not new:
                continue
            _add_new(extra.setdefault(ci, []), new)
            for t in sorted({len(f) for c in new for f in c.forms}):
                asks.append(_Ask(question=question, query=self._query(ci, head, rel, t)))
        if not asks:
            return answers
        tables = {ci: _form_table(cands) for ci, cands in extra.items()}
        return answers.merged(self._answer(plan, asks, tables))

    # ------------------------------------------------------------------ step: select
    def _select(self, plan: _QueryPlan, answers: _Answers) -> tuple[list[Pending], int]:
        """The triples of every question (in sorted order) awaiting the filters, and how many
        typed tails outside the relation's range outranked a kept tail."""
        prior = _prior(answers.tails) if self.cfg.ranking == "pmi" else {}
        pending: list[Pending] = []
        out_of_range = 0
        for question in sorted(answers.tails):
            ci, _, rel = question
            cp, head = plan.chunks[ci], plan.head(question)
            ranked = _ranked(answers.tails[question].values(), prior, ci, rel)
            picked, dropped = self._pick(cp, head, rel, ranked)
            out_of_range += dropped
            pending += [self._pending(cp.chunk, cp.doc, head, rel, cand, score, spans)
                        for score, cand, spans in picked]
        return pending, out_of_range

    def _pick(self, cp: _ChunkPlan, head: Head, rel: str, ranked: Iterable[tuple[float, TailCandidate]]
              ) -> tuple[list[tuple[float, TailCandidate, list[tuple[int, int]]]], int]:
        """The first ``extract.tails_per_query`` of ``ranked`` that are not the head, lie in scope
        and fit the range — each with its spans in scope — and the count of those out of range."""
        ranges: dict[str, Ranges] = {}
        ok = self._range(head.category, rel)
        picked = []
        out_of_range = 0
        for score, cand in ranked:
            if len(picked) == self.cfg.tails_per_query:
                break
            if self._is_head(cand, head):
                continue
            name = self.scopes.name(head.category, cand.category)
            if name not in ranges:
                ranges[name] = self.scopes.ranges(name, cp.doc, cp.chunk, head.char_start)
            spans = _spans_in_scope(cand, ranges[name])
            if spans is None:
                continue
            if ok is not None and cand.category and cand.category not in ok:
                out_of_range += 1          # outranked the kept tails, but is not in the range
                continue
            picked.append((score, cand, spans))
        return picked, out_of_range

    @staticmethod
    def _is_head(cand: TailCandidate, head: Head) -> bool:
        if cand.id and cand.id in head.ids:
            return True
        if cand.key == name_key(head.text):
            return True
        return any(a < head.char_end and b > head.char_start for a, b in cand.spans
                   if cand.source == "phrase")

    def _pending(self, chunk: Chunk, doc: Document, head: Head, rel: str, cand: TailCandidate,
                 score: float, spans: Sequence[tuple[int, int]]) -> Pending:
        """The triple (head, rel, cand) with its evidence, as the filters take it: confidence
        exp(s), scaled by ``extract.predicted_tail_scale`` for tails the text does not state."""
        conf = math.exp(score) * (1.0 if is_stated(cand.source) else self.cfg.predicted_tail_scale)
        t0, t1 = _nearest_span(spans, head.char_start) if spans else \
            _find_in_text(doc.text, cand.name, head.char_start)
        sent_start, sentence = evidence_passage(doc, head.char_start, t0, chunk)
        head_name = self.kg.name(head.id) if head.id in self.kg.nodes else head.text
        ev = Evidence(doc_id=doc.id, chunk_id=chunk.id, sentence=sentence, sentence_start=sent_start,
                      head_start=head.char_start, head_end=head.char_end, tail_start=t0, tail_end=t1,
                      confidence=conf)
        triple = Triple(head_id=head.id, head_name=head_name, head_category=head.category, relation=rel,
                        tail_id=cand.id, tail_name=cand.name, tail_category=cand.category,
                        tail_source=cand.source, confidence=conf, confidence_mean=conf, evidence_count=1,
                        documents=[doc.id], evidence=[ev], checkpoint_id=self.checkpoint_id,
                        run_id=self.run_id)
        forms = tuple(doc.text[a:b] for a, b in cand.spans[:8])
        return Pending(triple=triple, chunk_index=self._scorer_rows.get(chunk.id, 0), doc_text=doc.text,
                       tail_forms=forms)


# ---------------------------------------------------------------------- helpers
def _form_table(cands: Sequence[TailCandidate]) -> _FormTable:
    """Index candidates by form length (see :class:`_FormTable`)."""
    rows: dict[int, tuple[list, list]] = {}
    for i, c in enumerate(cands):
        for f in c.forms:
            r = rows.setdefault(len(f), ([], []))
            r[0].append(f)
            r[1].append(i)
    return _FormTable(candidates=list(cands),
                      by_length={t: (np.array(fs, dtype=np.int64), idx) for t, (fs, idx) in rows.items()})


def _add_new(cands: list[TailCandidate], new: Iterable[TailCandidate]) -> None:
    """Append the candidates of ``new`` whose key ``cands`` does not hold yet (first one wins)."""
    have = {c.key for c in cands}
    for c in new:
        if c.key not in have:
            have.add(c.key)
            cands.append(c)


def _prior(tails: Mapping[Question, Scored]) -> dict[tuple[int, str, str], float]:
    """(chunk, relation, tail key) → mean score of that tail over the chunk's heads: the ``pmi``
    ranking subtracts it, so a tail every head of the chunk finds likely is not preferred."""
    acc: dict[tuple[int, str, str], list[float]] = {}
    for (ci, _, rel), scored in tails.items():
        for key, (score, _) in scored.items():
            acc.setdefault((ci, rel, key), []).append(score)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def _ranked(scored: Iterable[tuple[float, TailCandidate]], prior: Mapping[tuple[int, str, str], float],
            ci: int, rel: str) -> list[tuple[float, TailCandidate]]:
    """``scored`` best first: by s minus the tail's ``prior`` in (chunk ``ci``, ``rel``) (0 when
    absent), ties by candidate key."""
    return sorted(scored, key=lambda sc: (-(sc[0] - prior.get((ci, rel, sc[1].key), 0.0)), sc[1].key))


def _spans_in_scope(cand: TailCandidate, scope: Ranges) -> list[tuple[int, int]] | None:
    """A candidate's document spans within ``scope`` (:mod:`graphmert.extract.scope`) — all of them
    unless it is a mention and there is a scope; None when a mention has no span in scope (it is not
    a tail there)."""
    if cand.source != "mention" or scope is None:
        return cand.spans
    spans = [sp for sp in cand.spans if within(sp, scope)]
    return spans or None


def _nearest_span(spans: Sequence[tuple[int, int]], char: int) -> tuple[int, int]:
    return min(spans, key=lambda s: (abs(s[0] - char), s[0]))


def _find_in_text(text: str, name: str, char: int) -> tuple[int, int]:
    """The occurrence of ``name`` (case-insensitive) nearest to ``char``; (−1, −1) when absent."""
    if not name:
        return -1, -1
    low, needle = text.casefold(), name.casefold()
    if len(low) != len(text):             # casefold changed lengths: offsets would not map back
        low, needle = text.lower(), name.lower()
        if len(low) != len(text):
            return -1, -1
    best, i = None, low.find(needle)
    while i >= 0:
        if best is None or abs(i - char) < abs(best - char):
            best = i
        i = low.find(needle, i + 1)
    return (best, best + len(name)) if best is not None else (-1, -1)
