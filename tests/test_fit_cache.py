"""The extract stage's fit cache (pipelines/fit_cache.py): one fit per key, a new key for whatever a
fit reads and the same key for selection settings, an unreadable file fitted anew, old files pruned."""

from __future__ import annotations

import logging
import os

from graphmert.config import load_config
from pipelines import fit_cache
from pipelines.fit_cache import CACHE_ROOT, FIT_OPTIONS, KEEP, SELECTION_ONLY, cached_fit, fit_key


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return {"fitted": self.calls}


def test_a_fit_is_made_once_per_key_and_read_back(tmp_path):
    fit = Counting()
    assert cached_fit(tmp_path, "typer", {"a": 1}, fit) == {"fitted": 1}
    assert cached_fit(tmp_path, "typer", {"a": 1}, fit) == {"fitted": 1} and fit.calls == 1
    assert cached_fit(tmp_path, "typer", {"a": 2}, fit) == {"fitted": 2}
    assert cached_fit(tmp_path, "pair_heads", {"a": 1}, fit) == {"fitted": 3}     # names apart
    assert len(list((tmp_path / CACHE_ROOT).glob("*.pkl"))) == 3
    assert not list((tmp_path / CACHE_ROOT).glob(".*tmp"))                       # nothing half-written


def test_an_unreadable_file_is_logged_and_fitted_anew(tmp_path, caplog):
    fit = Counting()
    cached_fit(tmp_path, "typer", {"a": 1}, fit)
    (path,) = (tmp_path / CACHE_ROOT).glob("typer-*.pkl")
    path.write_bytes(path.read_bytes()[:5])                                       # truncated
    with caplog.at_level(logging.WARNING, logger="graphmert.pipeline"):
        assert cached_fit(tmp_path, "typer", {"a": 1}, fit) == {"fitted": 2}
    assert str(path) in caplog.text and "fitting typer anew" in caplog.text
    assert cached_fit(tmp_path, "typer", {"a": 1}, fit) == {"fitted": 2}           # rewritten whole


def test_each_name_keeps_its_most_recent_files(tmp_path):
    fit = Counting()
    for i in range(KEEP + 2):
        cached_fit(tmp_path, "typer", {"a": i}, fit)
        for p in (tmp_path / CACHE_ROOT).glob("*.pkl"):                           # distinct mtimes
            os.utime(p, (p.stat().st_mtime - 1, p.stat().st_mtime - 1))
    cached_fit(tmp_path, "other", {"a": 0}, fit)
    assert len(list((tmp_path / CACHE_ROOT).glob("typer-*.pkl"))) == KEEP
    calls = fit.calls
    cached_fit(tmp_path, "typer", {"a": KEEP + 1}, fit)                           # the newest stays
    cached_fit(tmp_path, "typer", {"a": 0}, fit)                                  # the oldest went
    assert fit.calls == calls + 1


def test_the_key_follows_what_a_fit_reads_and_not_the_selection(tmp_path, monkeypatch):
    train = tmp_path / "train.PubTator"
    train.write_text("1|t|A title\n\n")
    base = ["extract.relation_choice=typer", f"extract.typer_files=[{train}]"]
    def key(*o, name="lexical_document", held=frozenset({"1"})):
        return fit_key(load_config(None, [*base, *o]), name, held, {"r": 1})

    same = key()
    for selection in ("extract.min_confidence=0.3", "extract.tails_per_query=3", "extract.lexical_weight=0.5",
                      "extract.controls=[salience]"):
        assert key(selection) == same, selection
    for read in ("extract.typer_window=5", "extract.stack_c=1", "extract.tail_scope=chunk",
                 "corpus.chunk_overlap=8", "graph.num_roots=64"):
        assert key(read) != same, read
    # a fit's own settings reach that fit's key alone
    assert key("extract.stack_c=1", name="typer") == key(name="typer")
    assert key("extract.typer_c=3", name="pair_heads") == key(name="pair_heads")
    assert key("extract.typer_shared=true", name="typer") != key(name="typer")
    assert key("extract.typer_shared=true") == same          # only the type regression reads it
    assert key("extract.typer_roles=true", name="typer") != key(name="typer")
    assert key("extract.typer_roles=true") == same
    assert key("extract.related_head_c=1", name="pair_heads") != key(name="pair_heads")
    assert key(held=frozenset({"2"})) != same
    train.write_text("1|t|Another title\n\n")
    assert key() != same
    monkeypatch.setattr(fit_cache.fingerprint, "module_fingerprint", lambda module: "other code")
    assert key()["code"] == "other code"
    fields = load_config(None, []).extract.__dataclass_fields__
    assert all(k in fields for k in (*SELECTION_ONLY, *FIT_OPTIONS))
