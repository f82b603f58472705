"""Extraction throughput: per-phase seconds, documents/s, and how close it runs to the arithmetic limit.

    .venv/bin/python benchmarks/extract.py [--configs demo biored] [--docs N] [--threads T]
        [--batch-size B] [--leaves-per-forward L] [--run-dir RUN] [--compare-with REV] [--single]
        [--repeat N] [--processes N] [--blas-threads N] [--out FILE]

For each config, the first N documents that extraction would read (``extract.paths``, else the
corpus's documents with entity annotations), a tokenizer trained on them and the config's models
(``train.ensemble_size`` of them) at its size with random weights: speed does not depend on the
weights (with ``--run-dir RUN``, one config, the run's tokenizer and trained checkpoints instead).
The config's extractor runs on them: the paper's :class:`~graphmert.extract.extractor.Extractor`, or
the :class:`~graphmert.extract.pairs.PairExtractor` of a query-group model (``model.leaf_query =
"fixed"``, e.g. ``configs/biored.yaml``; its controls are not run), with the relation typer and the
pair heads the config asks for, fitted first as the extract stage fits them (not timed). The row
gives the ``models`` and ``pair_heads`` it ran with.

Phases (seconds): ``questions`` (heads and candidates; PairExtractor only), ``forward`` (the encoder,
timed around every model call), ``other`` (graph assembly, collation and scoring: the extractor's time
outside the forward), ``decide`` (pairs, selection and triples; PairExtractor only), ``write`` (the
Parquet shard). ``host_s`` is questions + other + decide, the work outside the model that a GPU
does not speed up, and ``forward_share`` the forward's part of the total. With ``--repeat N`` each
phase is its fastest of N extractions (on a shared machine single runs vary by ±20%), and
``host_median_s`` the median of the runs' host work (a pause such as a full collection of Python's
cycle collector lands in another phase each run, and each phase's fastest hides it), and
``repeat_agreement`` is the smallest share of triples a later run has in common with the first. Work: queries,
forwards, graphs, tokens (real, unpadded) and padded positions; with the relatedness head,
``pair_rows``, the question-candidate rows x(h, c) a model's pass sums per pair where it encodes
them, and ``pair_sums``, the per-batch pair sums that cross to the host
(:class:`~graphmert.extract.pair_heads.PairSums`).

On CUDA one untimed extraction per config comes first (context, kernels, allocator).

Each extraction runs inside ``pipelines.scheduler.frozen_heap`` (the objects alive before it are
left out of the cycle collector's scans), as the stage runs each part.

Arithmetic limit: the forwards' FLOPs at the real tokens — 2·n·P for the backbone's P linear weights
and 4·layers·n²·H for attention, per graph of n tokens (heads and H-GAT are left out: under 2%) —
divided by the device's measured matmul rate (fp32 with the same threads on a CPU, bf16 on CUDA). ``achieved/limit`` is that
ideal time over the measured total: 1.0 would mean nothing but useful matrix arithmetic.

``fit_typer_s`` and ``fit_heads_s`` (the one-process row) are the fits' seconds, outside the
extraction's total: the stage pays them once per run, in its driver, where on a 16-core GPU machine
they took twice as long as on 2 CPU cores. ``--blas-threads N`` caps the BLAS pools (OpenBLAS, MKL)
of this process and of every ``--processes`` child at N (threadpoolctl), to tell whether BLAS
threads are why (the title says the cap; without it the libraries choose, one per core), and
``blas_threads`` is the most threads a BLAS pool of the row's process(es) could use.

``peak_MB`` is the process's peak resident set after the config's runs (cumulative: compare settings
such as ``--leaves-per-forward N``, the masked leaves a forward may hold, one process each).

``--processes N`` also runs the extraction as N processes at once, each over its share of the
documents (contiguous, as the extract stage's parts are) with its own copy of the models on the same
device, as the stage's LocalCluster workers extract (``pipeline.workers``). Each process sets up and
fits as above (not timed), waits until all are ready, then extracts its share ``--repeat`` times; the
row's ``documents/s`` is every process's documents over the wall time from the first start to the
last finish, its phases the sums over the processes' fastest runs, ``agreement`` the share of
the one-process row's triples the processes found together. Where the processes slow each other
down, the fastest runs hide it: ``<phase>_median_s`` sums each process's median run per phase
(``median_s`` their total), so the phase that grows under contention shows against its fastest, and
``busy_share`` is the time the processes spent inside runs over processes × wall time (below 1: they
waited, at the start line or for the slowest share). On a GPU this shows how far host work
spread over the machine's cores keeps the card busy; on a CPU the processes share its cores.

``--profile N`` adds torch.profiler's N most expensive operators per config. ``--compare-with REV`` measures the same documents with the code of git revision REV (in a temporary
worktree, this script's own measurement code) and prints both in one table with the speed-up.
"""

from __future__ import annotations

import sys

if "--src" in sys.argv:                      # the code under test: another checkout (--compare-with)
    sys.path.insert(0, sys.argv[sys.argv.index("--src") + 1])

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from contextlib import contextmanager, nullcontext  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(1 if "--src" in sys.argv else 0, str(Path(__file__).resolve().parent))
from _common import ROOT, encoder_flops, matmul_flops_per_s, print_table, require_shared, write_json  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

from graphmert.config import TYPER_CHOICES, load_config  # noqa: E402
from graphmert.corpus.windowing import chunk_documents  # noqa: E402
from graphmert.corpus.nlp import TextAnalyzer  # noqa: E402
from graphmert.corpus.readers import read_corpus  # noqa: E402
from graphmert.corpus.tokenizer import load_tokenizer, train_tokenizer  # noqa: E402
from graphmert.extract.extractor import Extractor  # noqa: E402
from graphmert.extract.pairs import PairExtractor  # noqa: E402
from graphmert.extract.relation_typer import RelationTyper  # noqa: E402
from graphmert.extract.triples import triple_key, write_triples  # noqa: E402
from graphmert.kg.graph import load_relation_map  # noqa: E402
from graphmert.kg.loaders import load_kg  # noqa: E402
from graphmert.kg.schema import RelationSchema  # noqa: E402
from graphmert.model.checkpoint import load_checkpoint  # noqa: E402
from graphmert.model.graphmert import build_model  # noqa: E402
from pipelines.stages.extract import typer_documents  # noqa: E402
from pipelines.stages.train import member_models  # noqa: E402

CONFIGS = {"demo": "configs/demo.yaml", "small": "configs/small.yaml", "biored": "configs/biored.yaml",
           "biored-gpu": "configs/biored-gpu.yaml"}


def load_docs(cfg, limit: int) -> list:
    paths = cfg.extract.paths or cfg.corpus.paths
    if any("../shared" in p for p in paths):
        require_shared()
    docs = []
    for d in read_corpus([str(ROOT / p) for p in paths], format=cfg.extract.format if cfg.extract.paths else "auto"):
        if d.mentions:
            docs.append(d)
        if len(docs) >= limit:
            break
    return list(TextAnalyzer(sentences=True, abbreviations=False).annotate(docs))


def peak_rss_mb() -> float:
    """This process's peak resident set so far (MB): per setting only when a process measures one
    config with one setting (as ``--leaves-per-forward`` comparisons should be run)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def blas_threads() -> int:
    """The most threads any BLAS pool loaded in this process may use (threadpoolctl; 0: none loaded)."""
    from threadpoolctl import threadpool_info

    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=0)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class ForwardMeter:
    """Times every forward of ``models`` (an ensemble's members too) and counts its work and FLOPs at
    the real tokens (module docstring)."""

    def __init__(self, *models: nn.Module) -> None:
        self.models = list({id(m): m for m in models}.values())
        self.seconds = self.flops = 0.0
        self.tokens = self.padded = 0

    def _timed(self, model: nn.Module):
        inner = model.forward

        def timed(batch, *args, **kw):
            n = batch.attention_mask.sum(1)                                           # [B] real tokens
            self.tokens += int(n.sum())
            self.padded += batch.attention_mask.numel()
            self.flops += encoder_flops(model, n)
            device = batch.input_ids.device
            _sync(device)
            t0 = time.perf_counter()
            out = inner(batch, *args, **kw)
            _sync(device)
            self.seconds += time.perf_counter() - t0
            return out
        return timed

    @contextmanager
    def watch(self):
        """Meter the models' forwards inside the ``with`` block."""
        for model in self.models:
            model.forward = self._timed(model)
        try:
            yield self
        finally:
            for model in self.models:
                del model.forward


def setup(cfg, docs, run_dir: Path | None, device: torch.device):
    if cfg.kg.path:
        cfg.kg.path = str(ROOT / cfg.kg.path)
    cfg.kg.nodes = [str(ROOT / p) for p in cfg.kg.nodes]
    cfg.kg.edges = [str(ROOT / p) for p in cfg.kg.edges]
    cfg.kg.relation_files = [str(ROOT / p) for p in cfg.kg.relation_files]
    kg = load_kg(cfg.kg)
    if run_dir is not None:
        tok = load_tokenizer(run_dir / "tokenizer" / "tokenizer.json")
        rmap = load_relation_map(run_dir / "graphs" / "relation_map.json")
        model, _ = load_checkpoint(run_dir / "train" / "model", expected_relations=rmap)
        members = [load_checkpoint(p, expected_relations=rmap)[0] for p in
                   member_models(run_dir / "train", json.loads((run_dir / "train" / "manifest.json").read_text()))]
        schema = RelationSchema.load(run_dir / "graphs" / "relation_schema.json")
    else:
        tok = train_tokenizer((d.text for d in docs), cfg.tokenizer)
        rmap = dict(kg.relation_map)
        members = []
        for seed in range(cfg.train.ensemble_size):         # the config's ensemble, members seeded 1, 2, ...
            torch.manual_seed(seed)
            members.append(build_model(cfg.model, tok.get_vocab_size(), len(rmap)))
        model, members = members[0], members[1:]
        schema = RelationSchema.from_kg(kg, cfg.kg.relation_schema)
        cfg.extract.min_confidence, cfg.extract.beta = 0.0, 0.0   # random weights: keep every best tail
    for m in (model, *members):
        m.to(device).eval()
    chunks = list(chunk_documents(docs, tok, cfg.corpus, cfg.graph))
    return kg, schema, tok, rmap, model, members, chunks


def fit_typer(cfg, docs) -> RelationTyper | None:
    """The relation typer the config's ``extract.relation_choice`` asks for, fitted as the extract
    stage fits it (on ``extract.typer_files`` less the measured documents); not timed: the stage
    fits it once per run, in the driver."""
    x = cfg.extract
    if x.relation_choice not in TYPER_CHOICES and x.typer_min_relation <= 0:
        return None
    x.typer_files = [str(ROOT / p) for p in x.typer_files]
    return RelationTyper.from_config(x).fit(typer_documents(cfg, frozenset(d.id for d in docs)))


def pair_extractor(cfg, kg, schema, tok, rmap, model, members, **kw) -> PairExtractor:
    """The config's :class:`PairExtractor` over ``model`` and its ensemble ``members``."""
    x = cfg.extract
    relations = [r for r in (x.relations or sorted(rmap)) if r in rmap]
    return PairExtractor(model, tok, kg, schema, rmap, x, cfg.graph.num_roots, cfg.graph.num_leaves,
                         relations=relations, members=members, **kw)


def fit_heads(cfg, docs, kg, schema, tok, rmap, model, members) -> tuple:
    """The pair heads the config's extract section asks for, fitted as the extract stage fits them:
    on the models' pair vectors of ``extract.typer_files`` less the measured documents (not timed;
    none under ``--compare-with`` a revision whose library has no ``pair_heads.fit_heads``)."""
    from graphmert.extract import pair_heads

    x = cfg.extract
    fit_pair_heads = getattr(pair_heads, "fit_heads", None)
    if model.config.leaf_query != "fixed" or (x.type_head_weight <= 0 and x.related_head_weight <= 0) \
            or fit_pair_heads is None:
        return None, None
    x.typer_files = [str(ROOT / p) for p in x.typer_files]
    fit_docs = list(typer_documents(cfg, frozenset(d.id for d in docs)))
    ex = pair_extractor(replace(cfg, extract=replace(x, controls=[])), kg, schema, tok, rmap, model, members)
    return fit_pair_heads(ex, fit_docs, list(chunk_documents(fit_docs, tok, cfg.corpus, cfg.graph)), x)


def frozen_heap():
    """The ``frozen_heap`` every shard task of the stage runs in (a revision before it, under
    ``--compare-with``, runs without)."""
    import pipelines.scheduler

    return getattr(pipelines.scheduler, "frozen_heap", nullcontext)()


def run_once(cfg, kg, schema, tok, rmap, model, members, docs, chunks, typer=None, heads=(None, None)
             ) -> tuple[dict, ForwardMeter, set]:
    """One extraction over ``docs`` with per-phase seconds (``heads``: the fitted pair heads)."""
    x = cfg.extract
    sec = {}
    with ForwardMeter(model, *members).watch() as meter, frozen_heap():
        t0 = time.perf_counter()
        if model.config.leaf_query == "fixed":
            ex = pair_extractor(cfg, kg, schema, tok, rmap, model, members, typer=typer, type_head=heads[0],
                                related_head=heads[1])
            plans = ex.questions(docs, chunks)
            queries = [q for p in plans for q in p.queries]
            sec["questions"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            scores = ex.answers(plans, queries, x.ranker)
            sec["other"] = time.perf_counter() - t1 - meter.seconds
            t2 = time.perf_counter()
            triples = ex.decide(plans, queries, scores, x.ranker)
            sec["decide"] = time.perf_counter() - t2
            counts = {"queries": len(queries), **ex.stats}
        else:
            ex = Extractor(model, tok, kg, schema, rmap, x, cfg.graph.num_roots, cfg.graph.num_leaves)
            ex.fit_similarity(chunks)
            t0 = time.perf_counter()
            triples, rep = ex.extract(docs, chunks)
            sec["other"] = time.perf_counter() - t0 - meter.seconds
            counts = rep["counts"]
        sec["forward"] = meter.seconds
    with tempfile.TemporaryDirectory() as tmp:
        t3 = time.perf_counter()
        write_triples(triples, Path(tmp) / "triples.parquet")
        sec["write"] = time.perf_counter() - t3
    row = {"queries": counts["queries"], "forwards": counts["forwards"], "graphs": counts["graphs"],
           "tokens": meter.tokens, "padded": meter.padded, "triples": len(triples),
           "pair_rows": counts.get("pair_vector_rows", 0), "pair_sums": counts.get("pair_vector_sums_copied", 0)}
    row.update({f"{k}_s": sec.get(k, 0.0) for k in PHASES})
    return row, meter, {triple_key(t) for t in triples}


PHASES = ("questions", "forward", "other", "decide", "write")


def fastest(runs: list[tuple[dict, ForwardMeter, set]]) -> tuple[dict, ForwardMeter, set]:
    """One row from repeated :func:`run_once` calls: each phase's fastest, their sum as the total,
    the host phases' sum and the forward's share; with several runs, ``repeat_agreement``, the
    smallest share of triples a run has in common with the first (1.0 on a CPU; a GPU's atomic sums
    may break near-ties of random weights differently)."""
    row = dict(runs[0][0])
    if len(runs) > 1:
        first = runs[0][2]
        row["repeat_agreement"] = round(min(len(first & keys) / len(first | keys) if first | keys else 1.0
                                            for _, _, keys in runs[1:]), 3)
    row.update({f"{k}_s": round(min(r[f"{k}_s"] for r, _, _ in runs), 2) for k in PHASES})
    host = [r["questions_s"] + r["other_s"] + r["decide_s"] for r, _, _ in runs]
    row["host_median_s"] = round(statistics.median(host), 2)
    total = sum(row[f"{k}_s"] for k in PHASES)
    row.update(seconds=round(total, 2), host_s=round(row["questions_s"] + row["other_s"] + row["decide_s"], 2),
               forward_share=round(row["forward_s"] / total, 3) if total else 0.0)
    return row, runs[0][1], runs[0][2]


def profile_ops(name: str, cfg, docs, run_dir: Path | None, device: torch.device, top: int) -> None:
    """Print torch.profiler's ``top`` operators by self time for one packed extraction (not timed)."""
    from torch.profiler import ProfilerActivity, profile

    kg, schema, tok, rmap, model, members, chunks = setup(cfg, docs, run_dir, device)
    typer, heads = fit_typer(cfg, docs), fit_heads(cfg, docs, kg, schema, tok, rmap, model, members)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        run_once(cfg, kg, schema, tok, rmap, model, members, docs, chunks, typer, heads)
    key = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print(f"\n{name}: operators by {key}")
    print(prof.key_averages().table(sort_by=key, row_limit=top))


def bench(name: str, cfg, docs, run_dir: Path | None, device: torch.device, single: bool,
          repeat: int = 1) -> tuple[list[dict], set]:
    """The config's rows (packed; with ``single`` also one query per graph) and the packed row's triples."""
    kg, schema, tok, rmap, model, members, chunks = setup(cfg, docs, run_dir, device)
    rate = matmul_flops_per_s(cfg.model.hidden_size, device)
    t0 = time.perf_counter()
    typer = fit_typer(cfg, docs)
    t1 = time.perf_counter()
    heads = fit_heads(cfg, docs, kg, schema, tok, rmap, model, members)
    fits = {"fit_typer_s": round(t1 - t0, 2), "fit_heads_s": round(time.perf_counter() - t1, 2)}
    once = lambda: run_once(cfg, kg, schema, tok, rmap, model, members, docs, chunks, typer, heads)  # noqa: E731
    if device.type == "cuda":               # CUDA context, kernel and allocator warm-up: not timed
        once()
    rows, keys = [], {}
    for pack in ((True, False) if single else (True,)):
        cfg.extract.pack_queries = pack
        row, meter, keys[pack] = fastest([once() for _ in range(repeat)])
        limit = meter.flops / rate
        rows.append({"config": name, "mode": "packed" if pack else "single", "batch": cfg.extract.batch_size,
                     "leaves": cfg.extract.leaves_per_forward, "documents": len(docs),
                     "chunks": len(chunks), "models": 1 + len(members), "pair_heads": sum(h is not None for h in heads),
                     **row, "documents_per_s": round(len(docs) / row["seconds"], 2),
                     "GFLOP": round(meter.flops / 1e9, 1), "matmul_GFLOP_per_s": round(rate / 1e9, 1),
                     "limit_s": round(limit, 2), "achieved/limit": round(limit / row["seconds"], 3),
                     **fits, "blas_threads": blas_threads(), "peak_MB": round(peak_rss_mb())})
    if single:
        union = keys[True] | keys[False]
        for r in rows:
            r["agreement"] = round(len(keys[True] & keys[False]) / len(union), 3) if union else 1.0
    return rows, keys[True]


def share_of(docs: list, k: int, n: int) -> list:
    """The ``k``-th of ``n`` contiguous, near-equal shares of ``docs`` (the stage's parts are contiguous)."""
    cut = [len(docs) * i // n for i in range(n + 1)]
    return docs[cut[k]:cut[k + 1]]


def run_share(cfg, docs, run_dir: Path | None, device: torch.device, k: int, n: int,
              repeat: int, go: Path) -> dict:
    """One process of ``--processes n``: set up and fit over every document (the same tokenizer,
    models and fits as the one-process row), mark ``go``.ready-k, wait for ``go``, extract share ``k``
    ``repeat`` times. Its fastest phases, the wall-clock start and end, and its triples' keys."""
    kg, schema, tok, rmap, model, members, chunks = setup(cfg, docs, run_dir, device)
    typer, heads = fit_typer(cfg, docs), fit_heads(cfg, docs, kg, schema, tok, rmap, model, members)
    mine = share_of(docs, k, n)
    ids = {d.id for d in mine}
    chunks = [c for c in chunks if c.doc_id in ids]
    if device.type == "cuda":               # CUDA context, kernel and allocator warm-up: not timed
        run_once(cfg, kg, schema, tok, rmap, model, members, mine, chunks, typer, heads)
    Path(f"{go}.ready-{k}").touch()
    while not go.exists():
        time.sleep(0.01)
    start = time.time()
    runs = [run_once(cfg, kg, schema, tok, rmap, model, members, mine, chunks, typer, heads)
            for _ in range(repeat)]
    end = time.time()
    row, _, keys = fastest(runs)
    median = {k: statistics.median(r[f"{k}_s"] for r, _, _ in runs) for k in PHASES}
    return {**row, "documents": len(mine), "start": start, "end": end, "peak_MB": round(peak_rss_mb()),
            "blas_threads": blas_threads(),
            "median": median, "busy_s": sum(r[f"{k}_s"] for r, _, _ in runs for k in PHASES),
            "keys": [list(k) for k in keys]}


def share_args(args: argparse.Namespace) -> list[str]:
    """The options a ``--processes`` share runs with: the measurement's, not the table's."""
    argv = ["--docs", str(args.docs), "--threads", str(args.threads), "--device", args.device,
            "--batch-size", str(args.batch_size), "--leaves-per-forward", str(args.leaves_per_forward),
            "--repeat", str(args.repeat)]
    argv += ["--blas-threads", str(args.blas_threads)] if args.blas_threads else []
    return argv + (["--run-dir", str(args.run_dir)] if args.run_dir else [])


def run_processes(name: str, argv: list[str], n: int, repeat: int, docs: int, single: dict, single_keys: set
                  ) -> dict:
    """The ``--processes n`` row of config ``name`` (module docstring): ``n`` copies of this script
    with ``argv`` (:func:`share_args`), one per share, started together once every one has set up;
    ``single``: the one-process row, and ``single_keys`` its triples."""
    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / f"go-{uuid.uuid4().hex}"
        outs = [Path(tmp) / f"share-{k}.json" for k in range(n)]
        threads = argv[argv.index("--threads") + 1]            # BLAS pools too, as the stage's workers set them
        env = {**os.environ, **{k: threads for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
        logs = [out.with_suffix(".log") for out in outs]        # a file, not a pipe nobody reads while waiting
        errs = [log.open("w") for log in logs]
        procs = [subprocess.Popen([sys.executable, __file__, *argv, "--configs", name, "--share", str(k),
                                   "--processes", str(n), "--go", str(go), "--out", str(out)],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
                 for k, (out, err) in enumerate(zip(outs, errs))]

        def failed(k: int) -> SystemExit:
            for p in procs:
                p.kill()
            for err in errs:
                err.close()
            return SystemExit(f"--processes: share {k} failed:\n{logs[k].read_text()[-3000:]}")

        while not all(Path(f"{go}.ready-{k}").exists() for k in range(n)):
            for k, p in enumerate(procs):
                if p.poll() is not None:
                    raise failed(k)
            time.sleep(0.05)
        go.touch()
        for k, p in enumerate(procs):
            if p.wait():
                raise failed(k)
        for err in errs:
            err.close()
        shares = [json.loads(out.read_text())["rows"][0] for out in outs]
    wall = max(s["end"] for s in shares) - min(s["start"] for s in shares)
    keys = {tuple(k) for s in shares for k in s["keys"]}
    union = keys | single_keys
    row = {k: v for k, v in single.items() if k in ("config", "mode", "batch", "leaves", "chunks", "models",
                                                   "pair_heads", "GFLOP", "matmul_GFLOP_per_s")}
    row.update({k: sum(s[k] for s in shares) for k in ("queries", "forwards", "graphs", "tokens", "padded", "triples")})
    row.update({f"{k}_s": round(sum(s[f"{k}_s"] for s in shares), 2) for k in PHASES})
    host = sum(s["host_s"] for s in shares)
    total = sum(s["seconds"] for s in shares)
    row.update({f"{k}_median_s": round(sum(s["median"][k] for s in shares), 2) for k in PHASES})
    row.update(processes=n, documents=docs, host_s=round(host, 2), seconds=round(total, 2),
               forward_share=round(row["forward_s"] / total, 3) if total else 0.0,
               median_s=round(sum(row[f"{k}_median_s"] for k in PHASES), 2),
               busy_share=round(sum(s["busy_s"] for s in shares) / (n * wall), 3) if wall else 0.0,
               wall_s=round(wall, 2), documents_per_s=round(docs * repeat / wall, 2),
               peak_MB=max(s["peak_MB"] for s in shares), blas_threads=max(s["blas_threads"] for s in shares),
               agreement=round(len(keys & single_keys) / len(union), 3) if union else 1.0)
    return row


def compare_with(rev: str, argv: list[str]) -> list[dict]:
    """Rows measured with the code of ``rev`` (a temporary git worktree; this script measures)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree, out = Path(tmp) / "tree", Path(tmp) / "rows.json"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            subprocess.run([sys.executable, __file__, "--src", str(tree), "--out", str(out), *argv],
                           check=True, cwd=ROOT)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
        return json.loads(out.read_text())["rows"]


def _own_args(argv: list[str]) -> list[str]:
    """``argv`` without --compare-with/--out/--src/--profile/--processes and their values (the other
    revision measures the one-process rows; its script may not know --processes)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--compare-with", "--out", "--src", "--profile", "--processes"):
            skip = True
        else:
            out.append(a)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["demo", "biored"], choices=sorted(CONFIGS))
    ap.add_argument("--docs", type=int, default=100, help="documents per config")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch CPU threads")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch-size", type=int, default=0, help="query graphs per forward "
                    "(extract.batch_size; default: the config's)")
    ap.add_argument("--leaves-per-forward", type=int, default=0, help="masked leaves per forward at "
                    "most (extract.leaves_per_forward; default: the config's)")
    ap.add_argument("--run-dir", type=Path, default=None, help="use this run's tokenizer and "
                    "checkpoint (with a single --configs entry)")
    ap.add_argument("--single", action="store_true", help="also one query per graph (extract.pack_queries "
                    "false), with the agreement of the two modes' triples")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="run each extraction N times and "
                    "report each phase's fastest (default 1)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="also print torch.profiler's N "
                    "operators with the most self time, from an extra run per config")
    ap.add_argument("--compare-with", metavar="REV", help="also measure git revision REV, in one table")
    ap.add_argument("--processes", type=int, default=1, metavar="N", help="also extract with N processes "
                    "at once, each over its share of the documents (module docstring)")
    ap.add_argument("--blas-threads", type=int, default=0, metavar="N", help="cap the BLAS pools at N threads, "
                    "here and in every --processes child (default: the libraries' own, one per core)")
    ap.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--share", type=int, default=None, help=argparse.SUPPRESS)   # a --processes child
    ap.add_argument("--go", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.run_dir is not None and len(args.configs) != 1:
        raise SystemExit("--run-dir needs exactly one --configs entry")
    torch.set_num_threads(args.threads)
    if args.blas_threads:                   # the pools loaded now, and (by their variables) those loaded later
        from threadpoolctl import threadpool_limits

        os.environ.update({k: str(args.blas_threads) for k in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
        threadpool_limits(limits=args.blas_threads, user_api="blas")       # for the process's lifetime
    device = torch.device(args.device)
    overrides = [f"extract.batch_size={args.batch_size}"] if args.batch_size else []
    overrides += [f"extract.leaves_per_forward={args.leaves_per_forward}"] if args.leaves_per_forward else []
    if args.share is not None:
        (name,) = args.configs
        cfg = load_config(ROOT / CONFIGS[name], overrides)
        row = run_share(cfg, load_docs(cfg, args.docs), args.run_dir, device, args.share, args.processes,
                        args.repeat, args.go)
        write_json("extract-share", [row], args.out)
        return
    before = compare_with(args.compare_with, _own_args(sys.argv[1:])) if args.compare_with else []
    rows = []
    for name in args.configs:
        cfg = load_config(ROOT / CONFIGS[name], overrides)
        docs = load_docs(cfg, args.docs)
        got, keys = bench(name, cfg, docs, args.run_dir, device, args.single, args.repeat)
        rows += got
        if args.processes > 1:
            multi = run_processes(name, share_args(args), args.processes, args.repeat, len(docs), got[0], keys)
            rows.append({**multi, "mode": f"packed, {args.processes} processes"})
        if args.profile:
            profile_ops(name, load_config(ROOT / CONFIGS[name], overrides), docs, args.run_dir, device,
                        args.profile)
    if before:
        old = {(r["config"], r["mode"]): r for r in before}
        for r in before:
            r["code"] = args.compare_with
        for r in rows:
            r["code"] = "this tree"
            if (r["config"], r["mode"]) in old:
                r["speedup"] = round(old[(r["config"], r["mode"])]["seconds"] / r["seconds"], 2)
        rows = sorted(before + rows, key=lambda r: (r["config"], r["mode"], r["code"] != args.compare_with))
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {args.threads} thread(s)"
    where += f", BLAS capped at {args.blas_threads} thread(s)" if args.blas_threads else ""
    print_table(rows, f"extraction ({where})")
    write_json("extract", rows, args.out, threads=args.threads, docs=args.docs, device=where,
               run_dir=str(args.run_dir) if args.run_dir else None)


if __name__ == "__main__":
    main()
