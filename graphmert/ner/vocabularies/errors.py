"""The error a bad vocabulary, cross-reference or linker file raises (:mod:`graphmert.ner.vocabularies`)."""

from __future__ import annotations

from graphmert.errors import GraphmertError


class VocabularyError(GraphmertError, ValueError):
    """A bad entity-linker file, vocabulary or cross-reference table; the message names the file."""
