"""Which of a chunk's entities a training question may choose among (``kg.candidate_scope``).

Extraction keeps a head's mention tails within a scope (:mod:`graphmert.extract.scope`,
``extract.tail_scope``): with sentence scope, a question chooses only among the entities of the
head's sentence. A training question of the candidate head (:mod:`graphmert.graph.distant`) chooses
among its chunk's entities unless ``kg.candidate_scope`` narrows it the same way, so that training
asks what extraction asks: the softmax then learns to answer "none" when the head's sentence holds
none of its tails, instead of learning to point outside it. Per (head root h, candidate mention m)
of a chunk, with S(i) the document sentence of root i (``Chunk.sentence_ids``, as numbered by
:func:`sentence_keys`)::

    sentence   S(first root of m) = S(h)
    title      that, or m ends within the document's title (Chunk.title_chars)
    chunk      always (the chunk is all a graph holds, so ``document`` means the same)

A candidate is in scope when one of its mentions is. Extraction's test is on character ranges of the
document; this one is on roots, which is what a chunk without its document can tell: a mention that
starts in the head's sentence and runs past its end counts as inside here and outside there (rare:
mentions do not cross sentence boundaries in annotated corpora). A chunk whose document records no
sentences is one sentence, as extraction's :func:`~graphmert.extract.heads.head_sentence` falls back
to the chunk's text.

The scope may depend on the pair's categories, as ``extract.tail_scope_by_category``: ``"CatA|CatB"``
keys (:func:`graphmert.config.category_pair`) map an unordered pair of Biolink categories to a scope.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from graphmert.config import category_pair
from graphmert.corpus.chunk import Chunk
from graphmert.kg.graph import KGError
from graphmert.kg.schema import RelationSchema

__all__ = ["ScopeNames", "in_scope", "sentence_keys"]


class ScopeNames:
    """The scope name of each unordered (head category, tail category) pair.

    Args:
        default: the scope of every pair the mapping does not name.
        by_category: ``"CatA|CatB"`` → scope name.
        key: the config key the mapping came from, for error messages.
    """

    def __init__(self, default: str, by_category: Mapping[str, str] | None = None,
                 key: str = "extract.tail_scope_by_category") -> None:
        # names and keys are validated with the config (graphmert.config.checks._check_scopes)
        self.default = default
        self.key = key
        self.by_pair = {category_pair(k, key): v for k, v in (by_category or {}).items()}

    def check(self, schema: RelationSchema) -> "ScopeNames":
        """Raise KGError when a category pair names a category the relation schema does not know (a
        misspelt key would silently match nothing)."""
        categories = schema.categories()
        unknown = sorted({c for pair in self.by_pair for c in pair} - categories)
        if unknown:
            raise KGError(f"{self.key}: {unknown} are not categories of the relation schema (it has "
                          f"{sorted(categories)})")
        return self

    def name(self, head_category: str, tail_category: str) -> str:
        """The scope name of a (head, tail) category pair (order does not matter)."""
        return self.by_pair.get(frozenset((head_category, tail_category)), self.default)

    @property
    def everywhere(self) -> bool:
        """Whether every pair's scope is the whole chunk (nothing to filter on a chunk)."""
        return all(n in ("chunk", "document") for n in (self.default, *self.by_pair.values()))


def sentence_keys(chunk: Chunk) -> np.ndarray:
    """[n_roots] int64: the sentence of each root as a number that grows by one at every change of
    (document, sentence) along the roots, so equal numbers mean the same sentence and differences
    count the sentence boundaries between two roots; all 0 (one sentence) when the chunk has no
    sentence ids. ``[CLS]`` and ``[SEP]`` take their neighbour's number."""
    n = chunk.num_roots
    if not chunk.sentence_ids:
        return np.zeros(n, dtype=np.int64)
    docs = chunk.doc_ids or [""] * n
    out = np.zeros(n, dtype=np.int64)
    key, last = 0, None
    for i in range(1, n - 1):
        here = (docs[i], chunk.sentence_ids[i])
        if last is not None and here != last:
            key += 1
        out[i], last = key, here
    out[n - 1] = key
    return out


def in_scope(name: str, chunk: Chunk, keys: np.ndarray, head_root: int, mention: tuple[int, int]) -> bool:
    """Whether the mention at roots [a, b) lies within scope ``name`` of the head at ``head_root``
    (module docstring; ``keys``: :func:`sentence_keys` of the chunk)."""
    if name in ("chunk", "document"):
        return True
    a, b = mention
    if name == "title" and chunk.title_chars and 0 <= chunk.offsets[b - 1][1] <= chunk.title_chars:
        return True
    return bool(keys[a] == keys[head_root])
