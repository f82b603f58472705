"""Fits the extract stage makes in its driver, kept in the run directory between reruns.

Before it extracts, the stage fits up to four things on the relation typer's documents
(``extract.typer_files``): the relation typer (about 20 s on BioRED train), the pair heads (about
130 s: an encoder pass over 400 documents), the ``lexical_document`` regression (about 90 s) and the
regression of ``extract.cross_chunk_pairs`` (seconds). A rerun whose change is a selection setting
(k, a threshold, a pooling weight, the controls' own settings) reruns the stage, and used to fit
them all again for the same result. Each fit is now
stored as ``RUN/cache/extract/<name>-<key>.pkl``, where the key hashes everything that fit reads:

- the code of the extract stage and everything it imports (:func:`pipelines.fingerprint.module_fingerprint`),
  so any code change refits;
- the typer files' contents and the documents left out of them (the held-out set);
- the config sections that shape the documents and questions (``corpus``, ``graph``, ``kg``, the
  relation schema, ``train.device``) and every ``extract`` option but :data:`SELECTION_ONLY`, a fit's
  own settings (:data:`FIT_OPTIONS`: C, folds, window) in that fit's key alone;
- the graphs stage's output hash (it changes with the seed KG the questions read);
- for the pair heads, the checkpoint (and ensemble) id.

A cache file that cannot be read is logged and fitted anew. Each name keeps its :data:`KEEP` most
recent files. ``rm -r RUN/cache`` is always safe.

Written here rather than with ``joblib.Memory`` because the key is not the call's arguments (a stage
context, a model) but a digest of files, settings and code, which this module states in one place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import pickle
from pathlib import Path
from typing import Any, Callable, TypeVar

from graphmert.io import atomic_path, file_sha256
from pipelines import fingerprint

__all__ = ["CACHE_ROOT", "FIT_OPTIONS", "KEEP", "SELECTION_ONLY", "cached_fit", "fit_key"]

log = logging.getLogger("graphmert.pipeline")
T = TypeVar("T")

CACHE_ROOT = Path("cache") / "extract"     # under the run directory
KEEP = 4                                   # most recent files kept per fit name
#: ``extract`` options that decide which answers become triples but never what the fits read
SELECTION_ONLY = frozenset({
    "tails_per_query", "min_confidence", "controls", "control_tails_per_query", "control_min_confidence",
    "lexical_weight", "related_head_weight", "type_head_weight", "typer_min_relation", "relation_choice",
    "evidence", "one_relation_per_pair", "beta", "similarity_scorer", "check_range",
    "require_tail_in_document", "shard_size", "part_documents", "llm_url", "llm_model", "llm_api_key_env",
    "cross_chunk_min_probability"})
#: ``extract`` options that only some fits read: in those fits' keys alone
FIT_OPTIONS = {"typer_window": ("typer", "lexical_document"), "typer_c": ("typer", "lexical_document"),
               "typer_apart": ("typer", "lexical_document"), "typer_shared": ("typer",),
               "typer_roles": ("typer",),
               "stack_c": ("lexical_document",), "stack_folds": ("lexical_document",),
               "type_head_c": ("pair_heads",), "related_head_c": ("pair_heads",),
               "cross_chunk_pairs": ("cross_chunk",)}


def fit_key(cfg, name: str, held_out: frozenset[str], schema: dict, **parts: Any) -> dict:
    """What the fit ``name`` (typer, pair_heads, lexical_document, cross_chunk) reads on the typer documents
    (module docstring), with the fit's own ``parts``."""
    extract = {k: v for k, v in dataclasses.asdict(cfg.extract).items()
               if k not in SELECTION_ONLY and name in FIT_OPTIONS.get(k, (name,))}
    return {"code": fingerprint.module_fingerprint("pipelines.stages.extract"),
            "typer_files": [file_sha256(p) for p in cfg.extract.typer_files],
            "held_out": hashlib.sha256("\n".join(sorted(held_out)).encode("utf-8")).hexdigest(),
            "corpus": dataclasses.asdict(cfg.corpus), "graph": dataclasses.asdict(cfg.graph),
            "kg": dataclasses.asdict(cfg.kg), "schema": schema, "device": cfg.train.device,
            "extract": extract, **parts}


def cached_fit(run_dir: Path, name: str, key: dict, fit: Callable[[], T]) -> T:
    """``fit()``'s result, read from the run's cache when a fit of ``name`` under ``key`` is stored
    there, else computed and stored (atomically)."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:20]
    folder = Path(run_dir) / CACHE_ROOT
    path = folder / f"{name}-{digest}.pkl"
    if path.exists():
        try:
            with open(path, "rb") as f:
                value = pickle.load(f)
            log.info("extract: %s reused from %s", name, path)
            path.touch()
            return value
        except Exception as e:          # a truncated or foreign file: fitted anew below
            log.warning("extract: %s: cannot be read (%s: %s); fitting %s anew", path, type(e).__name__, e, name)
    value = fit()
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    _prune(folder, name)
    return value


def _prune(folder: Path, name: str) -> None:
    """Keep the :data:`KEEP` most recently used files of ``name``."""
    files = sorted(folder.glob(f"{name}-*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)
