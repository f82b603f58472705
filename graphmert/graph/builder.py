"""The graphs stage as one library function: chunks + seed KG + tokenizer → leafy chain graphs + report.

    graphs, report = build_graphs(chunks, kg, tokenizer, cfg.kg, cfg.graph)

Steps (each a function below):

1. check tokenizer and chunks agree (special tokens exist; every chunk is ``[CLS] … [SEP]`` of at most
   R = ``graph.num_roots`` tokens);
2. link heads (:func:`graphmert.kg.linking.link_heads`: annotated mentions with KG ids, or lexicon
   matches for chunks without annotations);
3. candidates: every (chunk, head start, seed triple whose subject is the head's node); a head start
   reached by several mentions keeps the longest mention per triple;
4. tails: each candidate tail's name tokenised with ``add_special_tokens=False``; tails that are only
   ``[UNK]`` are dropped, and more than ``kg.max_unknown_tail_fraction`` of them is a tokenizer/KG
   mismatch error;
5. scores from the ``kg.scorer`` scorer fitted on the chunk texts;
6. selection (:func:`graphmert.kg.injection.select_injections`, DESIGN §7);
7. one graph per chunk with the selected tails as leaves.

The selection rules are global (each triple only in its best chunk; relation minimums), so this
function sees all chunks at once. The report holds the manifest counts ``graphs``,
``chunks_with_leaves``, ``injections``, ``injections_per_relation``, ``tokens_dense``, ``tokens_packed``,
plus ``heads``, ``tails``, ``injection`` (candidates and drops per rule and relation, score
distributions) and ``relation_map``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from graphmert.config import GraphConfig, KGConfig
from graphmert.corpus.chunk import Chunk, ChunkMention
from graphmert.kg.graph import KGError, SeedKG
from graphmert.kg.digest import CandidateDigest
from graphmert.kg.injection import Candidates
from graphmert.kg.lexicon import Lexicon, LexiconMatcher
from graphmert.kg.linking import link_heads
from graphmert.kg.scoring import SCORERS, triple_text
from graphmert.graph.layout import Injection, LeafyChainGraph

__all__ = ["build_graphs", "InjectionError", "check_inputs", "find_candidates", "tokenize_tails",
           "score_candidates", "select_candidates", "SelectedInjections", "ProgressFn"]

ProgressFn = Callable[[str, int, int], None]   # (phase, done, total)
_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class InjectionError(KGError):
    """Injection produced nothing usable (no heads, or every candidate filtered out)."""


def check_inputs(chunks: Sequence[Chunk], tokenizer, graph_cfg: GraphConfig) -> dict[str, int]:
    """Special-token ids of ``tokenizer``; raise :class:`KGError` when chunks do not fit it or R."""
    vocab = tokenizer.get_vocab()
    missing = [t for t in _SPECIALS if t not in vocab]
    if missing:
        raise KGError(f"tokenizer lacks special tokens {missing}; required {list(_SPECIALS)}")
    sp = {t.strip("[]").lower(): vocab[t] for t in _SPECIALS}
    R, V = graph_cfg.num_roots, tokenizer.get_vocab_size()
    for c in chunks:
        ids = c.input_ids
        if len(ids) > R:
            raise KGError(f"chunk {c.id}: {len(ids)} root tokens exceed graph.num_roots = {R}")
        if len(ids) < 2 or ids[0] != sp["cls"] or ids[-1] != sp["sep"]:
            raise KGError(f"chunk {c.id}: does not start with [CLS] ({sp['cls']}) and end with [SEP] "
                          f"({sp['sep']}) of this tokenizer; chunks and tokenizer do not match")
        if max(ids) >= V or len(c.offsets) != len(ids):
            raise KGError(f"chunk {c.id}: token ids beyond the tokenizer's vocabulary ({V}) or offsets "
                          f"of the wrong length; chunks and tokenizer do not match")
    return sp


def _link_all(chunks: Sequence[Chunk], kg: SeedKG, kg_cfg: KGConfig,
              progress: ProgressFn | None) -> tuple[list[list[ChunkMention]], Counter]:
    need_lexicon = kg_cfg.lexicon_matching and any(not c.mentions and c.text for c in chunks)
    matcher = LexiconMatcher(Lexicon.from_kg(kg), kg_cfg.lexicon_min_chars) if need_lexicon else None
    stats: Counter = Counter()
    heads = []
    for k, c in enumerate(chunks):
        hs, how = link_heads(c, kg, matcher)
        ok = [m for m in hs if 1 <= m.token_start < m.token_end <= c.num_roots - 1]
        stats[f"chunks_{how}"] += 1
        stats["head_mentions"] += len(ok)
        stats["head_mentions_out_of_range"] += len(hs) - len(ok)
        heads.append(ok)
        if progress and (k + 1) % 256 == 0:
            progress("link", k + 1, len(chunks))
    return heads, stats


def find_candidates(heads: Sequence[Sequence[ChunkMention]], kg: SeedKG) -> np.ndarray:
    """[P, 4] int64 rows (chunk, head start, head length, triple id), sorted by chunk then head start.

    A head start reached by several mentions keeps, per triple, the longest mention.
    """
    cache: dict[str, np.ndarray] = {}
    blocks = []
    for ci, mentions in enumerate(heads):
        parts = []
        for m in sorted(mentions, key=lambda m: (m.token_start, -(m.token_end - m.token_start))):
            for node in dict.fromkeys(m.ids):
                t = cache.get(node)
                if t is None:
                    t = cache[node] = np.asarray(kg.edges_from(node), dtype=np.int64)
                if len(t):
                    parts.append(np.stack([np.full(len(t), ci), np.full(len(t), m.token_start),
                                           np.full(len(t), m.token_end - m.token_start), t], axis=1))
        if parts:
            rows = np.concatenate(parts)
            key = rows[:, 1] * max(len(kg.edges), 1) + rows[:, 3]
            _, first = np.unique(key, return_index=True)     # first = longest mention at that start
            blocks.append(rows[np.sort(first)])
    if not blocks:
        return np.zeros((0, 4), dtype=np.int64)
    out = np.concatenate(blocks)
    return out[np.lexsort((out[:, 3], out[:, 1], out[:, 0]))]


def tokenize_tails(kg: SeedKG, objects: Iterable[str], tokenizer, unk_id: int) -> dict[str, list[int]]:
    """Tail node id → token ids of its name (``add_special_tokens=False``); ``[]`` if only ``[UNK]``."""
    objects = sorted(set(objects))
    encs = tokenizer.encode_batch([kg.name(o) for o in objects], add_special_tokens=False)
    out = {}
    for o, e in zip(objects, encs):
        ids = list(e.ids)
        out[o] = [] if all(i == unk_id for i in ids) else ids
    return out


@dataclass
class SelectedInjections:
    candidates: Candidates           # the digest's best row of each distinct triple
    kept: np.ndarray                 # indices into candidates, by chunk, head and triple
    tails: dict[str, list[int]]      # tail node id → token ids ([] when only [UNK])
    unknown: list[str]               # tail node ids whose names are only [UNK]
    report: dict                     # injection_report(...) as over every candidate row
    heads_with_triples: int          # distinct (chunk, head) with a candidate

    def summary(self, kg: SeedKG, head_stats: Counter) -> dict:
        """The graphs report's fields that do not depend on the assembled graphs."""
        per_rel = Counter(kg.relations[int(r)] for r in self.candidates.relation[self.kept])
        return {
            "injections": int(len(self.kept)),
            "injections_per_relation": dict(sorted(per_rel.items())),
            "heads": dict(sorted(head_stats.items())) | {"heads_with_triples": self.heads_with_triples},
            "tails": {"distinct": len(self.tails), "only_unknown_tokens": len(self.unknown),
                      "examples_only_unknown": [kg.name(o) for o in self.unknown[:10]]},
            "injection": self.report,
            "relation_map": dict(kg.relation_map),
        }


def score_candidates(rows: np.ndarray, kg: SeedKG, scorer, chunk_texts: Sequence[str]) -> np.ndarray:
    """Scores [P] of candidate ``rows`` [P, 4] (step 5): each triple's text against its chunk by a
    ``kg.scorer`` ``scorer`` with its vocabulary fitted; ``rows[:, 0]`` indexes ``chunk_texts``."""
    if not len(rows):
        return np.zeros(0, dtype=np.float64)
    uniq, inv = np.unique(rows[:, 3], return_inverse=True)
    edges = [kg.edges[t] for t in uniq]
    texts = [triple_text(kg.name(e.subject), e.predicate, kg.name(e.object)) for e in edges]
    return scorer.for_chunks(chunk_texts).score(texts, inv, rows[:, 0])


def select_candidates(digest: CandidateDigest, kg: SeedKG, tokenizer, unk_id: int, kg_cfg: KGConfig,
                      num_leaves: int) -> SelectedInjections:
    """Steps 4 and 6 of the module docstring over the candidates' ``digest`` (its α ``kg.alpha``):
    tokenise the tails (tokenizer/KG mismatch check) and select injections (DESIGN §7).

    Raises :class:`KGError` on a tokenizer/KG mismatch and :class:`InjectionError` when nothing is
    selected. Shared by :func:`build_graphs` and the sharded graphs stage of ``pipelines``.
    """
    edges = [kg.edges[t] for t in digest.triple]
    tails = tokenize_tails(kg, (e.object for e in edges), tokenizer, unk_id)
    unknown = sorted(o for o, ids in tails.items() if not ids)
    if len(unknown) > kg_cfg.max_unknown_tail_fraction * len(tails):
        raise KGError(f"tokenizer/KG mismatch: {len(unknown)} of {len(tails)} candidate tail names "
                      f"tokenise entirely to [UNK] (e.g. {[kg.name(o) for o in unknown[:5]]}); "
                      f"use a tokenizer trained on this corpus, or raise kg.max_unknown_tail_fraction")
    best = digest.best_candidates(
        relation=np.array([kg.relation_map[e.predicate] for e in edges], dtype=np.int64),
        tail_length=np.array([len(tails[e.object]) for e in edges], dtype=np.int64))
    sel = digest.select(best, len(kg.relations), min_relation_count=kg_cfg.min_relation_count,
                        score_band=kg_cfg.score_band, max_tail_length=num_leaves)
    report = digest.report(best, sel, kg.relations)
    if len(sel.kept) == 0:
        d = {k: v for k, v in report["dropped"].items() if v}
        raise InjectionError(
            f"no seed triple was injected: {report['candidates']} candidates, dropped {d}; candidate scores "
            f"{report['best_score_per_triple_quantiles']}. Lower kg.alpha (now {kg_cfg.alpha}) or "
            f"kg.min_relation_count (now {kg_cfg.min_relation_count})")
    kept = sel.kept[np.lexsort((best.triple[sel.kept], best.head[sel.kept], best.chunk[sel.kept]))]
    return SelectedInjections(best, kept, tails, unknown, report, digest.heads)


def build_graphs(chunks: Iterable[Chunk], kg: SeedKG, tokenizer, kg_cfg: KGConfig,
                 graph_cfg: GraphConfig, progress: ProgressFn | None = None
                 ) -> tuple[list[LeafyChainGraph], dict]:
    """One leafy chain graph per chunk, with seed-KG tails injected (module docstring)."""
    chunks = list(chunks)
    if not chunks:
        raise KGError("build_graphs: no chunks")
    sp = check_inputs(chunks, tokenizer, graph_cfg)
    R, K = graph_cfg.num_roots, graph_cfg.num_leaves
    scorer_cls = SCORERS.get(kg_cfg.scorer)

    heads, head_stats = _link_all(chunks, kg, kg_cfg, progress)
    rows = find_candidates(heads, kg)
    if len(rows) == 0:
        raise InjectionError(
            f"no chunk has a head linked to a seed-KG node with triples ({len(chunks)} chunks, "
            f"{head_stats['head_mentions']} head mentions); do the corpus's entity ids use the KG's id "
            f"space (e.g. MESH:D003924, NCBIGene:3630), or is kg.lexicon_matching off?")
    if progress:
        progress("score", 0, len(rows))
    texts = [c.text or tokenizer.decode(c.input_ids[1:-1]) for c in chunks]
    scores = score_candidates(rows, kg, scorer_cls().fit_vocabulary(texts), texts)
    sel = select_candidates(CandidateDigest.of(rows, scores, kg_cfg.alpha), kg, tokenizer, sp["unk"], kg_cfg, K)
    if progress:
        progress("score", len(rows), len(rows))
    cands, tails, kept = sel.candidates, sel.tails, sel.kept

    graphs = [LeafyChainGraph.from_roots(c.id, c.doc_id, c.input_ids, c.word_ids, R, K, sp["pad"],
                                         documents=c.documents) for c in chunks]
    for p in kept:
        e = kg.edges[int(cands.triple[p])]
        g = graphs[int(cands.chunk[p])]
        root, m = int(cands.head[p]), int(cands.head_length[p])
        g.inject(root, tails[e.object], int(cands.relation[p]), m,
                 Injection(root, m, e.subject, e.predicate, e.object, round(float(cands.score[p]), 6)))
    if progress:
        progress("graphs", len(graphs), len(graphs))

    report = {
        "graphs": len(graphs),
        "chunks_with_leaves": sum(1 for g in graphs if g.num_filled_leaves),
        "tokens_dense": len(graphs) * R * (1 + K),
        "tokens_packed": sum(g.num_roots + g.num_filled_leaves for g in graphs),
        **sel.summary(kg, head_stats),
    }
    return graphs, report
