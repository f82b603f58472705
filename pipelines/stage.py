"""Stage execution and the run-directory contract (DESIGN §10).

A stage reads what earlier stages wrote in the same run directory and writes its own folder
``RUN/<stage>/`` with a ``manifest.json``. Each stage is a pure function of (its inputs, its config
sections): its manifest records an ``input_hash`` (the upstream manifests' output hashes, or the
source files' hashes for ingest), a ``config_hash`` (its resolved config sections + code version) and
an ``output_hash``. Running a stage whose recorded hashes match does no work and records
``"status": "skipped"``; otherwise the stage writes into a temporary folder next to ``RUN/<stage>``
and swaps it in only when complete, so an interrupted stage never leaves a folder that looks finished.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphmert import __version__
from graphmert.config import Config, save_config, section_hash
from graphmert.io import atomic_write_json, file_sha256, read_json

__all__ = ["Stage", "StageContext", "StageError", "run_stage", "setup_logging", "manifest_path"]

log = logging.getLogger("graphmert.pipeline")


class StageError(RuntimeError):
    """A stage cannot run (e.g. its upstream stage has not run in this run directory)."""


@dataclass
class StageContext:
    cfg: Config
    run_dir: Path
    out: Path                     # the (temporary) folder this stage writes into
    quiet: bool = False
    upstream: dict[str, dict] = field(default_factory=dict)   # name → manifest

    def stage_dir(self, name: str) -> Path:
        return self.run_dir / name

    def progress(self, iterable=None, **kw):
        """A tqdm progress bar that ``--quiet`` silences."""
        from tqdm.auto import tqdm

        return tqdm(iterable, disable=self.quiet, dynamic_ncols=True, **kw)


@dataclass
class Stage:
    name: str
    sections: tuple[str, ...]               # config sections or dotted keys the stage depends on
    upstream: tuple[str, ...]               # stages whose outputs it reads
    run: Callable[[StageContext], dict]     # does the work; returns the manifest body (counts…)
    source_files: Callable[[Config], list[Path]] | None = None   # raw inputs (ingest, KG files)
    help: str = ""
    command: str = ""                       # CLI command name when it differs from ``name``

    @property
    def cli_name(self) -> str:
        return self.command or self.name


def manifest_path(run_dir: Path, stage: str) -> Path:
    return Path(run_dir) / stage / "manifest.json"


def setup_logging(run_dir: Path, quiet: bool = False) -> None:
    """Log to ``RUN/logs/graphmert.log`` (always) and to stderr (warnings only when quiet)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("graphmert")
    root.setLevel(logging.INFO)
    for h in list(root.handlers):
        if getattr(h, "_graphmert", False):
            root.removeHandler(h)
            h.close()
    (run_dir / "logs").mkdir(exist_ok=True)
    fh = logging.FileHandler(run_dir / "logs" / "graphmert.log", encoding="utf-8")
    fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    sh = logging.StreamHandler()
    sh.setLevel(logging.WARNING if quiet else logging.INFO)
    sh.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    for h in (fh, sh):
        h._graphmert = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.propagate = False


def _config_part(cfg: Config, dotted: str) -> Any:
    """A config section (``"graph"``) or one key of it (``"graph.num_roots"``), tagged by name."""
    obj: Any = cfg
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return {dotted: dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj}


def _hash_json(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _input_hash(stage: Stage, cfg: Config, upstream: dict[str, dict]) -> str:
    parts: dict[str, Any] = {name: m.get("output_hash") for name, m in upstream.items()}
    if stage.source_files is not None:
        parts["files"] = {str(p): file_sha256(p) for p in stage.source_files(cfg)}
    return _hash_json(parts)


def _output_hash(out: Path) -> str:
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    return _hash_json({str(p.relative_to(out)): file_sha256(p) for p in files})


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace ``final`` by ``tmp`` so that a complete folder is always either old or new."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_stage(stage: Stage, cfg: Config, run_dir: Path, quiet: bool = False,
              force: bool = False) -> dict:
    """Run (or skip) one stage and return its manifest."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.yaml")
    upstream = {}
    for name in stage.upstream:
        mp = manifest_path(run_dir, name)
        if not mp.exists():
            raise StageError(f"stage '{stage.name}' needs the output of stage '{name}', but "
                             f"{mp} does not exist; run `graphmert {name}` (or `graphmert run`) first")
        upstream[name] = read_json(mp)
    config_hash = section_hash(*(_config_part(cfg, s) for s in stage.sections), __version__)
    input_hash = _input_hash(stage, cfg, upstream)
    final = run_dir / stage.name
    mp = manifest_path(run_dir, stage.name)
    if not force and mp.exists():
        old = read_json(mp)
        if (old.get("input_hash") == input_hash and old.get("config_hash") == config_hash
                and old.get("output_hash") == _output_hash(final)):
            old["status"] = "skipped"
            atomic_write_json(mp, old)
            log.info("%s: up to date, skipped", stage.name)
            return old
    tmp = Path(tempfile.mkdtemp(prefix=f".{stage.name}.tmp-", dir=run_dir))
    t0 = time.time()
    log.info("%s: running", stage.name)
    try:
        body = stage.run(StageContext(cfg=cfg, run_dir=run_dir, out=tmp, quiet=quiet,
                                      upstream=upstream))
        manifest = {"stage": stage.name, "status": "ran", **body,
                    "input_hash": input_hash, "config_hash": config_hash,
                    "output_hash": _output_hash(tmp), "elapsed_s": round(time.time() - t0, 3),
                    "version": __version__}
        atomic_write_json(tmp / "manifest.json", manifest)
        _swap_in(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("%s: done in %.1fs", stage.name, manifest["elapsed_s"])
    return manifest
