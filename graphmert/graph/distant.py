"""Distant supervision: query groups where the text itself can answer them (``kg.injection =
cooccurrence``).

The paper's injection (:mod:`graphmert.kg.injection`, :mod:`graphmert.graph.builder`) puts each seed triple into the one chunk whose
text is most similar to it, tail or no tail in sight; a leaf then rarely sits in text that states
it. Here a seed triple (a, r, b) becomes a leaf only in chunks that mention *both* a and b, so the
context can predict it, and the chunk's other entities are the alternatives the model learns to
rule out. Per chunk (mentions with ids, as annotated or linked):

1. entities: every id of every mention (:class:`~graphmert.graph.layout.EntityTable`), with the
   Biolink category of its mentions (the seed KG's when the mention type is unknown);
2. heads: the longest mention per start root whose first id is a seed-KG node;
3. the questions of head entity a, one per relation r whose schema domain admits a's category:

   * if the chunk's document is annotated by a relation corpus (:class:`AnnotatedDocument`) that
     covers r: the gold tails are the document's r-partners of a mentioned in the chunk; none is an
     answer too ("no r-tail here") — a known negative, because such corpora annotate exhaustively;
   * otherwise: the seed KG's r-tails of a mentioned in the chunk, if any (absence proves nothing);

4. a's head mentions take the questions in turn, those with tails first (each list in a shuffle
   seeded by the chunk id): mention j asks question j mod Q, and shows tail ⌊j / Q⌋ mod T — the
   surface form of that tail nearest to the head, as leaves (a tail longer than K tokens, or all
   ``[UNK]``, is not shown: that question is skipped);
5. every group lists its candidates: the chunk's entities whose category the relation admits after
   a's, a itself excluded, each marked gold or not; with ``kg.candidate_scope`` only those within
   that scope of the head's root (:mod:`graphmert.graph.scope`), as extraction will ask. A question
   whose gold tails all lie outside keeps its leaves (the masked-leaf loss still reads them) and
   becomes a "none" question in a relation-annotated document (none of the sentence's entities is
   a tail); elsewhere it lists no candidates (absence proves nothing).

Relations with fewer than ``kg.min_relation_count`` seed triples ask nothing (as the paper drops
rare relations). Everything is a function of the chunk, the seed KG and the config, so chunks are
independent (one Dask task per chunk shard).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from graphmert.corpus.chunk import Chunk
from graphmert.graph.layout import EntityTable, LeafyChainGraph
from graphmert.graph.scope import ScopeNames, in_scope, sentence_keys
from graphmert.kg.graph import SeedKG
from graphmert.kg.schema import RelationSchema, entity_type_id, mention_category

__all__ = ["DistantSupervision", "Question", "ChunkEntities", "chunk_entities", "document_counts"]


@dataclass
class ChunkEntities:
    """A chunk's entities (:class:`EntityTable` rows), their mentions and categories, and its heads:
    the longest mention with an id per start root (extraction asks every head; training only those
    that are seed-KG nodes)."""

    table: EntityTable
    index: dict[str, int]                              # entity id → row of the table
    spans: dict[str, list[tuple[int, int, str]]]       # entity id → its mentions (roots, text)
    heads: dict[int, tuple[int, str]]                  # head root → (end root, entity id)
    categories: dict[str, str]                         # entity id → Biolink category


def chunk_entities(chunk: Chunk, kg: SeedKG, R: int, doc_counts: Mapping[str, int] | None = None) -> ChunkEntities:
    """The entity table of one chunk: every id of every mention that lies between ``[CLS]`` and
    ``[SEP]``; an entity's category is the most frequent Biolink category of its mentions' types
    (ties: the smallest name), else the seed KG's; ``doc_counts`` (entity id → mentions in the whole
    document, :func:`document_counts`) become the table's ``counts``."""
    mentions = [m for m in chunk.mentions if m.ids and 1 <= m.token_start < m.token_end <= chunk.num_roots - 1]
    index: dict[str, int] = {}
    kinds: dict[str, Counter] = defaultdict(Counter)
    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    rows, heads = [], {}
    for m in mentions:
        for eid in m.ids:
            k = index.setdefault(eid, len(index))
            rows.append((m.token_start, m.token_end, k))
            kinds[eid][mention_category(m.type)] += 1
            spans[eid].append((m.token_start, m.token_end, m.text))
        old = heads.get(m.token_start)
        if old is None or m.token_end > old[0]:
            heads[m.token_start] = (m.token_end, m.ids[0])
    categories = {e: _category(e, kinds[e], kg) for e in index}
    table = EntityTable.empty(R)
    table.ids = list(index)
    table.types = np.array([entity_type_id(categories[e]) for e in index], dtype=np.int64)
    table.mentions = np.array(rows, dtype=np.int64).reshape(-1, 3)
    if doc_counts is not None:
        table.counts = np.array([max(doc_counts.get(e, 0), 1) for e in index], dtype=np.int64)
    table.sentences = sentence_keys(chunk)
    return ChunkEntities(table, index, spans, heads, categories)


def document_counts(chunks: Iterable[Chunk]) -> dict[str, Counter]:
    """Document id → (entity id → its distinct mentions over the document's chunks): overlapping
    windows hold some mentions twice, so mentions count once per character span."""
    seen: dict[str, dict[str, set[tuple[int, int]]]] = defaultdict(lambda: defaultdict(set))
    for c in chunks:
        for m in c.mentions:
            for eid in m.ids:
                seen[m.doc_id or c.doc_id][eid].add((m.char_start, m.char_end))
    return {d: Counter({e: len(s) for e, s in ents.items()}) for d, ents in seen.items()}


def _category(eid: str, kinds: Counter, kg: SeedKG) -> str:
    named = {k: n for k, n in kinds.items() if k}
    if named:
        return min(named, key=lambda k: (-named[k], k))
    return kg.category(eid) if eid in kg.nodes else ""


@dataclass(frozen=True)
class Question:
    """One query group: head entity a asks relation r; ``tails`` are its gold answers (may be empty)."""

    head: str
    relation: str
    tails: tuple[str, ...]


class DistantSupervision:
    """Builds the query groups and entity table of each chunk (module docstring).

    Args:
        kg: the seed KG (with ``annotated`` documents from ``kg.relation_files``).
        schema: the relation schema (domains, and the candidates a relation admits).
        tokenizer: the run's tokenizer (tails are shown as their surface tokens).
        num_leaves: K.
        min_relation_count: relations with fewer seed triples ask nothing.
        negatives: ask annotated documents' questions that have no tail in the chunk.
        scopes: the candidate scope of each category pair (``kg.candidate_scope``); None: the chunk.
    """

    def __init__(self, kg: SeedKG, schema: RelationSchema, tokenizer, num_leaves: int,
                 min_relation_count: int = 0, negatives: bool = True,
                 scopes: ScopeNames | None = None) -> None:
        self.kg, self.schema, self.tok, self.K = kg, schema, tokenizer, num_leaves
        self.negatives = negatives
        self.scopes = None if scopes is None or scopes.everywhere else scopes.check(schema)
        counts = kg.relation_counts()
        self.relations = [r for r in schema.relations if counts.get(r, 0) >= min_relation_count]
        self._tokens: dict[str, tuple[int, ...]] = {}
        self.unk = tokenizer.token_to_id("[UNK]")

    def graph(self, chunk: Chunk, R: int, pad_id: int, stats: Counter,
              doc_counts: Mapping[str, int] | None = None) -> LeafyChainGraph:
        """The chunk's leafy chain graph with its query groups and entity table (``doc_counts``: the
        document's mention counts, :func:`document_counts`)."""
        g = LeafyChainGraph.from_roots(chunk.id, chunk.doc_id, chunk.input_ids, chunk.word_ids, R, self.K,
                                       pad_id, documents=getattr(chunk, "documents", None))
        ents = chunk_entities(chunk, self.kg, R, doc_counts)
        g.entities = ents.table
        rng = random.Random(int.from_bytes(hashlib.sha256(chunk.id.encode()).digest()[:8], "big"))
        by_entity: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for root, (end, eid) in sorted(ents.heads.items()):
            if eid in self.kg.nodes:                 # only seed-KG nodes have seed triples
                by_entity[eid].append((root, end))
        for eid, mentions in by_entity.items():
            questions = self._questions(chunk.doc_id, eid, ents, rng)
            for j, (root, end) in enumerate(mentions):
                if questions:
                    self._ask(g, chunk, root, end - root, questions[j % len(questions)],
                              j // len(questions), ents, stats)
        stats["chunks_with_groups"] += bool((g.relation_ids >= 0).any())
        return g

    # ------------------------------------------------------------------ steps
    def _questions(self, doc_id: str, head: str, ents: ChunkEntities,
                   rng: random.Random) -> list[Question]:
        """Head ``head``'s questions in this chunk, those with tails first (module docstring)."""
        cat, index = ents.categories[head], ents.index
        ann = self.kg.annotated.get(doc_id)
        covered = self._annotated_types(doc_id)
        tails: dict[str, set[str]] = defaultdict(set)
        if ann is not None:                  # the relations the document annotates: its own tails
            for s, r, o in ann.triples:
                if s == head and r in covered and o in index and o != head:
                    tails[r].add(o)
        for j in self.kg.edges_from(head):   # every other relation: the seed KG's tails
            e = self.kg.edges[j]
            if e.predicate not in covered and e.object in index and e.object != head:
                tails[e.predicate].add(e.object)
        with_tails, without = [], []
        for r in self.relations:
            if cat not in self.schema.domain(r):
                continue
            if tails.get(r):
                with_tails.append(Question(head, r, tuple(sorted(tails[r]))))
            elif ann is not None and r in ann.types and self.negatives:
                without.append(Question(head, r, ()))
        rng.shuffle(with_tails)
        rng.shuffle(without)
        return with_tails + without

    def _ask(self, g: LeafyChainGraph, chunk: Chunk, root: int, length: int, q: Question, turn: int,
             ents: ChunkEntities, stats: Counter) -> None:
        """Hang question ``q`` on ``root``: its tail's tokens (turn-th tail), its candidates."""
        tokens: tuple[int, ...] = ()
        tail = -1
        index, cats = ents.index, ents.categories
        if q.tails:
            name = q.tails[turn % len(q.tails)]
            tokens = self._surface(ents.spans[name], root)
            if not tokens:
                stats["tails_not_shown"] += 1
                return
            tail = index[name]
        e = g.entities
        g.inject(root, list(tokens), self.kg.relation_map[q.relation], length, allow_empty=True)
        e.head[root], e.tail[root] = index[q.head], tail
        rows = [(root, index[c], c in q.tails) for c in e.ids
                if c != q.head and self.schema.allows(q.relation, cats[q.head], cats[c])]
        rows = self._in_scope(rows, chunk, root, q, ents, stats)
        e.candidates = np.concatenate([e.candidates, np.array(rows, dtype=np.int64).reshape(-1, 3)])
        stats["groups"] += 1
        stats["groups_with_tail" if q.tails else "groups_without_tail"] += 1
        stats[f"{'relation' if q.tails else 'none'}:{q.relation}"] += 1

    def _in_scope(self, rows: list[tuple[int, int, bool]], chunk: Chunk, root: int, q: Question,
                  ents: ChunkEntities, stats: Counter) -> list[tuple[int, int, bool]]:
        """The candidate rows within the scope of the head at ``root`` (module docstring, step 5)."""
        if self.scopes is None:
            return rows
        cats, ids = ents.categories, ents.table.ids
        keys = ents.table.sentences
        kept = [r for r in rows if any(
            in_scope(self.scopes.name(cats[q.head], cats[ids[r[1]]]), chunk, keys, root, (a, b))
            for a, b, _ in ents.spans[ids[r[1]]])]
        stats["candidates_out_of_scope"] += len(rows) - len(kept)
        if any(r[2] for r in rows) and not any(r[2] for r in kept):
            stats["groups_tails_out_of_scope"] += 1
            if q.relation not in self._annotated_types(chunk.doc_id):
                return []                                # the seed KG's: absence proves nothing
        return kept

    def _annotated_types(self, doc_id: str) -> frozenset:
        """The relation types ``doc_id``'s relation corpus annotates exhaustively (none: not annotated)."""
        ann = self.kg.annotated.get(doc_id)
        return ann.types if ann is not None else frozenset()

    def _surface(self, spans: Sequence[tuple[int, int, str]], root: int) -> tuple[int, ...]:
        """Tokens of the tail's surface form nearest to ``root``; () when too long or only [UNK]."""
        _, _, text = min(spans, key=lambda s: (abs(s[0] - root), s[0]))
        if text not in self._tokens:
            ids = tuple(self.tok.encode(text, add_special_tokens=False).ids)
            ok = 1 <= len(ids) <= self.K and any(i != self.unk for i in ids)
            self._tokens[text] = ids if ok else ()
        return self._tokens[text]
