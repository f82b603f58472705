"""The training loop: masked modelling on leafy chain graphs, resumable, single- or multi-process.

One optimizer step (s = 0 … T−1; module docstrings of :mod:`.data`, :mod:`.losses`, :mod:`.schedule`):

    micro-batches  = this process's share of the effective batch of step s (A per process)
    counts         = Σ targets over all micro-batches of all processes        (one all-reduce)
    for each micro-batch b:   (DDP gradient sync only on the last one)
        sums_b     = Σ cross-entropies of b (masked roots, masked leaves, SBO) under autocast
        loss_b     = P · combine(sums_b, counts)          P processes; DDP averages gradients
        loss_b.backward()
    stop if any term's global sum is NaN/inf          (before the update: weights stay finite)
    clip ‖g‖ to train.grad_clip;  η = schedule(s);  AdamW step

AdamW (fused where the platform has it, else foreach) with weight decay on matrices only (not on
biases, LayerNorm gains or the decay's per-head p). Precision: bf16 autocast on CUDA, fp32 on CPU
(``train.precision``). Dropout is re-seeded from (seed, step, rank) at every step and masks come from
(seed, epoch, sample index), so a resumed run continues bit-identically on CPU.

Every ``eval_every`` steps (and at the end) the held-out chunks are evaluated with fixed masks (every
masked unit shown as [MASK]) and compared with the majority-token baseline for leaves. Every
``checkpoint_every`` steps (and at the end) a training checkpoint is written atomically under
``work_dir/checkpoints/`` and the curves are redrawn; the final weights also go to
``work_dir/model/``. Metrics go to ``work_dir/metrics.jsonl`` (every step) and ``work_dir/curves.png``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from graphmert.config import Config, ConfigError, TrainConfig
from graphmert.corpus.tokenizer import load_tokenizer, special_ids
from graphmert.errors import GraphmertError
from graphmert.graph.layout import LeafyChainGraph
from graphmert.model import build_model, save_checkpoint
from graphmert.model.checkpoint import CheckpointError
from graphmert.progress import progress_bar
from graphmert.train.data import (BatchPlan, DistContext, GraphDataset, StepBatchSampler, eval_batches,
                                  majority_leaf_token, split_by_document)
from graphmert.train.losses import TERMS, MaskedModelingObjective, TargetCounts, combine_losses, term_means
from graphmert.train.masking import EVAL_STREAM, TRAIN_STREAM, MaskingCollator, MaskingSpec
from graphmert.train.metrics import MetricsLog, plot_curves
from graphmert.train.schedule import CosineSchedule
from graphmert.train.state import (latest_checkpoint, load_training_state, prune_checkpoints,
                                   save_training_checkpoint)

__all__ = ["Trainer", "TrainResult", "TrainingDiverged", "parameter_groups", "build_optimizer",
           "RESUME_FREE_KEYS"]

log = logging.getLogger("graphmert.train")

# train.* keys that may change between a run and its resumption (they do not change the updates).
RESUME_FREE_KEYS = frozenset({"resume", "num_workers", "threads", "eval_every", "eval_passes",
                              "checkpoint_every", "keep_checkpoints", "nproc", "batch_size", "device",
                              "member_processes"})
STEP_SEED_STREAM = 3
# Order of the per-step statistics vector (summed over micro-batches and processes).
_STATS = ("mlm", "mnm", "sbo", "cand", "mlm_correct", "mnm_correct", "sbo_correct", "cand_correct",
          "mnm_tail_correct", "mnm_tail_correct_generator", "tokens")
_COUNTS = len(TargetCounts.__dataclass_fields__)      # mlm, mnm, sbo, cand


class TrainingDiverged(GraphmertError, RuntimeError):
    """A loss term or the gradient norm became NaN/inf; no update was applied."""


@dataclass
class TrainResult:
    step: int
    total_steps: int
    train: dict = field(default_factory=dict)        # the last train record
    eval: dict = field(default_factory=dict)         # the last evaluation record
    checkpoint: Optional[Path] = None                # the latest training checkpoint
    model_dir: Optional[Path] = None                 # the final model (when training finished)

    @property
    def finished(self) -> bool:
        return self.step >= self.total_steps


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: weight decay on parameters with ≥ 2 dimensions (weight matrices, embedding
    tables, H-GAT W_r/a_r), none on vectors (biases, LayerNorm gains, decay p, decoder biases)."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.Optimizer:
    """AdamW over :func:`parameter_groups`; the fused implementation where supported, else foreach."""
    kw = dict(lr=train.lr, betas=(train.adam_beta1, train.adam_beta2), eps=train.adam_eps)
    try:
        return torch.optim.AdamW(parameter_groups(model, train.weight_decay), fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(parameter_groups(model, train.weight_decay), foreach=True, **kw)


def _step_seed(seed: int, step: int, rank: int) -> int:
    return int(np.random.SeedSequence([seed % 2**63, STEP_SEED_STREAM, step, rank]).generate_state(1)[0])


class Trainer:
    """Trains a GraphMERT model on leafy chain graphs (module docstring).

    Args:
        cfg: the resolved config (sections ``train``, ``model``, ``graph`` are used).
        graphs: all graphs of the run; the held-out split is made here (by document).
        tokenizer_path: the tokenizer.json the graphs were built with (vocabulary, special ids).
        relation_map: relation name → id of the seed KG (``graphs/relation_map.json``).
        work_dir: where checkpoints, metrics and the final model go.
        quiet: no progress bar.
        progress: the progress bar's label and terminal line (members trained at once each have one).
        dist: the process group; default :meth:`DistContext.from_env`.

    With ``train.resume`` and a checkpoint in ``work_dir/checkpoints``, the trainer starts from it.
    """

    def __init__(self, cfg: Config, graphs: Sequence[LeafyChainGraph], tokenizer_path: Union[str, Path],
                 relation_map: Mapping[str, int], work_dir: Union[str, Path], *, quiet: bool = False,
                 dist: Optional[DistContext] = None, progress: tuple[str, int] = ("train", 0)) -> None:
        t = cfg.train
        self.cfg, self.graphs, self.quiet, self.progress = cfg, graphs, quiet, progress
        self.dist = dist or DistContext.from_env(t.device)
        self.device = self.dist.device
        self.tokenizer_path = Path(tokenizer_path)
        self.relation_map = {str(k): int(v) for k, v in relation_map.items()}
        # the relations the model learns: those its graphs inject (recorded in every checkpoint)
        self.trained_relations = sorted({i.predicate for g in graphs for i in g.injections})
        self.work_dir = Path(work_dir)
        self.checkpoint_dir = self.work_dir / "checkpoints"
        self.metrics = MetricsLog(self.work_dir / "metrics.jsonl")
        self._check_graphs()

        tok = load_tokenizer(self.tokenizer_path)
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)
        self.train_indices, self.eval_indices = split_by_document(graphs, t.eval_fraction)
        self.plan = BatchPlan.from_config(t, self.train_indices, self.dist.world_size, self.dist.rank)
        self.total_steps = self.plan.total_steps(t)
        self.schedule = CosineSchedule(t, self.total_steps)
        spec = MaskingSpec.from_config(t, cfg.graph.num_leaves, special_ids(tok), self.vocab_size,
                                       cfg.model.sbo_max_span_length if cfg.model.sbo_head else None,
                                       cfg.model.leaf_query)
        self.collator = MaskingCollator(spec, cfg.graph.layout, t.seed, TRAIN_STREAM)
        self.eval_collator = MaskingCollator(spec.for_evaluation(), cfg.graph.layout, t.seed, EVAL_STREAM)
        self.dataset = GraphDataset(graphs)
        self.majority_leaf = majority_leaf_token(graphs, self.train_indices)
        if t.precision == "bf16" or (t.precision == "auto" and self.device.type == "cuda"):
            self.autocast_dtype: Optional[torch.dtype] = torch.bfloat16
        else:
            self.autocast_dtype = None

        torch.manual_seed(t.seed)
        self.model = build_model(cfg.model, self.vocab_size, len(self.relation_map)).to(self.device)
        self.optimizer = build_optimizer(self.model, t)
        self.step = 0
        self.last_train: dict = {}
        self.last_eval: dict = {}
        self.latest: Optional[Path] = None
        if t.resume:
            found = latest_checkpoint(self.checkpoint_dir)
            if found is not None:
                self._restore(found)

    # -- set-up ------------------------------------------------------------------------------------

    def _check_graphs(self) -> None:
        R, K = self.cfg.graph.num_roots, self.cfg.graph.num_leaves
        if not self.graphs:
            raise ConfigError("train: no graphs to train on (the graphs stage wrote none)")
        for g in self.graphs:
            if (g.R, g.K) != (R, K):
                raise ConfigError(f"graph.num_roots/num_leaves: graph of chunk {g.chunk_id} has "
                                  f"(R, K) = {(g.R, g.K)} but the config says {(R, K)}; rebuild the graphs")

    def _restore(self, directory: Path) -> None:
        loaded, state = load_training_state(directory, self.optimizer, expected_vocab=self.vocab_size,
                                            expected_relations=self.relation_map,
                                            expected_config=self.cfg.model, device=self.device)
        stored = state.get("train_config", {})
        ours = dataclasses.asdict(self.cfg.train)
        diff = [k for k in ours if k not in RESUME_FREE_KEYS and stored.get(k) != ours[k]]
        if diff:
            k = diff[0]
            raise CheckpointError(f"{directory}: train.{k} is {ours[k]!r} but the checkpoint was trained "
                                  f"with {stored.get(k)!r}; resume needs the same settings "
                                  f"(or set train.resume=false to start over)")
        for key, ours_v in (("num_train", len(self.train_indices)),
                            ("steps_per_epoch", self.plan.steps_per_epoch),
                            ("total_steps", self.total_steps)):
            if state.get(key) != ours_v:
                raise CheckpointError(f"{directory}: {key} was {state.get(key)} and is now {ours_v}; "
                                      f"the data changed, so the run cannot continue exactly")
        self.model.load_state_dict(loaded.state_dict())
        self.step = int(state["step"])
        self.last_train = state.get("last_train") or {}
        self.last_eval = state.get("last_eval") or {}
        self.latest = directory
        if self.dist.is_main:
            self.metrics.truncate_after(self.step)
        log.info("resumed from %s (step %d of %d)", directory, self.step, self.total_steps)

    # -- one step ----------------------------------------------------------------------------------

    def _autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    def _global_counts(self, batches) -> TargetCounts:
        local = torch.tensor([sum(b.counts[i] for b in batches) for i in range(_COUNTS)],
                             dtype=torch.float64, device=self.device)
        return TargetCounts(*(int(v) for v in self.dist.all_reduce(local).tolist()))

    def _train_step(self, runner: nn.Module, batches: list) -> dict:
        t = self.cfg.train
        torch.manual_seed(_step_seed(t.seed, self.step, self.dist.rank))
        counts = self._global_counts(batches)
        lr = self.schedule.apply(self.optimizer, self.step)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        stats = torch.zeros(len(_STATS), dtype=torch.float64, device=self.device)
        for j, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = j == len(batches) - 1
            sync = runner.no_sync() if self.dist.distributed and not last else contextlib.nullcontext()
            with sync:
                with self._autocast():
                    sums = runner(batch)
                loss = combine_losses(sums, counts, t.loss, t.mnm_weight,
                                      t.candidate_weight) * self.dist.world_size
                loss.backward()
            stats += torch.stack([sums[k].detach().double() for k in _STATS[:-1]]
                                 + [batch.graph.attention_mask.sum().double()])
        values = dict(zip(_STATS, self.dist.all_reduce(stats).tolist()))
        for term in TERMS:
            if not math.isfinite(values[term]):
                self._diverged(f"{term} loss", values[term])
        clip = t.grad_clip if t.grad_clip > 0 else float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        if not math.isfinite(grad_norm):
            self._diverged("gradient norm", grad_norm)
        self.optimizer.step()
        epoch, _ = self.plan.position(self.step)
        return {"split": "train", "step": self.step + 1, "epoch": epoch, "lr": lr,
                "loss": float(combine_losses(values, counts, t.loss, t.mnm_weight, t.candidate_weight)),
                **term_means(values, counts), "grad_norm": grad_norm,
                "tokens": int(values["tokens"]), "targets_mlm": counts.mlm, "targets_mnm": counts.mnm}

    def _diverged(self, term: str, value: float) -> None:
        where = latest_checkpoint(self.checkpoint_dir) or "none (no checkpoint was written yet)"
        raise TrainingDiverged(f"training stopped at step {self.step + 1}: the {term} is {value} "
                               f"(not finite); no update was applied. The last good checkpoint is "
                               f"{where}; lower train.lr or check the data, then resume")

    # -- evaluation --------------------------------------------------------------------------------

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Held-out losses and accuracies with fixed masks, and the leaf majority-token baseline.

        Leaf accuracy is reported over all MNM targets (``mnm_acc``) and over tail tokens alone
        (``mnm_tail_acc``, the end tokens of "fixed" queries left out: the leaves proper), the same
        from the MNM decoder alone without the copy path (``mnm_tail_acc_no_copy``), next to
        the accuracy of always predicting the most frequent training leaf token on those same tail
        tokens (``leaf_majority_acc``); ``heldout_masked_leaves`` counts them."""
        if not self.eval_indices:
            return {}
        t = self.cfg.train
        objective = MaskedModelingObjective(self.model)
        self.model.eval()
        acc = torch.zeros(len(_STATS) + _COUNTS + 2, dtype=torch.float64, device=self.device)
        for items in eval_batches(self.eval_indices, t.eval_passes, t.batch_size,
                                  self.dist.world_size, self.dist.rank):
            batch = self.eval_collator([self.dataset[i] for i in items]).to(self.device)
            with self._autocast():
                sums = objective(batch)
            tail = ~batch.mnm_end
            extra = [(batch.mnm_labels[tail] == self.majority_leaf).sum(), tail.sum()]
            acc += torch.stack([sums[k].double() for k in _STATS[:-1]]
                               + [batch.graph.attention_mask.sum().double()]
                               + [torch.tensor(float(c), dtype=torch.float64, device=self.device)
                                  for c in batch.counts] + [x.double() for x in extra])
        self.model.train()
        v = self.dist.all_reduce(acc).tolist()
        values = dict(zip(_STATS, v[:len(_STATS)]))
        counts = TargetCounts(*(int(c) for c in v[len(_STATS):len(_STATS) + _COUNTS]))
        hits, tails = v[-2], int(v[-1])
        return {"split": "eval", "step": self.step,
                "loss": float(combine_losses(values, counts, t.loss, t.mnm_weight, t.candidate_weight)),
                **term_means(values, counts),
                "mnm_tail_acc": values["mnm_tail_correct"] / tails if tails else float("nan"),
                "mnm_tail_acc_no_copy": values["mnm_tail_correct_generator"] / tails if tails else float("nan"),
                "leaf_majority_acc": hits / tails if tails else float("nan"),
                "heldout_masked_leaves": tails,
                "targets_mlm": counts.mlm, "targets_mnm": counts.mnm, "targets_cand": counts.cand,
                "chunks": len(self.eval_indices)}

    # -- checkpoints -------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        epoch, j = self.plan.position(self.step)
        return {"total_steps": self.total_steps, "epoch": epoch, "step_in_epoch": j,
                "steps_per_epoch": self.plan.steps_per_epoch, "num_train": len(self.train_indices),
                "num_eval": len(self.eval_indices), "world_size": self.dist.world_size,
                "schedule": self.schedule.state_dict(), "train_config": dataclasses.asdict(self.cfg.train),
                "graph": dataclasses.asdict(self.cfg.graph), "majority_leaf_token": self.majority_leaf,
                "last_train": self.last_train, "last_eval": self.last_eval}

    def save_checkpoint(self) -> Optional[Path]:
        """Write the training checkpoint of the current step (process 0) and prune old ones."""
        if self.dist.is_main:
            self.latest = save_training_checkpoint(
                self.checkpoint_dir, self.step, model=self.model, model_cfg=self.cfg.model,
                tokenizer_path=self.tokenizer_path, relation_map=self.relation_map,
                trained_relations=self.trained_relations, optimizer=self.optimizer, state=self._state())
            prune_checkpoints(self.checkpoint_dir, self.cfg.train.keep_checkpoints)
            plot_curves(self.metrics.read(), self.work_dir / "curves.png")
        self.dist.barrier()
        return self.latest

    # -- the loop ----------------------------------------------------------------------------------

    def _progress(self, stop: int):
        label, line = self.progress
        return progress_bar(total=stop, initial=self.step, desc=label, unit="step", position=line,
                            quiet=self.quiet or not self.dist.is_main)

    def fit(self, until: Optional[int] = None) -> TrainResult:
        """Train up to step ``until`` (default: the end of the schedule) and return the result.

        Stopping before the end writes no extra checkpoint: a later run resumes from the last
        periodic one, as after a crash.
        """
        t = self.cfg.train
        stop = self.total_steps if until is None else min(until, self.total_steps)
        objective = MaskedModelingObjective(self.model)
        runner: nn.Module = objective
        if self.dist.distributed:
            runner = nn.parallel.DistributedDataParallel(
                objective, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=True)
        loader = DataLoader(self.dataset, batch_sampler=StepBatchSampler(self.plan, self.step, stop),
                            collate_fn=self.collator, num_workers=t.num_workers,
                            pin_memory=self.device.type == "cuda")
        batches = iter(loader)
        A = self.plan.accumulation_steps
        bar = self._progress(stop)
        try:
            while self.step < stop:
                t0 = time.perf_counter()
                record = self._train_step(runner, [next(batches) for _ in range(A)])
                self.step += 1
                elapsed = time.perf_counter() - t0
                record.update(step_s=elapsed, tokens_per_s=record["tokens"] / max(elapsed, 1e-9))
                self.last_train = record
                if self.dist.is_main:
                    self.metrics.append(record)
                bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}",
                                tok_s=f"{record['tokens_per_s']:.0f}", refresh=False)   # drawn by update's rate
                bar.update(1)
                done = self.step == self.total_steps
                if self.step % t.eval_every == 0 or done:
                    self._evaluate_and_log()
                if self.step % t.checkpoint_every == 0 or done:
                    self.save_checkpoint()
        finally:
            bar.close()
        model_dir = None
        if self.step == self.total_steps:
            model_dir = self.work_dir / "model"
            if self.dist.is_main:
                save_checkpoint(model_dir, self.model, self.cfg.model, self.tokenizer_path,
                                self.relation_map, self.trained_relations)
                if self.last_eval:
                    log.info("held-out leaf (MNM) tail-token accuracy %.4f vs majority-token baseline "
                             "%.4f over %d masked leaves; root (MLM) accuracy %.4f",
                             self.last_eval["mnm_tail_acc"], self.last_eval["leaf_majority_acc"],
                             self.last_eval["heldout_masked_leaves"], self.last_eval["mlm_acc"])
            self.dist.barrier()
        return TrainResult(self.step, self.total_steps, self.last_train, self.last_eval, self.latest,
                           model_dir)

    def _evaluate_and_log(self) -> None:
        record = self.evaluate()
        if not record:
            return
        self.last_eval = record
        if self.dist.is_main:
            self.metrics.append(record)
            candidates = record["cand_acc"]      # NaN: the model has no candidate head, or no questions held out
            log.info("step %d: held-out loss %.4f (MLM %.4f, MNM %.4f), accuracy roots %.4f, "
                     "leaf tail tokens %.4f (majority-token baseline %.4f)%s",
                     self.step, record["loss"], record["mlm_loss"], record["mnm_loss"],
                     record["mlm_acc"], record["mnm_tail_acc"], record["leaf_majority_acc"],
                     "" if math.isnan(candidates) else f", candidates {candidates:.4f}")
