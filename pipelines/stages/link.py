"""Link stage: build the entity linker (issue #19, docs/NER.md, "Linker").

From the documents the ner stage trains the recognizer on (:func:`pipelines.stages.ner_documents.ner_inputs`:
the annotated documents of ``ner.paths``, read with ``ner.format`` and kept by ``ner.sources``, less
every document the run extracts from or is scored on), the linker learns their gold ids; it indexes
the seed KG's names (:func:`graphmert.kg.loaders.load_kg`, less the held-out documents' relations),
``ner.xref_tables``, ``ner.name_tables`` and ``ner.vocabularies``, with ``ner.fuzzy_threshold``
(:class:`graphmert.ner.linking.EntityLinker`) → ``RUN/link/linker.json.gz``.

A stage of its own so that the linker's options and code rebuild the linker (about a minute with the
reference vocabularies) and never retrain the recognizer (the ner stage, about 18 minutes): its
config keys are the linker's and the documents', never the recognizer's
(:data:`~pipelines.stages.ner_documents.RECOGNIZER_KEYS`), and this module imports nothing of
the recognizer. The vocabularies' readers (:mod:`graphmert.ner.vocabularies`) are both stages'
code: the recognizer's dictionary flags read them too. The manifest holds the document counts and
``linker.stats()``; with ``ner.paths`` empty the stage writes only :data:`~pipelines.stages.ner_documents.OFF`.
:func:`load_linker` gives the extract stage the linker back.
"""

from __future__ import annotations

import logging
from pathlib import Path

from graphmert.config import Config
from graphmert.corpus.document import Document
from graphmert.kg.loaders import load_kg
from graphmert.ner.linking import EntityLinker
from pipelines.stage import Stage, StageContext
from pipelines.stages.ner_documents import (OFF, RECOGNIZER_KEYS, SEED_KG_KEYS, held_link_documents, ner_inputs,
                                            ner_keys, seed_kg_files)

log = logging.getLogger("graphmert.pipeline")

LINKER_FILE = "linker.json.gz"


def _link(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    if not cfg.ner.paths:
        return dict(OFF)
    inputs = ner_inputs(cfg)
    counts = {k: v for k, v in inputs.counts.items() if k != "part_sources"}   # never the linker's
    log.info("link: %d annotated training documents (%s)", len(inputs.docs), counts)
    linker = build_linker(cfg, inputs.docs, inputs.held)
    linker.save(ctx.out / LINKER_FILE)
    stats = linker.stats()
    log.info("link: names known from the training documents %d, the seed KG %d; reference genes %d, "
             "reference terms %d (the manifest's linker section has them by category and species)",
             sum(stats.get("dictionary_forms", {}).values()), sum(stats.get("kg_forms", {}).values()),
             stats.get("reference_genes", 0), max(stats.get("term_forms", {}).values(), default=0))
    return {"enabled": True, "inputs": counts, "linker": stats}


def build_linker(cfg: Config, docs: list[Document], held: frozenset[str]) -> EntityLinker:
    """The run's linker: the training documents' gold ids (less ``held``), the seed KG's names, and
    ``ner.xref_tables`` / ``ner.name_tables`` / ``ner.vocabularies``."""
    return EntityLinker.build(docs, load_kg(cfg.kg, held), cfg.ner.xref_tables,
                              name_tables=cfg.ner.name_tables, fuzzy_threshold=cfg.ner.fuzzy_threshold,
                              exclude=held, vocabularies=cfg.ner.vocabularies)


def load_linker(ctx: StageContext) -> EntityLinker | None:
    """The run's linker, or None when the link stage ran without ``ner.paths``."""
    if not ctx.upstream.get("link", {}).get("enabled"):
        return None
    return EntityLinker.load(ctx.stage_dir("link") / LINKER_FILE)


def _sources(cfg: Config) -> list[Path]:
    """The files the linker is built from (none without ``ner.paths``: the stage reads nothing then)."""
    if not cfg.ner.paths:
        return []
    return [Path(p) for p in (*cfg.ner.paths, *cfg.ner.xref_tables, *cfg.ner.name_tables,
                              *(v.path for v in cfg.ner.vocabularies))] + seed_kg_files(cfg)


#: every ``ner`` key but the recognizer's, the corpus readers' key and the seed KG's; of the held-out
#: documents, those of ner.paths and kg.relation_files (held_link_documents)
SECTIONS = (*ner_keys(exclude=RECOGNIZER_KEYS), "corpus.skip_bad_records", *SEED_KG_KEYS)

LINK = Stage("link", sections=SECTIONS, upstream=(), run=_link, source_files=_sources,
             derived=held_link_documents)
