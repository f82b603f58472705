"""Graph stage: chunks + seed KG → leafy chain graphs (DESIGN §4, §7), shard-parallel on Dask.

The same computation as :func:`graphmert.graph.builder.build_graphs` (tests pin the equality), cut
into the parts that are per chunk and the part that is global:

1. driver: the seed KG; the ``kg.scorer`` vocabulary and IDF, from document frequencies that one
   ``vocabulary`` task per chunk shard counts and the driver sums (it analyses no text itself); the
   lexicon matcher when some chunk has no annotations (all sent once to every worker);
2. ``link`` — one task per chunk shard: check chunks against the tokenizer, link heads, find the
   candidate (chunk, head, seed triple) rows and score them, and write their digest (at most one row
   per distinct triple and the counts the selection's report needs: :mod:`graphmert.kg.digest`) →
   ``RUN/work/graphs/link-*.npz``;
3. driver: the digests folded one at a time, so it holds at most one candidate per seed triple,
   however large the corpus; tails, the global selection (each triple in its best chunk, relation
   minimums) and the injection report;
4. ``graphs`` — one task per ``graph.shard_size`` consecutive chunks: build the graphs, inject the
   selected tails, write a graph shard.

An interrupted stage reruns only the link and graph shards that had not finished.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from graphmert.config import Config, GraphConfig
from graphmert.corpus.chunk import read_chunks
from graphmert.corpus.tokenizer import load_tokenizer
from graphmert.errors import noting
from graphmert.graph.builder import (InjectionError, check_inputs, find_candidates, score_candidates,
                                     select_candidates)
from graphmert.graph.distant import DistantSupervision, document_counts
from graphmert.graph.scope import ScopeNames
from graphmert.graph.io import write_graphs
from graphmert.graph.layout import Injection, LeafyChainGraph
from graphmert.io import atomic_write_json
from graphmert.kg.digest import CandidateDigest
from graphmert.kg.graph import KGError, SeedKG, save_relation_map
from graphmert.kg.lexicon import Lexicon, LexiconMatcher
from graphmert.kg.linking import link_heads
from graphmert.kg.loaders import load_kg
from graphmert.kg.schema import RelationSchema
from pipelines.holdout import held_out_documents
from pipelines.stage import Stage, StageContext
from pipelines.stages.vocabulary import chunk_columns, fitted_scorer, scorer_text

__all__ = ["GRAPHS", "LinkInputs", "link_shard", "assemble_shard"]


@dataclass
class LinkInputs:
    """What every ``link`` task shares (sent once per worker)."""

    kg: SeedKG
    matcher: LexiconMatcher | None
    scorer: Any                    # a kg.scorer with its vocabulary (each task vectorises its shard)
    tokenizer: Any
    graph: GraphConfig
    alpha: float | None                 # kg.alpha, which the digests count against
    no_leaves: frozenset = frozenset()  # corpus documents that extraction reads from extract.paths


def link_shard(item: tuple[str, int], shared: LinkInputs, path: Path) -> dict:
    """Shard task: heads and scored candidates of one chunk shard.

    ``item`` is (chunk shard path, index of its first chunk among all chunks). Writes ``rows``
    ([P, 4] int64: global chunk index, head start, head length, triple id; as
    :func:`~graphmert.graph.builder.find_candidates`) and ``scores`` ([P] float64) to an ``.npz``.
    """
    chunk_path, offset = item
    chunks = list(read_chunks(chunk_path))
    check_inputs(chunks, shared.tokenizer, shared.graph)
    stats: Counter = Counter()
    heads = []
    for c in chunks:
        if not shared.no_leaves.isdisjoint(c.documents):     # any document of a concatenated chunk
            stats["chunks_held_out"] += 1
            heads.append([])
            continue
        with noting(f"chunk {c.id}"):
            hs, how = link_heads(c, shared.kg, shared.matcher)
        ok = [m for m in hs if 1 <= m.token_start < m.token_end <= c.num_roots - 1]
        stats[f"chunks_{how}"] += 1
        stats["head_mentions"] += len(ok)
        stats["head_mentions_out_of_range"] += len(hs) - len(ok)
        heads.append(ok)
    rows = find_candidates(heads, shared.kg)                                # [P, 4], chunk in shard
    scores = score_candidates(rows, shared.kg, shared.scorer,
                              [scorer_text(c.text, c.input_ids, shared.tokenizer) for c in chunks])
    rows[:, 0] += offset                                                    # global chunk index
    CandidateDigest.of(rows, scores, shared.alpha).save(path)
    return {"chunks": len(chunks), "candidates": int(len(rows)), **dict(sorted(stats.items()))}


def assemble_shard(item: tuple[list[tuple[str, int, int]], list[tuple]], shared: tuple[int, int, int],
                   path: Path) -> dict:
    """Shard task: graphs of consecutive chunks with their selected injections → a graph shard.

    ``item`` is (slices ``(chunk shard, first, end)``, injections ``(chunk index in this shard, root,
    tail token ids, relation id, head length, Injection)`` in selection order); ``shared`` is
    (R, K, pad id).
    """
    slices, injections = item
    R, K, pad = shared
    rows = [r for p, lo, hi in slices
            for r in chunk_columns(p, ["id", "doc_id", "input_ids", "word_ids"]).slice(lo, hi - lo).to_pylist()]
    graphs = [LeafyChainGraph.from_roots(r["id"], r["doc_id"], r["input_ids"], r["word_ids"], R, K, pad)
              for r in rows]
    for ci, root, tail, rel, m, inj in injections:
        graphs[ci].inject(root, tail, rel, m, inj)
    write_graphs(graphs, path)
    return {"graphs": len(graphs), "chunks_with_leaves": sum(1 for g in graphs if g.num_filled_leaves),
            "tokens_packed": sum(g.num_roots + g.num_filled_leaves for g in graphs)}


@dataclass
class DistantInputs:
    """What every ``distant`` task shares (sent once per worker)."""

    supervision: DistantSupervision
    graph: GraphConfig
    tokenizer: Any
    pad_id: int
    no_leaves: frozenset


def distant_shard(chunk_path: str, shared: DistantInputs, path: Path) -> dict:
    """Shard task (``kg.injection = cooccurrence``): the graphs of one chunk shard, each with its
    query groups and entity table (:mod:`graphmert.graph.distant`)."""
    chunks = list(read_chunks(chunk_path))
    check_inputs(chunks, shared.tokenizer, shared.graph)
    counts = document_counts(chunks)         # a document's chunks share its chunk shard
    stats: Counter = Counter()
    graphs = []
    for c in chunks:
        if not shared.no_leaves.isdisjoint(c.documents):     # any document of a concatenated chunk
            stats["chunks_held_out"] += 1
            c = replace(c, mentions=[])
        with noting(f"chunk {c.id}"):
            graphs.append(shared.supervision.graph(c, shared.graph.num_roots, shared.pad_id, stats,
                                                   counts.get(c.doc_id)))
    write_graphs(graphs, path)
    return {"graphs": len(graphs), "tokens_packed": sum(g.num_roots + g.num_filled_leaves for g in graphs),
            **dict(sorted(stats.items()))}


def _graphs_distant(ctx: StageContext, kg: SeedKG, tok, chunk_paths: list[str], no_leaves: frozenset,
                    n_chunks: int) -> dict:
    """The ``cooccurrence`` injection: one task per chunk shard, no global selection."""
    cfg = ctx.cfg
    schema = RelationSchema.from_kg(kg, cfg.kg.relation_schema)
    sp = check_inputs([], tok, cfg.graph)
    scopes = ScopeNames(cfg.kg.candidate_scope, cfg.kg.candidate_scope_by_category,
                        key="kg.candidate_scope_by_category")
    ds = DistantSupervision(kg, schema, tok, cfg.graph.num_leaves, cfg.kg.min_relation_count,
                            cfg.kg.negative_queries, scopes)
    shards = ctx.map_shards(distant_shard, chunk_paths, name="graphs",
                            shared=DistantInputs(ds, cfg.graph, tok, sp["pad"], no_leaves))
    totals: Counter = Counter()
    for s in shards:
        totals.update({k: v for k, v in s.counts.items() if isinstance(v, int)})
    per_rel = {k.split(":", 1)[1]: v for k, v in sorted(totals.items()) if k.startswith("relation:")}
    per_none = {k.split(":", 1)[1]: v for k, v in sorted(totals.items()) if k.startswith("none:")}
    if not totals["groups"]:
        raise InjectionError(f"kg.injection cooccurrence: no chunk mentions a seed triple's head and "
                             f"tail together ({n_chunks} chunks); check that the corpus's entity ids "
                             f"use the seed KG's id space")
    report = {"graphs": n_chunks, "chunks_with_leaves": totals["chunks_with_groups"],
              "injections": totals["groups_with_tail"], "queries_without_tail": totals["groups_without_tail"],
              "injections_per_relation": per_rel, "queries_without_tail_per_relation": per_none,
              "tails_not_shown": totals["tails_not_shown"], "chunks_held_out": totals["chunks_held_out"],
              "candidates_out_of_scope": totals["candidates_out_of_scope"],
              "queries_tails_out_of_scope": totals["groups_tails_out_of_scope"],
              "tokens_dense": n_chunks * cfg.graph.num_roots * (1 + cfg.graph.num_leaves),
              "tokens_packed": totals["tokens_packed"], "relation_map": dict(kg.relation_map)}
    schema.save(ctx.out / "relation_schema.json")
    return {"report": report, "shards": shards}


def _graphs(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    R, K = cfg.graph.num_roots, cfg.graph.num_leaves
    tok = load_tokenizer(ctx.stage_dir("tokenizer") / "tokenizer.json")
    sp = check_inputs([], tok, cfg.graph)
    chunk_dir = ctx.stage_dir("chunks")
    chunk_paths = [str(chunk_dir / s) for s in ctx.upstream["chunks"]["shards"]]

    sizes: list[int] = []
    doc_ids: set[str] = set()
    need_lexicon = False                     # some chunk has text but no annotated mention
    for p in chunk_paths:
        t = chunk_columns(p, ["text", "mentions", "doc_id"])
        doc_ids.update(t["doc_id"].to_pylist())
        has_text = pc.fill_null(pc.greater(pc.utf8_length(t["text"]), 0), False)
        no_mentions = pc.equal(pc.list_value_length(t["mentions"]), 0)
        need_lexicon |= pc.any(pc.and_(has_text, no_mentions)).as_py() or False
        sizes.append(t.num_rows)
    n_chunks = sum(sizes)
    if not n_chunks:
        raise KGError("build_graphs: no chunks")
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()  # [S + 1]
    held_out = held_out_documents(cfg, doc_ids)
    kg = load_kg(cfg.kg, held_out)
    # Documents of extract.paths that the corpus also holds (a tuning slice of a training file) get
    # no leaves, as if unseen; the paper's own setting, extracting from the training corpus
    # (extract.paths empty), keeps its seed-KG leaves: only relation-file triples are held out there.
    no_leaves = held_out & doc_ids if cfg.extract.paths else frozenset()
    if cfg.kg.injection == "cooccurrence":
        out = _graphs_distant(ctx, kg, tok, chunk_paths, no_leaves, n_chunks)
        return _finish(ctx, kg, out["report"], out["shards"], held_out, doc_ids)
    # vocabulary and IDF over every chunk, counted shard by shard; each link task vectorises its own
    scorer = fitted_scorer(ctx, cfg.kg.scorer, chunk_paths, tok)
    matcher = (LexiconMatcher(Lexicon.from_kg(kg), cfg.kg.lexicon_min_chars)
               if cfg.kg.lexicon_matching and need_lexicon else None)

    linked = ctx.map_shards(link_shard, [(p, starts[i]) for i, p in enumerate(chunk_paths)], name="link",
                            shared=LinkInputs(kg=kg, matcher=matcher, scorer=scorer, tokenizer=tok,
                                              graph=cfg.graph, alpha=cfg.kg.alpha, no_leaves=no_leaves),
                            suffix=".npz")
    head_stats: Counter = Counter()
    for s in linked:
        head_stats.update({k: v for k, v in s.counts.items() if k not in ("chunks", "candidates")})
    digest = CandidateDigest.fold(CandidateDigest.load(s.path) for s in linked)   # ≤ one row a triple
    if len(digest) == 0:
        raise InjectionError(
            f"no chunk has a head linked to a seed-KG node with triples ({n_chunks} chunks, "
            f"{head_stats['head_mentions']} head mentions); do the corpus's entity ids use the KG's id "
            f"space (e.g. MESH:D003924, NCBIGene:3630), or is kg.lexicon_matching off?")

    sel = select_candidates(digest, kg, tok, sp["unk"], cfg.kg, K)
    cands, tails, kept = sel.candidates, sel.tails, sel.kept

    size = cfg.graph.shard_size
    per_group: list[list[tuple]] = [[] for _ in range(-(-n_chunks // size))]
    for p in kept:
        e = kg.edges[int(cands.triple[p])]
        chunk, root, m = int(cands.chunk[p]), int(cands.head[p]), int(cands.head_length[p])
        per_group[chunk // size].append(
            (chunk % size, root, tails[e.object], int(cands.relation[p]), m,
             Injection(root, m, e.subject, e.predicate, e.object, round(float(cands.score[p]), 6))))
    items = []
    for g, injections in enumerate(per_group):
        lo, hi = g * size, min((g + 1) * size, n_chunks)
        slices = [(chunk_paths[s], max(lo, starts[s]) - starts[s], min(hi, starts[s + 1]) - starts[s])
                  for s in range(len(chunk_paths)) if starts[s] < hi and starts[s + 1] > lo]
        items.append((slices, injections))
    shards = ctx.map_shards(assemble_shard, items, name="graphs", shared=(R, K, sp["pad"]))

    report = {
        "graphs": n_chunks,
        "chunks_with_leaves": sum(s.counts["chunks_with_leaves"] for s in shards),
        "tokens_dense": n_chunks * R * (1 + K),
        "tokens_packed": sum(s.counts["tokens_packed"] for s in shards),
        **sel.summary(kg, head_stats),
    }
    RelationSchema.from_kg(kg, cfg.kg.relation_schema).save(ctx.out / "relation_schema.json")
    return _finish(ctx, kg, report, shards, held_out, doc_ids)


def _finish(ctx: StageContext, kg: SeedKG, report: dict, shards: list, held_out: frozenset,
            doc_ids: set[str]) -> dict:
    """Relation map, report file and manifest counts, the same for both injections. How many
    documents are held out in all is the manifest's alone (``held_out_documents``): the output files
    count only those the corpus holds, so new abstracts to extract from, which change no graph, leave
    the output as it was and retrain nothing (docs/PIPELINE.md, "When a stage runs")."""
    save_relation_map(kg, ctx.out / "relation_map.json")
    report["corpus_documents_held_out"] = len(held_out & doc_ids)
    atomic_write_json(ctx.out / "injection_report.json", report)
    keys = ("graphs", "chunks_with_leaves", "injections", "injections_per_relation",
            "tokens_dense", "tokens_packed", "corpus_documents_held_out")
    distant = ("queries_without_tail", "candidates_out_of_scope", "queries_tails_out_of_scope")
    return {**{k: report[k] for k in keys}, **{k: report[k] for k in distant if k in report},
            "held_out_documents": len(held_out), "kg": kg.stats(), "shards": [ctx.publish(s) for s in shards]}


def _kg_files(cfg: Config) -> list[Path]:
    """The seed-KG files, and the extraction and gold files that decide the held-out documents."""
    files = [Path(p) for p in (*cfg.kg.nodes, *cfg.kg.edges, *cfg.kg.relation_files,
                               *cfg.extract.paths, *cfg.evaluate.gold)]
    if cfg.kg.path:
        files += sorted(p for p in Path(cfg.kg.path).iterdir() if p.is_file())
    return files


GRAPHS = Stage("graphs", sections=("kg", "graph.num_roots", "graph.num_leaves", "graph.shard_size",
                                   "extract.paths", "extract.format", "extract.document_fraction",
                                   "evaluate.gold", "evaluate.format"),
               upstream=("tokenizer", "chunks"), run=_graphs, source_files=_kg_files)
