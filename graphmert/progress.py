"""Progress bars (tqdm) for long work, as a terminal and as a log file want them.

On a terminal a bar redraws in place several times a second. Written to a file or a pipe
(``graphmert run … > run.log 2>&1``, a batch job) every redraw is a new line, and a 30-minute
training would write megabytes of them: there a bar redraws at most every
:data:`LOG_INTERVAL_S` seconds, which still shows a stalled job.
"""

from __future__ import annotations

import sys
from typing import Any

LOG_INTERVAL_S = 30.0


def progress_bar(iterable: Any = None, *, quiet: bool = False, **kw: Any):
    """A tqdm bar over ``iterable`` (or with ``total=`` given), silenced by ``quiet``; redrawn at
    most every :data:`LOG_INTERVAL_S` s where stderr is not a terminal (``mininterval`` in ``kw``
    wins)."""
    from tqdm.auto import tqdm

    if not _terminal():
        kw.setdefault("mininterval", LOG_INTERVAL_S)
    return tqdm(iterable, disable=quiet, dynamic_ncols=True, **kw)


def _terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())
