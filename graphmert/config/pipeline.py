"""Section ``pipeline``: orchestration on Dask (docs/PIPELINE.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from graphmert.config.options import opt


#: per-chunk triples per key range of the extract merge when ``merge_partitions`` is 0 (automatic)
MERGE_RANGE_TRIPLES = 2_000_000


@dataclass
class PipelineConfig:
    """Orchestration on Dask (used by pipelines/, never by the library; docs/PIPELINE.md). No key
    here changes any output, so none is part of a stage's config hash."""

    scheduler: str = opt("local", help="'local' (a LocalCluster of worker processes), 'synchronous' "
                         "(every task in the driver process, for debugging) or a scheduler address "
                         "such as tcp://host:8786; DASK_SCHEDULER_ADDRESS and --scheduler override it")
    workers: int = opt(0, min=0, help="LocalCluster worker processes (one thread each); 0 = one "
                       "per core")
    malloc_trim_threshold: Optional[int] = opt(
        None, min=0, help="LocalCluster workers: glibc's MALLOC_TRIM_THRESHOLD_ in bytes, which also "
        "fixes its mmap threshold (Dask's own default is 65536). Set it where worker memory matters "
        "more than time: on 1,000 documents the largest extract worker peaked at 1.5 GB against "
        "3.2 GB, at 1.7x the task time (docs/experiments/scale-memory.md); null: glibc's "
        "dynamic thresholds")
    retries: int = opt(2, min=0, help="times a shard task is retried after it raised or its worker "
                       "died")
    connect_timeout: float = opt(10.0, min=0.0, min_exclusive=True,
                                 help="seconds to reach a scheduler address and find a worker there")
    merge_partitions: int = opt(
        0, min=0, help="key ranges the extract stage's merge is cut into, each merged by its own "
        "task (a sample sort; the files are the same either way): 1 = one k-way stream in the "
        f"driver; 0 = one range per {MERGE_RANGE_TRIPLES:,} per-chunk triples, so the driver below that")
    mirror: str = opt("", help="local working copy of a run directory given as an fsspec URL "
                      "(s3://…, gs://…, file://…); '' = $GRAPHMERT_CACHE/runs/<hash of the URL>, "
                      "GRAPHMERT_CACHE defaulting to ~/.cache/graphmert")
