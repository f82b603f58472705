"""Export and report stages: the extracted triples as RDF / KGX files, and the HTML run report.

``export`` (upstream ``extract``) writes ``RUN/export/`` — one file set per entry of
``export.formats`` (names fixed by :data:`FORMAT_FILES`, never taken from data):

    ttl → kg.ttl      nt → kg.nt      jsonld → kg.jsonld      trig → kg.trig      nq → kg.nq
    kgx → kg_nodes.tsv, kg_edges.tsv, kg_nodes.jsonl, kg_edges.jsonl
    store → store/    (an Oxigraph SPARQL database, :mod:`graphmert.export.store`)

Every format is written in parts, one Dask task per triple shard (:mod:`graphmert.export.parts`),
and joined in shard order in the driver. For Turtle / TriG / JSON-LD the driver first reads the
shards' entity id columns for the prefixes every part declares, and the join writes each entity's
and run's description once per file (memory holds their digests, not the triples). The run
activity records the hash of the extract stage's settings (its config sections, not its code: a
refactor leaves the graph's bytes alone).

``store`` is bulk-loaded from the joined ``kg.nq`` when ``nq`` is written (it keeps each run's named
graph), else from ``kg.nt``; with neither, the parts' N-Triples are joined into a temporary file
inside the stage folder, loaded, and deleted. The manifest records ``store``: ``triples`` (distinct
statements), ``load_seconds`` and ``source``. Readers open the store read-only, so its files — and
the stage's output hash — never change after the stage. :func:`load_store` (``graphmert load``)
rebuilds it in a finished run from the exported RDF.

``report`` (upstream ``extract``) writes ``RUN/report/report.html``: a self-contained page (plots
inline) that any browser opens from disk; training curves are included when
``RUN/train/metrics.jsonl`` exists.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections import Counter
from pathlib import Path

from graphmert.config import ExportConfig
from graphmert.corpus.document import entity_xrefs, read_documents
from graphmert.export import (KGX_FILES, RDF_FORMATS, STREAM_FORMATS, RunInfo, ExportTerms,
                              check_formats, write_report)
from graphmert.export.parts import join_parts, write_part
from graphmert.export.rdf import jsonld_context, turtle_prefixes
from graphmert.export.store import STORE_DIR, build_store
from graphmert.extract.triples import read_entity_ids, read_triples
from graphmert.io import atomic_write_json, read_json
from pipelines.stage import Stage, StageContext, StageError, UpstreamMissing, output_hash
from pipelines.stages import RECOGNIZED_FILE

log = logging.getLogger("graphmert.pipeline")

FORMAT_FILES: dict[str, list[str]] = {"ttl": ["kg.ttl"], "nt": ["kg.nt"], "jsonld": ["kg.jsonld"],
                                      "trig": ["kg.trig"], "nq": ["kg.nq"],
                                      "kgx": list(KGX_FILES.values()), "store": [STORE_DIR]}
#: exported RDF a store is loaded from, in order of preference (N-Quads keep the run's named graph)
STORE_SOURCES = ("kg.nq", "kg.nt", "kg.trig", "kg.ttl")
REPORT_FILE = "report.html"


def triple_shards(ctx: StageContext) -> list[Path]:
    """The extract stage's Parquet shards (names checked to stay inside RUN/extract)."""
    folder = ctx.stage_dir("extract").resolve()
    paths = []
    for name in ctx.upstream["extract"].get("shards", []):
        p = (folder / name).resolve()
        if p.parent != folder or not p.is_file():
            raise StageError(f"{folder / 'manifest.json'}: shard {name!r} is not a file in {folder}; "
                             "rerun `graphmert extract`")
        paths.append(p)
    return paths


def export_part(shard: str, shared: tuple[list[str], ExportConfig, RunInfo, dict[str, str]],
                path: Path) -> dict:
    """Shard task: one triple shard → its part of every format's file (and the fallback counts) at
    ``path``, Turtle / TriG under the driver's ``prefixes``."""
    formats, cfg, run, prefixes = shared
    return write_part(read_triples(shard), path, formats, cfg, run, prefixes)


def _extract_settings(ctx: StageContext) -> str:
    """The extract stage's settings hash (``gm:configHash``): its manifest's, else (a manifest
    written before it recorded one) computed from the config, which imports the extract module and
    torch with it."""
    recorded = ctx.upstream["extract"].get("settings_hash")
    if recorded:
        return recorded
    from pipelines.stages import stage      # the stage table includes this module: import on use

    return stage("extract").settings_hash(ctx.cfg)


def _export(ctx: StageContext) -> dict:
    cfg = ctx.cfg.export
    formats = check_formats(cfg.formats)
    shards = triple_shards(ctx)
    run = RunInfo(config_hash=_extract_settings(ctx), xrefs=_entity_xrefs(ctx))
    part_formats = formats + (["nt"] if "store" in formats and not {"nt", "nq"} & set(formats) else [])
    terms = ExportTerms(cfg)
    if set(RDF_FORMATS) & set(formats):       # the header names the prefixes of every entity
        for entity_id in read_entity_ids(shards):
            if entity_id:
                terms.entity(entity_id, "")
    parts = ctx.map_shards(export_part, [str(p) for p in shards], name="part",
                           shared=(part_formats, cfg, run, turtle_prefixes(terms)), suffix=".part")
    n = sum(p.counts["triples"] for p in parts)
    joined = join_parts([(p.path, p.counts) for p in parts], ctx.out, formats, turtle_prefixes(terms),
                        jsonld_context(terms))
    unmapped: Counter = Counter()
    unknown: Counter = Counter()
    for p in parts:
        unmapped.update(p.counts["unmapped_relations"])
        unknown.update(p.counts["unknown_categories"])
    body: dict = {"triples": n, "formats": formats}
    statements = {fmt: joined[fmt] for fmt in formats if fmt in STREAM_FORMATS or fmt in RDF_FORMATS}
    if "kgx" in formats:
        body["kgx_nodes"], body["kgx_edges"] = joined["kgx_nodes"], joined["kgx_edges"]
    if "store" in formats:
        body["store"] = _stage_store(ctx, [(p.path, p.counts) for p in parts], formats)
        statements["store"] = body["store"]["triples"]
    if unmapped:
        log.warning("export: relations without a Biolink predicate in export.predicate_map, exported "
                    "as %s: %s", cfg.default_predicate, dict(unmapped))
    files = [f for fmt in formats for f in FORMAT_FILES[fmt]]
    return {**body, "statements": {fmt: statements[fmt] for fmt in formats if fmt in statements},
            "unmapped_relations": dict(sorted(unmapped.items())),
            "unknown_categories": dict(sorted(unknown.items())), "files": files}


def _entity_xrefs(ctx: StageContext) -> dict[str, tuple[str, ...]]:
    """The cross-references of the entities the extract stage linked (its recognised documents,
    when it recognised any): the nodes' ``biolink:xref``."""
    path = ctx.stage_dir("extract") / RECOGNIZED_FILE
    return entity_xrefs(read_documents(path)) if path.is_file() else {}


def _store_record(info: dict, source: str) -> dict:
    return {"triples": info["triples"], "load_seconds": info["seconds"], "source": source}


def _stage_store(ctx: StageContext, parts: list, formats: list[str]) -> dict:
    """Build ``store/`` in the stage folder from the joined N-Quads / N-Triples, or from the parts'
    N-Triples joined into a temporary file (removed) when neither format is written."""
    for fmt in ("nq", "nt"):
        if fmt in formats:
            return _store_record(build_store([ctx.out / f"kg.{fmt}"], ctx.out / STORE_DIR), f"kg.{fmt}")
    with tempfile.TemporaryDirectory(dir=ctx.out, prefix=".store-source-") as tmp:
        join_parts(parts, tmp, ["nt"])
        info = build_store([Path(tmp) / "kg.nt"], ctx.out / STORE_DIR)
    return _store_record(info, "kg.nt (temporary)")


def store_source(run_dir: Path) -> Path:
    """The exported RDF file a store of ``run_dir`` is loaded from (:data:`STORE_SOURCES`);
    :class:`UpstreamMissing` when the run has no export."""
    folder = run_dir / "export"
    source = next((folder / n for n in STORE_SOURCES if (folder / n).is_file()), None)
    if source is None:
        raise UpstreamMissing(f"{folder}: no exported RDF to load into a SPARQL store (none of "
                              f"{', '.join(STORE_SOURCES)}); run `graphmert export --run-dir "
                              f"{run_dir}` first")
    return source


def load_store(run_dir: Path) -> dict:
    """``graphmert load``: (re)build ``RUN/export/store`` from the run's exported RDF (the first of
    :data:`STORE_SOURCES` present), holding the run directory's lock. When the export manifest
    matched its folder before, it is updated (``store``, ``files``, ``output_hash``) so the export
    stage stays up to date; returns the store record (with ``path``)."""
    from pipelines.store import RunStore

    folder = run_dir / "export"
    source = store_source(run_dir)
    lock = RunStore(run_dir).lock()
    try:
        mp = folder / "manifest.json"
        manifest = read_json(mp) if mp.is_file() else None
        in_step = manifest is not None and manifest.get("output_hash") == output_hash(folder)
        record = _store_record(build_store([source], folder / STORE_DIR), source.name)
        if in_step:
            manifest["store"] = record
            manifest.setdefault("statements", {})["store"] = record["triples"]
            if STORE_DIR not in manifest.setdefault("files", []):
                manifest["files"].append(STORE_DIR)
            manifest["output_hash"] = output_hash(folder)
            atomic_write_json(mp, manifest)
    finally:
        lock.close()
    return {**record, "path": str(folder / STORE_DIR)}


def _read_metrics(path: Path) -> list[dict]:
    """Training metric records (a torn last line, as after a crash, is ignored)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _report(ctx: StageContext) -> dict:
    metrics_path = ctx.stage_dir("train") / "metrics.jsonl"
    metrics = _read_metrics(metrics_path) if metrics_path.is_file() else None
    counts = write_report((t for p in triple_shards(ctx) for t in read_triples(p)),
                          ctx.out / REPORT_FILE, ctx.cfg.export, metrics,
                          title=f"GraphMERT run report — {ctx.run_id}")
    return {**counts, "training_curves": bool(metrics), "files": [REPORT_FILE]}


EXPORT = Stage("export", sections=("export",), upstream=("extract",), run=_export)

REPORT = Stage("report", sections=("export.report_samples", "export.report_top_entities",
                                   "export.predicate_map", "export.default_predicate"),
               upstream=("extract",), run=_report, names_run=True)
