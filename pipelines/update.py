"""Incremental updates of a run's knowledge graph: add new documents, remove documents.

    graphmert update --run-dir RUN --add new.pubtator           # extract new documents into RUN's KG
    graphmert update --run-dir RUN --remove 12345 --remove 678  # take documents' evidence out again

**Adding** (:func:`add_documents`) runs the extract stage's own code
(:func:`pipelines.stages.extract.run_extraction`) with RUN's config, trained model, tokenizer and seed
KG over the documents of the given files that are not in the KG yet. A document whose id is already
there is skipped, so adding it again changes nothing. The new per-document triples are merged into
RUN/extract as :func:`~graphmert.extract.triples.merge_triples` over both would, as a stream in key
order (the k-way merge of :mod:`graphmert.extract.sorted_merge`): the evidence of an edge that exists
already joins it, its ``confidence`` (max) and ``confidence_mean`` are recomputed over all its
evidence, and edges the KG did not have are added. Every new evidence carries the update's
activity, ``update-N``, so the export names both the run and the update that found an edge.

**Removing** (:func:`remove_documents`) drops the evidence of the given documents from every edge
(:func:`~graphmert.extract.triples.drop_documents`); confidences are recomputed from the evidence
left, and edges left without evidence disappear. Either way the KG is never held in memory.

Either way RUN/extract is rewritten atomically: triples, controls, ``documents.txt`` and the
recognised documents, and the manifest with its ``updates`` list (one record per update), the
extract stage's config and input hashes kept (the stage stays up to date) and the output hash
recomputed. Then the stages downstream of extract that RUN has (export, report, evaluate) rerun, so
the exported KG, the store and the report follow.

Why adding is exact: extracting a document never depends on the other documents extracted with it
(the β filter's vocabulary comes from the run's own chunk corpus; heads, candidates and salience are
per document), and merging is associative. So extracting 40 documents and then adding 20 gives the
same KG as extracting all 60 at once (tests/test_update.py). One thing does depend on the set: with
``kg.relation_files``, the seed relations of the documents being extracted are held out of the seed
KG (:mod:`pipelines.holdout`); an update holds out those of the documents it adds.

A rerun of the extract stage itself (after a change to its config or code) extracts ``extract.paths``
(or the run's corpus) again and so drops what updates added; it warns about it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Iterable, Iterator

from graphmert.config import Config, ConfigError, load_config
from graphmert.corpus.document import read_documents, write_documents
from graphmert.corpus.readers import read_corpus
from graphmert.extract.sorted_merge import merge_sorted
from graphmert.extract.triples import (Triple, drop_documents, read_triples, triple_key, with_run,
                                       write_triples)
from graphmert.io import atomic_dir, atomic_write_json, atomic_write_text, input_hashes, read_json, recover_dir
from pipelines.scheduler import Session
from pipelines.stage import (StageContext, UpstreamMissing, manifest_path, output_hash, run_stage,
                             stale_reason)
from pipelines.stages import CATALOG
from pipelines.stages import DOCUMENTS_FILE, RECOGNIZED_FILE
from pipelines.stages.extract import run_extraction
from pipelines.stages.extract_merge import KGTally, write_kg

__all__ = ["UpdateError", "add_documents", "remove_documents"]

log = logging.getLogger("graphmert.pipeline")

EXTRACT = "extract"


class UpdateError(UpstreamMissing):
    """The run directory has no extracted KG to update, or is not a run directory: the commands came
    in the wrong order (a usage error; the message says what to run first)."""


# --------------------------------------------------------------------------------------------------
# What the run has
# --------------------------------------------------------------------------------------------------

def run_config(run_dir: Path) -> Config:
    """The config the run's stages last ran with (``RUN/config.yaml``)."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise UpdateError(f"{run_dir}: not a run directory (no config.yaml); run `graphmert run` first")
    return load_config(path)


def _extract_manifest(run_dir: Path) -> dict:
    """RUN/extract's manifest, after :func:`_settle` has undone what a killed update left."""
    _settle(run_dir)
    path = manifest_path(run_dir, EXTRACT)
    if not path.is_file():
        raise UpdateError(f"{run_dir}: the run has no extracted knowledge graph ({path} is missing); "
                          "run `graphmert extract --run-dir RUN` first")
    return read_json(path)


def _settle(run_dir: Path) -> None:
    """Undo what a killed update (or stage) left in the run directory, for RUN/extract and the
    stages after it: a stage folder moved aside in the middle of its swap comes back
    (:func:`graphmert.io.recover_dir`); then the temporary folders of unfinished rewrites
    (``.<stage>.*.tmp``) and old versions not yet deleted (``.<stage>.*.old``) are removed. The run
    directory's lock, held by the command, means no other process is writing them."""
    from pipelines.stages import STAGES

    for name in (EXTRACT, *(n for n in CATALOG if EXTRACT in STAGES[n].upstream)):
        if recover_dir(run_dir / name):
            log.warning("update: %s was left mid-swap by a killed command; its last complete "
                        "version is back", run_dir / name)
        for left in [*run_dir.glob(f".{name}.*.tmp"), *run_dir.glob(f".{name}.*.old")]:
            shutil.rmtree(left, ignore_errors=True)


def kg_documents(folder: Path) -> list[str]:
    """Ids of the documents of an extract folder's KG (``RUN/extract``), in the order they came."""
    path = folder / DOCUMENTS_FILE
    return path.read_text(encoding="utf-8").split() if path.is_file() else []


def _triple_files(folder: Path, manifest: dict) -> dict[str, list[Path]]:
    """The triple files of an extract folder: ``triples`` (the KG's shards) and each control."""
    files = {"triples": [folder / s for s in manifest.get("shards", [])]}
    for name, rec in (manifest.get("controls") or {}).items():
        files[f"control-{name}"] = [folder / rec["file"]]
    return files


# --------------------------------------------------------------------------------------------------
# Add
# --------------------------------------------------------------------------------------------------

def add_documents(session: Session, paths: list[Path], fmt: str = "auto", quiet: bool = False) -> dict:
    """Extract the documents of ``paths`` that the run's KG lacks and merge them in (module
    docstring). Returns the update record (also appended to the extract manifest's ``updates``)."""
    run_dir = session.store.local
    cfg = run_config(run_dir)
    manifest = _extract_manifest(run_dir)
    present = set(kg_documents(run_dir / EXTRACT))
    ids = [d.id for d in read_corpus(paths, format=fmt, skip_bad_records=cfg.corpus.skip_bad_records)]
    new = [i for i in ids if i not in present]
    record = {"activity": _activity(manifest), "at": _now(), "added_files": [str(p) for p in paths],
              "documents_in_files": len(ids), "already_in_kg": len(ids) - len(new)}
    if not new:
        log.info("update: all %d documents of %s are in the KG already; nothing to add", len(ids),
                 [str(p) for p in paths])
        return {**record, "added": 0, "changed": False,
                "brought_up_to_date": _downstream(session, cfg, quiet, only_stale=True)}
    delta_cfg = dataclasses.replace(cfg, extract=dataclasses.replace(
        cfg.extract, paths=[str(p) for p in paths], format=fmt, document_fraction=1.0))
    work = run_dir / "work" / "update"
    work.mkdir(parents=True, exist_ok=True)
    with atomic_dir(work / record["activity"]) as delta:
        body = _extract_delta(session, delta_cfg, run_dir, delta, frozenset(present), quiet)
        record.update(added=body["documents"], triples_found=body["triples"], chunks=body["chunks"])
        _rewrite(run_dir, cfg.extract.shard_size, manifest, record, session.store.name, delta=(delta, body))
    _drop_tree(work)          # RUN/work/update, and RUN/work when nothing else is in it
    _downstream(session, cfg, quiet)
    return {**record, "changed": True}


def _extract_delta(session: Session, cfg: Config, run_dir: Path, out: Path, skip: frozenset[str],
                   quiet: bool) -> dict:
    """Run the extract stage's code into ``out`` for the documents of ``cfg.extract.paths`` outside
    ``skip``; its shards go to RUN/work/update/ (a killed update resumes with them)."""
    from pipelines.stages import STAGES

    stage = STAGES[EXTRACT]
    upstream = {}
    for name in stage.upstream:
        mp = manifest_path(run_dir, name)
        if not mp.is_file():
            raise UpdateError(f"{run_dir}: stage '{name}' has no output ({mp}); run `graphmert run` first")
        upstream[name] = read_json(mp)
    extract = read_json(manifest_path(run_dir, EXTRACT))
    # shard ids hash the extract stage's config and inputs (the trained model among them) and what
    # this update reads: the added files and the documents skipped, so a resumed update reuses only
    # its own finished parts
    added = {"files": input_hashes(cfg.extract.paths), "skip": sorted(skip)}
    ctx = StageContext(cfg=cfg, run_dir=run_dir, out=out, quiet=quiet, upstream=upstream, stage="update",
                       config_hash=f"{extract['config_hash']}:{extract['input_hash']}",
                       input_hash=hashlib.sha256(json.dumps(added).encode()).hexdigest()[:16],
                       session=session, store=session.store)
    return run_extraction(ctx, skip=skip)


def _tag(triples: Iterable[Triple], activity: str) -> Iterator[Triple]:
    """The triples with every evidence marked as found by ``activity`` (a stream)."""
    for t in triples:
        yield dataclasses.replace(t, evidence=[dataclasses.replace(e, activity=activity) for e in t.evidence])


# --------------------------------------------------------------------------------------------------
# Remove
# --------------------------------------------------------------------------------------------------

def remove_documents(session: Session, doc_ids: list[str], quiet: bool = False) -> dict:
    """Take the evidence of ``doc_ids`` out of the run's KG (module docstring). Ids the KG does not
    have are listed in the record and otherwise ignored."""
    run_dir = session.store.local
    cfg = run_config(run_dir)
    manifest = _extract_manifest(run_dir)
    present = set(kg_documents(run_dir / EXTRACT))
    gone = [i for i in dict.fromkeys(doc_ids) if i in present]
    record = {"activity": _activity(manifest), "at": _now(), "removed": gone,
              "not_in_kg": [i for i in dict.fromkeys(doc_ids) if i not in present]}
    if not gone:
        log.info("update: none of %s is in the KG; nothing to remove", doc_ids)
        return {**record, "changed": False,
                "brought_up_to_date": _downstream(session, cfg, quiet, only_stale=True)}
    _rewrite(run_dir, cfg.extract.shard_size, manifest, record, session.store.name, removed=frozenset(gone))
    _downstream(session, cfg, quiet)
    return {**record, "changed": True}


# --------------------------------------------------------------------------------------------------
# Rewriting RUN/extract
# --------------------------------------------------------------------------------------------------

def _rewrite(run_dir: Path, shard_size: int, manifest: dict, record: dict, run_id: str,
             delta: tuple[Path, dict] | None = None,
             removed: frozenset[str] = frozenset()) -> None:
    """Write RUN/extract anew (atomically): every triple file merged with the delta's or without the
    removed documents' evidence, each triple naming ``run_id`` (the run being written, also when the
    directory was copied from another run), the document lists, and the manifest.

    Every triple file is in key order (the extract stage's merge writes it so, and so does an
    update), so each is rewritten as a stream: the delta joins it through the k-way merge
    (:func:`~graphmert.extract.sorted_merge.merge_sorted`, the KG's triple of a key before the
    delta's, as :func:`~graphmert.extract.triples.merge_triples` over the two lists would), and one
    triple and a decoded batch per file are in memory, never the KG."""
    folder = run_dir / EXTRACT
    delta_files = _triple_files(*delta) if delta else {}
    with atomic_dir(folder) as new:
        counts = {}
        for name, files in _triple_files(folder, manifest).items():
            triples = _in_key_order(read_triples(files), files)
            if delta:
                added = _in_key_order(read_triples(delta_files.get(name, [])), delta_files.get(name, []))
                triples = merge_sorted([triples, _tag(added, record["activity"])])
            if removed:
                triples = (kept for t in triples for kept in drop_documents([t], removed))
            counts[name] = _write_triple_files(with_run(triples, run_id), new, name, shard_size)
        _write_documents(folder, new, delta[0] if delta else None, removed)
        record["triples_after"] = counts["triples"][0].triples
        body = _updated_manifest(manifest, record, counts, len(kg_documents(new)))
        body["run_id"], body["output_hash"] = run_id, output_hash(new)
        atomic_write_json(new / "manifest.json", body)
    log.info("update %s: the KG now has %d triples from %d documents", record["activity"],
             record["triples_after"], body["documents"])


def _in_key_order(triples: Iterable[Triple], files: list[Path]) -> Iterator[Triple]:
    """``triples`` as they stream, checked to come in :func:`triple_key` order with one triple a key
    (what :func:`_rewrite` merges); an :class:`UpdateError` naming the files otherwise."""
    last = None
    for t in triples:
        key = triple_key(t)
        if last is not None and key <= last:
            raise UpdateError(f"{', '.join(map(str, files))}: triples not in key order ({key} after "
                              f"{last}); run `graphmert extract --force` on the run, then update it")
        last = key
        yield t


def _write_triple_files(triples: Iterable[Triple], folder: Path, name: str,
                        shard_size: int) -> tuple[KGTally, list[str]]:
    """The KG's shards + triples.jsonl (``name`` "triples") or one control file, from a stream;
    returns their counts and the files written."""
    tally = KGTally()
    if name != "triples":
        write_triples(tally.count(triples), folder / f"{name}.parquet")
        return tally, [f"{name}.parquet"]
    return tally, write_kg(tally.count(triples), folder, shard_size)


def _write_documents(old: Path, new: Path, delta: Path | None, removed: frozenset[str]) -> None:
    """``documents.txt`` and the recognised documents: the old ones (less ``removed``) + the delta's."""
    ids = [i for i in kg_documents(old) if i not in removed]
    ids += kg_documents(delta) if delta else []
    atomic_write_text(new / DOCUMENTS_FILE, "".join(f"{i}\n" for i in ids))
    sources = [p for p in (old / RECOGNIZED_FILE, delta / RECOGNIZED_FILE if delta else None)
               if p is not None and p.is_file()]
    if sources:
        write_documents([d for d in read_documents(sources) if d.id not in removed], new / RECOGNIZED_FILE)


def _updated_manifest(manifest: dict, record: dict, counts: dict, documents: int) -> dict:
    """The extract manifest after an update: KG counts recomputed, the update appended, the stage's
    config and input hashes kept. Counts of the first extraction's work (``work``, ``filters``,
    ``chunks``) stay as they were; each update record has its own."""
    kg, shards = counts["triples"]
    body = {k: v for k, v in manifest.items() if k not in ("shard_info", "tasks", "output_hash")}
    body.update(status="updated", triples=kg.triples, documents=documents, shards=shards,
                triples_per_relation=dict(sorted(kg.relations.items())),
                triples_per_tail_source=dict(sorted(kg.tail_sources.items())),
                updates=[*manifest.get("updates", []), record])
    for name, rec in (body.get("controls") or {}).items():
        rec["triples"] = counts[f"control-{name}"][0].triples
    return body


def _downstream(session: Session, cfg: Config, quiet: bool, only_stale: bool = False) -> list[str]:
    """Rerun the stages after extract that the run has run before (export, report, evaluate);
    return the names of those that ran.

    ``only_stale``: an update that changed nothing runs only the stages whose output does not match
    RUN/extract (:func:`pipelines.stage.stale_reason`): those an earlier, killed, update had not
    brought up to date yet (or whose config or code changed since). The others are left as they
    are, manifests included."""
    from pipelines.stages import STAGES

    run_dir = session.store.local
    ran = []
    for name in CATALOG:
        stage = STAGES[name]
        if EXTRACT not in stage.upstream or not manifest_path(run_dir, name).is_file():
            continue
        if only_stale and (reason := stale_reason(stage, cfg, run_dir)) is None:
            continue
        if only_stale:
            log.warning("update: %s does not match the KG (%s: an update interrupted before it "
                        "ran, or a change to its config or code); running it", name, reason)
        m = run_stage(stage, cfg, run_dir, quiet=quiet, session=session)
        log.info("update: %s %s", name, m["status"])
        if m["status"] != "skipped":
            ran.append(name)
    return ran


def _activity(manifest: dict) -> str:
    return f"update-{len(manifest.get('updates', [])) + 1}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _drop_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    try:
        folder.parent.rmdir()
    except OSError:
        pass


def check_ids(doc_ids: list[str], where: str) -> list[str]:
    """Document ids from the command line or a file: non-empty, no whitespace inside."""
    for i, d in enumerate(doc_ids, 1):
        if not d or any(c.isspace() for c in d):
            raise ConfigError(f"{where}: entry {i}: {d!r} is not a document id")
    return doc_ids
