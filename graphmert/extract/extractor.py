"""Knowledge extraction with a trained GraphMERT: documents + chunks → triples with provenance.

    ex = Extractor(model, tokenizer, kg, schema, relation_map, cfg.extract, num_roots=R,
                   num_leaves=K, relations=trained_relations, checkpoint_id=..., run_id=...)
    ex.fit_similarity(all_chunk_texts)           # the β filter's TF-IDF, fitted once per corpus
    triples, report = ex.extract(docs, chunks)   # per-chunk triples that passed the filters
    merged = merge_triples(triples)

Per chunk (DESIGN §8): heads (:mod:`~graphmert.extract.heads`) → candidate relations → one query per
(head, relation, tail length) answered by the model (:mod:`~graphmert.extract.predict`) → candidate
tails scored by their length-normalised likelihood (:mod:`~graphmert.extract.tails`); the best
``extract.tails_per_query`` per (head, relation) that are not the head itself, fit the relation's
range and — for mention tails — lie in ``extract.tail_scope`` (the head's sentence, chunk or
document) become triples with :class:`~graphmert.extract.triples.Evidence` → filters
(:mod:`~graphmert.extract.filters`). ``extract.ranking=pmi`` ranks by the score minus the tail's mean
score over the chunk's heads instead of the score itself.

Everything is deterministic: candidates and queries are built in sorted order, ties broken by key,
and the model runs in eval mode; the same checkpoint and config give the same triples.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from graphmert.config import ExtractConfig
from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.corpus.tokenizer import special_ids
from graphmert.extract.filters import Pending, apply_filters
from graphmert.extract.heads import Head, candidate_relations, find_heads
from graphmert.extract.predict import LeafPredictor, Query
from graphmert.extract.tails import (FormTokenizer, LexiconIndex, TailCandidate, mention_candidates,
                                     name_key, paper_tails, phrase_candidates, score_forms)
from graphmert.extract.triples import Evidence, Triple, is_stated
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.lexicon import Lexicon, LexiconMatcher
from graphmert.kg.schema import RelationSchema
from graphmert.kg.scoring import SCORERS
from graphmert.model.graphmert import GraphMERT

__all__ = ["Extractor", "ExtractionError", "TAIL_SOURCE_NAMES"]

TAIL_SOURCE_NAMES = ("mention", "lexicon", "phrase", "llm")


class ExtractionError(KGError):
    """Extraction cannot run with these inputs (relations unknown to the model, bad sources)."""


def _stop_words() -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return set(STOP_WORDS)


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
        self.cfg, self.kg, self.schema, self.tok = cfg, kg, schema, tokenizer
        self.relation_map, self.relations = relation_map, sorted(allowed)
        self.K = num_leaves
        self.sp = special_ids(tokenizer)
        self.predictor = LeafPredictor(model, num_roots, num_leaves, self.sp["pad"], self.sp["mask"],
                                       cfg.batch_size, cfg.pack_queries)
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
        doc_cands: dict[str, list[TailCandidate]] = {}
        plans = []                                      # per chunk: (heads, candidates, relations)
        queries: list[Query] = []
        owner: list[tuple[int, int, str]] = []          # query → (chunk, head, relation)
        for ci, chunk in enumerate(chunks):
            doc = by_id[chunk.doc_id]
            heads = find_heads(chunk, self.kg, None if chunk.mentions else self.matcher)
            if self.llm is not None:
                heads = self._llm_heads(chunk, doc, heads, stats)
            cands = self._candidates(chunk, doc, doc_cands)
            stats["chunks"] += 1
            stats["heads"] += len(heads)
            rels_per_head = []
            for hi, h in enumerate(heads):
                rels = candidate_relations(h.category, self.schema, self.relations)
                if not h.category:
                    stats["heads_untyped"] += 1
                elif not rels:
                    stats["heads_without_relation"] += 1
                rels_per_head.append(rels)
                for r in rels:
                    stats["head_relation_pairs"] += 1
                    for t in self._lengths(cands, self._range(h.category, r)):
                        queries.append(Query(ci, h.token_start, h.token_end - h.token_start,
                                             self.relation_map[r], t))
                        owner.append((ci, hi, r))
            plans.append((heads, cands, rels_per_head))
        stats["queries"] = len(queries)

        best: dict[tuple[int, int, str], dict[str, tuple[float, TailCandidate]]] = {}
        tables = [self._form_table(c) for _, c, _ in plans]
        slot_tokens: dict[tuple[int, int, str], list[list[str]]] = {}
        self._run(chunks, queries, owner, tables, best, progress, slot_tokens)
        if self.llm is not None and "llm" in self.cfg.tail_sources:
            self._llm_tails(chunks, plans, slot_tokens, best, stats)

        prior = self._prior(best) if self.cfg.ranking == "pmi" else {}
        pending: list[Pending] = []
        out_of_range = 0
        for (ci, hi, rel) in sorted(best):
            chunk = chunks[ci]
            heads, _, _ = plans[ci]
            head, doc = heads[hi], by_id[chunk.doc_id]
            scope = self._scope(chunk, doc, head)

            def rank(sc: tuple[float, TailCandidate]) -> tuple[float, str]:
                return -(sc[0] - prior.get((ci, rel, sc[1].key), 0.0)), sc[1].key

            ok = self._range(head.category, rel)
            taken = 0
            for score, cand in sorted(best[(ci, hi, rel)].values(), key=rank):
                if taken == self.cfg.tails_per_query:
                    break
                if self._is_head(cand, head):
                    continue
                spans = cand.spans
                if cand.source == "mention" and scope is not None:
                    spans = [sp for sp in cand.spans if scope[0] <= sp[0] and sp[1] <= scope[1]]
                    if not spans:
                        continue
                if ok is not None and cand.category and cand.category not in ok:
                    out_of_range += 1          # outranked the kept tails, but is not in the range
                    continue
                taken += 1
                pending.append(self._pending(chunk, doc, head, rel, cand, score, spans))
        kept, rep = apply_filters(pending, self.cfg, self.schema, self._scorer)
        rep.dropped["range"] += out_of_range
        stats["forwards"] = self.predictor.forwards
        stats["graphs"] = self.predictor.graphs
        return kept, {"counts": dict(sorted(stats.items())), "filters": rep.to_dict()}

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _prior(best) -> dict[tuple[int, str, str], float]:
        """(chunk, relation, tail key) → mean score of that tail over the chunk's heads: the ``pmi``
        ranking subtracts it, so a tail every head of the chunk finds likely is not preferred."""
        acc: dict[tuple[int, str, str], list[float]] = {}
        for (ci, _, rel), cands in best.items():
            for key, (score, _) in cands.items():
                acc.setdefault((ci, rel, key), []).append(score)
        return {k: sum(v) / len(v) for k, v in acc.items()}

    def _scope(self, chunk: Chunk, doc: Document, head: Head) -> tuple[int, int] | None:
        """Document character range a mention tail must lie in (``extract.tail_scope``)."""
        if self.cfg.tail_scope == "sentence":
            start, text = _sentence(doc, head.char_start, chunk)
            return start, start + len(text)
        if self.cfg.tail_scope == "chunk":
            return chunk.char_start, chunk.char_start + len(chunk.text)
        return None

    def _run(self, chunks, queries, owner, tables, best, progress, slot_tokens=None) -> None:
        """Answer ``queries``; keep each candidate's best score per (chunk, head, relation)."""
        keep_top = slot_tokens is not None and self.llm is not None
        for qi, logp in self.predictor.predict(chunks, queries, progress):
            q = queries[qi]
            slot = best.setdefault(owner[qi], {})
            for cand, score in self._score_query(q, logp, tables[q.chunk]):
                old = slot.get(cand.key)
                if old is None or score > old[0]:
                    slot[cand.key] = (score, cand)
            if keep_top and q.length == self.K:
                top = logp.topk(min(self.cfg.top_k, logp.shape[1]), dim=-1).indices.tolist()
                slot_tokens[owner[qi]] = [[self.tok.id_to_token(i) for i in row] for row in top]

    def _llm_tails(self, chunks, plans, slot_tokens, best, stats: Counter) -> None:
        """Ask the helper LLM to combine each (head, relation)'s top-k tokens into tail phrases,
        then score those phrases with the model like any other candidate (a second pass)."""
        from graphmert.extract.llm import combine_tail

        queries: list[Query] = []
        owner: list[tuple[int, int, str]] = []
        tables: dict[int, _FormTable] = {}
        extra: dict[int, list[TailCandidate]] = {}
        for key in sorted(slot_tokens):
            ci, hi, rel = key
            head = plans[ci][0][hi]
            phrases = combine_tail(self.llm, head.text, rel, slot_tokens[key], chunks[ci].text)
            stats["llm_tail_requests"] += 1
            new = []
            for ph in phrases:
                forms = self.forms.forms([ph])
                if forms:
                    new.append(TailCandidate(name_key(ph), "", ph, "", "llm", forms))
            stats["llm_tails"] += len(new)
            if not new:
                continue
            base = extra.setdefault(ci, [])
            for c in new:
                if c.key not in {b.key for b in base}:
                    base.append(c)
            for t in sorted({len(f) for c in new for f in c.forms}):
                queries.append(Query(ci, head.token_start, head.token_end - head.token_start,
                                     self.relation_map[rel], t))
                owner.append(key)
        for ci, cands in extra.items():
            tables[ci] = self._form_table(cands)
        if queries:
            self._run(chunks, queries, owner, tables, best, None)

    def _candidates(self, chunk: Chunk, doc: Document,
                    doc_cands: dict[str, list[TailCandidate]]) -> list[TailCandidate]:
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

    @staticmethod
    def _form_table(cands: Sequence[TailCandidate]) -> "_FormTable":
        rows: dict[int, tuple[list, list]] = {}
        for i, c in enumerate(cands):
            for f in c.forms:
                r = rows.setdefault(len(f), ([], []))
                r[0].append(f)
                r[1].append(i)
        return _FormTable(list(cands), {t: (np.array(fs, dtype=np.int64), idx)
                                        for t, (fs, idx) in rows.items()})

    def _score_query(self, q: Query, logp, table: "_FormTable") -> list[tuple[TailCandidate, float]]:
        out: list[tuple[TailCandidate, float]] = []
        if self.cfg.tail_mode == "paper":
            for c in paper_tails(logp, self.cfg.top_k, self.tok, self.stop, list(self.sp.values())):
                out.append((self._link_token(c), float(logp[0, c.forms[0][0]])))
            return out
        entry = table.by_length.get(q.length)
        if entry is not None:
            forms, idx = entry
            scores = score_forms(logp, forms).tolist()
            for s, i in zip(scores, idx):
                out.append((table.candidates[i], s))
        if "lexicon" in self.cfg.tail_sources:
            top = logp.topk(min(self.cfg.top_k, logp.shape[1]), dim=-1).indices.numpy()   # [t, k]
            for c in self.lexicon.matches(top):
                s = float(score_forms(logp, np.array(c.forms)).max())
                out.append((c, s))
        return out

    def _link_token(self, c: TailCandidate) -> TailCandidate:
        ids = self.names.lookup(c.name)
        if ids:
            nid = ids[0]
            return TailCandidate(nid, nid, self.kg.name(nid), self.kg.category(nid), "token", c.forms)
        return c

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
        conf = math.exp(score) * (1.0 if is_stated(cand.source) else self.cfg.predicted_tail_scale)
        sent_start, sentence = _sentence(doc, head.char_start, chunk)
        t0, t1 = _nearest_span(spans, head.char_start) if spans else \
            _find_in_text(doc.text, cand.name, head.char_start)
        head_id = head.id
        head_name = self.kg.name(head_id) if head_id in self.kg.nodes else head.text
        ev = Evidence(doc.id, chunk.id, sentence, sent_start, head.char_start, head.char_end, t0, t1,
                      conf)
        triple = Triple(head_id, head_name, head.category, rel, cand.id, cand.name, cand.category,
                        cand.source, conf, conf, 1, [doc.id], [ev], self.checkpoint_id, self.run_id)
        forms = tuple(doc.text[a:b] for a, b in cand.spans[:8])
        return Pending(triple, self._scorer_rows.get(chunk.id, 0), doc.text, forms)

    def _llm_heads(self, chunk: Chunk, doc: Document, heads: list[Head], stats: Counter) -> list[Head]:
        """Add the helper LLM's heads: spans of the chunk text on free roots, typed by the lexicon
        (an LLM head the lexicon cannot type has no candidate relation and is counted, not kept)."""
        from graphmert.extract.llm import discover_heads

        taken = {h.token_start for h in heads}
        out = list(heads)
        for a, b, surface in discover_heads(self.llm, chunk.text):
            stats["llm_heads_proposed"] += 1
            da, db = a + chunk.char_start, b + chunk.char_start       # document offsets
            roots = [i for i, (x, y) in enumerate(chunk.offsets) if x >= 0 and x < db and y > da]
            ids = self.names.lookup(surface)
            if not roots or roots[0] in taken or not ids or roots[-1] + 1 > chunk.num_roots - 1:
                stats["llm_heads_unusable"] += 1
                continue
            taken.add(roots[0])
            out.append(Head(roots[0], roots[-1] + 1, da, db, surface, self.kg.category(ids[0]),
                            tuple(ids), doc.id, "llm"))
        return sorted(out, key=lambda h: h.token_start)


@dataclass
class _FormTable:
    """The candidate tails of one chunk, and their forms by length: t → (forms [C_t, t] token ids,
    candidate index of each row)."""

    candidates: list[TailCandidate]
    by_length: dict[int, tuple[np.ndarray, list[int]]]


def _sentence(doc: Document, char: int, chunk: Chunk) -> tuple[int, str]:
    """(start, text) of the document sentence holding ``char``; the chunk text when unknown."""
    if doc.sentences:
        starts = [s for s, _ in doc.sentences]
        i = bisect.bisect_right(starts, char) - 1
        if i >= 0 and doc.sentences[i][0] <= char < doc.sentences[i][1]:
            s, e = doc.sentences[i]
            return s, doc.text[s:e]
    return chunk.char_start, chunk.text


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
