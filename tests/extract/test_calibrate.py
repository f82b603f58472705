"""graphmert.extract.calibrate: Platt scaling of reported confidences, its fit, and the config check."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from graphmert.config import ConfigError, load_config
from graphmert.config.checks import calibration_settings
from graphmert.config.extract import CALIBRATION_SETTINGS
from graphmert.extract.calibrate import calibrated, fit_platt, logit, platt
from graphmert.extract.triples import Evidence, Triple


def _triple(confidence: float, *events: float) -> Triple:
    return Triple(head_id="a", head_name="a", head_category="biolink:Gene", relation="r", tail_id="b",
                  tail_name="b", tail_category="biolink:Disease", tail_source="mention",
                  confidence=confidence, confidence_mean=sum(events) / len(events), documents=["d"],
                  evidence=[Evidence(doc_id="d", chunk_id="d#0", sentence="s", sentence_start=0, head_start=0,
                                     head_end=1, confidence=e) for e in events])


def test_platt_is_the_sigmoid_of_the_scaled_logit_and_keeps_the_order():
    cs = [0.0, 1e-9, 0.1, 0.4, 0.5, 0.77, 0.999, 1.0]
    assert [platt(c, 1.0, 0.0) for c in cs] == pytest.approx([min(max(c, 1e-6), 1 - 1e-6) for c in cs])
    for a, b in ((0.4, -1.1), (2.0, 0.5)):
        mapped = [platt(c, a, b) for c in cs]
        assert mapped == sorted(mapped)                                   # monotone for a > 0
        assert mapped[3] == pytest.approx(1 / (1 + math.exp(-(a * math.log(0.4 / 0.6) + b))))
    assert platt(0.5, 1.0, -800.0) == pytest.approx(0.0) and platt(0.5, 1.0, 800.0) == 1.0   # no overflow


def test_calibrated_maps_the_triples_evidence_and_mean_and_nothing_else():
    t = _triple(0.9, 0.9, 0.6)
    c = calibrated(t, 0.5, -1.0)
    assert c.confidence == pytest.approx(platt(0.9, 0.5, -1.0))
    assert c.confidence_mean == pytest.approx(platt(0.75, 0.5, -1.0))
    assert [e.confidence for e in c.evidence] == pytest.approx([platt(0.9, 0.5, -1.0), platt(0.6, 0.5, -1.0)])
    assert (c.head_id, c.tail_id, c.relation, c.documents) == (t.head_id, t.tail_id, t.relation, t.documents)
    assert [e.confidence for e in t.evidence] == [0.9, 0.6]                 # the input is untouched


def test_the_fit_recovers_the_map_that_drew_the_labels():
    """Labels drawn from σ(2·logit(c) − 1): the fit finds (2, −1)."""
    rng = np.random.default_rng(0)
    c = rng.uniform(0.02, 0.98, 20000)
    y = rng.uniform(size=c.size) < np.array([platt(x, 2.0, -1.0) for x in c])
    a, b = fit_platt(c.tolist(), y.tolist())
    assert a == pytest.approx(2.0, abs=0.1) and b == pytest.approx(-1.0, abs=0.1)
    assert logit(0.5) == 0.0


def test_the_fit_needs_right_and_wrong_pairs():
    with pytest.raises(ValueError, match="both right and wrong pairs; got 2 of 2 right"):
        fit_platt([0.2, 0.9], [True, True])
    with pytest.raises(ValueError, match="as many labels as confidences"):
        fit_platt([0.2, 0.9], [True])


@pytest.mark.parametrize("value", ["[0.5]", "[0.0,1.0]", "[-1.0,0.5]", "[1.0,2.0,3.0]"])
def test_the_config_takes_no_map_or_a_monotone_one(value):
    with pytest.raises(ConfigError, match=r"extract.calibration: .* must be \[\] or \[a, b\] with a > 0"):
        load_config(None, [f"extract.calibration={value}"])
    assert load_config(None, ["extract.calibration=[0.4,-1.1]"]).extract.calibration == [0.4, -1.1]
    assert load_config(None).extract.calibration == []


def _fitted_with(overrides: list[str]) -> dict:
    """``extract.calibration_fitted_with`` as `graphmert calibrate` records it for the config of ``overrides``."""
    return calibration_settings(load_config(None, overrides))


def _with_map(tmp_path, fitted: dict, overrides: list[str] = ()):
    """A YAML file with a map [0.5, -1.0] recorded as fitted with ``fitted``, and those settings
    (the values of ``fitted``'s known keys), then ``overrides``."""
    body: dict = {"extract": {"calibration": [0.5, -1.0], "calibration_fitted_with": fitted}}
    for key, value in fitted.items():
        section, name = key.split(".")
        if key in CALIBRATION_SETTINGS:
            body.setdefault(section, {})[name] = value
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(body))
    return load_config(path, list(overrides))


def test_a_map_loads_only_with_the_settings_it_was_fitted_with(tmp_path):
    fitted = _fitted_with(["extract.min_confidence=0.3"])
    assert set(fitted) == set(CALIBRATION_SETTINGS) and fitted["extract.min_confidence"] == 0.3
    cfg = _with_map(tmp_path, fitted)
    assert cfg.extract.calibration == [0.5, -1.0] and cfg.extract.calibration_fitted_with == fitted
    # a setting that makes the confidences differs: the map, and what it was fitted with, are named
    with pytest.raises(ConfigError, match=r"extract.calibration: the map \[0.5, -1.0\] was fitted with "
                                          r"extract.min_confidence=0.3 \(this config: 0.0\), so it would "
                                          r"misstate how often a triple holds; refit .*graphmert calibrate"):
        _with_map(tmp_path, fitted, ["extract.min_confidence=0.0"])
    with pytest.raises(ConfigError, match=r"train.ensemble_size=1 \(this config: 2\), extract.tails_per_query=1 "
                                          r"\(this config: 6\)"):
        _with_map(tmp_path, fitted, ["train.ensemble_size=2", "model.leaf_query=fixed", "extract.tails_per_query=6"])
    # turning the map off lifts the check; settings that make no confidence never trip it
    assert _with_map(tmp_path, fitted, ["extract.calibration=[]", "extract.min_confidence=0.0"]).extract.calibration == []
    assert _with_map(tmp_path, fitted, ["train.seed=7", "extract.document_fraction=0.2"]).train.seed == 7


def test_a_partial_or_unknown_record_is_an_error_and_none_is_a_map_set_by_hand(tmp_path):
    fitted = _fitted_with([])
    partial = {k: v for k, v in fitted.items() if k != "extract.evidence"}
    with pytest.raises(ConfigError, match=r"calibration_fitted_with: must give the value of every calibration "
                                          r"setting .*; missing \['extract.evidence'\]"):
        _with_map(tmp_path, partial)
    with pytest.raises(ConfigError, match=r"not calibration settings: \['extract.beta'\]"):
        _with_map(tmp_path, {**fitted, "extract.beta": 0.67})
    assert _with_map(tmp_path, {}, ["extract.min_confidence=0.9"]).extract.calibration == [0.5, -1.0]
