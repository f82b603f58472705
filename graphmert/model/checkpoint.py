"""Model checkpoints: one self-describing directory, written atomically, loaded without pickle.

    CKPT/config.json          {"format", "format_version", "model": resolved ModelConfig,
                               "vocab_size", "num_relations", "trained_relations"}
    CKPT/model.safetensors    the state dict (the tied token embedding stored once)
    CKPT/tokenizer.json       copied from the tokenizer the model was trained with
    CKPT/relation_map.json    relation name → id (the ids H-GAT's W_r are indexed by)

``trained_relations`` names the relations the model learned (those its training graphs injected: a
subset of the relation map, whose other relations H-GAT never saw), so that extraction with the
checkpoint asks those wherever it runs; a checkpoint written before the key existed has none.

The directory is assembled under a temporary name next to its destination and renamed into place,
so a reader never sees a half-written checkpoint. Loading reads tensors with safetensors only and
checks the stored config, vocabulary size and relation map against what the caller expects.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import torch
from safetensors.torch import load_file, save_file

from graphmert.config import ConfigError, ModelConfig
from graphmert.io import atomic_dir, atomic_write_json, read_json, read_versioned_json
from graphmert.model.graphmert import GraphMERT, build_model

__all__ = ["CheckpointError", "save_checkpoint", "load_checkpoint", "read_checkpoint_config",
           "read_trained_relations"]

FORMAT = "graphmert-checkpoint"
FORMAT_VERSION = 1
FILES = ("config.json", "model.safetensors", "tokenizer.json", "relation_map.json")


class CheckpointError(ConfigError):
    """A checkpoint is missing, malformed, or does not match what the caller expects."""


def _check_relation_map(relation_map: Mapping[str, int], num_relations: int, where: str) -> dict[str, int]:
    rmap = {str(k): v for k, v in relation_map.items()}
    bad = [k for k, v in rmap.items() if isinstance(v, bool) or not isinstance(v, int)]
    if bad:
        raise CheckpointError(f"{where}: relation {bad[0]!r} has id {rmap[bad[0]]!r}, not an integer")
    ids = sorted(rmap.values())
    if ids != list(range(num_relations)):
        raise CheckpointError(f"{where}: relation ids must be exactly 0..{num_relations - 1} (one per "
                              f"relation of the model), got {len(rmap)} names with ids {ids[:10]}"
                              f"{' ...' if len(ids) > 10 else ''}")
    return rmap


def _check_trained(names: Any, rmap: Mapping[str, int], where: str) -> list[str]:
    """``names`` as a sorted list of relation names, each in ``rmap`` (else a CheckpointError)."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)) \
            or not all(isinstance(n, str) for n in names):
        raise CheckpointError(f"{where}: must be a list of relation names, got {names!r}")
    unknown = sorted(set(names) - set(rmap))
    if unknown:
        raise CheckpointError(f"{where}: {unknown[0]!r} is not in the relation map "
                              f"({sorted(rmap)[:10]})")
    return sorted(set(names))


def read_trained_relations(directory: Union[str, Path], relation_map: Mapping[str, int]) -> Optional[list[str]]:
    """The relations a checkpoint's model learned (module docstring), checked against its
    ``relation_map``; None when its config.json records none."""
    path = Path(directory) / "config.json"
    names = read_json(path).get("trained_relations")
    return None if names is None else _check_trained(names, relation_map, f"{path}: trained_relations")


def _tokenizer_vocab_size(path: Path) -> Optional[int]:
    """Vocabulary size of a ``tokenizers`` JSON file (None when it is not one)."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)
    except Exception:  # noqa: BLE001 - any parse failure means "not a tokenizers file"
        return None


def save_checkpoint(directory: Union[str, Path], model: GraphMERT, model_cfg: ModelConfig,
                    tokenizer_path: Union[str, Path], relation_map: Mapping[str, int],
                    trained_relations: Optional[Sequence[str]] = None) -> Path:
    """Write ``model`` as a checkpoint directory (replacing an existing one atomically).

    Args:
        directory: destination folder.
        model: the model; its vocabulary size and relation count are recorded.
        model_cfg: the resolved model config the model was built from.
        tokenizer_path: the tokenizer.json to copy in; its vocabulary must fit the model's.
        relation_map: relation name → id, ids exactly 0..R−1 for the model's R relations.
        trained_relations: the relations the model learned (module docstring), each in
            ``relation_map``; None records none.
    Returns: the checkpoint directory.
    """
    directory = Path(directory)
    tokenizer_path = Path(tokenizer_path)
    if dataclasses.asdict(model_cfg) != dataclasses.asdict(model.config):
        raise CheckpointError(f"{directory}: model_cfg differs from the config the model was built with")
    rmap = _check_relation_map(relation_map, model.num_relations, f"{directory}: relation_map")
    trained = None if trained_relations is None else \
        _check_trained(trained_relations, rmap, f"{directory}: trained_relations")
    if not tokenizer_path.is_file():
        raise CheckpointError(f"{tokenizer_path}: tokenizer file not found")
    tok_vocab = _tokenizer_vocab_size(tokenizer_path)
    if tok_vocab is not None and tok_vocab > model.vocab_size:
        raise CheckpointError(f"{tokenizer_path}: tokenizer has {tok_vocab} tokens but the model's "
                              f"vocabulary holds {model.vocab_size}")

    with atomic_dir(directory) as tmp:
        atomic_write_json(tmp / "config.json", {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "model": dataclasses.asdict(model_cfg),
            "vocab_size": model.vocab_size, "num_relations": model.num_relations,
            **({} if trained is None else {"trained_relations": trained})})
        state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": FORMAT})
        shutil.copyfile(tokenizer_path, tmp / "tokenizer.json")
        atomic_write_json(tmp / "relation_map.json", rmap)
    return directory


def read_checkpoint_config(directory: Union[str, Path]) -> tuple[ModelConfig, int, int]:
    """(model config, vocab size, number of relations) stored in a checkpoint's config.json."""
    directory = Path(directory)
    missing = [f for f in FILES if not (directory / f).is_file()]
    if not directory.is_dir() or missing:
        what = ", ".join(missing) if directory.is_dir() else "directory"
        raise CheckpointError(f"{directory}: not a GraphMERT checkpoint (missing {what})")
    path = directory / "config.json"
    data = read_versioned_json(path, format=FORMAT, version=FORMAT_VERSION,
                               what="a GraphMERT checkpoint config", error=CheckpointError)
    for key in ("model", "vocab_size", "num_relations"):
        if key not in data:
            raise CheckpointError(f"{path}: missing key {key!r}")
    model = data["model"]
    if not isinstance(model, dict):
        raise CheckpointError(f"{path}: 'model' must be a mapping of model config keys")
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(model) - known)
    if unknown:
        raise CheckpointError(f"{path}: model.{unknown[0]}: unknown key; allowed keys: {sorted(known)}")
    try:
        cfg = ModelConfig(**model).validate()
    except ConfigError as e:
        raise CheckpointError(f"{path}: {e}") from None
    return cfg, int(data["vocab_size"]), int(data["num_relations"])


def _config_diff(stored: ModelConfig, expected: ModelConfig) -> list[str]:
    a, b = dataclasses.asdict(stored), dataclasses.asdict(expected)
    return [f"model.{k}: checkpoint {a[k]!r} vs expected {b[k]!r}" for k in a if a[k] != b[k]]


def load_checkpoint(directory: Union[str, Path], expected_vocab: Optional[int] = None,
                    expected_relations: Union[Mapping[str, int], int, None] = None,
                    expected_config: Optional[ModelConfig] = None,
                    device: Union[str, torch.device] = "cpu") -> tuple[GraphMERT, dict[str, Any]]:
    """Rebuild the model of a checkpoint directory (safetensors only, never unpickles).

    Args:
        directory: the checkpoint.
        expected_vocab: the caller's vocabulary size; a different stored size is an error.
        expected_relations: the caller's relation map (name → id), or just a relation count.
        expected_config: the caller's model config; any differing key is an error naming it.
        device: where to put the weights.
    Returns:
        (model in eval mode, info) with info keys ``config`` (ModelConfig), ``vocab_size``,
        ``num_relations``, ``relation_map``, ``trained_relations`` (a sorted list, or None for a
        checkpoint that records none), ``tokenizer_path``, ``path``.
    """
    directory = Path(directory)
    cfg, vocab_size, num_relations = read_checkpoint_config(directory)
    if expected_vocab is not None and expected_vocab != vocab_size:
        raise CheckpointError(f"{directory}: vocabulary size {vocab_size} does not match the expected "
                              f"{expected_vocab} (tokenizer.vocab_size / the tokenizer in use)")
    rmap_path = directory / "relation_map.json"
    try:
        rmap = _check_relation_map(read_json(rmap_path), num_relations, str(rmap_path))
    except (json.JSONDecodeError, AttributeError) as e:
        raise CheckpointError(f"{rmap_path}: not a JSON mapping of relation name → id ({e})") from None
    if isinstance(expected_relations, int):
        if expected_relations != num_relations:
            raise CheckpointError(f"{directory}: {num_relations} relations, expected {expected_relations}")
    elif expected_relations is not None:
        expected = {str(k): v for k, v in expected_relations.items()}
        if expected != rmap:
            diff = sorted(set(expected.items()) ^ set(rmap.items()))[:5]
            raise CheckpointError(f"{directory}: relation map does not match the expected one "
                                  f"(differing name → id entries, first 5: {diff})")
    if expected_config is not None:
        diff = _config_diff(cfg, expected_config)
        if diff:
            raise CheckpointError(f"{directory}: model config does not match: " + "; ".join(diff))

    model = build_model(cfg, vocab_size, num_relations)
    weights = directory / "model.safetensors"
    try:
        state = load_file(str(weights), device="cpu")
    except Exception as e:  # noqa: BLE001 - safetensors raises several types for corrupt files
        raise CheckpointError(f"{weights}: cannot read safetensors file: {e}") from None
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    bad_shape = sorted(k for k in set(own) & set(state) if own[k].shape != state[k].shape)
    if missing or unexpected or bad_shape:
        raise CheckpointError(f"{weights}: tensors do not match the model built from config.json "
                              f"(missing {missing[:5]}, unexpected {unexpected[:5]}, "
                              f"wrong shape {bad_shape[:5]})")
    model.load_state_dict(state, strict=True)
    model.to(device).eval()
    info = {"config": cfg, "vocab_size": vocab_size, "num_relations": num_relations,
            "relation_map": rmap, "trained_relations": read_trained_relations(directory, rmap),
            "tokenizer_path": directory / "tokenizer.json", "path": directory}
    return model, info
