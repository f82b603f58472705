"""What the ner and link stages share: the annotated documents of ``ner.paths`` both learn from, less
every document the run extracts from or is scored on, and the config keys and files that choose them.

Both stages depend on which of those documents are held out (:func:`held_ner_documents`,
:attr:`pipelines.stage.Stage.derived`), not on ``extract.paths`` and ``evaluate.gold`` themselves:
a run copied to extract from a user's own abstracts, which no training file holds, keeps its
recognizer and linker, and a file that shares documents with ``ner.paths`` retrains them.

The ner stage (:mod:`pipelines.stages.ner`) trains the recognizer on them, the link stage
(:mod:`pipelines.stages.link`) builds the linker from their gold ids. Neither stage imports the other,
so a change to the linker's code or options (:data:`LINKER_KEYS`) rebuilds the linker alone, and a
change to the recognizer's retrains the recognizer alone (their code fingerprints,
:mod:`pipelines.fingerprint`, share only this module and what it imports).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

from graphmert.config import Config, NERConfig
from graphmert.corpus.document import Document
from graphmert.corpus.readers import read_corpus
from graphmert.ner.corpus import annotated_documents, part_documents
from pipelines.holdout import document_ids, held_out_documents, relation_document_ids

__all__ = ["DOCUMENT_KEYS", "LINKER_KEYS", "RECOGNIZER_KEYS", "SEED_KG_KEYS", "NERInputs",
           "ner_inputs", "ner_keys", "read_ner_documents", "training_documents", "vector_texts",
           "seed_kg_files", "held_ner_documents", "held_link_documents", "OFF"]

#: what the ner and link stages write, and the console shows, when ``ner.paths`` is empty
OFF = {"enabled": False, "off": "ner.paths is empty (documents keep their own mentions)"}

#: the config keys that decide :func:`ner_inputs`: the documents read and those kept (those held out:
#: :func:`held_ner_documents`)
DOCUMENT_KEYS = ("ner.paths", "ner.format", "ner.sources", "corpus.skip_bad_records")
#: the ``ner`` keys only the linker reads: the link stage depends on them, the ner stage does not.
#: A ``ner`` key in neither tuple counts for both stages (:func:`ner_keys`): a new option of
#: :class:`graphmert.config.NERConfig` reruns both until it is placed here or below. With
#: ``ner.dictionary_flags`` the ner stage reads ``ner.vocabularies`` too: their files are then among
#: its source files (:mod:`pipelines.stages.ner`), so a vocabulary added or changed retrains it.
LINKER_KEYS = ("ner.xref_tables", "ner.name_tables", "ner.vocabularies", "ner.fuzzy_threshold")
#: the ``ner`` keys only the recognizer reads: the ner stage depends on them, the link stage does not
RECOGNIZER_KEYS = ("ner.categories", "ner.separate_categories", "ner.part_sources", "ner.embed", "ner.encoder",
                   "ner.width", "ner.depth", "ner.window_size", "ner.embed_rows", "ner.vectors", "ner.dictionary_flags",
                   "ner.epochs", "ner.max_minutes", "ner.patience", "ner.batch_size", "ner.dropout",
                   "ner.average_weights", "ner.selection_fraction", "ner.seed")
#: the ``kg`` keys :func:`graphmert.kg.loaders.load_kg` reads (the seed KG the linker indexes)
SEED_KG_KEYS = ("kg.path", "kg.nodes", "kg.edges", "kg.format", "kg.include_isa", "kg.prefix_map",
                "kg.relation_files", "kg.relation_files_format", "kg.skip_bad_records")


def ner_keys(exclude: tuple[str, ...]) -> tuple[str, ...]:
    """Every ``ner`` key (``"ner.paths"``, …: a field of :class:`graphmert.config.NERConfig`) but
    those of ``exclude``, in the fields' order: a stage's config keys of the ``ner`` section."""
    return tuple(k for k in (f"ner.{f.name}" for f in fields(NERConfig)) if k not in exclude)


def read_ner_documents(cfg: Config) -> list[Document]:
    """Every document of ``ner.paths``, annotated or not, read once for :func:`training_documents`
    and :func:`vector_texts`."""
    return list(read_corpus(cfg.ner.paths, format=cfg.ner.format, skip_bad_records=cfg.corpus.skip_bad_records))


def training_documents(cfg: Config, held: frozenset[str], read: Sequence[Document] | None = None
                       ) -> tuple[list[Document], dict[str, list[Document]], dict]:
    """The annotated documents of ``ner.paths`` (``read``: :func:`read_ner_documents`, read here when
    not given) the recognizer and the linker may learn from: those with mentions from
    ``ner.sources``, less ``held`` (every document the run extracts from or is scored on:
    :func:`pipelines.holdout.held_out_documents`); the documents ``ner.part_sources`` lends one
    recognizer model (category → documents, less ``held`` and those already kept); counts."""
    read = read_ner_documents(cfg) if read is None else read
    every = list(annotated_documents(read))
    annotated = list(annotated_documents(every, cfg.ner.sources))
    kept = [d for d in annotated if d.id not in held]
    extra = part_documents(every, cfg.ner.part_sources, exclude=held | {d.id for d in kept})
    counts = {"read": len(read), "annotated": len(annotated), "held_out": len(annotated) - len(kept)}
    if extra:
        counts["part_sources"] = {c: len(v) for c, v in extra.items()}
    return kept, extra, counts


def vector_texts(read: Sequence[Document], held: frozenset[str]) -> list[str]:
    """The texts ``ner.vectors`` learns from: every document of ``ner.paths`` (``read``:
    :func:`read_ner_documents`), annotated or not, less ``held`` (never a document the run extracts
    from or is scored on)."""
    return [d.text for d in read if d.id not in held]


@dataclass(frozen=True)
class NERInputs:
    """What :func:`ner_inputs` reads: the held-out ids, every document of ``ner.paths``, the training
    documents and those ``ner.part_sources`` lends one model (:func:`training_documents`), counts."""

    held: frozenset[str]
    read: list[Document]
    docs: list[Document]
    extra: dict[str, list[Document]]
    counts: dict


def ner_inputs(cfg: Config) -> NERInputs:
    """The documents the ner and link stages learn from: ``ner.paths`` read with ``ner.format``,
    kept by ``ner.sources``, less :func:`pipelines.holdout.held_out_documents`."""
    held = held_out_documents(cfg)
    read = read_ner_documents(cfg)
    docs, extra, counts = training_documents(cfg, held, read)
    return NERInputs(held=held, read=read, docs=docs, extra=extra, counts=counts)


def seed_kg_files(cfg: Config) -> list[Path]:
    """The files :func:`graphmert.kg.loaders.load_kg` reads (``kg.nodes``, ``kg.edges``,
    ``kg.relation_files``, the folder ``kg.path``: :func:`graphmert.io.input_hashes` hashes each of
    its files); which relations it holds out is :func:`held_link_documents`."""
    return [Path(p) for p in (*([cfg.kg.path] if cfg.kg.path else []), *cfg.kg.nodes, *cfg.kg.edges,
                              *cfg.kg.relation_files)]


def held_ner_documents(cfg: Config) -> list[str]:
    """The documents of ``ner.paths`` that :func:`pipelines.holdout.held_out_documents` holds out,
    sorted: all the ner stage depends on of ``extract.paths``, ``evaluate.gold`` and their slice
    (:attr:`pipelines.stage.Stage.derived`). Reads the files' document ids (cached per process)."""
    if not cfg.ner.paths:
        return []
    ids = document_ids(cfg.ner.paths, cfg.ner.format, cfg.corpus.skip_bad_records)
    return sorted(held_out_documents(cfg) & ids)


def held_link_documents(cfg: Config) -> list[str]:
    """:func:`held_ner_documents` and the held-out documents of ``kg.relation_files``
    (:func:`pipelines.holdout.relation_document_ids`), whose relations the seed KG the linker
    indexes leaves out, sorted."""
    if not cfg.ner.paths:
        return []
    ids = document_ids(cfg.ner.paths, cfg.ner.format, cfg.corpus.skip_bad_records) | relation_document_ids(cfg)
    return sorted(held_out_documents(cfg) & ids)
