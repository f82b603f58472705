"""The one base class of GraphMERT's expected errors.

An *expected* error is a failure caused by the user's input or configuration: a bad config key, a
malformed corpus record, a seed KG that does not fit the tokenizer, an unreachable scheduler. Its
message says what to fix, so the ``graphmert`` command line prints it on one line (exit 2 for config
and usage errors, 1 otherwise). Any other exception is a bug, and the command line keeps its
traceback.

Every expected error class of the library and the pipeline derives from :class:`GraphmertError`
(most also from the built-in class they always had, e.g. :class:`~graphmert.config.ConfigError`
is still a ``ValueError``), so callers can catch them all at once. This module imports nothing of
the project.

:func:`noting` names the record a loop was at when anything went wrong in it (a PEP 678 note on the
exception, which goes on unchanged); the command line prints the notes after the message, and a
shard task's error carries them from a worker (``pipelines.stage.ShardTaskError``).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = ["GraphmertError", "noting", "described"]


class GraphmertError(Exception):
    """An expected failure caused by the user's input or config; the CLI prints its message on one
    line."""


@contextlib.contextmanager
def noting(note: str) -> Iterator[None]:
    """Any exception raised in the block gets ``note`` (e.g. ``"document 2503176"``) and goes on."""
    try:
        yield
    except Exception as e:
        e.add_note(note)
        raise


def described(e: BaseException) -> str:
    """The exception's message, then its notes in brackets: the record it was at (:func:`noting`)."""
    notes = getattr(e, "__notes__", None)
    return f"{e} ({'; '.join(notes)})" if notes else str(e)
