"""Backbones side by side: one training step (forward + masked-LM loss + backward) of GraphMERT with each
backbone at matched size, on the same packed batches.

Variants (all with the same hidden size H, heads, and N = ``--num-layers`` layer applications):

* ``roberta``            — the paper's post-LN stack (FFN ``--intermediate-size``);
* ``neobert``            — pre-norm RMSNorm / SwiGLU (F = 8/3·H) / RoPE: the same parameters as
  roberta when the FFN size is 4·H;
* ``neobert-normalized`` — the nGPT variant;
* ``recurrent``          — N/2 shared layers × 2 iterations (the same compute, half the layers);
* ``bridges``            — roberta + hybrid QKV/HDIM bridges on the last min(4, N) layers
  (also ``bridges-qkv`` and ``bridges-hdim``).

Each variant runs in its own subprocess so that its peak memory is its own (peak RSS on CPU, peak
allocated CUDA memory on GPU). Batches are graphs from a graphs-stage output (``--graphs DIR``, the
Parquet shards of ``RUN/graphs``) when given, else synthetic full 128-root chunks with leaf fill
rate ``--fill``; the output says which. Reported per variant: backbone and total parameters, the
fastest step (s), ms per chunk, tokens/s and peak memory.

    python benchmarks/backbones.py --hidden-size 128 --num-layers 4 --num-heads 4 \
        --intermediate-size 512 --batch-size 4 --threads 1
    # table on stdout, JSON in benchmarks/results/backbones.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from encoder import make_batches, time_steps  # noqa: E402  (shared with the encoder benchmark)
from graphmert.config import load_config  # noqa: E402
from graphmert.io import atomic_write_json  # noqa: E402

VARIANTS = ["roberta", "neobert", "neobert-normalized", "recurrent", "bridges", "bridges-qkv",
            "bridges-hdim"]


def model_config(args, variant: str):
    """The model section of one variant: shared dimensions, backbone and its options."""
    base = load_config(args.config).model
    shared = dict(hidden_size=args.hidden_size or base.hidden_size,
                  num_heads=args.num_heads or base.num_heads,
                  intermediate_size=args.intermediate_size or base.intermediate_size,
                  decay_mode=args.decay, attention_kernel=args.kernel)
    N = args.num_layers or base.num_layers
    if variant == "roberta":
        return dataclasses.replace(base, **shared, num_layers=N, backbone="roberta", backbone_options={})
    if variant.startswith("neobert"):
        return dataclasses.replace(base, **shared, num_layers=N, backbone="neobert",
                                   backbone_options={"normalized": variant.endswith("normalized")})
    if variant == "recurrent":
        if N % 2:
            raise SystemExit(f"--num-layers {N}: recurrent runs N/2 layers × 2 iterations; use an even N")
        return dataclasses.replace(base, **shared, num_layers=N // 2, backbone="recurrent",
                                   backbone_options={"recurrent_depth": 2, "residual_scale": 0.5})
    if variant.startswith("bridges"):
        mode = variant.split("-")[1] if "-" in variant else "hybrid"
        return dataclasses.replace(base, **shared, num_layers=N, backbone="bridges",
                                   backbone_options={"mode": mode, "route_last_n": min(4, N)})
    raise SystemExit(f"unknown variant {variant!r}; choose from {VARIANTS}")


def run_variant(args) -> dict:
    """Time ``--steps`` training steps of one variant (in this process)."""
    from graphmert.model import build_model

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    batches, info = make_batches(args, "packed")
    cfg = model_config(args, args.variant)
    model = build_model(cfg, info["vocab_size"], info["num_relations"]).to(device).train()
    def step(batch, targets):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            out = model(batch, logits_at=targets)
            return F.cross_entropy(out.logits.float(), batch.input_ids[targets])

    times, peak_mb = time_steps(model, batches, device, args.warmup, step)
    sec = float(np.min(times))                  # min: robust to other processes sharing the CPU
    L = float(np.mean([b.input_ids.shape[1] for b in batches[args.warmup:]]))
    extra = {}
    if hasattr(model.backbone, "metrics"):
        extra["bridge_metrics"] = model.backbone.metrics()
    return {**info, "variant": args.variant, "backbone": cfg.backbone, "options": cfg.backbone_options,
            "hidden_size": cfg.hidden_size, "num_layers": cfg.num_layers,
            "backbone_params": sum(p.numel() for p in model.backbone.parameters()),
            "total_params": sum(p.numel() for p in model.parameters()),
            "batch_size": args.batch_size, "L": L, "sec_per_step": sec,
            "median_sec_per_step": float(np.median(times)), "ms_per_chunk": 1000 * sec / args.batch_size,
            "tokens_per_sec": args.batch_size * L / sec, "peak_mb": peak_mb, "steps": len(times), **extra}


def child_argv(args, variant: str) -> list[str]:
    argv = [sys.executable, __file__, "--one", "--variant", variant, "--config", args.config,
            "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
            "--fill", str(args.fill), "--num-relations", str(args.num_relations), "--device", args.device,
            "--threads", str(args.threads), "--decay", args.decay, "--kernel", args.kernel]
    for flag in ("hidden_size", "num_layers", "num_heads", "intermediate_size"):
        if getattr(args, flag):
            argv += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.graphs:
        argv += ["--graphs", args.graphs]
    if args.bf16:
        argv.append("--bf16")
    return argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "graphmert-80m.yaml"),
                    help="base config: graph layout, vocabulary, default model dimensions")
    ap.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    ap.add_argument("--hidden-size", type=int, default=0, help="H for every variant (0: the config's)")
    ap.add_argument("--num-layers", type=int, default=0, help="N layer applications (0: the config's)")
    ap.add_argument("--num-heads", type=int, default=0)
    ap.add_argument("--intermediate-size", type=int, default=0, help="roberta/bridges FFN size")
    ap.add_argument("--decay", default="logit_scale", help="model.decay_mode for every variant")
    ap.add_argument("--kernel", default="sdpa", help="model.attention_kernel for every variant")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per variant")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--batch-size", type=int, default=4, help="chunks per step")
    ap.add_argument("--fill", type=float, default=0.1, help="synthetic leaf fill rate (filled / R·K)")
    ap.add_argument("--graphs", default=None, help="graphs-stage output folder with Parquet shards")
    ap.add_argument("--num-relations", type=int, default=11, help="relations for synthetic graphs")
    ap.add_argument("--device", choices=("cpu", "cuda"),
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (as training does on CUDA)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "backbones.json"))
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="roberta", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.one:
        print(json.dumps(run_variant(args)))
        return
    rows = []
    for variant in args.variants:
        res = subprocess.run(child_argv(args, variant), capture_output=True, text=True)
        if res.returncode:
            raise SystemExit(f"variant {variant} failed:\n{res.stderr[-4000:]}")
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
        print(f"  {variant:20s} {rows[-1]['sec_per_step']:.3f} s/step", file=sys.stderr, flush=True)

    first = rows[0]
    ref = next((r for r in rows if r["variant"] == "roberta"), None)
    print(f"\ninputs: {first['source']}; R={first['R']} K={first['K']}; fill rate {first['fill_rate']}; "
          f"{first['real_tokens_per_chunk']} real tokens/chunk; packed; batch {args.batch_size}; "
          f"H={first['hidden_size']}, {args.num_layers or first['num_layers']} layer applications; "
          f"decay {args.decay}, kernel {args.kernel}{', bf16' if args.bf16 else ''}; "
          f"{args.steps} timed steps "
          f"(min) after {args.warmup} warm-up; device {args.device}; torch {torch.__version__}, "
          f"threads {args.threads or torch.get_num_threads()}")
    mem = "peak alloc MB" if args.device == "cuda" else "peak RSS MB"
    head = (f"{'variant':20s} {'backbone params':>15s} {'total params':>13s} {'L':>5s} {'s/step':>8s} "
            f"{'ms/chunk':>9s} {'tok/s':>8s} {mem:>13s} {'vs roberta':>10s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r['sec_per_step'] / ref['sec_per_step']:.2f}x" if ref else "-"
        print(f"{r['variant']:20s} {r['backbone_params']:15,d} {r['total_params']:13,d} {r['L']:5.0f} "
              f"{r['sec_per_step']:8.3f} {r['ms_per_chunk']:9.1f} {r['tokens_per_sec']:8.0f} "
              f"{r['peak_mb']:13.0f} {ratio:>10s}")
    out = Path(args.out)
    atomic_write_json(out, {"benchmark": "backbones", "args": {k: v for k, v in vars(args).items()
                                                               if k not in ("one", "variant")},
                            "platform": platform.platform(), "torch": torch.__version__, "rows": rows})
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
