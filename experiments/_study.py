"""Shared helpers for the quality studies in experiments/: where the shared data is, the held-out
BioRED-train split the entity studies choose their settings on, and table/JSON output (results go
to experiments/results/, which git ignores). The speed benchmarks' own helpers are benchmarks/_common.py."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"


def _benchmark_helpers():
    """benchmarks/_common.py, loaded by its path under a name of its own: one copy of the table and
    JSON helpers for both folders, and no clash with the ``_common`` a benchmark puts on sys.path."""
    spec = importlib.util.spec_from_file_location("graphmert_benchmark_common", ROOT / "benchmarks" / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_helpers = _benchmark_helpers()
print_table = _helpers.print_table
SHARED, require_shared = _helpers.SHARED, _helpers.require_shared


def held_out(doc_id: str, percent: int = 20) -> bool:
    """The deterministic held-out split of BioRED-train documents (``sha256(doc id) mod 100 < 20``)
    on which the entity linker and recognizer studies choose their settings: 82 documents."""
    return document_fold(doc_id, 100) < percent


def document_fold(doc_id: str, k: int) -> int:
    """The cross-fitting fold (0 … k−1) of a document: ``sha256(doc id) mod k``, so a document keeps
    its fold whatever else the study reads."""
    return int(hashlib.sha256(doc_id.encode("utf-8")).hexdigest(), 16) % k


def held_out_biored_train(doc) -> bool:
    """Whether ``doc`` is one of the :func:`held_out` BioRED-train documents the entity studies
    choose their settings on."""
    return doc.metadata.get("source") == "biored_train" and held_out(doc.id)


def recognizer_documents(sources: list[str]) -> dict[str, list]:
    """What the recognizer studies train and score on, from the shared corpus: ``train`` (the
    annotated documents of ``sources`` less the :func:`held_out` BioRED-train ones), ``held`` (those),
    ``annotated`` (every annotated document, for ``ner.part_sources``: :func:`lent_documents`),
    ``texts`` (every document's text but the held-out ones': what ``ner.vectors`` learns from) and
    ``ids`` (every document's id)."""
    from graphmert.corpus.readers import read_corpus
    from graphmert.ner.corpus import annotated_documents

    corpus = list(read_corpus([require_shared("biomed_abstracts_corpus", "abstracts.jsonl.gz")]))
    annotated = list(annotated_documents(corpus))
    docs = list(annotated_documents(annotated, sources))
    held = [d for d in docs if held_out_biored_train(d)]
    ids = {d.id for d in held}
    return {"train": [d for d in docs if d.id not in ids], "held": held, "annotated": annotated,
            "texts": [d.text for d in corpus if d.id not in ids], "ids": {d.id for d in corpus}}


def lent_documents(split: dict[str, list], part_sources: dict) -> dict[str, list]:
    """``ner.part_sources``' documents (category → documents) for a :func:`recognizer_documents` split:
    never one it trains or scores on."""
    from graphmert.ner.corpus import part_documents

    return part_documents(split["annotated"], part_sources, exclude={d.id for d in split["train"] + split["held"]})




def run_documents(run: Path) -> set[str]:
    """The ids of the documents a finished run extracted from (``RUN/extract/documents.txt``), or a
    clear exit when the run has not extracted."""
    from pipelines.stages import DOCUMENTS_FILE

    path = run / "extract" / DOCUMENTS_FILE
    if not path.is_file():
        raise SystemExit(f"{path}: missing; run `graphmert extract` on {run} first")
    return set(path.read_text().split())


def system_files(run: Path, name: str) -> list[Path]:
    """The triple files of a run's system ``name``: graphmert's shards, or a control's one file."""
    ex = run / "extract"
    return sorted(ex.glob("triples-*.parquet")) if name == "graphmert" else [ex / f"control-{name}.parquet"]


def write_json(name: str, rows: list[dict[str, Any]], out: Path | None = None, **meta: Any) -> Path:
    """The rows and ``meta`` as ``experiments/results/<name>.json`` (or ``out``), as the benchmarks write theirs."""
    return _helpers.write_json(name, rows, out or RESULTS / f"{name}.json", **meta)
