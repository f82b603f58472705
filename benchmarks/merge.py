"""The extract stage's merge, in the driver and over key ranges, on synthetic part shards.

    .venv/bin/python benchmarks/merge.py --parts 200 --triples-per-part 2500 --ranges 1 4 8 \
        [--entities 1000] [--sentence-chars 1] --out runs/merge.json

Builds ``--parts`` part shards as the extract stage writes them (each a sorted run of one system;
heads, relations and tails drawn from ``--entities`` so that keys repeat across parts and their
evidence merges: fewer entities, more evidence per merged triple; each evidence's sentence
``--sentence-chars`` long, abstracts' sentences being about 150), then
runs :func:`pipelines.stages.extract_merge.merge_kg` once per ``--ranges`` value in a run folder of
its own, on a LocalCluster of ``--workers`` (or ``--scheduler synchronous``). For each it reports:

* ``wall_s``: the whole merge;
* ``driver_s``: the wall time outside the shard maps (sampling the keys, cutting the shards, joining
  the lines; for one range, everything);
* ``task_s``: the seconds the split, merge and JSON-lines tasks took, summed over workers, and
  ``task_s_by_map`` the same per map (``split-graphmert``, ``merge-graphmert``, ``jsonl-graphmert``);
* ``driver_mb_before`` and ``driver_peak_mb``: this process's resident set before the merge and its
  peak during it (sampled every 0.2 s: :class:`scale.RssSampler`); with one range the driver holds
  what the merge holds;
* the merged triples, the KG's shards, and the sha256 of every file, which must agree across the
  ranges (the benchmark fails otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from graphmert.config import load_config                                # noqa: E402
from graphmert.extract.sorted_merge import sort_run                     # noqa: E402
from graphmert.extract.triples import Evidence, Triple, write_systems   # noqa: E402
from graphmert.io import file_sha256                                    # noqa: E402
from pipelines.scheduler import Session                                 # noqa: E402
from pipelines.stage import Shard, StageContext                          # noqa: E402
from pipelines.stages.extract_merge import merge_kg                     # noqa: E402
from scale import RssSampler                                            # noqa: E402

SYSTEM = "graphmert"


def synthetic_parts(folder: Path, parts: int, per_part: int, entities: int, seed: int,
                    sentence_chars: int = 1) -> list[Shard]:
    """``parts`` part shards of ``per_part`` per-chunk triples each, sorted by key; each evidence's
    sentence ``sentence_chars`` long."""
    rng = random.Random(seed)
    out = []
    for i in range(parts):
        triples = [_triple(rng, f"d{i}-{j // 5}", entities, sentence_chars) for j in range(per_part)]
        path = folder / f"part-{i:05d}.parquet"
        write_systems({SYSTEM: sort_run(triples)}, path)
        out.append(Shard(index=i, file=path.name, id=f"synthetic-{seed}-{i}", path=path,
                         sha256=file_sha256(path), counts={}, seconds=0.0, reused=True))
    return out


def _triple(rng: random.Random, doc: str, entities: int, sentence_chars: int = 1) -> Triple:
    head, tail = rng.randrange(entities), rng.randrange(entities)
    conf = round(rng.random(), 4)
    sentence = (f"s {doc} {head} {tail} " * sentence_chars)[:sentence_chars]      # "s" by default
    ev = Evidence(doc_id=doc, chunk_id=f"{doc}#0", sentence=sentence, sentence_start=0, head_start=head % 97,
                  head_end=head % 97 + 4, confidence=conf)
    return Triple(head_id=f"X:{head}", head_name=f"entity {head}", head_category="Gene",
                  relation=rng.choice(["Association", "Positive_Correlation", "Negative_Correlation"]),
                  tail_id=f"X:{tail}", tail_name=f"entity {tail}", tail_category="Disease",
                  tail_source="mention", confidence=conf, confidence_mean=conf, evidence_count=1,
                  documents=[doc], evidence=[ev])


def run_once(parts: list[Shard], run_dir: Path, ranges: int, args: argparse.Namespace) -> dict:
    """One merge into ``run_dir/extract``; its times, counts and files' sha256."""
    cfg = load_config(None, [f"pipeline.workers={args.workers}", f"pipeline.scheduler={args.scheduler}",
                                 f"pipeline.merge_partitions={ranges}"])
    out = run_dir / "extract"
    out.mkdir(parents=True)
    with Session(cfg.pipeline, run_dir, quiet=True) as session:
        ctx = StageContext(cfg=cfg, run_dir=run_dir, out=out, quiet=True, stage="extract",
                           config_hash="merge-benchmark", session=session)
        before = psutil.Process().memory_info().rss / 2**20
        t0 = time.perf_counter()
        with RssSampler(os.getpid()) as rss:
            tally, shards = merge_kg(ctx, parts, SYSTEM, ranges)
        wall = time.perf_counter() - t0
    maps = sum(m["seconds"] for m in ctx.tasks.values())
    files = sorted(p.name for p in out.iterdir())
    return {"ranges": ranges, "wall_s": round(wall, 2), "driver_s": round(wall - maps, 2),
            "task_s": round(sum(m["task_seconds"] for m in ctx.tasks.values()), 2),
            "task_s_by_map": {name: m["task_seconds"] for name, m in ctx.tasks.items()},
            "driver_mb_before": round(before), "driver_peak_mb": round(rss.driver_mb),
            "triples": tally.triples, "shards": len(shards),
            "files": {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in files}}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", type=int, default=200)
    ap.add_argument("--triples-per-part", type=int, default=2500)
    ap.add_argument("--entities", type=int, default=1000, help="distinct heads and tails drawn from")
    ap.add_argument("--sentence-chars", type=int, default=1, help="each evidence's sentence length")
    ap.add_argument("--ranges", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", default="local")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path("runs/merge-benchmark"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "parts").mkdir(parents=True)
    parts = synthetic_parts(args.work / "parts", args.parts, args.triples_per_part, args.entities, args.seed,
                            args.sentence_chars)
    rows = [run_once(parts, args.work / f"ranges-{r}" / "run", r, args) for r in args.ranges]   # one run id
    if any(row["files"] != rows[0]["files"] for row in rows):
        raise SystemExit("merge benchmark: the key-range merge wrote other files than the driver merge")
    result = {"parts": args.parts, "per_chunk_triples": args.parts * args.triples_per_part,
              "workers": args.workers, "scheduler": args.scheduler,
              "rows": [{k: v for k, v in row.items() if k != "files"} for row in rows]}
    print("| ranges | wall s | driver s | task s (split / merge / jsonl) | driver MB before / peak | "
          "merged triples | shards |\n|---|---|---|---|---|---|---|")
    for row in result["rows"]:
        by_map = " / ".join(f"{row['task_s_by_map'].get(f'{m}-{SYSTEM}', 0):.1f}" for m in ("split", "merge", "jsonl"))
        print(f"| {row['ranges']} | {row['wall_s']} | {row['driver_s']} | {row['task_s']} ({by_map}) | "
              f"{row['driver_mb_before']} / {row['driver_peak_mb']} | {row['triples']:,} | {row['shards']} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
