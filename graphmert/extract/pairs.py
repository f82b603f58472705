"""Document-level extraction with a query-group model (``model.leaf_query = "fixed"``).

The paper's extraction (:class:`~graphmert.extract.extractor.Extractor`) asks one question per head,
relation and tail *length*, and ranks tails of different lengths by uncalibrated likelihoods. A model
trained on K-leaf query groups with an end token and a "none" answer (:mod:`graphmert.graph.distant`,
:mod:`graphmert.train.masking`) is asked the way it was trained, in five steps:

1. ``questions`` — per chunk (:func:`~graphmert.graph.distant.chunk_entities`): every head (the
   longest mention with an id per start root; with ``extract.text_entities`` a mention without one
   is a text node, keyed by its text: :mod:`graphmert.extract.text_entities`) × every extraction
   relation whose domain admits the head's category. Its candidates are the chunk's entities whose
   category the relation admits after the head's, the head's own entity excluded, within the tail
   scope of the two categories (:mod:`graphmert.extract.scope`: the head's sentence, that sentence
   or the title, or the chunk; ``document`` means the chunk too: the model sees no further). With
   ``extract.outside_scope_weight`` w > 0, or with ``extract.outside_min_confidence`` set, the
   chunk's other admitted entities are candidates too, marked as outside the scope;
2. ``answers`` — one graph per (chunk, relation) holding a masked K-leaf group on each of its heads
   (``extract.pack_queries``; else one graph per question, as in training a group sees the others'
   [MASK] leaves either way), scored by a :data:`RANKERS` entry: ``model`` gives
   P(candidate | question) from the candidate head over {none} ∪ candidates, ``likelihood`` the same
   softmax over the MNM log-likelihood of each candidate's tokens followed by [SEP]. Candidates
   outside the scope are then weighed down by w (:meth:`PairExtractor.soft_scope`): a softmax
   answer becomes p'_c = w_c p_c / (p_∅ + Σ_j w_j p_j), with w_c = w outside and 1 inside, which is
   the softmax after adding log w_c to each candidate's logit (w → 0 gives the hard scope's answer,
   w = 1 the chunk's); a control's score is multiplied by w_c. The *band* (``outside_min_confidence``
   t_o) instead keeps the two apart: an inside candidate gets the hard scope's answer
   p_c / (1 − Σ_{j outside} p_j), an outside one the chunk-wide p_c. An ensemble (``members``,
   ``train.ensemble_size``) answers with the mean of its models' scores, p̄_c = (1/N) Σ_n p_c^(n),
   again a distribution over {none} ∪ candidates. Entity candidates are then read apart from text
   nodes (:meth:`PairExtractor.apart_from_text`): p_c / (1 − Σ_{j text} p_j), so text nodes add
   triples without taking probability from the entities;
3. ``document pairs`` — for each (document, head entity, relation, tail entity) the best score over
   the head's mentions and chunks, or their noisy-OR (``extract.evidence``), with the best mention
   as evidence. With the band, inside and outside answers form two sets, and an outside pair is
   dropped when its two entities share the scope anywhere in the document (some inside question
   asks one of them about the other): only pairs that no scope holds are answered across it;
4. ``selection`` — per (document, head entity, relation) the ``extract.tails_per_query`` best tails
   scoring at least ``extract.min_confidence`` (the outside band: its own best tails scoring at
   least t_o, so in-scope answers are the scope's own); then, with ``extract.one_relation_per_pair``, one
   relation per (document, unordered entity pair), chosen by ``extract.relation_choice`` (below;
   ties: the relation with more seed triples, then the name) — BioRED-style relations are unordered
   pairs with one type;
5. ``triples`` — :class:`~graphmert.extract.triples.Triple` records with their evidence.

Typed relations. Each relation's question is its own softmax over {none} ∪ candidates, so a score
is the model's P(head —r→ tail) = P(r has a tail here) · P(tail | r has one): the "none" option,
trained on the known negatives of relation-annotated documents, carries the relation's prior, and
comparing these probabilities across r is the Bayes decision. ``relation_choice`` selects it
(``score``) or two alternatives measured against it (docs/experiments/relation-typer.md): ``prior`` multiplies by
π(r | category pair), the smoothed share of r among the seed triples between entities of the pair's
two categories (a second, explicit prior), and ``prior_only`` types every pair by π alone, ignoring
the model — the typing control. The model types pairs no better than π does, so two more choices ask
the relation typer (:mod:`graphmert.extract.relation_typer`: the words around the pair's mentions,
fitted on gold typed relations): ``typer`` keeps the pair's found tail, its evidence and confidence
(the model's best row) and gives it the typer's most probable relation among those the schema admits
for the pair's categories; ``typer_score`` keeps the found relation r that maximises
P_model(r) · P_typer(r). A pair the typer cannot read keeps the model's best relation. The typer
also scores whether the text relates a pair at all; ``extract.typer_min_relation`` drops the selected
pairs it scores below that (step 4, before the relation is chosen). With ``typer`` and
``extract.type_head_weight`` b > 0, the model rankers' pairs are typed by (1 − b) log P_typer +
b log P_head instead, P_head the type head over the model's own pair states
(:mod:`graphmert.extract.pair_heads`); the controls keep the typer alone.

Controls. The same questions ranked without the trained model measure what the model adds
(``extract.controls``, :data:`RANKERS`): ``candidates`` keeps every candidate (no top-k: the
schema-admitted pairs in scope, typed by the relation with most seed triples), ``random`` ranks at
random, ``nearest`` by the root distance from the head to the candidate's nearest mention,
``salience`` by how often the document mentions the candidate, ``untrained`` with a freshly
initialised model of the same configuration, and ``lexical`` by the relation typer's probability q
that the words around the pair relate it (:meth:`RelationTyper.relatedness`): the supervised,
non-neural baseline, fitted on the same gold relations (``extract.typer_files``) as the candidate
head is trained on; ``lexical_document`` by a regression over log q and the document's counts (the
mentions of each entity, their distance, the number of candidates, the relation and category pair),
fitted on the same relations (:mod:`graphmert.extract.lexical_document`): the strongest supervised
baseline without the model. Each control runs at its own k and, where its score is a probability
(``untrained``, ``lexical``, ``lexical_document``), its own threshold (``extract.control_tails_per_query``,
``extract.control_min_confidence``; :meth:`PairExtractor.for_ranker`), so none is held to the
model's settings; the other scores are not probabilities and take no threshold.

Hybrid. With ``extract.lexical_weight`` w > 0 the model rankers' answer p is pooled with the
lexical score q of the same pair, log-linearly:

    score(c) = p_c^(1−w) · q_c^w

(w = 0: the model alone; w = 1: the lexical ranking at graphmert's k and threshold). The ``lexical``
control is then this hybrid's ablation without the model. With ``extract.related_head_weight`` v > 0
the pooled score is pooled once more with ρ, the relatedness head's probability that the document
relates the pair, read from the model's own pair states (:mod:`graphmert.extract.pair_heads`):
score(c)^(1−v) · ρ_c^v. The model-alone row (``extract(untyped=...)``) keeps ρ and drops q: it is the
system without the words' features.
"""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from graphmert.config import TYPER_CHOICES, ExtractConfig, check_outside_scope
from graphmert.corpus.chunk import Chunk
from graphmert.corpus.document import Document
from graphmert.corpus.tokenizer import special_ids
from graphmert.extract.cross_chunk import CrossChunkPair, CrossChunkScorer, cross_chunk_triples
from graphmert.extract.heads import evidence_passage
from graphmert.extract.lexical_document import LexicalDocumentStack, candidate_features
from graphmert.extract.relation_typer import RelationTyper
from graphmert.extract.scope import Ranges, TailScopes, within
from graphmert.extract.text_entities import is_text_entity, with_text_entities
from graphmert.extract.tails import FORM_CACHE
from graphmert.extract.triples import Evidence, Triple
from graphmert.extract.pair_heads import RELATED, PairHead, PairSums, blend, pair_vectors
from graphmert.graph.candidates import candidate_query
from graphmert.graph.collate import collate_graphs
from graphmert.graph.distant import ChunkEntities, chunk_entities
from graphmert.graph.layout import EntityTable, LeafyChainGraph, layout_arrays
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.schema import RelationSchema
from graphmert.model.graphmert import GraphMERT
from graphmert.registry import Registry

__all__ = ["PairQuery", "PairExtractor", "RANKERS", "CONTROLS", "MODEL_RANKERS", "PROBABILITY_RANKERS",
           "check_control_settings", "control_settings", "pool"]

MODEL_RANKERS = ("model", "margin", "likelihood")
SOFTMAX_RANKERS = ("model", "likelihood", "untrained")       # P over {none} ∪ candidates
CONTROLS = ("candidates", "random", "nearest", "salience", "untrained", "lexical", "lexical_document")
PROBABILITY_RANKERS = ("model", "margin", "likelihood", "untrained", "lexical", "lexical_document")


@dataclass(frozen=True, kw_only=True)
class PairQuery:
    """One question: the head mention at ``root`` (entity ``head``) asks ``relation``; ``candidates``
    are the entity ids it chooses among (step 1 of the module docstring)."""

    chunk: int
    root: int
    end: int                       # exclusive end root of the head mention
    head: str
    relation: str
    candidates: tuple[str, ...]
    outside: tuple[bool, ...] = ()     # per candidate: outside the head's tail scope (soft scope only)


@dataclass(kw_only=True)
class _ChunkPlan:
    chunk: Chunk
    doc: Document
    entities: ChunkEntities
    queries: list[PairQuery] = field(default_factory=list)


Ranker = Callable[["PairExtractor", list[_ChunkPlan], list[PairQuery]], list[np.ndarray]]
RANKERS: Registry[Ranker] = Registry("extraction ranker", key="extract.ranker")


class PairExtractor:
    """Extraction with a ``leaf_query = "fixed"`` model (module docstring).

    Args:
        model: the trained model (eval mode is set here), or None for the model-free controls only.
        tokenizer: its tokenizer.  kg, schema: the seed KG and relation schema of the run.
        relation_map: relation name → id of the model.  cfg: the ``extract`` section.
        num_roots, num_leaves: R and K.  relations: the relations to ask.
        untrained: a freshly initialised model for the ``untrained`` control.
        typer: the fitted relation typer ``relation_choice`` 'typer' and 'typer_score' ask.
        members: further trained models of the same configuration (an ensemble): the model rankers
            answer with the mean of ``model``'s and their scores.
        stack: the fitted regression of the ``lexical_document`` control.
        cross_chunk: the fitted regression of ``extract.cross_chunk_pairs``: every system's triples
            also hold the pairs no chunk asks that it keeps (:meth:`cross_chunk_triples`).
    """

    def __init__(self, model: GraphMERT | None, tokenizer, kg: SeedKG, schema: RelationSchema,
                 relation_map: dict[str, int], cfg: ExtractConfig, num_roots: int, num_leaves: int,
                 relations: Sequence[str], checkpoint_id: str = "", run_id: str = "",
                 untrained: GraphMERT | None = None, typer: RelationTyper | None = None,
                 members: Sequence[GraphMERT] = (), type_head: PairHead | None = None,
                 related_head: PairHead | None = None, stack: LexicalDocumentStack | None = None,
                 cross_chunk: CrossChunkScorer | None = None) -> None:
        unknown = [r for r in relations if r not in relation_map]
        if unknown:
            raise KGError(f"extract.relations: {unknown} are not relations of the model checkpoint "
                          f"(it knows {sorted(relation_map)})")
        TailScopes(cfg.tail_scope, cfg.tail_scope_by_category).check(schema)
        check_outside_scope(cfg)
        check_control_settings(cfg)
        self.model, self.untrained, self.typer = model, untrained, typer
        self.type_head, self.related_head, self.stack = type_head, related_head, stack
        self.cross_chunk = cross_chunk
        self.members = list(members)
        self.tok, self.kg, self.schema, self.cfg = tokenizer, kg, schema, cfg
        self.relation_map, self.relations = relation_map, sorted(relations)
        self.R, self.K = num_roots, num_leaves
        self.sp = special_ids(tokenizer)
        self.checkpoint_id, self.run_id = checkpoint_id, run_id
        counts = kg.relation_counts()
        self.prior = {r: counts.get(r, 0) for r in self.relations}
        self.pair_prior = _category_pair_prior(kg, self.relations)
        self.domain = {r: schema.domain(r) for r in self.relations}
        self.stats: Counter = Counter()
        self._forms: dict[str, tuple[int, ...]] = {}
        self._relatedness: dict[tuple[str, frozenset], float] = {}
        self._typer_words: dict = {}               # the typer's look-ups of the questions' documents
        self._head_types: dict[tuple[str, frozenset], dict[str, float]] | None = None   # this decision's
        self._vectors: tuple = (None, {})          # (plans, their pair vectors): one encoder pass

    # ------------------------------------------------------------------ the pipeline
    def extract(self, docs: Sequence[Document], chunks: Sequence[Chunk], rankers: Sequence[str] = ("model",),
                untyped: str | None = None) -> tuple[dict[str, list[Triple]], dict]:
        """Triples per ranker name (step 5) and a report of counts. ``untyped``: also the first
        ranker's answers, pooled with the relatedness head's but not the lexical scores, decided by
        :meth:`without_typer`, under that name: the model's own system; the model answers once for
        both."""
        self.stats, self._relatedness = Counter(), {}
        plans = self.questions(docs, chunks)
        queries = [q for p in plans for q in p.queries]
        across = self.cross_chunk.score(docs, chunks) if self.cross_chunk is not None else []
        out = {}
        for i, name in enumerate(rankers):
            alone = self.answers(plans, queries, name, pooled=False)
            scores = self.pooled(plans, queries, alone, name)
            ranked = self.for_ranker(name)
            out[name] = ranked.decide(plans, queries, scores, name) + self.cross_chunk_triples(across, chunks)
            if ranked is not self:
                self.stats.update(ranked.stats)
            self.stats[f"triples:{name}"] = len(out[name])
            if i == 0 and untyped:
                own = self.pooled(plans, queries, alone, name, weight=0.0)   # the model's heads, no words
                alone_typed = ranked.without_typer()
                out[untyped] = alone_typed.decide(plans, queries, own, name) + \
                    alone_typed.cross_chunk_triples(across, chunks)
        return out, {"counts": dict(sorted(self.stats.items()))}

    def for_ranker(self, ranker: str) -> "PairExtractor":
        """This extractor deciding at ``ranker``'s own settings: a control named in
        ``extract.control_tails_per_query`` / ``control_min_confidence`` keeps its k and threshold
        (module docstring, "Controls"); the model rankers and the other controls keep
        ``tails_per_query`` and ``min_confidence``. It shares everything else, with counts of its own."""
        k, floor = control_settings(self.cfg, ranker)
        if (k, floor) == (self.cfg.tails_per_query, self.cfg.min_confidence):
            return self
        other = copy.copy(self)
        other.cfg = replace(self.cfg, tails_per_query=k, min_confidence=floor)
        other.stats = Counter()
        return other

    def without_typer(self) -> "PairExtractor":
        """This extractor deciding without the relation typer: pairs selected and typed by the model
        alone (``relation_choice: score``, or the type head alone where one types the pairs; no
        ``typer_min_relation``; :meth:`extract` gives it the answers before the lexical pooling). It shares the models, the seed KG and the questions'
        settings, with counts of its own."""
        other = copy.copy(self)
        other.cfg = replace(self.cfg, relation_choice="score", typer_min_relation=0.0)
        if self.uses_type_head:                    # the model's own types: the type head alone
            other.cfg = replace(other.cfg, relation_choice="typer", type_head_weight=1.0)
        other.typer, other.stats = None, Counter()
        return other

    @property
    def uses_type_head(self) -> bool:
        """Whether the model rankers' pairs are typed with the relation-type head."""
        return (self.type_head is not None and self.cfg.type_head_weight > 0
                and self.cfg.relation_choice == "typer")

    def head_types(self, plans: list[_ChunkPlan]) -> dict[tuple[str, frozenset], dict[str, float]]:
        """(document, unordered pair) → the type head's log P(r | pair) for every pair the questions
        of ``plans`` link (:mod:`graphmert.extract.pair_heads`)."""
        return self.type_head.log_probabilities(self.pair_vectors(plans))

    def pair_vectors(self, plans: list[_ChunkPlan]) -> dict:
        """The pair vectors of ``plans`` (:func:`~graphmert.extract.pair_heads.pair_vectors`),
        computed once per plans for both heads and every decision."""
        if self._vectors[0] is not plans:
            self._vectors = (plans, pair_vectors(self, plans))
        return self._vectors[1]

    def related_scores(self, plans: list[_ChunkPlan], queries: list[PairQuery]) -> list[np.ndarray]:
        """Per question, ρ(head, candidate) for each candidate: the relatedness head's probability
        that the document relates the pair (:mod:`graphmert.extract.pair_heads`)."""
        logp = self.related_head.log_probabilities(self.pair_vectors(plans))
        return [np.exp([logp[(plans[q.chunk].doc.id, frozenset((q.head, c)))][RELATED[1]] for c in q.candidates])
                for q in queries]

    def answers(self, plans: list[_ChunkPlan], queries: list[PairQuery], ranker: str,
                pooled: bool = True) -> list[np.ndarray]:
        """Step 2: each question's candidate scores under ``ranker`` (a :data:`RANKERS` name), with
        the candidates outside the scope weighed down (:meth:`soft_scope`), and with ``pooled`` the
        hybrid's pooling (:meth:`pooled`)."""
        scores = self.soft_scope(RANKERS.get(ranker)(self, plans, queries), queries, ranker)
        scores = self.apart_from_text(scores, queries) if ranker in SOFTMAX_RANKERS else scores
        return self.pooled(plans, queries, scores, ranker) if pooled else scores

    def pooled(self, plans: list[_ChunkPlan], queries: list[PairQuery], scores: list[np.ndarray],
               ranker: str, weight: float | None = None) -> list[np.ndarray]:
        """A model ranker's ``scores`` pooled with the lexical scores at ``weight`` (default
        ``extract.lexical_weight``; module docstring, "Hybrid"), then with the relatedness head's at
        ``extract.related_head_weight`` (:meth:`related_scores`); other rankers' scores unchanged."""
        w = self.cfg.lexical_weight if weight is None else weight
        if ranker not in MODEL_RANKERS:
            return scores
        if w > 0:
            scores = pool(scores, self.lexical_scores(plans, queries), w)
        if self.related_head is not None and self.cfg.related_head_weight > 0:
            scores = pool(scores, self.related_scores(plans, queries), self.cfg.related_head_weight)
        return scores

    def lexical_scores(self, plans: list[_ChunkPlan], queries: list[PairQuery]) -> list[np.ndarray]:
        """Per question: q, the relation typer's probability that the words relate the head and each
        candidate (:meth:`RelationTyper.relatedness`, asked once per document and unordered pair)."""
        typer = self._need_typer("the 'lexical' control and extract.lexical_weight")
        keys, asked = [], {}              # per question its candidates' (document, pair); the new pairs
        for q in queries:
            doc = plans[q.chunk].doc
            keys.append([(doc.id, frozenset((q.head, c))) for c in q.candidates])
            for k, c in zip(keys[-1], q.candidates):
                if k not in self._relatedness and k not in asked:
                    asked[k] = (doc, *sorted((q.head, c)))          # as the typer is asked their types
        self._relatedness.update(zip(asked, typer.relatedness(list(asked.values()), cache=self._typer_words)))
        return [np.array([self._relatedness[k] for k in ks], dtype=np.float64) for ks in keys]

    @staticmethod
    def apart_from_text(scores: list[np.ndarray], queries: list[PairQuery]) -> list[np.ndarray]:
        """Each softmax answer with its entities' share read apart from its text nodes'
        (:mod:`graphmert.extract.text_entities`): an entity candidate gets
        p_c / (1 − Σ_{j text} p_j), the answer among entities, as if the text nodes were not offered;
        a text node keeps p_c. Text nodes then add triples without taking any from the entities."""
        out = []
        for q, s in zip(queries, scores):
            text = np.array([is_text_entity(c) for c in q.candidates])
            if not text.any():
                out.append(s)
                continue
            out.append(np.where(text, s, s / max(1.0 - float(s[text].sum()), 1e-12)))     # [C]
        return out

    def soft_scope(self, scores: list[np.ndarray], queries: list[PairQuery], ranker: str) -> list[np.ndarray]:
        """Each question's scores with its out-of-scope candidates weighed by
        w = ``extract.outside_scope_weight`` (module docstring, step 2): softmax answers are
        renormalised against their "none" share p_∅ = 1 − Σ p, a margin σ(s − s_∅) becomes
        σ(s + log w − s_∅), any other score is multiplied by w. With the band
        (``outside_min_confidence``) a softmax answer's inside candidates get the hard scope's
        p_c / (1 − Σ_outside p) and its outside ones keep p_c; other scores are unchanged."""
        w, band = self.cfg.outside_scope_weight, self.banded
        out = []
        for q, s in zip(queries, scores):
            if not any(q.outside) or (band and ranker not in SOFTMAX_RANKERS):
                out.append(s)
                continue
            outside = np.array(q.outside)
            if band:                                                   # [C]: inside renormalised
                out.append(np.where(outside, s, s / max(1.0 - float(s[outside].sum()), 1e-12)))
                continue
            weight = np.where(outside, w, 1.0)
            if ranker in SOFTMAX_RANKERS:
                s = weight * s / max(1.0 - float(s.sum()) + float((weight * s).sum()), 1e-12)
            elif ranker == "margin":
                s = weight * s / (weight * s + 1.0 - s)
            else:
                s = weight * s
            out.append(s)
        return out

    @property
    def banded(self) -> bool:
        """Whether the outside band is on (``extract.outside_min_confidence`` set)."""
        return self.cfg.outside_min_confidence is not None

    def decide(self, plans: list[_ChunkPlan], queries: list[PairQuery], scores: list[np.ndarray],
               ranker: str) -> list[Triple]:
        """Steps 3–5 for one ranker's scores (``min_confidence`` only for probability rankers)."""
        noisy_or = self.cfg.evidence == "noisy_or" and ranker in PROBABILITY_RANKERS
        # outside candidates join the pairs under a soft scope only; the band reads them apart
        soft = self.cfg.outside_scope_weight > 0
        pairs = self.document_pairs(plans, queries, scores, noisy_or=noisy_or, band=None if soft else False)
        outside = self.cross_scope_pairs(pairs, self.document_pairs(plans, queries, scores, noisy_or=noisy_or,
                                                                    band=True)) if self.banded else None
        categories = {(p.doc.id, e): c for p in plans for e, c in p.entities.categories.items()}
        self._head_types = self.head_types(plans) if self.uses_type_head and ranker in MODEL_RANKERS else None
        rows = self.select(pairs, probabilities=ranker in PROBABILITY_RANKERS,
                           keep_all=ranker == "candidates", categories=categories,
                           docs={p.doc.id: p.doc for p in plans}, outside=outside)
        return self.triples(plans, rows)

    def cross_chunk_triples(self, scored: list[tuple[CrossChunkPair, float]], chunks: Sequence[Chunk]
                            ) -> list[Triple]:
        """Triples of the pairs no chunk holds (:mod:`graphmert.extract.cross_chunk`) that score at
        least ``extract.cross_chunk_min_probability``, each with the relation and direction the
        schema admits for the two categories that the typer finds likeliest (where this extractor
        types with it), else the one with most seed triples. The same pairs for every ranker."""
        floor = self.cfg.cross_chunk_min_probability
        kept = [(p, v) for p, v in scored if v >= floor]
        typer = self.typer if self.cfg.relation_choice in TYPER_CHOICES else None
        typed = typer.log_probabilities([(p.doc, p.a, p.b) for p, _ in kept]) if typer and kept else [None] * len(kept)
        rows = []
        for (p, v), t in zip(kept, typed):
            cats = dict(zip((p.a, p.b), p.categories))
            options = [(r, h, x) for r in self.relations for h, x in ((p.a, p.b), (p.b, p.a))
                       if self.schema.allows(r, cats[h], cats[x])]
            if options:
                r, h, x = max(options, key=lambda o: ((t or {}).get(o[0], -np.inf), self.prior.get(o[0], 0),
                                                      _neg(o[0])))
                rows.append((p, v, r, h, x))
        self.stats["cross_chunk_pairs_scored"] = len(scored)
        self.stats["cross_chunk_pairs_kept"] = len(rows)
        return cross_chunk_triples(rows, chunks, self._cross_chunk_name, self.checkpoint_id, self.run_id)

    def _cross_chunk_name(self, pair: CrossChunkPair, eid: str) -> str:
        if eid in self.kg.nodes:
            return self.kg.name(eid)
        texts = Counter(m.text for m in pair.doc.mentions if eid in m.ids)
        return min(texts, key=lambda t: (-texts[t], t))

    def cross_scope_pairs(self, inside: dict, outside: dict) -> dict:
        """The outside band's pairs whose two entities no inside question of their document joins
        (step 3): the pairs that no scope holds."""
        joined = {(doc, frozenset((head, tail))) for doc, head, _, tail in inside}
        out = {key: v for key, v in outside.items() if (key[0], frozenset((key[1], key[3]))) not in joined}
        self.stats["cross_scope_pairs_asked"] = len({(k[0], frozenset((k[1], k[3]))) for k in out})
        return out

    def questions(self, docs: Sequence[Document], chunks: Sequence[Chunk]) -> list[_ChunkPlan]:
        """Step 1: the chunks' questions and candidates (with ``extract.text_entities``, unlinked
        mentions are text nodes: :mod:`graphmert.extract.text_entities`)."""
        if self.cfg.text_entities:
            docs, chunks = [with_text_entities(d) for d in docs], [with_text_entities(c) for c in chunks]
        by_id = {d.id: d for d in docs}
        self._typer_words = {}      # asked for these documents' pairs, related and typed (RelationTyper.relatedness)
        missing = sorted({c.doc_id for c in chunks} - set(by_id))
        if missing:
            raise KGError(f"chunks refer to documents that were not given: {missing[:5]}")
        plans = []
        scopes = TailScopes(self.cfg.tail_scope, self.cfg.tail_scope_by_category)
        counts = {d.id: Counter(i for m in d.mentions for i in m.ids) for d in docs}
        for ci, chunk in enumerate(chunks):
            plan = _ChunkPlan(chunk=chunk, doc=by_id[chunk.doc_id],
                              entities=chunk_entities(chunk, self.kg, self.R, counts[chunk.doc_id]))
            for root, (end, head) in sorted(plan.entities.heads.items()):
                if not 1 <= root < end <= chunk.num_roots - 1:
                    continue
                scope = self._scope(plan, root, head, scopes)
                offered = set(plan.entities.table.ids) if self.cfg.outside_scope_weight > 0 or self.banded \
                    else scope
                for r in self.relations:
                    cands = self._candidates(plan, head, r, offered)
                    if cands:
                        outside = tuple(e not in scope for e in cands)
                        plan.queries.append(PairQuery(chunk=ci, root=root, end=end, head=head, relation=r,
                                                      candidates=cands,
                                                      outside=outside if any(outside) else ()))
                        self.stats["candidates_outside_scope"] += sum(outside)
            self.stats["chunks"] += 1
            self.stats["heads"] += len(plan.entities.heads)
            self.stats["questions"] += len(plan.queries)
            plans.append(plan)
        return plans

    @staticmethod
    def _scope(plan: _ChunkPlan, root: int, head: str, scopes: TailScopes) -> set[str]:
        """The chunk's entities with a mention within the tail scope of the head at ``root``
        (:mod:`graphmert.extract.scope`: the scope of the head's and the entity's categories;
        ``chunk`` and ``document`` keep every entity of the chunk)."""
        cats, off = plan.entities.categories, plan.chunk.offsets
        ranges: dict[str, Ranges] = {"chunk": None, "document": None}
        out = set()
        for e, spans in plan.entities.spans.items():
            name = scopes.name(cats[head], cats[e])
            if name not in ranges:
                ranges[name] = scopes.ranges(name, plan.doc, plan.chunk, int(off[root][0]))
            if any(within((int(off[a][0]), int(off[b - 1][1])), ranges[name]) for a, b, _ in spans):
                out.add(e)
        return out

    def _candidates(self, plan: _ChunkPlan, head: str, relation: str, scope: set[str]) -> tuple[str, ...]:
        cats = plan.entities.categories
        if cats[head] not in self.domain[relation]:
            return ()
        return tuple(e for e in plan.entities.table.ids
                     if e != head and e in scope and self.schema.allows(relation, cats[head], cats[e]))

    def document_pairs(self, plans: list[_ChunkPlan], queries: list[PairQuery], scores: list[np.ndarray],
                       noisy_or: bool = False, band: bool | None = None
                       ) -> dict[tuple[str, str, str, str], tuple[float, PairQuery]]:
        """Step 3: (document, head, relation, tail) → (score, the question with the best score).

        The score is the best over the head's mentions and chunks, or with ``noisy_or`` (probability
        rankers, ``extract.evidence``) their noisy-OR 1 − Π(1 − p): each question that finds the
        tail is independent evidence. With ``one_relation_per_pair`` (unordered pairs) the evidence
        of the reverse question (tail asks the relation, head answers) joins it. ``band``: None
        reads every candidate, False only those inside the scope, True only those outside.
        """
        best: dict[tuple[str, str, str, str], tuple[float, PairQuery]] = {}
        miss: dict[tuple[str, str, str, str], float] = {}           # Π(1 − p) per key
        for q, s in zip(queries, scores):
            doc = plans[q.chunk].doc.id
            flags = q.outside or (False,) * len(q.candidates)
            for tail, v, out in zip(q.candidates, s.tolist(), flags):
                if band is not None and out != band:
                    continue
                key = (doc, q.head, q.relation, tail)
                old = best.get(key)
                if old is None or v > old[0]:
                    best[key] = (v, q)
                miss[key] = miss.get(key, 1.0) * (1.0 - v)
        if not noisy_or:
            return best
        out = {}
        for key, (_, q) in best.items():
            doc, head, rel, tail = key
            m = miss[key] * (miss.get((doc, tail, rel, head), 1.0) if self.cfg.one_relation_per_pair else 1.0)
            out[key] = (1.0 - m, q)
        return out

    def select(self, pairs: dict, probabilities: bool, keep_all: bool = False,
               categories: dict[tuple[str, str], str] | None = None,
               docs: dict[str, Document] | None = None,
               outside: dict | None = None) -> list[tuple[str, str, str, str, float, PairQuery]]:
        """Step 4: top tails per (document, head, relation) — every tail with ``keep_all`` — less
        the pairs the relation typer finds unrelated (``typer_min_relation``), then one relation per
        pair by ``relation_choice`` (``categories``: (document, entity) → Biolink category, for the
        category-pair prior and the schema; ``docs``: id → document, for the relation typer).
        ``outside``: the band's cross-scope pairs, with top tails of their own at
        ``outside_min_confidence``."""
        kept = self._top_tails(pairs, probabilities, keep_all, self.cfg.min_confidence)
        if outside:
            band = self._top_tails(outside, probabilities, keep_all, self.cfg.outside_min_confidence or 0.0)
            self.stats["cross_scope_rows_kept"] += len(band)
            kept += band
        kept = self._related_only(kept, docs or {})
        if not self.cfg.one_relation_per_pair:
            return kept
        by_pair: dict[tuple[str, frozenset], list] = {}
        for row in kept:
            by_pair.setdefault((row[0], frozenset((row[1], row[3]))), []).append(row)
        head_alone = self._head_types is not None and self.cfg.type_head_weight >= 1   # the typer unasked
        typed = self._typer_log_probabilities(list(by_pair), docs or {}) \
            if self.cfg.relation_choice in TYPER_CHOICES and not head_alone else {}
        cats = lambda doc, e: (categories or {}).get((doc, e), "")               # noqa: E731
        best = [self._one_relation(rows, cats, typed.get(key)) for key, rows in by_pair.items()]
        self.stats["dropped_other_relation_or_direction"] += len(kept) - len(best)
        self.stats["pairs_typed_by_typer"] += sum(v is not None for v in typed.values())
        return sorted(best, key=lambda row: row[:4])

    def _top_tails(self, pairs: dict, probabilities: bool, keep_all: bool, floor: float) -> list[tuple]:
        """The ``tails_per_query`` best tails per (document, head, relation) scoring at least
        ``floor`` (probability rankers only), every tail with ``keep_all``; ties by tail id."""
        by_question: dict[tuple[str, str, str], list] = {}
        for (doc, head, rel, tail), (v, q) in pairs.items():
            if probabilities and v < floor:
                continue
            by_question.setdefault((doc, head, rel), []).append((v, tail, q))
        kept = []
        for (doc, head, rel), rows in sorted(by_question.items()):
            rows.sort(key=lambda x: (-x[0], x[1]))
            top = rows if keep_all else rows[:self.cfg.tails_per_query]
            kept += [(doc, head, rel, tail, v, q) for v, tail, q in top]
        return kept

    def _one_relation(self, rows: list[tuple], cats: Callable[[str, str], str],
                      typed: dict[str, float] | None) -> tuple:
        """The row a pair keeps (``relation_choice``; module docstring). ``typed``: the relation
        typer's log P(type | pair), None when it has no answer (the model's best relation is kept,
        unless the type head answers: :func:`~graphmert.extract.pair_heads.blend`)."""
        def rank(row: tuple, choice: str) -> tuple:
            return self._relation_rank(row[2], row[4], frozenset((cats(row[0], row[1]), cats(row[0], row[3]))),
                                       choice)
        choice = self.cfg.relation_choice
        head = None if self._head_types is None or choice != "typer" else \
            self._head_types.get((rows[0][0], frozenset((rows[0][1], rows[0][3]))))
        typed = blend(typed, head, self.cfg.type_head_weight) if head is not None else typed
        if typed is None or choice not in TYPER_CHOICES:
            return max(rows, key=lambda row: rank(row, "score" if choice in TYPER_CHOICES else choice))
        if choice == "typer_score":
            return max(rows, key=lambda row: (row[4] * np.exp(typed.get(row[2], -np.inf)), rank(row, "score")))
        top = max(rows, key=lambda row: rank(row, "score"))       # its evidence and confidence stay
        doc, head, _, tail, v, q = top
        admitted = [r for r in self.relations if r in typed and self.schema.allows(r, cats(doc, head), cats(doc, tail))]
        if not admitted:
            return top
        relation = max(admitted, key=lambda r: (typed[r], self.prior.get(r, 0), _neg(r)))
        return (doc, head, relation, tail, v, q)

    def _typer_log_probabilities(self, keys: list[tuple[str, frozenset]], docs: dict[str, Document]
                                 ) -> dict[tuple[str, frozenset], dict[str, float] | None]:
        """The relation typer's answer per (document, unordered pair)."""
        typer = self._need_typer(f"extract.relation_choice {self.cfg.relation_choice!r}")
        return dict(zip(keys, typer.log_probabilities([(docs[doc], *sorted(pair)) for doc, pair in keys],
                                                      cache=self._typer_words)))

    def _related_only(self, kept: list[tuple], docs: dict[str, Document]) -> list[tuple]:
        """The rows whose pair the relation typer finds related with at least
        ``extract.typer_min_relation`` (pairs sharing no sentence stay); every row when that is 0."""
        floor = self.cfg.typer_min_relation
        if floor <= 0 or not kept:
            return kept
        typer = self._need_typer("extract.typer_min_relation")
        keys = list(dict.fromkeys((row[0], frozenset((row[1], row[3]))) for row in kept))
        p = dict(zip(keys, typer.relation_probabilities([(docs[doc], *sorted(pair)) for doc, pair in keys],
                                                        cache=self._typer_words)))
        out = [row for row in kept if (v := p[(row[0], frozenset((row[1], row[3])))]) is None or v >= floor]
        self.stats["dropped_by_typer_min_relation"] += len(kept) - len(out)
        return out

    def _need_typer(self, setting: str) -> RelationTyper:
        if self.typer is None:
            raise KGError(f"{setting} needs a fitted relation typer (extract.typer_files), and none was given")
        return self.typer

    def _relation_rank(self, relation: str, score: float, cats: frozenset[str], choice: str) -> tuple:
        """Sort key of a pair's relation under ``choice`` (score, prior, prior_only), ties last."""
        ties = (self.prior.get(relation, 0), _neg(relation))
        if choice == "score":
            return (score, *ties)
        pi = self.pair_prior(relation, cats)
        if choice == "prior":
            return (score * pi, *ties)
        return (pi, score, *ties)

    def triples(self, plans: list[_ChunkPlan], rows: list) -> list[Triple]:
        """Step 5: one Triple per selected row, with the evidence of its best question."""
        return [self._triple(plans[q.chunk], q, rel, tail, float(v)) for _, _, rel, tail, v, q in rows]

    # ------------------------------------------------------------------ helpers
    def _triple(self, plan: _ChunkPlan, q: PairQuery, relation: str, tail: str, score: float) -> Triple:
        c, doc, ents = plan.chunk, plan.doc, plan.entities
        h0, h1 = _char_span(c, q.root, q.end)
        nearest = min(ents.spans[tail], key=lambda s: (abs(s[0] - q.root), s[0]))
        t0, t1 = _char_span(c, nearest[0], nearest[1])
        s0, sentence = evidence_passage(doc, h0, t0, c)
        ev = Evidence(doc_id=doc.id, chunk_id=c.id, sentence=sentence, sentence_start=s0,
                      head_start=h0, head_end=h1, tail_start=t0, tail_end=t1, confidence=score)
        return Triple(head_id=_id(q.head), head_name=self._name(q.head, ents),
                      head_category=ents.categories[q.head],
                      relation=relation, tail_id=_id(tail), tail_name=self._name(tail, ents),
                      tail_category=ents.categories[tail], tail_source="mention", confidence=score,
                      confidence_mean=score, evidence_count=1, documents=[doc.id], evidence=[ev],
                      checkpoint_id=self.checkpoint_id, run_id=self.run_id)

    def _name(self, eid: str, ents: ChunkEntities) -> str:
        if eid in self.kg.nodes:
            return self.kg.name(eid)
        texts = Counter(t for _, _, t in ents.spans[eid])
        return min(texts, key=lambda t: (-texts[t], t))

    # ------------------------------------------------------------------ model answers (step 2)
    def model_scores(self, model: GraphMERT, plans: list[_ChunkPlan], how: str) -> list[np.ndarray]:
        """Per question (in plan order): P over its candidates from ``model`` — the candidate head
        (``how = "candidate"``) or the end-terminated MNM likelihood (``"likelihood"``)."""
        return self._answer_pass([model], plans, how, vectors=False)[0][0]

    @torch.inference_mode()
    def _answer_pass(self, models: list[GraphMERT], plans: list[_ChunkPlan], how: str, vectors: bool
                     ) -> tuple[list[list[np.ndarray]], list[PairSums]]:
        """One pass of ``models`` over the graphs of ``plans`` (:meth:`encoded`): per model, each
        question's answers as :meth:`model_scores` gives them and, with ``vectors``, its question
        vectors summed per document pair (:class:`~graphmert.extract.pair_heads.PairSums`, from the
        same states; the pass then runs without bf16, as the vectors' fit does)."""
        out: list[list[np.ndarray]] = [[] for _ in models]     # in unit order; put back in plan order below
        found: list[PairSums] = [PairSums(plans) for _ in models] if vectors else []
        units = []
        for block, batch, hiddens, cq in self.encoded(models, plans, by_length=True, bf16=not vectors):
            sizes = [len(q.candidates) for _, qs in block for q in qs]
            for k, (model, hidden) in enumerate(zip(models, hiddens)):
                if how in ("candidate", "margin"):
                    p = (model.candidate_head.probabilities(hidden, cq)[0] if how == "candidate"
                         else model.candidate_head.margins(hidden, cq))
                    out[k] += _split(p.float().cpu().numpy(), sizes)
                else:
                    out[k] += self._likelihood(model, hidden, batch, cq, block)
                if vectors:
                    found[k].add(model, block, batch, hidden, cq)
            units += block
        if found:                             # per model: the rows summed per pair, the sums copied
            self.stats["pair_vector_rows"] += found[0].rows
            self.stats["pair_vector_sums_copied"] += found[0].batch_pairs
        order = [id(q) for _, qs in units for q in qs]
        answers = []
        for per_model in out:
            by_question = dict(zip(order, per_model))
            answers.append([by_question[id(q)] for p in plans for q in p.queries])
        return answers, found

    def encoded(self, models: Sequence[GraphMERT], plans: list[_ChunkPlan], *, by_length: bool,
                bf16: bool = True) -> Iterator[tuple[list, Any, list[torch.Tensor], Any]]:
        """Each of ``models`` over the graphs of ``plans`` (:meth:`_graph_units`), ``extract.batch_size``
        graphs at a time, each graph built and collated once for every model: per batch, (block:
        [(plan, its questions in the graph)], the collated batch, per model hidden [B, L, H], the
        candidate query of :func:`candidate_query`). With ``by_length``, graphs of similar length
        share a batch: a packed graph is its chunk's roots plus K leaves per question, and a batch
        pads every graph to its longest (a third of the positions were padding in plan order on
        BioRED dev). With ``bf16`` on CUDA the forwards, and the caller's work on each batch, run
        under bf16 autocast."""
        for model in models:
            model.eval()
        device = next(models[0].parameters()).device
        units = [(p, qs) for p in plans for qs in self._graph_units(p)]
        if by_length:
            units.sort(key=lambda u: u[0].chunk.num_roots + self.K * len(u[1]))
        for start in range(0, len(units), self.cfg.batch_size):
            block = units[start:start + self.cfg.batch_size]
            graphs = [self._graph(p, qs) for p, qs in block]
            arrays = [layout_arrays(g, "packed") for g in graphs]
            batch = collate_graphs(graphs, "packed", arrays).to(device)
            L = batch.input_ids.shape[1]
            positions = [a.leaf_position for a in arrays]
            roots = [np.array([q.root for q in qs]) for _, qs in block]
            cq = candidate_query(graphs, positions, roots, L).to(device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16 and device.type == "cuda"):
                yield block, batch, [model(batch).hidden for model in models], cq            # [B, L, H] each
            self.stats["forwards"] += len(models)
            self.stats["graphs"] += len(graphs)

    @property
    def reads_pair_vectors(self) -> bool:
        """Whether the model rankers' decisions read the pair vectors (a pair head in use)."""
        return self.uses_type_head or (self.related_head is not None and self.cfg.related_head_weight > 0)

    def ensemble_scores(self, plans: list[_ChunkPlan], how: str, ranker: str) -> list[np.ndarray]:
        """:meth:`model_scores` of the trained model, averaged with its ensemble members' (if any),
        from one pass of every model over the graphs; when a pair head will read the pair vectors of
        these ``plans``, they come from the same pass (:meth:`pair_vectors`)."""
        models = [_need(self.model, ranker), *self.members]
        vectors = self.reads_pair_vectors and self._vectors[0] is not plans
        runs, found = self._answer_pass(models, plans, how, vectors=vectors)
        if vectors:
            self._vectors = (plans, pair_vectors(self, plans, found))
        return runs[0] if len(runs) == 1 else ragged_map(lambda *m: np.mean(np.stack(m), axis=0), *runs)

    def _graph_units(self, plan: _ChunkPlan) -> list[list[PairQuery]]:
        """The questions of one chunk per graph: one graph per relation (``pack_queries``), else one
        per question. Questions whose candidates all lie outside the scope (asked for a soft scope or
        the band only) get graphs of their own, so the other questions' graphs, and with the band
        their in-scope answers, are the hard scope's."""
        if not self.cfg.pack_queries:
            return [[q] for q in plan.queries]
        by_rel: dict[tuple[str, bool], list[PairQuery]] = {}
        for q in plan.queries:
            by_rel.setdefault((q.relation, bool(q.outside) and all(q.outside)), []).append(q)
        return [by_rel[r] for r in sorted(by_rel)]

    def _graph(self, plan: _ChunkPlan, questions: list[PairQuery]) -> LeafyChainGraph:
        """The chunk's roots with a masked K-leaf group on each question's head, and the entity
        table listing each group's candidates."""
        c, ents = plan.chunk, plan.entities
        g = LeafyChainGraph.from_roots(c.id, c.doc_id, c.input_ids, c.word_ids, self.R, self.K, self.sp["pad"])
        table = EntityTable.empty(self.R)
        table.ids, table.types, table.mentions = ents.table.ids, ents.table.types, ents.table.mentions
        table.counts, table.sentences = ents.table.counts, ents.table.sentences
        rows = []
        for q in questions:
            g.inject(q.root, [self.sp["mask"]] * self.K, self.relation_map[q.relation], q.end - q.root)
            table.head[q.root] = ents.index[q.head]
            rows += [(q.root, ents.index[e], 0) for e in q.candidates]
        table.candidates = np.array(rows, dtype=np.int64).reshape(-1, 3)
        g.entities = table
        return g

    def _likelihood(self, model: GraphMERT, hidden, batch, cq, block) -> list[np.ndarray]:
        """Per question: softmax over {none} ∪ candidates of log p(tail tokens, then [SEP]) at the
        group's leaves (the best of the candidate's surface forms in the chunk)."""
        K, end = self.K, self.sp["sep"]
        leaves = (cq.query_index.unsqueeze(1) + torch.arange(K, device=cq.query_index.device))  # [G, K]
        index = leaves.reshape(-1)
        logp = model.leaf_log_probs(hidden, batch, index, model.mlm_logits(hidden, index))
        logp = logp.view(len(cq.query_index), K, -1).cpu()                                  # [G, K, V]
        out, g = [], 0
        for plan, qs in block:
            for q in qs:
                lq = logp[g]
                g += 1
                none = float(lq[0, end])
                scores = [max((_form_logp(lq, f, end, K) for t in {x for _, _, x in plan.entities.spans[e]}
                               if (f := self.forms(t))), default=-1e9) for e in q.candidates]
                z = torch.softmax(torch.tensor([none] + scores), 0)[1:]
                out.append(z.numpy())
        return out

    def forms(self, text: str) -> tuple[int, ...]:
        """Token ids of a surface form (cached, up to :data:`FORM_CACHE` forms, then anew); () when
        longer than K or only [UNK]."""
        if text not in self._forms:
            if len(self._forms) >= FORM_CACHE:
                self._forms.clear()
            ids = tuple(self.tok.encode(text, add_special_tokens=False).ids)
            ok = 1 <= len(ids) <= self.K and any(i != self.sp["unk"] for i in ids)
            self._forms[text] = ids if ok else ()
        return self._forms[text]


def pool(model: list[np.ndarray], lexical: list[np.ndarray], weight: float) -> list[np.ndarray]:
    """The hybrid score p^(1−w) · q^w per candidate (module docstring, "Hybrid")."""
    return ragged_map(lambda p, q: np.power(p, 1.0 - weight) * np.power(q, weight), model, lexical)


def ragged_map(fn, *columns: list[np.ndarray]) -> list[np.ndarray]:
    """``[fn(a, b, …) for a, b, … in zip(*columns)]`` for an elementwise ``fn`` (rows of equal length
    across the columns): one call over the concatenated rows when each column holds a single dtype,
    which gives the same numbers (an element does not depend on its neighbours) without a NumPy call
    per question; row by row otherwise, as concatenating would cast a row to another dtype."""
    if not columns or not columns[0]:
        return []
    if any(len({a.dtype for a in col}) > 1 for col in columns):
        return [fn(*row) for row in zip(*columns)]
    return _split(fn(*(np.concatenate(col) for col in columns)), [len(a) for a in columns[0]])


def control_settings(cfg: ExtractConfig, ranker: str) -> tuple[int, float]:
    """(k, threshold) a ranker decides at: a control's own ``control_tails_per_query`` /
    ``control_min_confidence`` where the config names it, else ``tails_per_query`` /
    ``min_confidence``."""
    own = ranker in CONTROLS
    return (cfg.control_tails_per_query.get(ranker, cfg.tails_per_query) if own else cfg.tails_per_query,
            cfg.control_min_confidence.get(ranker, cfg.min_confidence) if own else cfg.min_confidence)


def check_control_settings(cfg: ExtractConfig) -> None:
    """The per-control settings name controls that take them: every k but ``candidates``'s (it keeps
    all), thresholds only for controls whose score is a probability (``untrained``, ``lexical``)."""
    for name in cfg.control_tails_per_query:
        if name not in CONTROLS or name == "candidates":
            raise KGError(f"extract.control_tails_per_query.{name}: "
                          + ("'candidates' keeps every candidate and takes no k" if name == "candidates"
                             else f"{name!r} is not a control; choose from {list(CONTROLS)}"))
    for name in cfg.control_min_confidence:
        if name not in CONTROLS or name not in PROBABILITY_RANKERS:
            raise KGError(f"extract.control_min_confidence.{name}: a threshold needs a control whose "
                          f"score is a probability; choose from "
                          f"{[c for c in CONTROLS if c in PROBABILITY_RANKERS]}")


def _category_pair_prior(kg: SeedKG, relations: Sequence[str]) -> Callable[[str, frozenset[str]], float]:
    """π(r | {category a, category b}) over ``relations``: the share of r among the seed triples
    between entities of those two categories (either direction), add-one smoothed, so an unseen
    category pair gives every relation the same share."""
    wanted = set(relations)
    counts: dict[frozenset[str], Counter] = {}
    for e in kg.edges:
        if e.predicate in wanted and e.subject in kg.nodes and e.object in kg.nodes:
            cats = frozenset((kg.category(e.subject), kg.category(e.object)))
            counts.setdefault(cats, Counter())[e.predicate] += 1

    def prior(relation: str, cats: frozenset[str]) -> float:
        c = counts.get(cats, Counter())
        return (c[relation] + 1) / (sum(c.values()) + len(wanted))
    return prior


def _neg(s: str) -> tuple:
    return tuple(-ord(c) for c in s)


def _id(entity: str) -> str:
    """A triple's id of an entity: its id, or empty for a text node (its name says what it is)."""
    return "" if is_text_entity(entity) else entity


def _char_span(chunk: Chunk, a: int, b: int) -> tuple[int, int]:
    """Document character span of roots [a, b)."""
    return int(chunk.offsets[a][0]), int(chunk.offsets[b - 1][1])


def _split(values: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(values, np.cumsum(sizes)[:-1]) if sizes else []


def _form_logp(lq: torch.Tensor, form: tuple[int, ...], end: int, K: int) -> float:
    """log p of ``form`` in slots 0..t−1 and of the end token in slot t (when t < K)."""
    t = len(form)
    v = float(lq[torch.arange(t), torch.tensor(form)].sum())
    return v + (float(lq[t, end]) if t < K else 0.0)


# ---------------------------------------------------------------------- rankers
@RANKERS.register("model")
def _rank_model(ex: PairExtractor, plans: list[_ChunkPlan], queries: list[PairQuery]) -> list[np.ndarray]:
    """P(candidate) from the trained model's candidate head (the ensemble's mean)."""
    return ex.ensemble_scores(plans, "candidate", "model")


@RANKERS.register("margin")
def _rank_margin(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """σ(s(candidate) − s(none)) from the trained model's candidate head (the ensemble's mean)."""
    return ex.ensemble_scores(plans, "margin", "margin")


@RANKERS.register("likelihood")
def _rank_likelihood(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """P(candidate) from the trained model's MNM likelihood of the candidate's tokens (the ensemble's
    mean)."""
    return ex.ensemble_scores(plans, "likelihood", "likelihood")


@RANKERS.register("untrained")
def _rank_untrained(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """The candidate head of a freshly initialised model of the same configuration."""
    return ex.model_scores(_need(ex.untrained, "untrained"), plans, "candidate")


@RANKERS.register("lexical")
def _rank_lexical(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """The relation typer's probability that the words relate the head and the candidate: the
    supervised word-feature baseline (module docstring, "Controls")."""
    return ex.lexical_scores(plans, queries)


@RANKERS.register("lexical_document")
def _rank_lexical_document(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """The lexical + document regression's probability that the document relates the head and the
    candidate (:mod:`graphmert.extract.lexical_document`)."""
    if ex.stack is None:
        raise KGError("extract ranker 'lexical_document' needs its fitted regression (the extract stage "
                      "fits it on extract.typer_files), and none was given")
    near = ex.answers(plans, queries, "nearest", pooled=False)
    return ex.stack.probabilities(candidate_features(plans, queries, ex.lexical_scores(plans, queries), near))


@RANKERS.register("candidates")
def _rank_candidates(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """Every candidate scores 1: all are kept (up to ``tails_per_query``, ties by id)."""
    return [np.ones(len(q.candidates)) for q in queries]


@RANKERS.register("random")
def _rank_random(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """A uniform score per (document, head, relation, candidate), fixed by a hash: reproducible."""
    def u(*key: str) -> float:
        return int.from_bytes(hashlib.sha256("\x1f".join(key).encode()).digest()[:8], "big") / 2.0**64
    return [np.array([u(plans[q.chunk].doc.id, q.head, q.relation, c) for c in q.candidates]) for q in queries]


@RANKERS.register("nearest")
def _rank_nearest(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """1 / (1 + roots between the head and the candidate's nearest mention)."""
    return [np.array([1.0 / (1 + min(abs(a - q.root) for a, _, _ in plans[q.chunk].entities.spans[c]))
                      for c in q.candidates]) for q in queries]


@RANKERS.register("salience")
def _rank_salience(ex: PairExtractor, plans, queries) -> list[np.ndarray]:
    """How often the document mentions the candidate."""
    counts = {p.doc.id: Counter(i for m in p.doc.mentions for i in m.ids) for p in plans}
    return [np.array([float(counts[plans[q.chunk].doc.id][c]) for c in q.candidates]) for q in queries]


def _need(model: GraphMERT | None, ranker: str) -> GraphMERT:
    if model is None:
        raise KGError(f"extract ranker {ranker!r} needs a model, and none was given")
    if model.candidate_head is None and ranker != "likelihood":
        raise KGError(f"extract ranker {ranker!r}: the model has no candidate head (model.candidate_head)")
    return model
