"""Progress bars redraw in place on a terminal and rarely in a log file (graphmert/progress.py)."""

from __future__ import annotations

import io
import sys

from graphmert.progress import LOG_INTERVAL_S, progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_written_to_a_file_redraws_at_most_every_log_interval(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = progress_bar(range(3), file=sys.stderr)
    assert bar.mininterval == LOG_INTERVAL_S
    assert list(bar) == [0, 1, 2]
    assert progress_bar(range(3), mininterval=1.0, file=sys.stderr).mininterval == 1.0   # the caller's wins


def test_a_bar_on_a_terminal_keeps_tqdms_own_rate(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    bar = progress_bar(range(3), file=sys.stderr)
    assert bar.mininterval < LOG_INTERVAL_S
    assert list(bar) == [0, 1, 2]


def test_quiet_writes_nothing(monkeypatch):
    out = _Terminal()
    monkeypatch.setattr(sys, "stderr", out)
    assert list(progress_bar(range(3), quiet=True, file=out, desc="x")) == [0, 1, 2]
    assert out.getvalue() == ""
    list(progress_bar(range(3), file=out, desc="x"))
    assert "x" in out.getvalue()
