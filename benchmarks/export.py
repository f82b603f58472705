"""Export throughput and memory: N-Triples streamed per shard vs an in-memory rdflib Graph.

    .venv/bin/python benchmarks/export.py [--triples 100000] [--shard-size 10000] [--formats nt,kgx]
                                          [--modes MODE ...] [--out FILE]

Synthetic merged triples (deterministic: ~N/5 entities with CURIEs, eight relations, 1–3 evidence
sentences and documents each) are exported by one mode per row, each in its own subprocess so that
peak RSS (``ru_maxrss``) belongs to that mode alone:

* ``generate``      — only materialise the triples as a list (what any in-memory path holds anyway);
* ``stream nt``     — :func:`graphmert.export.rdf.write_ntriples`, triples generated shard by shard;
* ``graph nt``      — :func:`graphmert.export.rdf.build_graph` (all triples) + rdflib's N-Triples
  serialiser: the in-memory path the Turtle / JSON-LD writers use;
* ``stream kgx``    — :func:`graphmert.export.kgx.write_kgx` (TSV + JSON Lines);
* ``stage sync`` / ``stage 2 workers`` — the pipeline's export stage with ``export.formats`` of
  ``--formats`` (``nt,kgx`` unless given) over the same shards written as an extract stage's Parquet
  files (writing them is not timed): one part per shard, on the synchronous scheduler or on a
  LocalCluster of two workers (its start included), then joined in the driver. Its ``kg.nt`` must
  be the bytes of ``stream nt``. ``task s`` is the parts' summed seconds (work that spreads over
  workers) and ``driver s`` the stage's time less that work over its workers (what does not).

Reported: seconds, triples/s, lines (statements written), peak RSS and its growth over the process
baseline after imports, output size. The stream and graph rows must describe the same graph: the
number of distinct N-Triples lines of ``stream nt`` is compared with the graph's size.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, write_json  # noqa: E402

MODES = ("generate", "stream nt", "graph nt", "stream kgx", "stage sync", "stage 2 workers")
RELATIONS = ("associated_with", "treats", "binds", "upregulates", "downregulates", "presents",
             "isa", "causes")
CATEGORIES = ("biolink:Gene", "biolink:Disease", "biolink:ChemicalEntity", "biolink:PhenotypicFeature")
WORDS = ("insulin", "glucose", "receptor", "expression", "patients", "increased", "reduced", "risk",
         "associated", "treatment", "cells", "levels", "signalling", "hepatic", "obesity", "variant")


def synthetic_shards(n: int, shard_size: int, seed: int = 0):
    """Yield lists of ``shard_size`` synthetic merged triples (``n`` in all), deterministically."""
    from graphmert.extract.triples import Evidence, Triple

    rng = random.Random(seed)
    n_entities = max(10, n // 5)
    shard = []
    for i in range(n):
        h, t = rng.randrange(n_entities), rng.randrange(n_entities)
        evidence = []
        for k in range(rng.randint(1, 3)):
            words = " ".join(rng.choice(WORDS) for _ in range(14))
            sentence = f"E{h} {words} E{t} ({i}.{k})."
            evidence.append(Evidence(doc_id=str(10_000_000 + rng.randrange(n)), chunk_id=f"c{k}",
                                     sentence=sentence, sentence_start=0, head_start=0,
                                     head_end=len(f"E{h}"),
                                     tail_start=len(sentence) - len(f"E{t} ({i}.{k})."), tail_end=-1,
                                     confidence=rng.random()))
        conf = max(e.confidence for e in evidence)
        prefix = ("NCBIGene:", "MESH:D")[h % 2]
        shard.append(Triple(
            head_id=f"{prefix}{h}", head_name=f"entity {h}", head_category=CATEGORIES[h % 4],
            relation=RELATIONS[i % len(RELATIONS)], tail_id=f"MESH:D{t}", tail_name=f"entity {t}",
            tail_category=CATEGORIES[t % 4], tail_source="mention", confidence=conf,
            confidence_mean=conf, evidence_count=len(evidence),
            documents=sorted({e.doc_id for e in evidence}), evidence=evidence,
            checkpoint_id="ckpt-bench", run_id="bench"))
        if len(shard) == shard_size:
            yield shard
            shard = []
    if shard:
        yield shard


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux


def worker(mode: str, n: int, shard_size: int, out: Path, formats: str = "nt,kgx") -> dict:
    """Run one mode in this process; returns its measurements."""
    from graphmert.config import ExportConfig
    from graphmert.export.kgx import write_kgx
    from graphmert.export.rdf import RunInfo, build_graph, write_ntriples
    from graphmert.export.terms import ExportTerms
    import rdflib  # noqa: F401  (imported before the baseline, like the other modes' libraries)

    terms, run = ExportTerms(ExportConfig()), RunInfo(config_hash="bench")
    baseline = _peak_mb()
    t = time.perf_counter()
    lines, size, extra = 0, 0, {}
    if mode == "generate":
        triples = [x for s in synthetic_shards(n, shard_size) for x in s]
        extra["held"] = len(triples)
    elif mode == "stream nt":
        lines = write_ntriples(synthetic_shards(n, shard_size), out / "kg.nt", terms, run)
    elif mode == "graph nt":
        g = build_graph((x for s in synthetic_shards(n, shard_size) for x in s), terms, run)
        lines = len(g)
        g.serialize(destination=str(out / "kg.nt"), format="nt", encoding="utf-8")
    elif mode == "stream kgx":
        counts = write_kgx(synthetic_shards(n, shard_size), out, terms, run)
        lines = counts["nodes"] + counts["edges"]
    elif mode.startswith("stage"):
        m = _export_stage(out, n, shard_size, synchronous=mode == "stage sync", formats=formats)
        t = time.perf_counter() - m.pop("seconds")
        workers = 1 if mode == "stage sync" else 2
        lines = m["lines"]
        extra = {"tasks": m["tasks"], "task s": m["task_s"],
                 "driver s": max(m["elapsed_s"] - m["task_s"] / workers, 0.0)}
        out = out / "run" / "export"
    else:
        raise SystemExit(f"unknown mode {mode!r}; choose from {MODES}")
    seconds = time.perf_counter() - t
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file() and p.name != "manifest.json")
    return {"mode": mode, "seconds": seconds, "triples/s": n / seconds, "lines": lines,
            "peak RSS MB": _peak_mb(), "RSS growth MB": _peak_mb() - baseline,
            "output MB": size / 1e6, **extra}


def _export_stage(out: Path, n: int, shard_size: int, synchronous: bool, formats: str) -> dict:
    """The export stage (``export.formats=[formats]``) over the synthetic shards written as a fake
    extract stage; returns the stage's seconds (cluster start included), its own elapsed seconds
    (manifest), the parts' summed task seconds, statements written and shard tasks."""
    from graphmert.config import load_config
    from graphmert.extract.triples import write_triples
    from graphmert.io import atomic_write_json
    from pipelines.scheduler import Session
    from pipelines.stage import run_stage
    from pipelines.stages.export import EXPORT

    run_dir = out / "run"
    ex = run_dir / "extract"
    ex.mkdir(parents=True)
    names = []
    for i, shard in enumerate(synthetic_shards(n, shard_size)):
        names.append(f"triples-{i:05d}.parquet")
        write_triples(shard, ex / names[-1])
    atomic_write_json(ex / "manifest.json", {"stage": "extract", "shards": names, "config_hash": "bench",
                                             "output_hash": "bench"})
    cfg = load_config(None, [f"export.formats=[{formats}]", "pipeline.workers=2"])
    t = time.perf_counter()
    with Session(cfg.pipeline, run_dir, "synchronous" if synchronous else "local", quiet=True) as s:
        m = run_stage(EXPORT, cfg, run_dir, quiet=True, session=s)
    part = m["tasks"]["part"]
    return {"seconds": time.perf_counter() - t, "elapsed_s": m["elapsed_s"], "tasks": part["shards"],
            "task_s": part["task_seconds"],
            "lines": sum(m["statements"].values()) + m.get("kgx_nodes", 0) + m.get("kgx_edges", 0)}


def _distinct_lines(path: Path) -> int:
    import hashlib

    seen = set()
    with open(path, "rb") as f:
        for line in f:
            seen.add(hashlib.blake2b(line, digest_size=12).digest())
    return len(seen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=100_000)
    ap.add_argument("--shard-size", type=int, default=10_000, help="triples per shard (extract's default)")
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    ap.add_argument("--formats", default="nt,kgx",
                    help="export.formats of the stage modes (comma-separated; must include nt for the "
                         "byte check against stream nt)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.triples, args.shard_size, args.dir, args.formats)))
        return

    rows = []
    with tempfile.TemporaryDirectory(prefix="graphmert-export-bench-") as tmp:
        dirs = {}
        for mode in args.modes:
            d = Path(tmp) / mode.replace(" ", "-")
            d.mkdir()
            dirs[mode] = d
            cmd = [sys.executable, __file__, "--worker", mode, "--triples", str(args.triples),
                   "--shard-size", str(args.shard_size), "--dir", str(d), "--formats", args.formats]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode:
                raise SystemExit(f"{mode}: worker failed:\n{proc.stderr[-3000:]}")
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"{mode}: {rows[-1]['seconds']:.1f}s, peak RSS {rows[-1]['peak RSS MB']:.0f} MB",
                  flush=True)
        check = {}
        if "stream nt" in dirs and "graph nt" in dirs:
            distinct = _distinct_lines(dirs["stream nt"] / "kg.nt")
            graph = next(r["lines"] for r in rows if r["mode"] == "graph nt")
            check = {"stream_distinct_lines": distinct, "graph_statements": graph,
                     "same_statement_count": distinct == graph}
        stage = [m for m in ("stage sync", "stage 2 workers") if m in dirs]
        if "stream nt" in dirs and stage and "nt" in args.formats.split(","):
            ref = (dirs["stream nt"] / "kg.nt").read_bytes()
            check["stage_nt_equals_stream_nt"] = all(
                (dirs[m] / "run" / "export" / "kg.nt").read_bytes() == ref for m in stage)
    print_table(rows, f"export: {args.triples:,} synthetic triples, shards of {args.shard_size:,}")
    if "stream_distinct_lines" in check:
        print(f"\nstream nt distinct lines {check['stream_distinct_lines']:,} vs graph statements "
              f"{check['graph_statements']:,}: {'same' if check['same_statement_count'] else 'DIFFERENT'}")
    if "stage_nt_equals_stream_nt" in check:
        print(f"stage kg.nt equals stream nt byte for byte: {check['stage_nt_equals_stream_nt']}")
    write_json("export", rows, args.out, triples=args.triples, shard_size=args.shard_size,
               formats=args.formats, **check)


if __name__ == "__main__":
    main()
