"""Training data: held-out split, the per-step batch plan across processes, the dataset, and the
process group.

Split. A document is held out when u(doc_id) < ``train.eval_fraction``, with u = the first 64 bits
of SHA-256(doc_id) / 2⁶⁴, and the split depends on nothing but the ids. A graph holds text of one
document (``document`` chunks; overlapping windows never leak across) or of several (``concatenate``
chunks, :attr:`LeafyChainGraph.documents`): it is held out when all its documents are, trained on when
none is, and used for neither when it mixes the two — so no document has text on both sides.

Batch plan. With E = ``train.effective_batch_size`` sequences per optimizer step, N training graphs,
P processes and micro-batches of at most ``train.batch_size`` sequences:

    steps per epoch   S = ⌊N / E⌋                  (the last partial batch of an epoch is dropped)
    epoch e order     π_e = permutation of the N training indices, seeded by (seed, e)
    step s            global batch π_e[j·E : (j+1)·E]  with e = ⌊s / S⌋, j = s mod S
    process p         its contiguous share of E / P sequences, cut into A = ⌈E / (P·batch_size)⌉
                      micro-batches of nearly equal size (gradient accumulation)

The data position is a function of the step, so a resumed run continues from the step alone, and one
process with A micro-batches sees exactly the micro-batches that P processes see together.

Each item is (epoch, index) → (epoch, index, graph): the masking collator seeds its draws from them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from graphmert.config import ConfigError, TrainConfig
from graphmert.corpus.fraction import document_fraction
from graphmert.graph.layout import LeafyChainGraph

__all__ = ["split_by_document", "GraphDataset", "BatchPlan", "StepBatchSampler",
           "eval_batches", "DistContext", "majority_leaf_token"]

PERMUTATION_STREAM = 2


def split_by_document(graphs: Sequence[LeafyChainGraph], eval_fraction: float) -> tuple[list[int], list[int]]:
    """(training indices, held-out indices) split by document (module docstring); graphs that mix
    held-out and training documents are in neither list.

    When ``eval_fraction`` > 0 but no graph ends up held out, the documents of the graph whose
    largest u is smallest are held out too, so a small corpus still gets an evaluation set (unless
    that graph holds every document).
    """
    docs = [set(g.documents or [g.doc_id]) for g in graphs]
    u = {d: document_fraction(d) for ds in docs for d in ds}
    held = {d for d, v in u.items() if v < eval_fraction}
    if eval_fraction > 0 and docs and not any(ds <= held for ds in docs):
        pick = min(range(len(docs)), key=lambda i: (max(u[d] for d in docs[i]), i))
        if len(docs[pick]) < len(u):
            held |= docs[pick]
    train = [i for i, ds in enumerate(docs) if not ds & held]
    evals = [i for i, ds in enumerate(docs) if ds <= held]
    return train, evals


def majority_leaf_token(graphs: Sequence[LeafyChainGraph], indices: Sequence[int]) -> int:
    """The most frequent filled-leaf token of ``graphs[indices]`` (smallest id on ties; −1 if none)."""
    counts: dict[int, int] = {}
    for i in indices:
        g = graphs[i]
        filled = np.arange(g.K)[None, :] < g.leaf_length[:, None]
        for tok, c in zip(*np.unique(g.leaf_ids[filled], return_counts=True)):
            counts[int(tok)] = counts.get(int(tok), 0) + int(c)
    if not counts:
        return -1
    return min(counts, key=lambda t: (-counts[t], t))


class GraphDataset(Dataset):
    """Map-style dataset over in-memory graphs: item (epoch, index) → (epoch, index, graph)."""

    def __init__(self, graphs: Sequence[LeafyChainGraph]) -> None:
        self.graphs = graphs

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, item: tuple[int, int]) -> tuple[int, int, LeafyChainGraph]:
        epoch, index = item
        return epoch, index, self.graphs[index]


@dataclass(frozen=True)
class BatchPlan:
    """Which graphs each process trains on at each step (module docstring)."""

    train_indices: tuple[int, ...]
    effective_batch_size: int
    batch_size: int
    seed: int
    world_size: int = 1
    rank: int = 0

    def __post_init__(self) -> None:
        E, P = self.effective_batch_size, self.world_size
        if E % P:
            raise ConfigError(f"train.effective_batch_size: {E} is not divisible by the number of "
                              f"processes ({P}); each process must get the same share")
        if len(self.train_indices) < E:
            raise ConfigError(f"train.effective_batch_size: {E} exceeds the {len(self.train_indices)} "
                              f"training chunks; lower it (or add data)")

    @classmethod
    def from_config(cls, train: TrainConfig, train_indices: Sequence[int], world_size: int = 1,
                    rank: int = 0) -> "BatchPlan":
        return cls(tuple(int(i) for i in train_indices), train.effective_batch_size,
                   train.batch_size, train.seed, world_size, rank)

    @property
    def steps_per_epoch(self) -> int:
        return len(self.train_indices) // self.effective_batch_size

    @property
    def accumulation_steps(self) -> int:
        """A: micro-batches per process per optimizer step."""
        return math.ceil(self.effective_batch_size / (self.world_size * self.batch_size))

    def total_steps(self, train: TrainConfig) -> int:
        """``train.max_steps``, else ⌈epochs · steps per epoch⌉."""
        if train.max_steps is not None:
            return train.max_steps
        return max(1, math.ceil(train.epochs * self.steps_per_epoch - 1e-9))

    def permutation(self, epoch: int) -> np.ndarray:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            [self.seed % 2**63, PERMUTATION_STREAM, epoch])))
        return np.asarray(self.train_indices, dtype=np.int64)[rng.permutation(len(self.train_indices))]

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, step within the epoch) of a global step."""
        return divmod(step, self.steps_per_epoch)

    def micro_batches(self, step: int, perm: np.ndarray | None = None) -> list[list[tuple[int, int]]]:
        """This process's micro-batches of ``step``: lists of (epoch, index) items."""
        epoch, j = self.position(step)
        perm = self.permutation(epoch) if perm is None else perm
        E = self.effective_batch_size
        share = E // self.world_size
        mine = perm[j * E + self.rank * share: j * E + (self.rank + 1) * share]
        return [[(epoch, int(i)) for i in part] for part in np.array_split(mine, self.accumulation_steps)]


class StepBatchSampler:
    """``batch_sampler`` for a DataLoader: the micro-batches of steps ``start … stop − 1`` in order."""

    def __init__(self, plan: BatchPlan, start: int, stop: int) -> None:
        self.plan, self.start, self.stop = plan, start, stop

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epoch, perm = -1, None
        for step in range(self.start, self.stop):
            e, _ = self.plan.position(step)
            if e != epoch:
                epoch, perm = e, self.plan.permutation(e)
            yield from self.plan.micro_batches(step, perm)

    def __len__(self) -> int:
        return max(0, self.stop - self.start) * self.plan.accumulation_steps


def eval_batches(eval_indices: Sequence[int], passes: int, batch_size: int, world_size: int = 1,
                 rank: int = 0) -> list[list[tuple[int, int]]]:
    """Held-out micro-batches of one process: items (pass, index), every ``world_size``-th graph."""
    mine = list(eval_indices)[rank::world_size]
    items = [(p, int(i)) for p in range(passes) for i in mine]
    return [items[k:k + batch_size] for k in range(0, len(items), batch_size)]


@dataclass
class DistContext:
    """The process group of a (torchrun) run: rank, world size, local rank, device.

    :meth:`from_env` reads torchrun's ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` and initialises the
    default process group (gloo on CPU, NCCL on CUDA) when the world has more than one process.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @classmethod
    def from_env(cls, device: str = "auto") -> "DistContext":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("train.device: 'cuda' was requested but CUDA is not available")
        use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
        dev = torch.device("cuda", local) if use_cuda else torch.device("cpu")
        if use_cuda:
            torch.cuda.set_device(dev)
        if world > 1 and not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
        return cls(rank, world, local, dev)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def all_reduce(self, t: Tensor) -> Tensor:
        """Sum ``t`` over processes in place (no-op for one process); returns it."""
        if self.distributed:
            torch.distributed.all_reduce(t)
        return t

    def barrier(self) -> None:
        if self.distributed:
            torch.distributed.barrier()

    def any(self, flag: bool) -> bool:
        """True on every process if ``flag`` is true on any of them."""
        t = torch.tensor([1.0 if flag else 0.0], device=self.device)
        return bool(self.all_reduce(t).item() > 0)
