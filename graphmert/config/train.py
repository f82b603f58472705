"""Section ``train``: optimisation (DESIGN §6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from graphmert.config.options import opt


@dataclass
class TrainConfig:
    """Optimisation (DESIGN §6)."""

    seed: int = opt(0, help="seed of parameter initialisation, data order and masking")
    ensemble_size: int = opt(1, min=1, help="models trained one after another on the same graphs, "
                             "with seeds train.seed, train.seed + 1, …; extraction averages their "
                             "answers (model.leaf_query 'fixed' only)")
    lr: float = opt(4e-4, min=0.0, min_exclusive=True, help="peak learning rate (after warm-up)")
    min_lr: float = opt(1e-5, min=0.0, help="floor of the cosine decay (<= lr)")
    warmup_steps: int = opt(500, min=0, help="optimizer steps of linear warm-up to lr")
    weight_decay: float = opt(0.01, min=0.0, help="AdamW decay on weight matrices (not on biases, "
                              "norms or other vectors)")
    adam_beta1: float = opt(0.9, min=0.0, max=1.0, help="AdamW β1")
    adam_beta2: float = opt(0.999, min=0.0, max=1.0, help="AdamW β2")
    adam_eps: float = opt(1e-8, min=0.0, min_exclusive=True, help="AdamW ε")
    grad_clip: float = opt(1.0, min=0.0, help="max global gradient norm; 0 disables clipping")
    batch_size: int = opt(32, min=1, help="sequences per device per micro-batch")
    effective_batch_size: int = opt(256, min=1, help="sequences per optimizer step over all "
                                    "processes (gradient accumulation fills the rest)")
    epochs: float = opt(25.0, min=0.0, min_exclusive=True, help="passes over the training graphs "
                        "(fractions allowed) when max_steps is None")
    max_steps: Optional[int] = opt(None, min=1, help="optimizer steps; None: epochs × steps per epoch")
    mlm_probability: float = opt(0.15, min=0.0, max=1.0, help="share of root tokens masked (spans)")
    mnm_probability: float = opt(0.15, min=0.0, max=1.0, help="chance a filled leaf group is masked")
    span_geometric_p: float = opt(0.2, min=0.0, max=1.0, min_exclusive=True,
                                  help="span length in words ~ Geometric(p), truncated to [1, K]")
    entity_mask_probability: float = opt(
        0.0, min=0.0, max=1.0, help="chance that an entity of a chunk's entity table has every mention "
        "masked whole (MLM targets), so the model must read its context rather than its name; "
        "training only (graphmert.train.masking)")
    mask_token_fraction: float = opt(0.8, min=0.0, max=1.0, help="masked spans/groups shown as [MASK]")
    random_token_fraction: float = opt(0.1, min=0.0, max=1.0,
                                       help="masked spans/groups shown as random tokens (the rest "
                                            "keep their tokens)")
    loss: str = opt("paper", choices=("paper", "separate"),
                    help="paper: one mean over MLM and MNM targets; separate: L_MLM + μ·L_MNM "
                         "(SBO is added to both)")
    mnm_weight: float = opt(1.0, min=0.0, help="μ in L_MLM + μ·L_MNM (separate loss)")
    candidate_weight: float = opt(1.0, min=0.0, help="ν, the weight of the candidate objective "
                                  "(model.candidate_head; graphmert.train.losses)")
    eval_fraction: float = opt(0.05, min=0.0, max=0.5, help="share of documents held out "
                               "(split by a hash of the document id)")
    eval_every: int = opt(200, min=1, help="optimizer steps between held-out evaluations")
    eval_passes: int = opt(1, min=1, help="mask draws per held-out chunk at evaluation")
    checkpoint_every: int = opt(500, min=1, help="optimizer steps between training checkpoints")
    keep_checkpoints: int = opt(2, min=1, help="most recent checkpoints kept on disk")
    resume: bool = opt(True, help="continue from the latest checkpoint of an interrupted run "
                       "with the same inputs and config")
    precision: str = opt("auto", choices=("auto", "bf16", "fp32"),
                         help="auto: bf16 autocast on CUDA, fp32 on CPU")
    num_workers: int = opt(0, min=0, help="DataLoader processes for masking and collation")
    threads: int = opt(0, min=0, help="torch CPU threads per training process; 0 keeps torch's "
                       "default (1 under torchrun). Small models on a busy CPU run fastest with 1")
    device: str = opt("auto", choices=("auto", "cpu", "cuda"),
                      help="auto: CUDA when available, else CPU; cuda fails without it")
    nproc: int = opt(1, min=1, help="processes (torchrun): gloo on CPU, NCCL on CUDA")
    member_processes: int = opt(1, min=1, help="ensemble members trained at once, each in a process "
                                "of its own with train.threads threads (0: the cores shared out); 1 "
                                "trains them one after another in the stage's process. On 2 cores two "
                                "1-thread members train 1.2x faster than one 2-thread member after "
                                "another (docs/PERFORMANCE.md)")
