"""``graphmert calibrate``: fit ``extract.calibration`` on a finished run with gold, with its provenance.

A calibration map (:mod:`graphmert.extract.calibrate`) says how often graphmert's triples hold at
each confidence, so it holds only for the documents' kind it was fitted on (a held-out slice like
the corpus it will be used on) and for the settings that make the confidences
(:data:`~graphmert.config.extract.CALIBRATION_SETTINGS`). :func:`fit_run` reads a run extracted
without a map (``extract.calibration: []``), labels each of graphmert's scored pairs on the gold's
documents by whether the gold holds it (an unlinked end: a false pair, as ``metrics.md`` counts it),
fits (a, b), and records them with the run's values of those settings; :func:`config_lines` is the
YAML to paste, whose ``calibration_fitted_with`` lets :mod:`graphmert.config.checks` refuse the map
under other settings. The record goes to ``RUN/calibrate/calibration.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from graphmert.config import Config, ConfigError, load_config
from graphmert.config.checks import calibration_settings
from graphmert.errors import GraphmertError
from graphmert.eval.calibration import pair_confidences, reliability
from graphmert.eval.gold import GoldSet, load_gold
from graphmert.extract.calibrate import fit_platt, platt
from graphmert.extract.triples import read_triples
from graphmert.io import atomic_write_json
from pipelines.stage import manifest_path
from pipelines.stages import DOCUMENTS_FILE

CALIBRATION_FILE = "calibration.json"      # under RUN/calibrate/


def _extracted(run_dir: Path, refuse_mapped: bool) -> dict:
    """The run's finished extract manifest; with ``refuse_mapped``, refused when the run's
    confidences were mapped already (a map is fitted on the model's own)."""
    path = manifest_path(run_dir, "extract")
    if not path.is_file():
        raise ConfigError(f"{path}: missing; run `graphmert extract` on {run_dir} first")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if refuse_mapped and manifest.get("calibration"):
        raise ConfigError(f"{path}: this run's confidences are already mapped by extract.calibration "
                          f"{manifest['calibration']}; fit on a run extracted with 'extract.calibration=[]'")
    return manifest


@dataclass(frozen=True)
class ScoredRun:
    """What a fit reads of a run: graphmert's pair confidences on the gold's documents, that gold, its
    files, and the run's config."""

    run_dir: Path
    cfg: Config
    conf: dict                      # (doc, pair) -> (confidence, types): pair_confidences'
    gold: GoldSet
    files: list[str]


def scored_pairs(run_dir: Path, gold_files: Sequence[str | Path] = (), refuse_mapped: bool = True) -> ScoredRun:
    """graphmert's pair confidences of ``run_dir`` (:func:`~graphmert.eval.calibration.pair_confidences`)
    on the documents of the gold (``gold_files``, else the run's ``evaluate.gold``) it extracted."""
    run_dir = Path(run_dir)
    manifest = _extracted(run_dir, refuse_mapped)
    cfg = load_config(run_dir / "config.yaml")
    files = [str(f) for f in gold_files] or list(cfg.evaluate.gold)
    if not files:
        raise ConfigError(f"{run_dir}: no gold to fit on; pass --gold FILE or set evaluate.gold in the run's config")
    extracted = (run_dir / "extract" / DOCUMENTS_FILE).read_text(encoding="utf-8").split()
    gold = load_gold(files, format=cfg.evaluate.format).subset(extracted)
    triples = read_triples([run_dir / "extract" / s for s in manifest["shards"]])
    conf = pair_confidences(triples, dict(cfg.evaluate.relation_map))
    return ScoredRun(run_dir=run_dir, cfg=cfg, conf={k: v for k, v in conf.items() if k[0] in gold.documents},
                     gold=gold, files=files)


def fit_run(run_dir: Path, gold_files: Sequence[str | Path] = ()) -> dict:
    """Fit (a, b) on ``run_dir`` (module docstring; :func:`fit_scored`)."""
    return fit_scored(scored_pairs(run_dir, gold_files))


def fit_scored(run: ScoredRun) -> dict:
    """Fit (a, b) on a run's scored pairs and write the record to RUN/calibrate/. Returns ``{"a", "b",
    "fitted_with", "pairs", "right", "ece_before", "ece_after", "gold", "run", "time"}``."""
    conf, gold = run.conf, run.gold
    labels = [k in gold.untyped for k in conf]
    if all(labels) or not any(labels):
        raise GraphmertError(f"{run.run_dir}: a map needs right and wrong pairs to fit on; graphmert's "
                             f"{len(labels)} scored pairs on the gold's documents hold {sum(labels)} right ones")
    a, b = (round(x, 3) for x in fit_platt([c for c, _ in conf.values()], labels))   # as the config gives them
    mapped = {k: (platt(c, a, b), types) for k, (c, types) in conf.items()}
    record = {"a": a, "b": b, "fitted_with": calibration_settings(run.cfg),
              "pairs": len(conf), "right": sum(labels),
              "ece_before": reliability(conf, gold)["ece"], "ece_after": reliability(mapped, gold)["ece"],
              "gold": run.files, "run": str(run.run_dir),
              "time": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    atomic_write_json(run.run_dir / "calibrate" / CALIBRATION_FILE, record)
    return record


def config_lines(record: dict) -> str:
    """The ``extract`` section lines that set the fitted map and what it was fitted with."""
    fitted = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in record["fitted_with"].items())
    return (f"extract:\n  # `graphmert calibrate` on {record['run']}: {record['pairs']} pairs, expected "
            f"calibration error {record['ece_before']:.3f} -> {record['ece_after']:.3f}\n"
            f"  calibration: [{record['a']}, {record['b']}]\n  calibration_fitted_with:\n{fitted}")
