"""NER stage: train the entity recognizer (issue #19, docs/NER.md).

Reads the annotated corpora of ``ner.paths`` (documents with gold mentions, restricted to
``ner.sources`` when set), leaves out every document the run extracts from or is scored on
(:func:`pipelines.holdout.held_out_documents`; :func:`pipelines.stages.ner_documents.ner_inputs`,
which the link stage reads the same documents with), then

* with ``ner.vectors``, learns word vectors from the text of every ``ner.paths`` document, annotated
  or not, less the same held-out ones (:mod:`graphmert.ner.vectors`; :func:`vector_texts`), on the
  training budget;
* with ``ner.dictionary_flags``, reads the flag sets of ``ner.vocabularies``
  (:mod:`graphmert.ner.dictionary`), on the same budget;
* trains the spaCy recognizer: one spaCy model per group of ``ner.separate_categories``
  (:func:`graphmert.ner.recognizer.plan_parts`), each one shard task (:func:`train_part_shard`,
  which trains it in a child process of its own), so the models train at once, one per worker
  (spaCy's training loop keeps one core busy), the largest first, all on the one budget
  ``ner.max_minutes``; a model finished before a killed run is reused by the rerun. Each task
  appends its epochs to a log in ``RUN/work/ner/epochs/``, which the driver follows: the progress
  bar counts the documents each epoch reads, and each epoch's selection scores go to the log →
  ``RUN/ner/recognizer/`` (the spaCy models, and their metadata with the recognizer's ``ner`` keys
  and the training report).

The linker is the link stage's (:mod:`pipelines.stages.link`): this module never imports
:mod:`graphmert.ner.linking`, and its config keys (:data:`SECTIONS`) leave out the linker's
(:data:`~pipelines.stages.ner_documents.LINKER_KEYS`) and the seed KG, so neither the linker's code
nor its options retrain the recognizer. The vocabularies' readers (:mod:`graphmert.ner.vocabularies`),
which the dictionary flags share with the linker, rerun both stages.

The manifest holds the training counts, the per-epoch history and the selection scores. With
``ner.paths`` empty the stage writes only :data:`~pipelines.stages.ner_documents.OFF` (``"enabled":
false`` and why), and extraction uses no recognizer.
:func:`load_recognizer` gives the extract stage the recognizer back.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from graphmert.config import Config, NERConfig, to_dict
from graphmert.corpus.document import Document
from graphmert.ner.dictionary import DictionaryFlags, flag_sources
from graphmert.ner.recognizer import (LABELS, PartPlan, Recognizer, assemble_recognizer, pipeline_from_bytes,
                                      plan_parts, train_part)
from graphmert.ner.vectors import WordVectors
from pipelines.stage import Stage, StageContext, StageError
from pipelines.stages.ner_documents import (LINKER_KEYS, OFF, held_ner_documents, ner_inputs, ner_keys,  # noqa: F401
                                            read_ner_documents, training_documents, vector_texts)

log = logging.getLogger("graphmert.pipeline")

REPO_ROOT = Path(__file__).resolve().parents[2]     # on the child's path (pipelines.stages.ner)
RECOGNIZER_DIR = "recognizer"


@dataclass(kw_only=True)
class PartsShared:
    """What every recognizer-model task shares: the ``ner`` config, the budget's end (``time.time()``,
    so it holds across processes), the folder of the per-model epoch logs and the word vectors of
    ``ner.vectors`` and the dictionary flags of ``ner.dictionary_flags`` (sent once to each
    worker, not once per model)."""

    cfg: NERConfig
    wall_deadline: float
    epochs_dir: str
    vectors: WordVectors | None = None
    dictionary: DictionaryFlags | None = None


def train_part_shard(item: tuple[int, PartPlan], shared: PartsShared, path: Path) -> dict:
    """Shard task: train model ``k`` of the recognizer (``item``: (k, its plan)) with
    :func:`graphmert.ner.recognizer.train_part` until ``shared.wall_deadline``, in a Python process
    of its own (:func:`train_in_child`); each epoch's record is appended to
    ``epochs_dir/part-<k>.jsonl`` as it ends. Writes the pipeline's bytes at ``path`` and returns
    its training report."""
    k, plan = item
    plan = replace(plan, vectors=shared.vectors, dictionary=shared.dictionary)
    log_path = Path(shared.epochs_dir) / f"part-{k}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    return {"report": train_in_child(plan, shared, log_path, path)}


def train_in_child(plan: PartPlan, shared: PartsShared, log_path: Path, out: Path) -> dict:
    """Train ``plan``'s model in a child Python process (:func:`part_main`) and return its report.

    Why a process: trained inside a Dask worker, the same model came out different from run to run
    (the gene model of the raw slice: selection F1 0.531 and 0.553 after two epochs in two workers,
    0.564 in every plain process, whatever its thread counts or hash seed). Our reading, not traced:
    spaCy's parser draws from Python's process-wide ``random`` while it trains, and so do the
    worker's other threads (its event loop, heartbeats) at moments no run repeats. Alone in a
    process the model is the same every time, and the same as
    :func:`graphmert.ner.recognizer.train_recognizer`'s."""
    with tempfile.TemporaryDirectory(prefix="graphmert-ner-") as tmp:
        job = Path(tmp) / "job.pkl"
        with job.open("wb") as f:
            pickle.dump({"plan": plan, "cfg": shared.cfg, "wall_deadline": shared.wall_deadline,
                         "log": str(log_path), "out": str(out), "report": str(Path(tmp) / "report.json")}, f)
        # the watch on this process (pipelines.lifeline) starts before the child's heavy imports
        code = ("import sys; from pathlib import Path; from pipelines.lifeline import exit_with_parent; "
                "exit_with_parent(int(sys.argv[2]), Path(sys.argv[1]).parent); "
                "from pipelines.stages.ner import part_main; sys.exit(part_main(sys.argv[1]))")
        path = os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        r = subprocess.run([sys.executable, "-c", code, str(job), str(os.getpid())],
                           env={**os.environ, "PYTHONPATH": path}, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise StageError(f"ner: training the {'+'.join(LABELS[c] for c in plan.categories)} model failed "
                             f"(exit {r.returncode}):\n{r.stderr[-3000:]}")
        return json.loads((Path(tmp) / "report.json").read_text(encoding="utf-8"))


def part_main(job_path: str) -> int:
    """Entry point of :func:`train_in_child`'s process: the job's plan trained to its budget's end,
    the pipeline's bytes and the report written where the job says. The process exits when the one
    that started it dies (:func:`pipelines.lifeline.exit_with_parent`, started by its command line):
    a killed ``graphmert ner`` left its training processes running to the end of their budget."""
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    log_path = Path(job["log"])

    def on_epoch(rec: dict) -> None:
        with log_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")

    deadline = time.monotonic() + (job["wall_deadline"] - time.time())
    nlp, report = train_part(job["plan"], job["cfg"], deadline=deadline, on_epoch=on_epoch)
    Path(job["out"]).write_bytes(nlp.to_bytes())
    Path(job["report"]).write_text(json.dumps(report), encoding="utf-8")
    return 0


class EpochFollower:
    """Follows the epoch logs of :func:`train_part_shard` in a folder (a background thread reads new
    complete lines every ``every`` seconds, and once more on exit) and hands each record to
    ``on_epoch``. A worker on another host writes its log there too only when it shares the run
    directory's file system; otherwise the bar moves per finished model alone."""

    def __init__(self, folder: Path, on_epoch: Callable[[dict], None], every: float = 2.0) -> None:
        self.folder, self.on_epoch, self.every = folder, on_epoch, every
        self._read: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ner-epochs", daemon=True)

    def poll(self) -> None:
        for path in sorted(self.folder.glob("part-*.jsonl")):
            with path.open("rb") as f:
                f.seek(self._read.get(path, 0))
                data = f.read()
            done = data[:data.rfind(b"\n") + 1]            # complete lines only
            self._read[path] = self._read.get(path, 0) + len(done)
            for line in done.decode("utf-8").splitlines():
                self.on_epoch(json.loads(line))

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.poll()

    def __enter__(self) -> "EpochFollower":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()


def train_models(ctx: StageContext, plans: list[PartPlan], docs: list[Document],
                 on_epoch: Callable[[dict], None], *, start: float) -> tuple[Recognizer, dict]:
    """The recognizer's models (``plans``, of :func:`graphmert.ner.recognizer.plan_parts` on
    ``docs``) as shard tasks, the largest first (one per worker: the longest starts at once), on one
    wall-clock budget of ``ner.max_minutes`` from ``start`` (``time.time()``, before the plans and
    their word vectors were made); the recognizer and report of
    :func:`graphmert.ner.recognizer.assemble_recognizer`. ``on_epoch`` gets each epoch's record."""
    cfg = ctx.cfg.ner
    order = sorted(range(len(plans)), key=lambda k: -plans[k].size)
    epochs_dir = ctx.work_dir / "epochs"
    for old in epochs_dir.glob("part-*.jsonl"):             # a killed run's epochs are not this run's
        old.unlink()
    shared = PartsShared(cfg=cfg, wall_deadline=start + 60 * cfg.max_minutes, epochs_dir=str(epochs_dir),
                         vectors=plans[0].vectors, dictionary=plans[0].dictionary)
    with EpochFollower(epochs_dir, on_epoch):
        shards = ctx.map_shards(train_part_shard, [(k, replace(plans[k], vectors=None, dictionary=None))
                                                   for k in order],
                                name="model", shared=shared, suffix=".spacy")
    trained: dict[int, tuple[object, dict]] = {}
    for k, shard in zip(order, shards):
        nlp = pipeline_from_bytes(plans[k].categories, cfg, shard.path.read_bytes(), plans[k].vectors)
        trained[k] = (nlp, {**shard.counts["report"], "reused": shard.reused})
    return assemble_recognizer(plans, [trained[k] for k in range(len(plans))], docs, cfg,
                               minutes=(time.time() - start) / 60)


def _ner(ctx: StageContext) -> dict:
    cfg = ctx.cfg
    if not cfg.ner.paths:
        return dict(OFF)
    inputs = ner_inputs(cfg)
    docs, counts = inputs.docs, inputs.counts
    log.info("ner: %d annotated training documents (%s)", len(docs), counts)
    start = time.time()                  # the budget counts the word vectors too
    plans = plan_parts(docs, cfg.ner, extra=inputs.extra,
                       texts=vector_texts(inputs.read, inputs.held) if cfg.ner.vectors else ())
    sizes = {tuple(p.categories): p.size for p in plans}
    # the bar counts documents read, so its rate and ETA hold across parts of different sizes
    bar = ctx.progress(total=cfg.ner.epochs * sum(sizes.values()), desc="ner: train", unit="doc")

    def on_epoch(rec: dict) -> None:
        bar.update(sizes[tuple(rec["categories"])])
        bar.set_postfix(f1=rec["f"], minutes=rec["minutes"])
        log.info("ner: %s epoch %d loss %.1f selection P %.3f R %.3f F1 %.3f (%.1f min)",
                 "+".join(LABELS[c] for c in rec["categories"]), rec["epoch"], rec["loss"], rec["p"],
                 rec["r"], rec["f"], rec["minutes"], extra={"console": False})

    recognizer, report = train_models(ctx, plans, docs, on_epoch, start=start)
    bar.close()
    sel = report["selection"]
    log.info("ner: the recognizer on its %d selection documents: strict-span P %.3f R %.3f F1 %.3f (%s)",
             report["selection_documents"], sel["p"], sel["r"], sel["f"],
             ", ".join(f"{k} {v['f']:.3f}" for k, v in sorted(sel.get("per_label", {}).items())))
    settings = {k: v for k, v in to_dict(cfg.ner).items() if f"ner.{k}" in SECTIONS}
    recognizer.save(ctx.out / RECOGNIZER_DIR, {**report, "config": settings})
    return {"enabled": True, "inputs": counts, **report}


def load_recognizer(ctx: StageContext) -> Recognizer | None:
    """The run's recognizer, or None when the ner stage ran without ``ner.paths``."""
    if not ctx.upstream.get("ner", {}).get("enabled"):
        return None
    return Recognizer.load(ctx.stage_dir("ner") / RECOGNIZER_DIR)


def _sources(cfg: Config) -> list[Path]:
    """The annotated corpora, and with ``ner.dictionary_flags`` the vocabularies the flags come from
    (``ner.vocabularies`` is otherwise the linker's key alone, so it retrains nothing then)."""
    flags = [v.path for v in flag_sources(cfg.ner.vocabularies, cfg.ner.dictionary_flags)]
    return [Path(p) for p in [*cfg.ner.paths, *flags]]


#: every ``ner`` key but the linker's, and the one key of the corpus readers; of the held-out documents,
#: those of ner.paths (held_ner_documents)
SECTIONS = (*ner_keys(exclude=LINKER_KEYS), "corpus.skip_bad_records")

NER = Stage("ner", sections=SECTIONS, upstream=(), run=_ner, source_files=_sources, derived=held_ner_documents)
