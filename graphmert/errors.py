"""The one base class of GraphMERT's expected errors.

An *expected* error is a failure caused by the user's input or configuration: a bad config key, a
malformed corpus record, a seed KG that does not fit the tokenizer, an unreachable scheduler. Its
message says what to fix, so the ``graphmert`` command line prints it on one line (exit 2 for config
and usage errors, 1 otherwise). Any other exception is a bug, and the command line keeps its
traceback.

Every expected error class of the library and the pipeline derives from :class:`GraphmertError`
(most also from the built-in class they always had, e.g. :class:`~graphmert.config.ConfigError`
is still a ``ValueError``), so callers can catch them all at once. This module imports nothing.
"""

from __future__ import annotations

__all__ = ["GraphmertError"]


class GraphmertError(Exception):
    """An expected failure caused by the user's input or config; the CLI prints its message on one
    line."""
