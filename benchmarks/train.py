"""Training throughput and peak memory: the real trainer (masking + collation, forward, the masked
losses, backward, AdamW) for the tiny, small and paper configs, packed vs dense layout.

    .venv/bin/python benchmarks/train.py                       # table + benchmarks/results/train.json
    .venv/bin/python benchmarks/train.py --configs tiny small --steps 10 --threads 2
    .venv/bin/python benchmarks/train.py --configs biored --layouts packed --graphs RUN/graphs \
        --threads 1 --at-once 2                                # two ensemble members at once

Each (config, layout) runs in its own subprocess, so its peak memory is its own: peak RSS on CPU,
``torch.cuda.max_memory_allocated`` on GPU. Inputs are synthetic full chunks ([CLS] + R−2 tokens in
words of 1–3 tokens + [SEP]) with ``--injections`` seed-KG injections per chunk on average (tails of
1..K tokens) — the shared corpus has ~0.2 per chunk, the paper's inputs ~2 (87 % of the dense layout
is padding) — or the graphs of a run (``--graphs RUN/graphs``, used for every config whose R and K
match). One optimizer step = ``--batch-size`` sequences (no accumulation); the first
``--warmup`` steps are not timed. tokens/s counts real positions (roots + filled leaves); positions/s
counts the padded [B, L] grid the model actually computes on. MFU (model FLOPs utilisation) is the
encoder's FLOPs at the real tokens (3 forwards per step) per second over the device's peak: the dense
bf16 tensor-core peak on a GPU (``BF16_PEAK_TFLOPS``, or ``--peak-tflops``), the measured fp32 matmul
rate on a CPU.

``--at-once N`` runs N copies of each measurement together, each in a process of its own, as
``train.member_processes`` trains an ensemble's members: compare ``--threads 2`` with ``--threads 1
--at-once 2`` on 2 cores. ``biored`` is configs/biored.yaml's model (give it its run's graphs).

GPU knobs: ``--num-workers`` (DataLoader processes for masking and collation, ``train.num_workers``),
``--compile`` (``torch.compile(dynamic=True)`` on the encoder; the first compilation falls in the
warm-up steps, but the encoder recompiles as the packed length changes and breaks its graph at
H-GAT's type check, so it is slower today: docs/PERFORMANCE.md, "On a GPU") and ``--profile N`` (torch.profiler's N operators with
the most self time, over 3 extra steps after the timed ones; the timings do not include them).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import encoder_flops, matmul_flops_per_s, print_table, write_json  # noqa: E402

CONFIGS = {"tiny": "configs/tiny.yaml", "small": "configs/small.yaml", "paper": "configs/graphmert-80m.yaml",
           "biored": "configs/biored.yaml"}
DEFAULT_BATCH = {"tiny": 32, "small": 32, "paper": 32, "biored": 32}         # on a GPU
CPU_BATCH = {"tiny": 32, "small": 32, "paper": 2, "biored": 32}              # the paper model on a CPU: a few steps
NUM_RELATIONS = 11
PROFILE_STEPS = 3                                              # steps under --profile (not timed)
# dense bf16 tensor-core peaks (TFLOP/s) from the vendors' data sheets, for MFU on CUDA
# (first match on the device name wins, so the PCIe H100 comes before the SXM one)
BF16_PEAK_TFLOPS = {"H100 PCIe": 756.0, "H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0,
                    "A10": 125.0}


def synthetic_graphs(n: int, R: int, K: int, injections: float, vocab: int, seed: int):
    import numpy as np

    from graphmert.graph.layout import LeafyChainGraph

    rng = np.random.default_rng(seed)
    out = []
    for c in range(n):
        sizes = rng.choice(3, size=R - 2, p=(0.7, 0.2, 0.1)) + 1
        words = np.repeat(np.arange(R - 2), sizes)[:R - 2].tolist()
        ids = [2] + rng.integers(5, vocab, R - 2).tolist() + [3]
        g = LeafyChainGraph.from_roots(f"synthetic-{c}", f"doc-{c}", ids, [-1] + words + [-1], R, K, 0)
        for i in sorted(rng.choice(np.arange(1, R - 3), size=min(R - 4, rng.poisson(injections)), replace=False)):
            if g.leaf_length[max(1, i - 2):i + 1].any():
                continue
            g.inject(int(i), rng.integers(5, vocab, int(rng.integers(1, K + 1))), int(rng.integers(NUM_RELATIONS)), 1)
        out.append(g)
    return out


def run_one(args) -> dict:
    """One (config, layout) in this process; returns the measurements."""
    import torch

    torch.set_num_threads(args.threads)
    from graphmert.config import load_config
    from graphmert.corpus.tokenizer import SPECIAL_TOKENS, load_tokenizer, save_tokenizer
    from graphmert.graph.io import read_graphs
    from graphmert.train.data import DistContext
    from graphmert.train.trainer import Trainer

    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    batch = args.batch_size or (DEFAULT_BATCH if cuda else CPU_BATCH)[args.config]
    total = args.warmup + args.steps
    extra = PROFILE_STEPS if args.profile else 0
    overrides = [f"graph.layout={args.layout}", f"train.batch_size={batch}",
                 f"train.effective_batch_size={batch}", f"train.max_steps={total + extra + 1}",
                 "train.eval_fraction=0.0", "train.checkpoint_every=1000000", "train.eval_every=1000000",
                 f"train.device={args.device}", "train.resume=false"]
    if args.num_workers is not None:
        overrides.append(f"train.num_workers={args.num_workers}")
    cfg = load_config(ROOT / CONFIGS[args.config], overrides)
    R, K, V = cfg.graph.num_roots, cfg.graph.num_leaves, cfg.tokenizer.vocab_size
    source = "synthetic"
    graphs = None
    rmap = {f"r{i}": i for i in range(NUM_RELATIONS)}
    if args.graphs:
        shards = sorted(Path(args.graphs).glob("graphs-*.parquet"))
        real = list(read_graphs(shards))
        if real and (real[0].R, real[0].K) == (R, K):
            graphs = real
            source = str(args.graphs)
            if (Path(args.graphs) / "relation_map.json").exists():    # the run's relation ids
                rmap = json.loads((Path(args.graphs) / "relation_map.json").read_text())
    if graphs is None:
        graphs = synthetic_graphs(batch * (total + extra + 1), R, K, args.injections, V, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = Path(tmp) / "vocab.txt"
        vocab.write_text("\n".join(SPECIAL_TOKENS + [f"t{i}" for i in range(len(SPECIAL_TOKENS), V)]) + "\n")
        tok = save_tokenizer(load_tokenizer(vocab), Path(tmp) / "tokenizer.json")
        trainer = Trainer(cfg, graphs, tok, rmap, Path(tmp) / "work", quiet=True,
                          dist=DistContext.from_env(args.device))
        cuda = trainer.device.type == "cuda"
        if args.compile:
            trainer.model.compile(dynamic=True)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        trainer.fit(until=total)
        wall = time.perf_counter() - t0
        records = [json.loads(line) for line in (Path(tmp) / "work" / "metrics.jsonl").read_text().splitlines()]
        if args.profile:
            _profile(trainer, total + extra, args.profile)
    timed = [r for r in records if r["split"] == "train" and r["step"] > args.warmup]
    step_s = sum(r["step_s"] for r in timed)
    tokens = sum(r["tokens"] for r in timed)
    positions, flops = _work(trainer, timed)
    peak, peak_kind = _peak(args, trainer.device, cfg.model.hidden_size)
    peak_mem = (torch.cuda.max_memory_allocated() if cuda
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    return {"config": args.config, "layout": args.layout, "device": str(trainer.device),
            "params_M": round(sum(p.numel() for p in trainer.model.parameters()) / 1e6, 2),
            "R": R, "K": K, "batch": batch, "steps": len(timed), "s_per_step": step_s / max(len(timed), 1),
            "tokens_per_s": tokens / step_s if step_s else float("nan"),
            "positions_per_s": positions / step_s if step_s else float("nan"),
            "model_TFLOP_per_s": round(flops / step_s / 1e12, 4) if step_s else float("nan"),
            "MFU": round(flops / step_s / peak, 4) if step_s else float("nan"), "MFU_against": peak_kind,
            "peak_memory_MB": round(peak_mem / 2**20, 1), "peak_kind": "cuda allocated" if cuda else "RSS",
            "loss_last": timed[-1]["loss"] if timed else float("nan"), "inputs": source,
            "num_workers": cfg.train.num_workers, "compiled": args.compile,
            "wall_s": round(wall, 2)}


def _profile(trainer, until: int, top: int) -> None:
    """Print torch.profiler's ``top`` operators by self time (CUDA time on a GPU) over the steps up to
    ``until``."""
    from torch.profiler import ProfilerActivity, profile

    cuda = trainer.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        trainer.fit(until=until)
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    print(f"operators by {key} over {PROFILE_STEPS} steps")
    print(prof.key_averages().table(sort_by=key, row_limit=top))


def _work(trainer, timed: list[dict]) -> tuple[int, float]:
    """(positions of the [B, L] grids, model FLOPs) of the timed steps, re-collated (collation is
    deterministic). A training step costs 3 forwards (the backward computes two products per forward
    product) at the real tokens (:func:`_common.encoder_flops`)."""
    positions, flops = 0, 0.0
    model = getattr(trainer.model, "module", trainer.model)
    for r in timed:
        for items in trainer.plan.micro_batches(r["step"] - 1):
            graph = trainer.collator([trainer.dataset[i] for i in items]).graph
            positions += graph.input_ids.numel()
            flops += 3 * encoder_flops(model, graph.attention_mask.sum(1))
    return positions, flops


def _peak(args, device, hidden: int) -> tuple[float, str]:
    """(FLOP/s, what it is) that MFU divides by: ``--peak-tflops``; on CUDA the device's dense bf16
    peak (:data:`BF16_PEAK_TFLOPS`); on CPU the measured fp32 matmul rate."""
    import torch

    if args.peak_tflops:
        return args.peak_tflops * 1e12, f"--peak-tflops {args.peak_tflops}"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, tflops in BF16_PEAK_TFLOPS.items():
            if key in name:
                return tflops * 1e12, f"{name} bf16 peak {tflops:g} TFLOP/s"
        raise SystemExit(f"no bf16 peak known for {name}: pass --peak-tflops")
    rate = matmul_flops_per_s(hidden, device)
    return rate, f"CPU fp32 matmul, measured {rate / 1e9:.0f} GFLOP/s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--layouts", nargs="+", default=["packed", "dense"], choices=["packed", "dense"])
    ap.add_argument("--steps", type=int, default=5, help="timed optimizer steps (paper: --paper-steps)")
    ap.add_argument("--paper-steps", type=int, default=2, help="timed steps for the paper config")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=0, help="sequences per step (default per config)")
    ap.add_argument("--injections", type=float, default=2.0, help="injections per synthetic chunk")
    ap.add_argument("--graphs", type=Path, default=None, help="RUN/graphs folder to use instead")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--num-workers", type=int, default=None, help="DataLoader processes "
                    "(train.num_workers; default: the config's)")
    ap.add_argument("--compile", action="store_true", help="torch.compile(dynamic=True) the encoder")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also print torch.profiler's N operators with the most self time")
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="peak FLOP/s (TFLOP/s) for MFU; "
                    "default: the GPU's dense bf16 peak, or the CPU's measured fp32 matmul rate")
    ap.add_argument("--at-once", type=int, default=1, metavar="N",
                    help="run N copies of each measurement at once, each in its own process with "
                         "--threads threads (train.member_processes); reports the steps/s of all")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--one", nargs=2, metavar=("CONFIG", "LAYOUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        args.config, args.layout = args.one
        if args.config == "paper":
            args.steps = args.paper_steps
        print(json.dumps(run_one(args)))
        return
    rows = []
    for config in args.configs:
        for layout in args.layouts:
            cmd = [sys.executable, __file__, "--one", config, layout, "--steps", str(args.steps),
                   "--paper-steps", str(args.paper_steps), "--warmup", str(args.warmup),
                   "--batch-size", str(args.batch_size), "--injections", str(args.injections),
                   "--threads", str(args.threads), "--device", args.device,
                   "--peak-tflops", str(args.peak_tflops), "--profile", str(args.profile)]
            cmd += (["--compile"] if args.compile else []) + (
                ["--num-workers", str(args.num_workers)] if args.num_workers is not None else [])
            if args.graphs:
                cmd += ["--graphs", str(args.graphs)]
            print(f"running {config} / {layout}" + (f", {args.at_once} at once" if args.at_once > 1 else "")
                  + " ...", flush=True)
            rows += _run_at_once(cmd, config, layout, args.at_once)
    if args.at_once > 1:
        for config in args.configs:
            for layout in args.layouts:
                ok = [r for r in rows if (r["config"], r["layout"]) == (config, layout) and "error" not in r]
                if ok:
                    each = sum(r["s_per_step"] for r in ok) / len(ok)
                    print(f"{config} / {layout}: {len(ok)} processes of {args.threads} thread(s) at once, "
                          f"{each:.3f} s a step each: {len(ok) / each:.3f} steps/s in all")
    print_table(rows, "training throughput (real tokens/s) and peak memory")
    for config in args.configs:
        by = {r["layout"]: r for r in rows if r["config"] == config and "error" not in r}
        if "packed" in by and "dense" in by:
            print(f"{config}: packed is {by['dense']['s_per_step'] / by['packed']['s_per_step']:.2f}x "
                  f"faster per step than dense")
    write_json("train", rows, args.out, threads=args.threads, injections=args.injections,
               compiled=args.compile, at_once=args.at_once)


def _run_at_once(cmd: list[str], config: str, layout: str, at_once: int) -> list[dict]:
    """``at_once`` copies of one (config, layout) measurement started together (each its own
    process, as train.member_processes trains an ensemble's members); their rows."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
             for _ in range(at_once)]
    rows = []
    for k, proc in enumerate(procs):
        out, err = proc.communicate()
        if proc.returncode:
            print(err[-2000:], file=sys.stderr)
            rows.append({"config": config, "layout": layout, "error": err.strip().splitlines()[-1]})
            continue
        *printed, last = out.strip().splitlines()
        if printed:                                      # --profile's table
            print("\n".join(printed), flush=True)
        rows.append({**json.loads(last), **({"process": k} if at_once > 1 else {})})
    return rows


if __name__ == "__main__":
    main()
