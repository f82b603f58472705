"""Export and report stages: the extracted triples as RDF / KGX files, and the HTML run report.

``export`` (upstream ``extract``) writes ``RUN/export/`` — one file set per entry of
``export.formats`` (names fixed by :data:`FORMAT_FILES`, never taken from data):

    ttl → kg.ttl      nt → kg.nt      jsonld → kg.jsonld      trig → kg.trig      nq → kg.nq
    kgx → kg_nodes.tsv, kg_edges.tsv, kg_nodes.jsonl, kg_edges.jsonl

N-Triples / N-Quads / KGX are written in parts, one Dask task per triple shard
(:mod:`graphmert.export.parts`), and joined in shard order in the driver; Turtle / JSON-LD / TriG are
built in memory in the driver and skipped (listed under ``skipped_formats``, with a warning) when
there are more than ``export.max_graph_triples`` triples. The run activity records the extract
stage's config hash.

``report`` (upstream ``extract``) writes ``RUN/report/report.html``: a self-contained page (plots
inline) that any browser opens from disk; training curves are included when
``RUN/train/metrics.jsonl`` exists.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

from graphmert.config import ExportConfig
from graphmert.export import (KGX_FILES, RDF_FORMATS, STREAM_FORMATS, RunInfo, Vocabulary,
                              check_formats, write_rdf, write_report)
from graphmert.export.parts import join_parts, write_part
from graphmert.extract.triples import read_triples
from pipelines.stage import Stage, StageContext, StageError

log = logging.getLogger("graphmert.pipeline")

FORMAT_FILES: dict[str, list[str]] = {"ttl": ["kg.ttl"], "nt": ["kg.nt"], "jsonld": ["kg.jsonld"],
                                      "trig": ["kg.trig"], "nq": ["kg.nq"],
                                      "kgx": list(KGX_FILES.values())}
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


def export_part(shard: str, shared: tuple[list[str], ExportConfig, RunInfo], path: Path) -> dict:
    """Shard task: one triple shard → its part of the N-Triples / N-Quads / KGX files (and the
    fallback counts of every format) at ``path``."""
    formats, cfg, run = shared
    return write_part(read_triples(shard), path, formats, cfg, run)


def _export(ctx: StageContext) -> dict:
    cfg = ctx.cfg.export
    formats = check_formats(cfg.formats)
    shards = triple_shards(ctx)
    run = RunInfo(config_hash=str(ctx.upstream["extract"].get("config_hash", "")))
    parts = ctx.map_shards(export_part, [str(p) for p in shards], name="part",
                           shared=(formats, cfg, run), suffix=".part")
    n = sum(p.counts["triples"] for p in parts)
    joined = join_parts([(p.path, p.counts) for p in parts], ctx.out, formats)
    unmapped: Counter = Counter()
    unknown: Counter = Counter()
    for p in parts:
        unmapped.update(p.counts["unmapped_relations"])
        unknown.update(p.counts["unknown_categories"])
    body: dict = {"triples": n, "formats": formats}
    statements = {fmt: joined[fmt] for fmt in formats if fmt in STREAM_FORMATS}
    if "kgx" in formats:
        body["kgx_nodes"], body["kgx_edges"] = joined["kgx_nodes"], joined["kgx_edges"]
    skipped: list[str] = []
    for fmt in (f for f in formats if f in RDF_FORMATS):
        if n > cfg.max_graph_triples:
            log.warning("export: %d triples > export.max_graph_triples (%d): %s not written; "
                        "use nt / nq / kgx", n, cfg.max_graph_triples, fmt)
            skipped.append(fmt)
            continue
        statements[fmt] = write_rdf(read_triples(shards), ctx.out / f"kg.{fmt}", fmt, Vocabulary(cfg), run)
    if unmapped:
        log.warning("export: relations without a Biolink predicate in export.predicate_map, exported "
                    "as %s: %s", cfg.default_predicate, dict(unmapped))
    files = [f for fmt in formats if fmt not in skipped for f in FORMAT_FILES[fmt]]
    return {**body, "statements": {fmt: statements[fmt] for fmt in formats if fmt in statements},
            "skipped_formats": skipped, "unmapped_relations": dict(sorted(unmapped.items())),
            "unknown_categories": dict(sorted(unknown.items())), "files": files}


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
                          title=f"GraphMERT run report — {ctx.run_dir.resolve().name}")
    return {**counts, "training_curves": bool(metrics), "files": [REPORT_FILE]}


EXPORT = Stage("export", sections=("export",), upstream=("extract",), run=_export)

REPORT = Stage("report", sections=("export.report_samples", "export.report_top_entities",
                                   "export.predicate_map", "export.default_predicate"),
               upstream=("extract",), run=_report)
