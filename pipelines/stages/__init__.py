"""The stage DAG, in execution order: ner → link → ingest → tokenizer → chunks → graphs → train → extract
→ export → report → evaluate (``graphmert run`` runs evaluate only when ``evaluate.gold`` is set).

``CATALOG`` says what each stage is called, what its CLI command is, what it does (its help text: the
one copy, which the :class:`~pipelines.stage.Stage` object takes too) and where it is defined. It
imports nothing, so the CLI builds its commands and ``--help`` from it without importing torch or
spaCy.

``STAGES`` (name → :class:`~pipelines.stage.Stage`) is built on first access (PEP 562), so neither the
CLI before a command runs nor a Dask worker that unpickles a shard function imports every stage
module; :func:`stage` imports one stage's module only (a stage command imports just its own). torch (seconds per process) comes only with the stage modules that need it (graphs, train,
extract, ner, link, evaluate), so the CLI's ``--help`` and a worker running only ``pipelines.stages.corpus``
or ``pipelines.stages.export`` tasks never import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.stage import Stage


@dataclass(frozen=True)
class StageEntry:
    """A stage as the CLI knows it before importing it."""

    name: str
    module: str          # the module under pipelines.stages that defines it
    attr: str            # the Stage object's name in that module
    help: str
    command: str = ""    # CLI command name when it differs from ``name``

    @property
    def cli_name(self) -> str:
        return self.command or self.name


CATALOG: dict[str, StageEntry] = {e.name: e for e in (
    StageEntry("ner", "ner", "NER",
               "Train the entity recognizer (spaCy NER, from the gold mentions of ner.paths); extract "
               "gives documents without annotations their recognised mentions, linked by the link "
               "stage. Does nothing when ner.paths is empty."),
    StageEntry("link", "link", "LINK",
               "Build the entity linker (mention → seed-KG / gold ids) from the gold ids of ner.paths, "
               "the seed KG's names, ner.xref_tables, ner.name_tables and ner.vocabularies; its "
               "options rerun this stage only, never the recognizer's training. Does nothing when "
               "ner.paths is empty."),
    StageEntry("ingest", "corpus", "INGEST",
               "Read the corpus into Parquet document shards (sentences, abbreviations), one Dask task "
               "per corpus.shard_size documents."),
    StageEntry("tokenizer", "corpus", "TOKENIZER",
               "Train a WordPiece tokenizer on the ingested corpus, or load one."),
    StageEntry("chunks", "corpus", "CHUNKS",
               "Cut documents into chunks of graph.num_roots root tokens, one Dask task per document "
               "shard."),
    StageEntry("graphs", "graphs", "GRAPHS",
               "Inject seed-KG tails into chunks as leaves: leafy chain graph shards, the relation map "
               "and schema, and an injection report. Linking and scoring run as one Dask task per "
               "chunk shard, graph assembly as one per graph.shard_size graphs.",
               command="build-graphs"),
    StageEntry("train", "train", "TRAIN",
               "Pre-train GraphMERT on the leafy chain graphs (span MLM on roots + masked node "
               "modelling on leaves): model checkpoint, metrics.jsonl, curves.png. Resumes an "
               "interrupted run from RUN/train-work (train.resume=false starts over)."),
    StageEntry("extract", "extract", "EXTRACT",
               "Extract triples with the trained model: heads → relations → masked-leaf tail "
               "prediction → tail scoring → filters; merged triples with provenance."),
    StageEntry("export", "export", "EXPORT",
               "Write the extracted triples as RDF (Turtle, N-Triples, JSON-LD; TriG / N-Quads with a "
               "named graph per run) with Biolink + PROV-O provenance, and as KGX node/edge tables "
               "(TSV + JSON Lines), and load them into an Oxigraph SPARQL store (export/store, for "
               "`graphmert query`), per export.formats. N-Triples, N-Quads and KGX are written as one "
               "Dask task per triple shard."),
    StageEntry("report", "export", "REPORT",
               "Write RUN/report/report.html: relation distribution, confidence histogram, triples "
               "per document, top entities, training curves (when present) and sample triples with "
               "their evidence highlighted. Open it in any browser."),
    StageEntry("evaluate", "evaluate", "EVALUATE",
               "Score extracted triples against gold relations (document-level pairs, typed and "
               "untyped, seed-known and novel) next to the co-occurrence and seed-KG baselines."),
)}

#: files of the extract stage that later stages read (named here, so that export's tasks need not
#: import the extract module and torch with it): the ids of the documents extracted from, one a line
#: (evaluate, update), and the documents with their recognised mentions, when any (export, evaluate)
DOCUMENTS_FILE = "documents.txt"
RECOGNIZED_FILE = "documents.parquet"

#: (module, attribute) of each stage, in execution order
ORDER = tuple((e.module, e.attr) for e in CATALOG.values())

__all__ = ["CATALOG", "DOCUMENTS_FILE", "ORDER", "RECOGNIZED_FILE", "STAGES", "StageEntry", "stage"]


def stage(name: str) -> "Stage":
    """The stage ``name``, importing its module only (``STAGES`` imports every stage module: torch and
    spaCy, seconds per process). A ``KeyError`` names an unknown stage."""
    entry = CATALOG[name]
    return getattr(import_module(f"{__name__}.{entry.module}"), entry.attr)


def __getattr__(name: str) -> "dict[str, Stage]":
    if name != "STAGES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    stages = [getattr(import_module(f"{__name__}.{e.module}"), e.attr) for e in CATALOG.values()]
    globals()["STAGES"] = table = {s.name: s for s in stages}
    return table
