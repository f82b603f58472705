"""Extract stage: trained checkpoint + documents → triples with provenance (DESIGN §8).

Documents are ``extract.paths`` (read, sentence-split and chunked with the run's tokenizer), or the
run's own ingested corpus and chunks. They are cut into parts of ``extract.part_documents``
(:mod:`pipelines.stages.extract_parts`: a part names its shards, so the driver never holds the
corpus). When the ner stage trained a recognizer, one task per part first gives the documents without
mentions recognised ones, linked by the link stage's linker (kept in ``documents.parquet`` for
evaluate). Each part is then one Dask task (:meth:`StageContext.map_shards`) that reads its documents
and chunks and writes its per-chunk triples, sorted by triple key, as a shard — the model,
tokenizer and seed KG are loaded once per worker (:func:`pipelines.scheduler.worker_cache`); the
β-similarity scorer's vocabulary and IDF (from the run's own chunk corpus, counted shard by shard:
:mod:`pipelines.stages.vocabulary`) are summed once in the driver and shipped to the workers. Finished parts survive a killed run and are reused by the rerun.
The parts' sorted triples are merged (:func:`graphmert.extract.triples.merge_triples`, one key's
group in memory at a time) into ``triples-NNNNN.parquet`` shards and ``triples.jsonl``: by the driver
as one k-way stream, or by one task per key range on large runs (:mod:`pipelines.stages.extract_merge`);
the manifest counts triples, filter drops and model work.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import shutil
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import torch

from graphmert.config import TYPER_CHOICES, Config, ConfigError, ExtractConfig, KGConfig, section_hash
from graphmert.corpus.document import SCHEMA as DOCUMENT_SCHEMA, Document
from graphmert.corpus.nlp import TextAnalyzer
from graphmert.corpus.readers import read_corpus
from graphmert.corpus.tokenizer import load_tokenizer
from graphmert.corpus.windowing import chunk_documents
from graphmert.extract.extractor import Extractor
from graphmert.extract.pairs import (CONTROLS, PROBABILITY_RANKERS, PairExtractor, check_control_settings,
                                     control_settings)
from graphmert.extract.relation_typer import RelationTyper, needs_relatedness
from graphmert.extract.sorted_merge import sort_run
from graphmert.extract.triples import read_triples, with_run, write_systems, write_triples
from graphmert.extract.pair_heads import PairHead, fit_heads
from graphmert.extract.calibrate import calibrated
from graphmert.extract.cross_chunk import CrossChunkScorer
from graphmert.extract.lexical_document import LexicalDocumentStack, fit_stack
from graphmert.io import atomic_write_text, cut_parquet, file_sha256, read_json
from graphmert.kg.graph import KGError, load_relation_map
from graphmert.kg.loaders import load_kg
from graphmert.kg.schema import RelationSchema
from graphmert.model import build_model
from graphmert.model.checkpoint import CheckpointError, load_checkpoint
from pipelines.fit_cache import cached_fit, fit_key
from pipelines.holdout import held_out_documents
from pipelines.scheduler import worker_cache
from pipelines.stage import Shard, Stage, StageContext, output_hash
from pipelines.stages import DOCUMENTS_FILE, RECOGNIZED_FILE
from pipelines.stages.extract_merge import merge_file, merge_kg, merge_ranges, write_kg
from pipelines.stages.extract_parts import Chunking, Part, plan_parts, read_part, recognize, run_chunking
from pipelines.stages.train import member_models
from pipelines.stages.vocabulary import fitted_scorer

log = logging.getLogger("graphmert.pipeline")

GRAPHMERT = "graphmert"             # the main pass's system in its part shards (a control's shards: its name)
MODEL_ONLY = "graphmert_model_only"  # control: graphmert without the relation typer


def checkpoint_dir(ctx: StageContext) -> Path:
    return Path(ctx.cfg.extract.checkpoint) if ctx.cfg.extract.checkpoint else ctx.stage_dir("train") / "model"


def member_dirs(ctx: StageContext) -> list[Path]:
    """The further ensemble members whose answers extraction averages with the model's
    (``train.ensemble_size``, :mod:`pipelines.stages.train`); none with ``extract.checkpoint``."""
    if ctx.cfg.extract.checkpoint:
        return []
    return member_models(ctx.stage_dir("train"), ctx.upstream.get("train", {}))


def _load_model(ctx: StageContext, tok_path: Path):
    """(member 0's model, tokenizer, relation map, checkpoint id, trained relations): every member
    checked against this run's tokenizer and relations, the id a hash over all of them. The trained
    relations are those member 0's checkpoint records, else (a checkpoint written before it recorded
    them) those this run's graphs inject."""
    tok = load_tokenizer(tok_path)
    rmap = load_relation_map(ctx.stage_dir("graphs") / "relation_map.json")
    ids, model, trained = [], None, None
    for ckpt in [checkpoint_dir(ctx), *member_dirs(ctx)]:
        if not (ckpt / "model.safetensors").exists():
            raise CheckpointError(f"{ckpt}: no model checkpoint; run `graphmert train` first or set "
                                  f"extract.checkpoint")
        ck_tok = ckpt / "tokenizer.json"
        if ck_tok.exists() and file_sha256(ck_tok) != file_sha256(tok_path):
            raise CheckpointError(f"{ckpt}: the checkpoint was trained with a different tokenizer than "
                                  f"{tok_path}; extract with the run the checkpoint came from")
        # loaded here only to check it fits this run (clear errors in the driver); workers load their own
        loaded, info = load_checkpoint(ckpt, expected_vocab=tok.get_vocab_size(), expected_relations=rmap)
        if model is None:
            model, trained = loaded, info["trained_relations"]
        ids.append(file_sha256(ckpt / "model.safetensors")[:16])
    ckpt_id = ids[0] if len(ids) == 1 else hashlib.sha256("+".join(ids).encode()).hexdigest()[:16]
    if trained is None:
        trained = [r for r, n in ctx.upstream["graphs"].get("injections_per_relation", {}).items() if n]
    return model, tok, rmap, ckpt_id, trained


@dataclass
class ExtractInputs:
    """What every extraction task needs, sent once to each worker (paths are absolute)."""

    checkpoint: str
    checkpoint_id: str
    tokenizer: str
    relation_map: dict[str, int]
    kg: KGConfig
    schema: dict
    extract: ExtractConfig
    num_roots: int
    num_leaves: int
    relations: list[str]
    run_id: str
    device: str = "auto"              # train.device: auto / cpu / cuda
    similarity: Any = None            # the β scorer's vocabulary and IDF; each part vectorises its chunks
    held_out: frozenset = frozenset()  # documents whose relations are not seed triples (holdout)
    ranker: str = ""                  # query-group models: the ranker of this pass ("": extract.ranker)
    seed: int = 0                     # train.seed: the untrained control's initialisation
    members: tuple[str, ...] = ()     # further ensemble members (model folders), averaged with checkpoint
    typer: RelationTyper | None = None  # fitted in the driver when extract.relation_choice asks for it
    type_head: PairHead | None = None     # fitted in the driver when extract.type_head_weight asks for it
    related_head: PairHead | None = None  # ... and extract.related_head_weight
    stack: LexicalDocumentStack | None = None  # ... and the lexical_document control
    cross_chunk: CrossChunkScorer | None = None  # ... and extract.cross_chunk_pairs
    model_only: bool = False          # also decide without the typer (the MODEL_ONLY control)
    chunking: Chunking | None = None  # how to chunk a part's recognised or extract.paths documents

    @property
    def key(self) -> tuple:
        return ("extractor", self.checkpoint_id, section_hash(self.kg, self.extract, sorted(self.held_out)),
                self.run_id)


def _build_extractor(inp: ExtractInputs) -> Extractor | PairExtractor:
    tok = load_tokenizer(inp.tokenizer)
    device = "cuda" if inp.device != "cpu" and torch.cuda.is_available() else "cpu"
    model, info = load_checkpoint(inp.checkpoint, expected_vocab=tok.get_vocab_size(),
                                  expected_relations=inp.relation_map, device=device)
    members = [load_checkpoint(m, expected_vocab=tok.get_vocab_size(), expected_relations=inp.relation_map,
                               device=device)[0] for m in inp.members]
    kg, schema = load_kg(inp.kg, inp.held_out), RelationSchema.from_dict(inp.schema)
    if info["config"].leaf_query == "fixed":
        untrained = None
        if "untrained" in inp.extract.controls:
            torch.manual_seed(inp.seed)
            untrained = build_model(info["config"], tok.get_vocab_size(), len(inp.relation_map)).to(device)
        return PairExtractor(model, tok, kg, schema, inp.relation_map, inp.extract, inp.num_roots,
                             inp.num_leaves, relations=inp.extract.relations or inp.relations,
                             checkpoint_id=inp.checkpoint_id,
                             run_id=inp.run_id, untrained=untrained, typer=inp.typer, members=members,
                             type_head=inp.type_head, related_head=inp.related_head, stack=inp.stack,
                             cross_chunk=inp.cross_chunk)
    if members:
        raise ConfigError(f"{inp.checkpoint}: an ensemble of {len(members) + 1} models needs "
                          f"model.leaf_query 'fixed'; this checkpoint asks one query per tail length")
    llm = None
    if inp.extract.llm_url:
        from graphmert.extract.llm import LLMClient

        llm = LLMClient.from_config(inp.extract)
    ex = Extractor(model, tok, kg, schema, inp.relation_map,
                   inp.extract, inp.num_roots, inp.num_leaves, relations=inp.relations,
                   checkpoint_id=inp.checkpoint_id, run_id=inp.run_id, llm=llm)
    return ex


def extract_part(part: Part, inp: ExtractInputs, path: Path) -> dict:
    """Shard task: per-chunk triples of one part (:func:`~pipelines.stages.extract_parts.read_part`)
    → a shard of named systems (:func:`~graphmert.extract.triples.write_systems`), each sorted by
    triple key (:func:`~graphmert.extract.sorted_merge.sort_run`): :data:`GRAPHMERT`, or the control
    ``inp.ranker``; with ``inp.model_only`` also :data:`MODEL_ONLY`, decided from the same answers.
    Returns the extractor's report with the part's document, chunk and triple counts."""
    docs, chunks = read_part(part, inp.chunking)
    with_chunks = len({c.doc_id for c in chunks})
    name = inp.ranker or GRAPHMERT
    systems, rep = _extract_chunks(docs, chunks, inp, name) if chunks else ({name: []}, _empty_report())
    if inp.extract.calibration and GRAPHMERT in systems:        # graphmert's reported confidence only
        systems[GRAPHMERT] = [calibrated(t, *inp.extract.calibration) for t in systems[GRAPHMERT]]
    write_systems({k: sort_run(v) for k, v in systems.items()}, path)
    return {**rep, "documents": len(docs), "documents_without_chunks": len(docs) - with_chunks,
            "chunks": len(chunks), "triples": len(systems[name])}


def _extract_chunks(docs: list, chunks: list, inp: ExtractInputs, name: str) -> tuple[dict, dict]:
    ex = worker_cache(inp.key, lambda: _build_extractor(inp))
    with one_thread():
        if isinstance(ex, PairExtractor):
            ranker = inp.ranker or inp.extract.ranker
            systems, rep = ex.extract(docs, chunks, rankers=[ranker],
                                      untyped=MODEL_ONLY if inp.model_only else None)
            systems[name] = systems.pop(ranker)
            rep["filters"] = {"checked": len(systems[name]), "untyped_tails": 0, "dropped": {}}
            return systems, rep
        if inp.similarity is not None:      # β: this part's chunks against the run's vocabulary
            ex.set_similarity(inp.similarity.for_chunks([c.text or " " for c in chunks]),
                              {c.id: i for i, c in enumerate(chunks)})
        triples, rep = ex.extract(docs, chunks)
        return {name: triples}, rep


def _empty_report() -> dict:
    """The report of a part none of whose documents has a chunk."""
    return {"counts": {}, "filters": {"checked": 0, "untyped_tails": 0, "dropped": {}}}


@contextmanager
def one_thread() -> Iterator[None]:
    """torch and the BLAS pools (OpenBLAS, MKL: threadpoolctl) on one CPU thread inside the block, as
    on a Dask worker (pipelines/scheduler.py sets OMP_NUM_THREADS, MKL_NUM_THREADS and
    OPENBLAS_NUM_THREADS to 1 there): a part computed in the driver (``--scheduler synchronous``, or
    a run whose extraction is one part) and on a worker then sums in the same order, so a
    confidence does not change in its last bits with the scheduler and the outputs stay
    byte-identical, and a many-core driver does not spread the part's small products over every
    core. Without effect on CUDA kernels."""
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


def _absolute(kg: KGConfig) -> KGConfig:
    absp = lambda p: str(Path(p).resolve())  # noqa: E731
    return replace(kg, path=absp(kg.path) if kg.path else None, nodes=[absp(p) for p in kg.nodes],
                   edges=[absp(p) for p in kg.edges], relation_files=[absp(p) for p in kg.relation_files])


def run_extraction(ctx: StageContext, skip: frozenset[str] = frozenset()) -> dict:
    """The extract stage into ``ctx.out`` (module docstring); ``skip``: document ids left out
    (:mod:`pipelines.update` passes the documents already in the run's KG). Returns the manifest body."""
    cfg = ctx.cfg
    tok_path = ctx.stage_dir("tokenizer") / "tokenizer.json"
    model, tok, rmap, ckpt_id, trained = _load_model(ctx, tok_path)
    parts, doc_ids, skipped = plan_parts(ctx, skip)
    parts, recognized, recognition = recognize(ctx, parts)
    held_out = held_out_documents(cfg, doc_ids)
    kg = load_kg(cfg.kg, held_out)
    schema_path = ctx.stage_dir("graphs") / "relation_schema.json"
    schema = RelationSchema.load(schema_path) if schema_path.exists() else \
        RelationSchema.from_kg(kg, cfg.kg.relation_schema)
    inputs = ExtractInputs(str(checkpoint_dir(ctx).resolve()), ckpt_id, str(tok_path.resolve()), rmap,
                           _absolute(cfg.kg), schema.to_dict(), cfg.extract, cfg.graph.num_roots,
                           cfg.graph.num_leaves, trained, ctx.run_id, cfg.train.device,
                           held_out=held_out, seed=cfg.train.seed, chunking=run_chunking(ctx),
                           members=tuple(str(m.resolve()) for m in member_dirs(ctx)))
    query_groups = model.config.leaf_query == "fixed"
    _check_rankers(cfg.extract, query_groups)
    if cfg.extract.beta > 0:
        inputs.similarity = _similarity(ctx)
    if query_groups:
        fit_on_typer_documents(ctx, inputs, held_out)
    del model                                   # workers load their own copy (once each)

    done = ctx.map_shards(extract_part, parts, name="part", shared=inputs)
    counts = _part_counts(done)
    if not counts["chunks"]:
        raise ConfigError("extract: no document has any text to extract from"
                          + (f" (extract.paths = {cfg.extract.paths})" if cfg.extract.paths else ""))
    _warn_if_nothing_asked(cfg, counts, recognition)
    ranges = merge_ranges(ctx, counts["triples"])
    tally, shards = merge_kg(ctx, done, GRAPHMERT, ranges)
    atomic_write_text(ctx.out / DOCUMENTS_FILE, "".join(f"{d}\n" for d in doc_ids))
    if recognition["recognized_documents"]:      # what the recognizer found, for evaluate's entity scores
        # the parts' shards joined as Arrow batches, never decoded: the bytes write_documents writes
        cut_parquet([s.path for s in recognized], DOCUMENT_SCHEMA, None, lambda _: ctx.out / RECOGNIZED_FILE)
    controls = _controls(ctx, parts, inputs, done, ranges) if query_groups else {}
    return {
        "triples": tally.triples,
        "triples_per_chunk_kept": counts["triples"],
        "documents": len(doc_ids),
        "documents_without_chunks": counts["documents_without_chunks"],
        "chunks": counts["chunks"],
        "skipped_records": skipped,
        **recognition,
        "work": counts["work"],
        "filters": counts["filters"],
        "triples_per_relation": dict(sorted(tally.relations.items())),
        "triples_per_tail_source": dict(sorted(tally.tail_sources.items())),
        "checkpoint_id": ckpt_id,
        "ensemble_size": 1 + len(inputs.members),
        "relation_documents_held_out": kg.skipped.get("relation_documents_held_out", 0),
        "ranker": cfg.extract.ranker if query_groups else "",
        "controls": controls,
        "typer": dict(inputs.typer.fit_counts) if inputs.typer else None,
        "type_head": dict(inputs.type_head.fit_counts) if inputs.type_head else None,
        "related_head": dict(inputs.related_head.fit_counts) if inputs.related_head else None,
        "lexical_document": dict(inputs.stack.fit_counts) if inputs.stack else None,
        "cross_chunk": dict(inputs.cross_chunk.fit_counts) if inputs.cross_chunk else None,
        "calibration": list(cfg.extract.calibration) or None,     # graphmert's confidences mapped by it
        "relations": sorted(cfg.extract.relations or trained),
        "parts": len(parts),
        "merge_ranges": ranges,
        "shards": shards,
    }


def _warn_if_nothing_asked(cfg: Config, counts: dict, recognition: dict) -> None:
    """A warning when no chunk asked the model anything (a question needs a head and a candidate
    tail): the run then extracts no triple, which on raw text without ``ner.paths`` is easily missed."""
    if counts["work"].get("queries") or counts["work"].get("questions"):    # Extractor's, PairExtractor's
        return
    if recognition["recognized_documents"]:
        why = (f"the recognizer found {recognition['recognized_mentions']} mention(s) in "
               f"{recognition['recognized_documents']} document(s), {recognition['linked_mentions']} linked")
    elif cfg.ner.paths:
        why = "no chunk holds a head and a candidate tail"
    else:
        why = "documents without entity mentions give none, and raw text needs ner.paths (README, 'Raw abstracts')"
    log.warning("extract: the model was asked nothing in %d chunk(s), so no triple is extracted: %s",
                counts["chunks"], why)


def _part_counts(done: list[Shard]) -> dict:
    """The parts' counts summed: documents without chunks, chunks, per-chunk triples kept, the model's
    work and the filters' drops."""
    work: Counter = Counter()
    dropped: Counter = Counter()
    total = Counter()
    for shard in done:
        rep = shard.counts
        work.update(rep["counts"])
        dropped.update(rep["filters"]["dropped"])
        total.update({k: rep[k] for k in ("documents_without_chunks", "chunks", "triples")})
        total.update({k: rep["filters"][k] for k in ("checked", "untyped_tails")})
    return {**{k: total[k] for k in ("documents_without_chunks", "chunks", "triples")},
            "work": dict(sorted(work.items())),
            "filters": {"checked": total["checked"], "untyped_tails": total["untyped_tails"],
                        "dropped": dict(sorted(dropped.items()))}}


def _similarity(ctx: StageContext) -> Any:
    """The β filter's scorer: vocabulary and IDF from the run's own chunk corpus (the chunks stage),
    counted shard by shard on the workers (:mod:`pipelines.stages.vocabulary`), so that a document
    scores the same whether it is extracted alone, in a batch, or added later by ``graphmert
    update`` (:mod:`graphmert.kg.scoring`). Each part vectorises its own chunks (:func:`extract_part`)."""
    cdir = ctx.stage_dir("chunks")
    return fitted_scorer(ctx, ctx.cfg.extract.similarity_scorer,
                         [str(cdir / s) for s in ctx.upstream["chunks"]["shards"]])


#: manifest keys the runner writes (pipelines.stage.run_stage); a renamed output's body is the rest
RUNNER_KEYS = frozenset({"stage", "status", "input_hash", "config_hash", "code_fingerprint", "code_modules",
                         "run_id", "output_hash", "elapsed_s", "version", "shard_info", "tasks"})


def renamed_output(ctx: StageContext) -> dict | None:
    """When the stage's last output differs from what this run would write only in the run its
    triples name (a run directory copied or renamed: same code, config and inputs, its files intact),
    that output written into ``ctx.out`` with every triple's ``run_id`` set to this run's
    (:attr:`~pipelines.stage.StageContext.run_id`), its other files and its ``graphmert update``
    records as they were; returns the manifest body. None when anything else differs: extract anew."""
    old, folder = ctx.previous, ctx.stage_dir("extract")
    if (old is None or old.get("run_id") == ctx.run_id or old.get("config_hash") != ctx.config_hash
            or old.get("input_hash") != ctx.input_hash or old.get("output_hash") != output_hash(folder)):
        return None
    shards = old.get("shards") or []
    write_kg(with_run(read_triples([folder / s for s in shards]), ctx.run_id), ctx.out,
             ctx.cfg.extract.shard_size)
    for rec in (old.get("controls") or {}).values():
        write_triples(with_run(read_triples(folder / rec["file"]), ctx.run_id), ctx.out / rec["file"])
    for path in folder.iterdir():                   # documents.txt, documents.parquet, …
        if path.is_file() and path.name != "manifest.json" and not (ctx.out / path.name).exists():
            shutil.copy2(path, ctx.out / path.name)
    log.info("extract: the output names the run %r; this run is %r: its triples renamed, not extracted "
             "again", old.get("run_id"), ctx.run_id)
    return {**{k: v for k, v in old.items() if k not in RUNNER_KEYS}, "renamed_from": old.get("run_id")}


def _extract_stage(ctx: StageContext) -> dict:
    """The stage: the last output renamed for this run when nothing else changed
    (:func:`renamed_output`); else :func:`run_extraction`, with a warning when the output it replaces
    had documents added or removed by ``graphmert update`` (:mod:`pipelines.update`), which this
    extraction of ``extract.paths`` (or the run's corpus) does not repeat."""
    renamed = renamed_output(ctx)
    if renamed is not None:
        return renamed
    old = ctx.stage_dir("extract") / "manifest.json"          # still the previous output
    updates = (read_json(old).get("updates") or []) if old.is_file() else []
    if updates:
        log.warning("extract: the knowledge graph this run replaces had %d update(s) (graphmert update: "
                    "%s); they are not part of extract.paths and are dropped, so repeat them",
                    len(updates), ", ".join(u.get("activity", "?") for u in updates))
    # the settings the triples were made with, which export cites without importing this module
    return {**run_extraction(ctx), "settings_hash": EXTRACT.settings_hash(ctx.cfg)}


def _check_rankers(ex: ExtractConfig, query_groups: bool) -> None:
    unknown = [c for c in ex.controls if c not in CONTROLS]
    if unknown:
        raise ConfigError(f"extract.controls: unknown control(s) {unknown}; choose from {list(CONTROLS)}")
    try:
        check_control_settings(ex)
    except KGError as e:
        raise ConfigError(str(e)) from None
    if not query_groups and ex.ranker != "model":
        raise ConfigError(f"extract.ranker: {ex.ranker!r} needs a model trained with "
                          f"model.leaf_query 'fixed'; this checkpoint asks one query per tail length")
    if not query_groups and ex.outside_scope_weight > 0:
        raise ConfigError(f"extract.outside_scope_weight: {ex.outside_scope_weight} (a soft scope) needs a "
                          f"model trained with model.leaf_query 'fixed'; set it to 0 for this checkpoint")
    if not query_groups and ex.cross_chunk_pairs:
        raise ConfigError(f"extract.cross_chunk_pairs: {ex.cross_chunk_pairs} needs a model trained with "
                          f"model.leaf_query 'fixed'; leave it empty for this checkpoint")
    if not query_groups and ex.outside_min_confidence is not None:
        raise ConfigError(f"extract.outside_min_confidence: {ex.outside_min_confidence} (the band) needs a "
                          f"model trained with model.leaf_query 'fixed'; leave it unset (null) for this "
                          f"checkpoint")


def _controls(ctx: StageContext, parts: list[Part], inputs: ExtractInputs, main: list[Shard],
              ranges: int) -> dict[str, dict]:
    """The model-free controls of extract.controls over the same parts: one Dask map each, merged
    triples in ``control-<name>.parquet`` (scored by the evaluate stage). When the relation typer
    takes part, :data:`MODEL_ONLY` is one more: graphmert without it, its pairs selected and typed by
    the model alone (``relation_choice: score``, no ``typer_min_relation``), so the table shows what
    the typer adds. The main pass's shards (``main``) already hold it: the model answered once."""
    shards = {name: (ctx.map_shards(extract_part, parts, name=f"control-{name}",
                                    shared=replace(inputs, ranker=name, model_only=False)), name)
              for name in ctx.cfg.extract.controls}
    if inputs.model_only:
        shards[MODEL_ONLY] = (main, MODEL_ONLY)
    out = {}
    for name, (done, system) in shards.items():
        path = ctx.out / f"control-{name}.parquet"
        n = merge_file(ctx, done, system, ranges, path)
        k, floor = control_settings(ctx.cfg.extract, name if name != MODEL_ONLY else ctx.cfg.extract.ranker)
        out[name] = {"file": path.name, "triples": n, "tails_per_query": k,
                     "min_confidence": floor if name in PROBABILITY_RANKERS or name == MODEL_ONLY else None}
    return out


def typer_documents(cfg: Config, held_out: frozenset[str]) -> Iterator[Document]:
    """The documents of ``extract.typer_files`` the relation typer may learn from, streamed and
    sentence-split: every one but those extraction or evaluation reads (``held_out``,
    :func:`pipelines.holdout.held_out_documents`)."""
    reader = read_corpus(cfg.extract.typer_files, format="auto",
                         skip_bad_records=cfg.corpus.skip_bad_records)
    return TextAnalyzer(sentences=True, abbreviations=False).annotate(d for d in reader if d.id not in held_out)


def fit_on_typer_documents(ctx: StageContext, inputs: ExtractInputs, held_out: frozenset[str]) -> None:
    """``inputs``' relation typer, pair heads and ``lexical_document`` regression, each as the config
    asks for it, read from the run's fit cache when an identical fit is stored there
    (:mod:`pipelines.fit_cache`), else fitted and stored."""
    ex = ctx.cfg.extract
    graphs = ctx.upstream.get("graphs", {}).get("output_hash")      # the seed KG and vocabulary it read
    typer_set = functools.cache(lambda: _typer_questions(ctx, inputs, held_out))   # read once for both fits

    def cached(name: str, fit, **parts):
        key = fit_key(ctx.cfg, name, held_out, inputs.schema, graphs=graphs, **parts)
        return cached_fit(ctx.run_dir, name, key, fit)

    if ex.relation_choice in TYPER_CHOICES or needs_relatedness(ex):
        inputs.typer = cached("typer", lambda: fit_typer(ctx, held_out), related=needs_relatedness(ex))
    inputs.model_only = inputs.typer is not None
    heads = (ex.type_head_weight > 0, ex.related_head_weight > 0)
    if any(heads):
        inputs.type_head, inputs.related_head = cached(
            "pair_heads", lambda: fit_pair_heads(ctx, inputs, held_out, typer_set),
            heads=heads, checkpoint=inputs.checkpoint_id)
    if "lexical_document" in ex.controls:
        inputs.stack = cached("lexical_document", lambda: fit_lexical_document(ctx, inputs, held_out, typer_set))
    if ex.cross_chunk_pairs:
        inputs.cross_chunk = cached("cross_chunk", lambda: fit_cross_chunk(ctx, inputs, held_out, typer_set))


def fit_pair_heads(ctx: StageContext, inputs: ExtractInputs, held_out: frozenset[str], typer_set=None
                   ) -> tuple[PairHead | None, PairHead | None]:
    """(type head, relatedness head) as ``extract.type_head_weight`` and ``related_head_weight`` ask
    for them (None where 0): the run's models encode the questions of :func:`typer_documents`,
    chunked as the run chunks, once for both, and each head is fitted on their gold pairs
    (:mod:`graphmert.extract.pair_heads`). ``typer_set``: a function giving :func:`_typer_questions`
    (default: read here)."""
    ex = ctx.cfg.extract
    if ex.type_head_weight <= 0 and ex.related_head_weight <= 0:
        return None, None
    extractor, docs, chunks = (typer_set or (lambda: _typer_questions(ctx, inputs, held_out)))()
    log.info("extract: fitting the pair heads on the %d documents of extract.typer_files", len(docs))
    return fit_heads(extractor, docs, chunks, ex)


def fit_lexical_document(ctx: StageContext, inputs: ExtractInputs, held_out: frozenset[str], typer_set=None
                         ) -> LexicalDocumentStack | None:
    """The regression of the ``lexical_document`` control (None when ``extract.controls`` does not
    name it), fitted on the questions of :func:`typer_documents` with their word score cross-fitted
    (:mod:`graphmert.extract.lexical_document`). ``typer_set``: as :func:`fit_pair_heads`'s."""
    ex = ctx.cfg.extract
    if "lexical_document" not in ex.controls:
        return None
    extractor, docs, chunks = (typer_set or (lambda: _typer_questions(ctx, inputs, held_out)))()
    log.info("extract: fitting the lexical_document control on the %d documents of extract.typer_files", len(docs))
    stack = fit_stack(extractor, docs, chunks,        # q alone: the related-or-not regression, no types
                      lambda: replace(RelationTyper.from_config(ex), type_regression=False),
                      folds=ex.stack_folds, c=ex.stack_c)
    log.info("extract: lexical_document control fitted on %s", stack.fit_counts)
    return stack


def fit_cross_chunk(ctx: StageContext, inputs: ExtractInputs, held_out: frozenset[str], typer_set=None
                    ) -> CrossChunkScorer:
    """The regression of ``extract.cross_chunk_pairs``, fitted on the pairs no chunk holds in the
    documents of :func:`typer_documents`, chunked as the run chunks (:mod:`graphmert.extract.cross_chunk`).
    ``typer_set``: as :func:`fit_pair_heads`'s."""
    _, docs, chunks = (typer_set or (lambda: _typer_questions(ctx, inputs, held_out)))()
    scorer = CrossChunkScorer(pairs=list(ctx.cfg.extract.cross_chunk_pairs)).fit(docs, chunks)
    log.info("extract: cross-chunk pairs fitted on %s", scorer.fit_counts)
    return scorer


def _typer_questions(ctx: StageContext, inputs: ExtractInputs, held_out: frozenset[str]
                     ) -> tuple[PairExtractor, list[Document], list]:
    """(an extractor of the run's models without controls or typer, the documents of
    :func:`typer_documents`, their chunks as the run chunks them): what the pair heads and the
    lexical_document regression are fitted on."""
    extractor = _build_extractor(replace(inputs, extract=replace(ctx.cfg.extract, controls=[]), typer=None))
    docs = list(typer_documents(ctx.cfg, held_out))
    return extractor, docs, list(chunk_documents(docs, extractor.tok, ctx.cfg.corpus, ctx.cfg.graph))


def fit_typer(ctx: StageContext, held_out: frozenset[str]) -> RelationTyper | None:
    """The relation typer ``extract.relation_choice``, ``typer_min_relation``, the ``lexical`` control
    or ``lexical_weight`` asks for (None when none does), fitted on :func:`typer_documents` (``extract.typer_files``, which the
    config requires then: graphmert.config.checks._check_typer)."""
    ex = ctx.cfg.extract
    if ex.relation_choice not in TYPER_CHOICES and not needs_relatedness(ex):
        return None
    typer = RelationTyper.from_config(ex)
    typer.fit(ctx.progress(typer_documents(ctx.cfg, held_out), desc="extract: relation typer", unit="doc"),
              where=f"extract.typer_files {ex.typer_files}")
    log.info("extract: relation typer fitted on %s", dict(typer.fit_counts))
    return typer


def _sources(cfg: Config) -> list[Path]:
    return [Path(p) for p in [*cfg.extract.paths, *cfg.extract.typer_files]]


EXTRACT = Stage("extract", sections=("extract", "kg", "graph.num_roots", "graph.num_leaves",
                                     "corpus.chunk_mode", "corpus.chunk_overlap", "corpus.repeat_title",
                                     "corpus.abbreviations"),
                upstream=("ingest", "tokenizer", "chunks", "graphs", "train", "ner", "link"), run=_extract_stage,
                source_files=_sources, names_run=True)
