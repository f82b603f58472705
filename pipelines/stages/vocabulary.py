"""A scorer's vocabulary over a run's chunk corpus, counted on the workers.

A TF-IDF vocabulary needs each term's document frequency over every chunk. One task per chunk shard
counts its own (:meth:`~graphmert.kg.scoring.TfidfScorer.document_frequencies`); the driver sums
them, one shard's counts at a time, and fits (:meth:`~graphmert.kg.scoring.TfidfScorer.fit_frequencies`).
That is the same vocabulary and IDF as one pass over every text, with no text in the driver. The
graphs stage fits the injection scorer (``kg.scorer``) so, and the extract stage the β filter's
(``extract.similarity_scorer``).

A chunk's text for a scorer is its text; a chunk without one (built from token ids) is its decoded
root tokens for the graphs stage, as :func:`graphmert.graph.builder.build_graphs` reads it, and a
space for the extract stage, as the extractor reads it: ``tok`` None.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq

from graphmert.corpus.chunk import SCHEMA as CHUNK_SCHEMA
from graphmert.io import read_json
from graphmert.kg.graph import KGError
from graphmert.kg.scoring import SCORERS
from pipelines.stage import StageContext

__all__ = ["chunk_columns", "scorer_text", "frequency_shard", "fitted_scorer"]


def chunk_columns(path: str, columns: list[str]):
    """Some columns of a chunk shard as an Arrow table: reading whole chunks (their offsets and
    mentions) costs about 1 ms per chunk, these columns a small fraction of that."""
    missing = [c for c in columns if c not in CHUNK_SCHEMA.names]
    if missing:                                        # pragma: no cover - guards a schema change
        raise KGError(f"chunk shards have no columns {missing}; update pipelines/stages/vocabulary.py")
    return pq.read_table(path, columns=columns)


def scorer_text(text: str | None, input_ids: list[int], tok) -> str:
    """A chunk's text for a scorer: its text, else its decoded root tokens (else " " when ``tok`` is
    None)."""
    if text:
        return text
    return tok.decode(input_ids[1:-1]) if tok is not None else " "


def _scorer_texts(chunk_path: str, tok) -> Iterator[str]:
    cols = chunk_columns(chunk_path, ["text", "input_ids"]).to_pydict()
    for text, ids in zip(cols["text"], cols["input_ids"]):
        yield scorer_text(text, ids, tok)


def frequency_shard(chunk_path: str, shared: tuple[Any, Any], path: Path) -> dict:
    """Shard task: a scorer's document frequencies over one chunk shard's texts (``shared``: the
    unfitted scorer and the tokenizer or None) → JSON ``{"n": texts, "df": {term: count}}``."""
    scorer, tok = shared
    df, n = scorer.document_frequencies(_scorer_texts(chunk_path, tok))
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"n": n, "df": dict(sorted(df.items()))}, f, ensure_ascii=False)
    return {"texts": n, "terms": len(df)}


def fitted_scorer(ctx: StageContext, name: str, chunk_paths: list[str], tok=None) -> Any:
    """The scorer ``name`` of :data:`~graphmert.kg.scoring.SCORERS` with its vocabulary and IDF over
    the chunks of ``chunk_paths`` (module docstring): a ``vocabulary`` shard map of ``ctx``."""
    make = SCORERS.get(name)
    counted = ctx.map_shards(frequency_shard, chunk_paths, name="vocabulary", shared=(make(), tok),
                             suffix=".json")
    df: Counter = Counter()
    n = 0
    for s in counted:
        part = read_json(s.path)
        df.update(part["df"])
        n += part["n"]
    return make().fit_frequencies(df, n)
