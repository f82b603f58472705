"""A document's place in every split by document: u(doc_id) ∈ [0, 1), the first 64 bits of
SHA-256(doc_id) / 2⁶⁴.

Training holds out the documents with u < ``train.eval_fraction``
(:func:`graphmert.train.data.split_by_document`), extraction reads those with u <
``extract.document_fraction`` (:func:`pipelines.holdout.in_slice`), and the recognizer's epoch
selection its own salted slice (:mod:`graphmert.ner.recognizer`). A split then depends on nothing but the ids, so every process,
run and machine cuts it alike. Its own module, importing nothing of the library, so that what reads
it (the recognizer) does not take the training package's code into its stage's fingerprint
(:mod:`pipelines.fingerprint`).
"""

from __future__ import annotations

import hashlib

__all__ = ["document_fraction"]


def document_fraction(doc_id: str) -> float:
    """u(doc_id) ∈ [0, 1): the first 64 bits of SHA-256(doc_id) / 2⁶⁴."""
    return int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big") / 2.0**64
