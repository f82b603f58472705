"""NER stage: train the entity recognizer and build the entity linker (issue #19, docs/NER.md).

Reads the annotated corpora of ``ner.paths`` (documents with gold mentions, restricted to
``ner.sources`` when set), leaves out every document the run extracts from or is scored on
(:func:`pipelines.holdout.held_out_documents`), then

* trains the spaCy recognizer (:func:`graphmert.ner.recognizer.train_recognizer`; one spaCy model
  per group of ``ner.separate_categories``): the progress bar counts the documents each epoch
  reads, and each epoch's selection scores go to the log → ``RUN/ner/recognizer/`` (the spaCy
  models, and their metadata with the ``ner`` config and the training report);
* builds the linker from the same documents' gold ids, the seed KG's names and ``ner.xref_tables``
  (:class:`graphmert.ner.linking.EntityLinker`) → ``RUN/ner/linker.json.gz``.

The manifest holds the training counts, the per-epoch history and the selection scores. With
``ner.paths`` empty the stage writes only ``{"enabled": false}``, and extraction uses no recognizer.
:func:`load_entity_tools` gives the extract stage both tools back.
"""

from __future__ import annotations

import logging
from pathlib import Path

from graphmert.config import Config, to_dict
from graphmert.corpus.document import Document
from graphmert.corpus.readers import read_corpus
from graphmert.kg.loaders import load_kg
from graphmert.ner.corpus import annotated_documents, part_documents
from graphmert.ner.linking import EntityLinker
from graphmert.ner.recognizer import (LABELS, Recognizer, group_documents, part_extras, recognizer_groups,
                                      train_recognizer)
from pipelines.holdout import held_out_documents
from pipelines.stage import Stage, StageContext

log = logging.getLogger("graphmert.pipeline")

RECOGNIZER_DIR = "recognizer"
LINKER_FILE = "linker.json.gz"


def training_documents(cfg: Config, held: frozenset[str]
                       ) -> tuple[list[Document], dict[str, list[Document]], dict]:
    """The annotated documents of ``ner.paths`` the recognizer and the linker may learn from: those
    with mentions from ``ner.sources``, less ``held`` (every document the run extracts from or is
    scored on: :func:`pipelines.holdout.held_out_documents`); the documents ``ner.part_sources`` lends
    one recognizer model (category → documents, less ``held`` and those already kept); counts."""
    reader = read_corpus(cfg.ner.paths, format=cfg.ner.format, skip_bad_records=cfg.corpus.skip_bad_records)
    every = list(annotated_documents(reader))
    annotated = list(annotated_documents(every, cfg.ner.sources))
    kept = [d for d in annotated if d.id not in held]
    extra = part_documents(every, cfg.ner.part_sources, exclude=held | {d.id for d in kept})
    counts = {"read": reader.stats.documents, "annotated": len(annotated),
              "held_out": len(annotated) - len(kept)}
    if extra:
        counts["part_sources"] = {c: len(v) for c, v in extra.items()}
    return kept, extra, counts


def _ner(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    if not cfg.ner.paths:
        return {"enabled": False}
    held = held_out_documents(cfg)
    docs, extra, counts = training_documents(cfg, held)
    log.info("ner: %d annotated training documents (%s)", len(docs), counts)
    groups = recognizer_groups(cfg.ner.categories, cfg.ner.separate_categories)
    mine = [group_documents(docs, g) for g in groups]
    # the bar counts documents read, so its rate and ETA hold across parts of different sizes
    sizes = {tuple(g): len(m) + len(x) for g, m, x in zip(groups, mine, part_extras(groups, mine, extra,
                                                                                     cfg.ner.categories))}
    bar = ctx.progress(total=cfg.ner.epochs * sum(sizes.values()), desc="ner: train", unit="doc")

    def on_epoch(rec: dict) -> None:
        bar.update(sizes[tuple(rec["categories"])])
        bar.set_postfix(f1=rec["f"], minutes=rec["minutes"])
        log.info("ner: %s epoch %d loss %.1f selection P %.3f R %.3f F1 %.3f (%.1f min)",
                 "+".join(LABELS[c] for c in rec["categories"]), rec["epoch"], rec["loss"], rec["p"],
                 rec["r"], rec["f"], rec["minutes"], extra={"console": False})

    recognizer, report = train_recognizer(docs, cfg.ner, on_epoch=on_epoch, extra=extra)
    bar.close()
    recognizer.save(ctx.out / RECOGNIZER_DIR, {**report, "config": to_dict(cfg.ner)})
    linker = EntityLinker.build(docs, load_kg(cfg.kg, held), cfg.ner.xref_tables,
                                fuzzy_threshold=cfg.ner.fuzzy_threshold, exclude=held)
    linker.save(ctx.out / LINKER_FILE)
    return {"enabled": True, "inputs": counts, **report, "linker": linker.stats()}


def load_entity_tools(ctx: StageContext) -> tuple[Recognizer, EntityLinker] | None:
    """The run's recognizer and linker, or None when the ner stage ran without ``ner.paths``."""
    if not ctx.upstream.get("ner", {}).get("enabled"):
        return None
    d = ctx.stage_dir("ner")
    return Recognizer.load(d / RECOGNIZER_DIR), EntityLinker.load(d / LINKER_FILE)


def _sources(cfg: Config) -> list[Path]:
    return [Path(p) for p in (*cfg.ner.paths, *cfg.ner.xref_tables)]


NER = Stage("ner", sections=("ner", "kg", "corpus.skip_bad_records", "extract.paths", "extract.format",
                             "extract.document_fraction", "evaluate.gold", "evaluate.format"),
            upstream=(), run=_ner, source_files=_sources)
