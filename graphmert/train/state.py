"""Training checkpoints: model weights + the state needed to continue exactly, written atomically and
read back without pickle.

    CKPT = <checkpoints>/step-<8-digit step>/
    CKPT/model/                   a model checkpoint (graphmert.model.checkpoint: config.json,
                                  model.safetensors, tokenizer.json, relation_map.json)
    CKPT/optimizer.safetensors    AdamW per-parameter tensors, keys "state.<param index>.<name>"
    CKPT/trainer_state.json       {"format", "format_version", "step", data position, schedule,
                                   optimizer param groups and non-tensor state, train config, metrics}

The directory is assembled under a hidden temporary name and renamed into place, so a
``step-*`` directory is always complete; the latest checkpoint is the one with the highest step.
Random state needs no file: the trainer re-seeds dropout from (seed, step, rank) at every step and
masks come from (seed, epoch, sample index), so both follow from the step.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import torch
from safetensors.torch import load_file, save_file

from graphmert.config import ModelConfig
from graphmert.io import atomic_dir, atomic_write_json, read_versioned_json
from graphmert.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["STATE_FORMAT", "optimizer_state_tensors", "optimizer_state_from_tensors",
           "save_training_checkpoint", "load_training_state", "list_checkpoints", "latest_checkpoint",
           "prune_checkpoints", "checkpoint_name"]

STATE_FORMAT = "graphmert-train-state"
STATE_VERSION = 1
_NAME = re.compile(r"^step-(\d{8,})$")


def checkpoint_name(step: int) -> str:
    return f"step-{step:08d}"


def optimizer_state_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    """Split ``optimizer.state_dict()`` into tensors (for safetensors) and JSON-able metadata."""
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for idx, entry in sd["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{idx}.{key}"] = value.detach().to("cpu").contiguous()
            else:
                scalars.setdefault(str(idx), {})[key] = value
    groups = []
    for g in sd["param_groups"]:
        groups.append({k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()})
    return tensors, {"param_groups": groups, "scalars": scalars}


def optimizer_state_from_tensors(tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> dict:
    """Inverse of :func:`optimizer_state_tensors`: a state dict for ``optimizer.load_state_dict``."""
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        parts = name.split(".", 2)
        if len(parts) != 3 or parts[0] != "state" or not parts[1].isdigit():
            raise CheckpointError(f"optimizer.safetensors: unexpected tensor name {name!r}")
        state.setdefault(int(parts[1]), {})[parts[2]] = value
    for idx, entry in meta.get("scalars", {}).items():
        state.setdefault(int(idx), {}).update(entry)
    groups = []
    for g in meta["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}


def save_training_checkpoint(folder: Union[str, Path], step: int, *, model: torch.nn.Module,
                             model_cfg: ModelConfig, tokenizer_path: Union[str, Path],
                             relation_map: Mapping[str, int], optimizer: torch.optim.Optimizer,
                             state: Mapping[str, Any],
                             trained_relations: Optional[Sequence[str]] = None) -> Path:
    """Write ``folder/step-<step>/`` atomically (module docstring) and return it.

    ``state`` is the JSON-able trainer state (data position, schedule, config, metrics); the step,
    format and optimizer metadata are added here. ``trained_relations`` goes into the model's
    config.json (:func:`graphmert.model.checkpoint.save_checkpoint`).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / checkpoint_name(step)
    with atomic_dir(final) as tmp:
        save_checkpoint(tmp / "model", model, model_cfg, tokenizer_path, relation_map, trained_relations)
        tensors, meta = optimizer_state_tensors(optimizer)
        save_file(tensors, str(tmp / "optimizer.safetensors"), metadata={"format": STATE_FORMAT})
        atomic_write_json(tmp / "trainer_state.json", {
            "format": STATE_FORMAT, "format_version": STATE_VERSION, "step": step,
            **dict(state), "optimizer": meta})
    return final


def load_training_state(directory: Union[str, Path], optimizer: Optional[torch.optim.Optimizer] = None,
                        expected_vocab: Optional[int] = None,
                        expected_relations: Union[Mapping[str, int], int, None] = None,
                        expected_config: Optional[ModelConfig] = None,
                        device: Union[str, torch.device] = "cpu") -> tuple[torch.nn.Module, dict]:
    """Read a training checkpoint: (model on ``device``, trainer state dict).

    The model is checked against the expected vocabulary, relations and config
    (:func:`graphmert.model.load_checkpoint`); the optimizer, when given, gets its state back.
    """
    directory = Path(directory)
    state_path = directory / "trainer_state.json"
    try:
        state = read_versioned_json(state_path, format=STATE_FORMAT, version=STATE_VERSION,
                                    what="a training state", error=CheckpointError)
    except FileNotFoundError:
        raise CheckpointError(f"{directory}: not a training checkpoint (no trainer_state.json)") from None
    model, _ = load_checkpoint(directory / "model", expected_vocab=expected_vocab,
                               expected_relations=expected_relations,
                               expected_config=expected_config, device=device)
    if optimizer is not None:
        opt_path = directory / "optimizer.safetensors"
        try:
            tensors = load_file(str(opt_path), device="cpu")
        except Exception as e:  # noqa: BLE001 - safetensors raises several types for corrupt files
            raise CheckpointError(f"{opt_path}: cannot read safetensors file: {e}") from None
        sd = optimizer_state_from_tensors(tensors, state["optimizer"])
        ours = optimizer.state_dict()["param_groups"]
        if [len(g["params"]) for g in ours] != [len(g["params"]) for g in sd["param_groups"]]:
            raise CheckpointError(f"{opt_path}: optimizer parameter groups do not match the model "
                                  f"({[len(g['params']) for g in sd['param_groups']]} stored vs "
                                  f"{[len(g['params']) for g in ours]})")
        optimizer.load_state_dict(sd)
    return model, state


def list_checkpoints(folder: Union[str, Path]) -> list[tuple[int, Path]]:
    """Complete checkpoints in ``folder`` as (step, path), by step."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.iterdir():
        m = _NAME.match(p.name)
        if m and p.is_dir():
            out.append((int(m.group(1)), p))
    return sorted(out)


def latest_checkpoint(folder: Union[str, Path]) -> Optional[Path]:
    """The checkpoint with the highest step, or None."""
    found = list_checkpoints(folder)
    return found[-1][1] if found else None


def prune_checkpoints(folder: Union[str, Path], keep: int) -> list[Path]:
    """Delete all but the ``keep`` most recent checkpoints (and stale temporary folders); return
    the deleted paths."""
    found = list_checkpoints(folder)
    gone = [p for _, p in found[:-keep]] if keep > 0 else [p for _, p in found]
    gone += [p for p in Path(folder).glob(".step-*.tmp")] + [p for p in Path(folder).glob(".step-*.old")]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone
