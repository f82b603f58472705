"""pipelines/calibrate.py (``graphmert calibrate``'s fit on a run's scored pairs, and its refusals) and
experiments/calibrate.py (that fit reported on another run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from graphmert.config import ConfigError, load_config, save_config
from graphmert.errors import GraphmertError
from graphmert.eval.calibration import reliability
from graphmert.extract.calibrate import platt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import calibrate  # noqa: E402
from pipelines.calibrate import fit_run  # noqa: E402
from test_cross_chunk_run_experiment import GOLD, _t  # noqa: E402
from test_cross_chunk_run_experiment import _run as _bare_run  # noqa: E402


def _run(root: Path, name: str, triples: list, calibration: list | None = None) -> Path:
    """A finished run's extract output as the fit reads it: its triples, documents, config and manifest."""
    run = _bare_run(root, name, triples)
    save_config(load_config(None), run / "config.yaml")
    (run / "extract" / "manifest.json").write_text(json.dumps({"shards": ["triples-00000.parquet"],
                                                               "calibration": calibration}))
    return run


def test_the_map_is_fitted_on_the_runs_scored_pairs_and_reported_on_another(tmp_path):
    # three right pairs at high confidence, five wrong ones at lower: an overconfident run
    pairs = [("MESH:D001943", "NCBIGene:672", 0.95), ("MESH:D003638", "c.35delG", 0.9),
             ("MESH:D001943", "c.35delG", 0.9), ("MESH:D003638", "NCBIGene:672", 0.85),
             ("NCBIGene:672", "c.35delG", 0.6), ("MESH:D001943", "MESH:D003638", 0.5),
             ("unlinked:x", "NCBIGene:672", 0.95)]           # an unlinked end: a false pair
    run = _run(tmp_path, "fit", [_t(h, t, c) for h, t, c in pairs])
    gold = tmp_path / "gold.PubTator"
    gold.write_text(GOLD)
    scored = calibrate.scored_pairs(run, [gold])
    conf, g = scored.conf, scored.gold
    assert len(conf) == 7 and sum(k in g.untyped for k in conf) == 2
    # another run, nothing fitted on it: one right pair at 0.99, two wrong ones at 0.3
    other = _run(tmp_path, "other", [_t("MESH:D001943", "NCBIGene:672", 0.99),
                                     _t("NCBIGene:672", "c.35delG", 0.3), _t("MESH:D001943", "MESH:D003638", 0.3)])
    out = tmp_path / "rows.json"
    calibrate.main(["--run-dir", str(run), "--gold", str(gold), "--apply-to", str(other),
                    "--apply-gold", str(gold), "--out", str(out)])
    data = json.loads(out.read_text())
    a, b = data["a"], data["b"]
    mean_after = sum(platt(c, a, b) for c, _ in conf.values()) / len(conf)
    assert mean_after == pytest.approx(2 / 7, abs=0.02)              # the fit matches the base rate
    row, applied = data["rows"]
    assert row["run"] == str(run) and row["pairs"] == 7 and row["ECE after"] < row["ECE before"]
    # the second row is the other run's pairs under the first run's map, computed here by hand
    other_scored = calibrate.scored_pairs(other, [gold])
    theirs, g2 = other_scored.conf, other_scored.gold
    mapped = {k: (platt(c, a, b), types) for k, (c, types) in theirs.items()}
    assert applied["run"] == str(other) and applied["pairs"] == 3 and applied["precision"] == round(1 / 3, 3)
    assert applied["ECE before"] == round(reliability(theirs, g2)["ece"], 3)
    assert applied["ECE after"] == round(reliability(mapped, g2)["ece"], 3) != applied["ECE before"]
    assert applied["≥ 0.5 after: pairs"] == sum(c >= 0.5 for c, _ in mapped.values())


def test_apply_to_needs_its_gold(tmp_path):
    with pytest.raises(SystemExit, match="--apply-to needs --apply-gold"):
        calibrate.main(["--run-dir", str(tmp_path), "--gold", str(tmp_path / "g"), "--apply-to", str(tmp_path)])


def test_a_run_whose_confidences_are_already_mapped_is_refused(tmp_path):
    run = _run(tmp_path, "mapped", [_t("MESH:D001943", "NCBIGene:672", 0.9)], calibration=[0.4, -1.0])
    with pytest.raises(ConfigError, match=r"already mapped by extract.calibration \[0.4, -1.0\]"):
        calibrate.main(["--run-dir", str(run), "--gold", str(tmp_path / "gold.PubTator")])


def test_a_fit_needs_gold_and_both_right_and_wrong_pairs(tmp_path):
    gold = tmp_path / "gold.PubTator"
    gold.write_text(GOLD)
    wrong = _run(tmp_path, "wrong", [_t("MESH:D001943", "MESH:D003638", 0.9), _t("NCBIGene:672", "c.35delG", 0.4)])
    with pytest.raises(GraphmertError, match=r"a map needs right and wrong pairs to fit on; graphmert's 2 scored "
                                             r"pairs on the gold's documents hold 0 right ones"):
        fit_run(wrong, [gold])
    with pytest.raises(ConfigError, match=r"no gold to fit on; pass --gold FILE or set evaluate.gold"):
        fit_run(wrong)                                   # the run's config names no gold either
    with pytest.raises(ConfigError, match=r"extract/manifest.json: missing; run `graphmert extract`"):
        fit_run(tmp_path / "nothing", [gold])
    assert not (wrong / "calibrate").exists()            # nothing written by a refused fit
