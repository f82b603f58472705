"""The ``graphmert`` command line. Thin: it parses arguments and calls pipeline/library functions.

Every stage command has the same shape (DESIGN §10)::

    graphmert <stage> --config configs/X.yaml --run-dir RUN [section.key=value ...] [--quiet]
    graphmert run     --config configs/X.yaml --run-dir RUN [--from STAGE] [--to STAGE] [--force STAGE]
    graphmert info    --config configs/X.yaml [section.key=value ...]

Shard tasks run on Dask (``--scheduler local|synchronous|tcp://host:8786``, see
:mod:`pipelines.scheduler` and docs/PIPELINE.md).

Exit codes: 0 done; 2 a usage or config error (a bad option or key, stages run out of order, the run
directory in use); 1 a stage failed on its input (any other :class:`~graphmert.errors.GraphmertError`:
one line saying what to fix) or on something unexpected — a bug, whose full traceback goes to
``RUN/logs/graphmert.log`` while the console line names that file; 130 interrupted (Ctrl-C).
Stage modules (torch, spaCy) are imported only when a command runs; commands and their help come
from :data:`pipelines.stages.CATALOG`, so ``--help`` and ``--version`` start fast.
``--quiet`` prints warnings, errors and output paths only (the files a stage lists as its outputs,
then the stage folder, or the run directory for ``run``), one per line, so scripts can capture them.
"""

from __future__ import annotations

import inspect
import json
import logging
import platform
import re
import sys
import traceback
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator, NoReturn, Optional

import typer

from graphmert import __version__
from graphmert.config import ConfigError, describe, load_config, to_dict
from graphmert.errors import GraphmertError, described
from pipelines.fingerprint import clear_cache, package_fingerprint
from pipelines.scheduler import Session
from pipelines.stage import StageError, UpstreamMissing, check_inputs, log_file, run_stage, setup_logging
from pipelines.store import RunDirBusy, RunStore, is_url
from pipelines.stages import CATALOG

log = logging.getLogger("graphmert.cli")

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
#: exit 2: the command line, the config or the order of the commands is wrong (ConfigError includes
#: TokenizerError, CheckpointError and RegistryError)
USAGE_ERRORS = (ConfigError, UpstreamMissing, RunDirBusy)
#: Any other :class:`~graphmert.errors.GraphmertError` (a stage failing on its input: the message says
#: what to fix) exits 1 with one line. Any other exception is a bug: exit 1 too, with its traceback in
#: the run's log.

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="GraphMERT: distil a knowledge graph from biomedical abstracts and a seed KG.")

CONFIG = typer.Option(None, "--config", "-c", help="YAML file that overrides the defaults.",
                      exists=False, dir_okay=False)
RUN_DIR = typer.Option(..., "--run-dir", "-r", help="Run directory: stages read and write here. A "
                       "path, or an fsspec URL (s3://bucket/run, gs://…, file://…) worked on through "
                       "a local copy (pipeline.mirror).")
QUIET = typer.Option(False, "--quiet", "-q", help="Print only warnings, errors and output paths (no "
                     "progress bars, no summaries).")
SKIP_BAD = typer.Option(False, "--skip-bad-records",
                        help="Count and log bad input records (corpus and seed KG) instead of "
                             "stopping; same as corpus.skip_bad_records=true kg.skip_bad_records=true.")
SCHEDULER = typer.Option(None, "--scheduler", "-s",
                         help="Where shard tasks run: 'local' (a LocalCluster), 'synchronous' (in this "
                              "process, for debugging) or a Dask scheduler address tcp://host:8786. "
                              "Default: $DASK_SCHEDULER_ADDRESS, else pipeline.scheduler.",
                         show_default=False)
OVERRIDES = typer.Argument(None, help="Dotted overrides, e.g. model.hidden_size=256 "
                                      "'corpus.paths=\\[a.txt,b.txt]' (quote brackets: zsh globs them; "
                                      "`graphmert info --keys` lists every key); a mapping's key: "
                                      "extract.control_min_confidence.lexical=0.3, and "
                                      "'ner.part_sources={}' empties a mapping.", show_default=False)


def _fail(msg: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _run_log(run_dir: Optional[Path]) -> Optional[Path]:
    """The log file of the run directory ``run_dir`` once :func:`setup_logging` opened it for this
    command, else None (no run directory, logging not set up yet, or still another run's log)."""
    path = log_file()
    if run_dir is None or path is None or path != run_dir / "logs" / "graphmert.log":
        return None
    return path


@contextmanager
def _errors(stage: str = "", run_dir: Optional[Path] = None) -> Iterator[None]:
    """Turn what the command raises into an exit code and one console line (module docstring).
    Once the run's log is open (``run_dir``), it gets the line too, and for an unexpected exception
    or an OSError the full traceback."""
    where = f"{stage}: " if stage else ""
    try:
        yield
    except (typer.Exit, typer.Abort):      # typer's own way out (usage errors, _fail)
        raise
    except KeyboardInterrupt:
        if _run_log(run_dir):
            log.warning("%sinterrupted (Ctrl-C)", where, extra={"console": False})
        typer.secho(f"{where}interrupted; finished shards (and training checkpoints) are kept: the same "
                    f"command resumes", fg=typer.colors.YELLOW, err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except GraphmertError as e:
        if _run_log(run_dir):
            log.error("%s%s", where, described(e), extra={"console": False})
        _fail(f"{where}{described(e)}", EXIT_USAGE if isinstance(e, USAGE_ERRORS) else EXIT_FAILED)
    except Exception as e:          # noqa: BLE001 - a bug (or the environment: OSError): keep the traceback
        _crash(where, e, _run_log(run_dir))


def _crash(where: str, e: Exception, log_path: Optional[Path]) -> NoReturn:
    """Exit 1 for an exception no library error class describes: its traceback goes to the run's log
    (to stderr when there is none), the console line says where. An OSError (disk full, permission
    denied) reads as its message; anything else is named as unexpected."""
    what = described(e) if isinstance(e, OSError) else f"unexpected {type(e).__name__}: {described(e)}"
    if log_path is not None:
        log.error("%s%s", where, what, exc_info=e, extra={"console": False})
        _fail(f"{where}{what}\n  the full traceback is in {log_path}", EXIT_FAILED)
    traceback.print_exception(e, file=sys.stderr)
    _fail(f"{where}{what}", EXIT_FAILED)


def _load(config: Optional[Path], overrides: Optional[list[str]]):
    try:
        return load_config(config, overrides or [])
    except ConfigError as e:
        _fail(str(e))


def _summary(manifest: dict) -> str:
    counts = {k: v for k, v in manifest.items() if isinstance(v, int) and not isinstance(v, bool)}
    return ", ".join(f"{k}={v}" for k, v in counts.items())


def _run_stages(names: list[str], config: Optional[Path], run_dir: str, overrides, quiet: bool,
                force: set[str] = frozenset(), skip_bad: bool = False,
                scheduler: Optional[str] = None, folder_last: bool = True) -> Session:
    """Run ``names`` in order in one scheduler session. ``folder_last``: with ``--quiet``, end with
    the last stage's folder (``run`` prints the run directory itself)."""
    overrides = list(overrides or [])
    if skip_bad:
        overrides += ["corpus.skip_bad_records=true", "kg.skip_bad_records=true"]
    cfg = _load(config, overrides)
    _check_inputs(names, cfg)
    with _errors():
        session = Session(cfg.pipeline, run_dir, scheduler, quiet)
    store = session.store
    # leaving the ExitStack closes the Dask cluster (if one was opened) and releases the lock, before
    # _errors reports what ended the command
    with _errors(run_dir=store.local), ExitStack() as stack:
        stack.enter_context(session)        # takes the run directory's lock
        setup_logging(store.local, quiet)
        if store.remote and not quiet:
            typer.echo(f"run directory {store.url}: working copy {store.local}")
        started = package_fingerprint()
        for name in names:
            with _errors(name, store.local):
                _same_code(started)
                m = run_stage(_stage(name), cfg, run_dir, quiet=quiet, force=name in force,
                              session=session)
            _report(name, m, store, quiet)
    if quiet and folder_last and names:
        typer.echo(store.display(names[-1]))
    return session


def _check_inputs(names: list[str], cfg) -> None:
    """Before any stage runs: every input file the config gives the stages ``names`` exists. A
    mistyped corpus path would otherwise stop ``graphmert run`` at ingest, after the recognizer's
    training (:func:`pipelines.stage.check_inputs`, which each stage repeats when it hashes them)."""
    for name in names:
        with _errors(name):
            check_inputs(_stage(name), cfg)


def _same_code(started: str) -> None:
    """Refuse to start the next stage once the library's source differs from the code this command
    started with (``started``, :func:`package_fingerprint`). Stage modules are imported when their
    stage starts, so a run whose source was edited mid-way would go on with a mix of the modules it
    imported before the edit and those it imports after, which is neither version (it once failed
    on a config class without the option its new typer read). The finished stages keep their
    outputs; the same command resumes with the new code."""
    clear_cache()
    now = package_fingerprint()
    if now != started:
        raise StageError(f"the graphmert code changed while this command ran (code fingerprint {started} "
                         f"-> {now}), so its next stage would mix the two versions; the stages before "
                         f"this one are done and kept: run the same command again to go on with the new code")


def _stage(name: str):
    """The :class:`~pipelines.stage.Stage` ``name``. Its module (torch, spaCy: seconds) is imported
    here, when a command runs, not when the CLI starts, and only its own: ``--help`` and ``--version``
    stay fast, ``graphmert ingest`` never imports torch, and a Ctrl-C during the import exits 130 like
    any other."""
    from pipelines.stages import stage

    return stage(name)


def _report(name: str, m: dict, store: RunStore, quiet: bool) -> None:
    """What the console shows after a stage: its status, counts, folder and output files (quiet:
    the output files only), and for extract and evaluate a glimpse of the results."""
    files = [store.display(name, f) for f in m.get("files", [])]
    if quiet:
        for f in files:
            typer.echo(f)
        return
    what = f"off: {m['off']}" if "off" in m else _summary(m)        # a stage with nothing to do says why
    typer.echo(f"{name:>10} [{m['status']}] {what}  → {store.display(name)}")
    for f in files:
        typer.echo(f"{'':>12}{f}")
    _show(name, store.local)


def _show(name: str, run_dir: Path, n: int = 5) -> None:
    """After extract: the most confident triples with evidence; after evaluate: the metrics table."""
    if name == "extract":
        from graphmert.extract.triples import read_triples_jsonl

        path = run_dir / "extract" / "triples.jsonl"
        if not path.exists():
            return
        best = sorted(read_triples_jsonl(path), key=lambda t: (-t.confidence, -t.evidence_count,
                                                               t.head_name, t.relation, t.tail_name))[:n]
        for t in best:
            ev = t.evidence[0] if t.evidence else None
            typer.echo(f"  ({t.head_name}) -[{t.relation}]-> ({t.tail_name})  confidence "
                       f"{t.confidence:.3f}, {t.evidence_count} evidence, docs {', '.join(t.documents[:3])}")
            if ev is not None:
                typer.echo(f"      \"{' '.join(ev.sentence.split())[:160]}\"")
    elif name == "evaluate":
        md = run_dir / "evaluate" / "metrics.md"
        if md.exists():
            typer.echo(md.read_text(encoding="utf-8").rstrip())


def _stage_command(name: str) -> None:
    stage = CATALOG[name]               # name, command and help without importing the stage module

    def command(overrides: Optional[list[str]] = OVERRIDES, config: Optional[Path] = CONFIG,
                run_dir: str = RUN_DIR, quiet: bool = QUIET, skip_bad: bool = SKIP_BAD,
                force: bool = typer.Option(False, "--force", help="Rerun even if up to date."),
                scheduler: Optional[str] = SCHEDULER) -> None:
        _run_stages([name], config, run_dir, overrides, quiet, {name} if force else set(), skip_bad,
                    scheduler)

    command.__doc__ = f"{stage.help}\n\nWrites RUN/{name}/manifest.json."
    app.command(name=stage.cli_name, help=command.__doc__)(command)


for _name in CATALOG:
    if _name not in ("evaluate", "export"):
        _stage_command(_name)


@app.command(help=f"{CATALOG['export'].help}\n\nWrites RUN/export/manifest.json.")
def export(overrides: Optional[list[str]] = OVERRIDES, config: Optional[Path] = CONFIG,
           run_dir: str = RUN_DIR, quiet: bool = QUIET, skip_bad: bool = SKIP_BAD,
           formats: list[str] = typer.Option([], "--format", "-f", help="ttl, nt, jsonld, kgx, trig, "
                                             "nq, store (repeatable); replaces export.formats."),
           force: bool = typer.Option(False, "--force", help="Rerun even if up to date."),
           scheduler: Optional[str] = SCHEDULER) -> None:
    overrides = list(overrides or [])
    if formats:
        overrides.append("export.formats=[" + ",".join(formats) + "]")
    _run_stages(["export"], config, run_dir, overrides, quiet, {"export"} if force else set(), skip_bad,
                scheduler)


@app.command(help=f"{CATALOG['evaluate'].help}\n\nWrites RUN/evaluate/metrics.json and metrics.md.")
def evaluate(overrides: Optional[list[str]] = OVERRIDES, config: Optional[Path] = CONFIG,
             run_dir: str = RUN_DIR, quiet: bool = QUIET, skip_bad: bool = SKIP_BAD,
             gold: list[Path] = typer.Option([], "--gold", "-g", help="Gold file (PubTator or BioC); "
                                             "repeatable; replaces evaluate.gold.", dir_okay=False),
             force: bool = typer.Option(False, "--force", help="Rerun even if up to date."),
             scheduler: Optional[str] = SCHEDULER) -> None:
    overrides = list(overrides or [])
    if gold:
        overrides.append("evaluate.gold=[" + ",".join(str(g) for g in gold) + "]")
    _run_stages(["evaluate"], config, run_dir, overrides, quiet, {"evaluate"} if force else set(),
                skip_bad, scheduler)


@app.command()
def run(overrides: Optional[list[str]] = OVERRIDES, config: Optional[Path] = CONFIG,
        run_dir: str = RUN_DIR, quiet: bool = QUIET, skip_bad: bool = SKIP_BAD,
        from_: Optional[str] = typer.Option(None, "--from", help="First stage to run."),
        to: Optional[str] = typer.Option(None, "--to", help="Last stage to run."),
        force: list[str] = typer.Option([], "--force", help="Rerun this stage even if up to date "
                                        "(repeatable; 'all' for every stage)."),
        scheduler: Optional[str] = SCHEDULER,
        dry_run: bool = typer.Option(False, "--dry-run", help="Say which stages would run and why, "
                                     "and run nothing.")) -> None:
    """Run the pipeline stages in order; stages that are up to date are skipped.

    A changed setting reruns the stages that depend on it and everything downstream; an interrupted
    run resumes with the shards it finished. An input file the config names that does not exist
    stops the run before its first stage. --dry-run says which stages a run would redo, and why,
    before anything long starts (the recognizer's training, the model's).
    """
    names = list(CATALOG)
    aliases = {s.cli_name: s.name for s in CATALOG.values()} | {n: n for n in names}

    def stage_name(opt_name: str, value: Optional[str]) -> Optional[str]:
        if value is None or value == "all":
            return value
        if value not in aliases:
            _fail(f"{opt_name}: unknown stage {value!r}; choose from {names}")
        return aliases[value]

    from_, to = stage_name("--from", from_), stage_name("--to", to)
    force = [stage_name("--force", f) for f in force]
    lo = names.index(from_) if from_ else 0
    hi = names.index(to) + 1 if to else len(names)
    forced = set(names) if "all" in force else set(force)
    if from_:
        forced |= {from_}
    selected = names[lo:hi]
    if "evaluate" in selected and to != "evaluate" and not _load(config, overrides).evaluate.gold:
        selected.remove("evaluate")          # evaluation runs only when gold is configured
    if dry_run:
        _print_plan(selected, config, run_dir, overrides, forced, skip_bad)
        return
    session = _run_stages(selected, config, run_dir, overrides, quiet, forced, skip_bad, scheduler,
                          folder_last=False)
    typer.echo(session.store.display() if quiet else f"run directory: {session.store.display()}")
    if not quiet and "export" in selected:
        typer.echo(_next_steps(session.store.display()))


def _print_plan(names: list[str], config: Optional[Path], run_dir: str, overrides, forced: set[str],
                skip_bad: bool) -> None:
    """``run --dry-run``: per stage, whether the run would skip it, run it (and why: the reasons of
    :func:`pipelines.stage.stale_reason`, against the outputs there now), or run it only if an
    upstream stage that reruns changes its output. Reads manifests, checks and hashes inputs (a missing
    one fails the plan, naming its stage and path, as it would fail the run); writes nothing."""
    from pipelines.stage import manifest_path, stale_reason

    if is_url(run_dir):
        _fail(f"--dry-run reads a local run directory; {run_dir} is a URL")
    extra = ["corpus.skip_bad_records=true", "kg.skip_bad_records=true"] if skip_bad else []
    cfg = _load(config, [*(overrides or []), *extra])
    local, again = Path(run_dir), []
    for name in names:
        stage = _stage(name)
        behind = [u for u in stage.upstream if u in again]
        with _errors(name):
            check_inputs(stage, cfg)
            if not manifest_path(local, name).is_file():
                what = "would run: no earlier output"
            elif name in forced:
                what = "would run: forced"
            elif reason := stale_reason(stage, cfg, local):
                what = f"would run: {reason}"
            elif behind:
                what = f"may run: after {', '.join(behind)} (if {'their' if len(behind) > 1 else 'its'} output changes)"
            else:
                what = "up to date: skipped"
        if not what.startswith("up to date"):
            again.append(name)
        typer.echo(f"{stage.cli_name:>12}  {what}")
    typer.echo(f"run directory: {run_dir} (nothing was run)")


def _next_steps(run_dir: str) -> str:
    """How to query and browse a run's exported KG (what `make demo` ends with)."""
    exe = sys.argv[0] if Path(sys.argv[0]).name == "graphmert" else "graphmert"
    return (f"query it:  {exe} query --run-dir {run_dir} examples/genes-t2d.rq   (any SPARQL file, or -)\n"
            f"browse it: {exe} serve --run-dir {run_dir}   (then open the address it prints)")


@app.command()
def update(run_dir: str = RUN_DIR,
           add: list[Path] = typer.Option([], "--add", "-a", help="Corpus file, or folder of .txt abstracts "
                                          "(one per file, named by its id), whose new documents are "
                                          "extracted into the run's KG (repeatable; any reader's format)."),
           remove: list[str] = typer.Option([], "--remove", help="Id of a document whose evidence leaves "
                                            "the KG (repeatable)."),
           remove_file: Optional[Path] = typer.Option(None, "--remove-file", dir_okay=False,
                                                      help="File of document ids to remove, one per line."),
           fmt: str = typer.Option("auto", "--format", help="Reader for the --add files ('auto': by "
                                   "suffix)."),
           quiet: bool = QUIET, scheduler: Optional[str] = SCHEDULER) -> None:
    """Add documents to a finished run's knowledge graph, or remove them, without rebuilding it.

    Added documents are extracted with the run's own config and trained model; their evidence merges
    into existing edges and confidences are recomputed. A document already in the KG is skipped.
    Removing a document drops only its evidence; edges left without evidence disappear. The export,
    report and evaluation of the run are then brought up to date. docs/PIPELINE.md, "Updates".
    """
    if not add and not remove and remove_file is None:
        _fail("update: nothing to do; give --add PATH, --remove ID or --remove-file FILE")
    with _errors():
        from pipelines import update as upd

        ids = list(remove)
        if remove_file is not None:
            try:
                ids += remove_file.read_text(encoding="utf-8").split()
            except OSError as e:
                raise ConfigError(f"--remove-file {remove_file}: cannot read it ({e.strerror})") from None
        if is_url(run_dir):
            raise ConfigError(f"update: {run_dir}: updates work on a local run directory; copy the run "
                              "here first")
        session = Session(upd.run_config(Path(run_dir)).pipeline, run_dir, scheduler, quiet)
    with _errors(run_dir=session.store.local), ExitStack() as stack:
        stack.enter_context(session)
        setup_logging(session.store.local, quiet)
        records = []
        with _errors("update", session.store.local):
            if add:
                records.append(upd.add_documents(session, add, fmt, quiet))
            if ids:
                records.append(upd.remove_documents(session, upd.check_ids(ids, "--remove"), quiet))
    for r in records:
        typer.echo(_update_line(r))


def _update_line(r: dict) -> str:
    if "removed" in r:
        what = f"removed {len(r['removed'])} document(s)"
        what += f", {len(r['not_in_kg'])} not in the KG" if r["not_in_kg"] else ""
    else:
        what = f"added {r['added']} document(s), {r['already_in_kg']} already in the KG"
    tail = f": the KG has {r['triples_after']} triples" if r["changed"] else ": nothing changed"
    if r.get("brought_up_to_date"):
        tail = (f": the KG is unchanged; {', '.join(r['brought_up_to_date'])} did not match it "
                "(an interrupted update?) and ran again")
    return f"{r['activity'] if r['changed'] else 'update'}: {what}{tail}"


# -- commands on a local run directory: calibrate, and load / query on the run's SPARQL store -------

LOCAL_RUN_DIR = typer.Option(..., "--run-dir", "-r",
                             help="Run directory (a local path) whose export to load or query.")


def _local_run(run_dir: str, command: str) -> Path:
    """``--run-dir`` as a local path; a URL is refused (typed as a string, not a Path, which would
    fold ``s3://`` into ``s3:/`` before the check)."""
    if is_url(run_dir):
        raise ConfigError(f"{command}: {run_dir}: works on a local run directory only; copy the run "
                          "here first")
    return Path(run_dir)


@app.command()
def calibrate(run_dir: str = typer.Option(..., "--run-dir", "-r",
                                          help="A finished run (a local path) extracted without a map "
                                                "('extract.calibration=[]'), on documents with gold."),
              gold: list[Path] = typer.Option([], "--gold", "-g", dir_okay=False,
                                              help="Gold file (PubTator or BioC); repeatable; default: "
                                                   "the run's evaluate.gold."),
              quiet: bool = QUIET) -> None:
    """Fit extract.calibration (Platt scaling of graphmert's confidences) on a run with gold.

    Prints the config lines to set: the map (a, b), and the run's values of the settings that make
    the confidences (extract.calibration_fitted_with), so that a config whose settings differ from
    them is refused rather than misreporting how often its triples hold. Fit on a held-out slice like
    the documents the map will be used on (docs/EVALUATION.md, "Using it on your own data"). Writes
    RUN/calibrate/calibration.json.
    """
    with _errors("calibrate"):
        from pipelines.calibrate import CALIBRATION_FILE, config_lines, fit_run

        run = _local_run(run_dir, "calibrate")
        rec = fit_run(run, gold)
    path = run / "calibrate" / CALIBRATION_FILE
    typer.echo(path if quiet else f"{config_lines(rec)}\nthe fit's record: {path}")


@app.command()
def load(run_dir: str = LOCAL_RUN_DIR, quiet: bool = QUIET) -> None:
    """Build (or rebuild) the run's SPARQL store, RUN/export/store, from its exported RDF.

    Loads RUN/export/kg.nq, else kg.nt (else kg.trig, kg.ttl) into an embedded Oxigraph database,
    atomically. The export stage does the same when export.formats has 'store' (the default).
    """
    with _errors("load"):
        from pipelines.stages.export import load_store

        rec = load_store(_local_run(run_dir, "load"))
    if quiet:
        typer.echo(rec["path"])
        return
    typer.echo(f"store: {rec['triples']} triples from {rec['source']} in {rec['load_seconds']:.2f}s "
               f"→ {rec['path']}")


@app.command()
def query(source: str = typer.Argument(..., metavar="QUERY", help="A SPARQL query file (.rq), or - "
                                       "to read the query from stdin.", show_default=False),
          run_dir: str = LOCAL_RUN_DIR,
          fmt: str = typer.Option("table", "--format", "-f", help="Output: table (aligned columns and "
                                  "a row count), csv (SPARQL 1.1 CSV), tsv (plain values) or json "
                                  "(SPARQL 1.1 Query Results JSON).")) -> None:
    """Run a SPARQL query (SELECT, ASK, CONSTRUCT, DESCRIBE) on the run's store; print the results.

    The store (RUN/export/store) is opened read-only; SPARQL Update is refused. When the run has
    exported RDF but no store yet, the store is built first (a note goes to stderr). docs/EXPORT.md,
    "SPARQL store".
    """
    with _errors("query"):
        from graphmert.export import store as kgstore
        from pipelines.stages.export import load_store, store_source

        if fmt not in kgstore.RESULT_FORMATS:
            raise ConfigError(f"--format: {fmt!r} is not a result format; choose from "
                              f"{list(kgstore.RESULT_FORMATS)}")
        text = _query_text(source)
        run = _local_run(run_dir, "query")
        path = run / "export" / kgstore.STORE_DIR
        if not kgstore.is_store(path):
            source = store_source(run)
            typer.echo(f"no SPARQL store at {path} yet: loading {source.name} into it (as `graphmert "
                       "load` does)", err=True)
            load_store(run)
        result = kgstore.run_query(kgstore.open_store(path), text)
        typer.echo(kgstore.format_result(result, fmt), nl=False)


def _query_text(source: str) -> str:
    """The SPARQL text of QUERY: a file, or stdin for ``-``."""
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"QUERY {source}: cannot read the SPARQL file ({why})") from None


def _parameters(cfg, run_dir: Optional[Path]) -> dict:
    """Parameter counts of the configured model, built on the meta device (no memory).

    Vocabulary size and relation count come from a run directory when given (its tokenizer and
    relation map), else from ``tokenizer.vocab_size`` and the configured seed KG (loaded).
    """
    import torch

    from graphmert.corpus.tokenizer import load_tokenizer
    from graphmert.kg.graph import load_relation_map
    from graphmert.kg.loaders import load_kg
    from graphmert.model import build_model, parameter_breakdown

    vocab, relations, source = cfg.tokenizer.vocab_size, 0, "no seed KG configured"
    if run_dir is not None and (run_dir / "tokenizer" / "tokenizer.json").exists():
        vocab = load_tokenizer(run_dir / "tokenizer" / "tokenizer.json").get_vocab_size()
    if run_dir is not None and (run_dir / "graphs" / "relation_map.json").exists():
        relations = len(load_relation_map(run_dir / "graphs" / "relation_map.json"))
        source = str(run_dir / "graphs" / "relation_map.json")
    elif cfg.kg.path or cfg.kg.nodes:
        relations, source = len(load_kg(cfg.kg).relations), "the configured seed KG"
    with torch.device("meta"):
        parts = parameter_breakdown(build_model(cfg.model, vocab, relations))
        per_relation = parameter_breakdown(build_model(cfg.model, vocab, 1))["relations"]
    return {**parts, "vocab_size": vocab, "num_relations": relations, "relations_from": source,
            "per_relation": per_relation}


@app.command()
def info(overrides: Optional[list[str]] = OVERRIDES, config: Optional[Path] = CONFIG,
         run_dir: Optional[Path] = typer.Option(None, "--run-dir", "-r", file_okay=False,
                                                help="Describe this run: the config its stages last ran "
                                                     "with (RUN/config.yaml, unless --config is given), "
                                                     "and the vocabulary size and relation count of its "
                                                     "tokenizer and relation map."),
         as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
         keys: bool = typer.Option(False, "--keys", help="List every config key with its type, default "
                                   "and help (as section.key=default, ready to pass as an override), "
                                   "and nothing else.")) -> None:
    """Print the resolved config (a run's own with --run-dir), parameter counts, software versions and
    the compute device."""
    import yaml

    if keys:
        _print_keys(as_json)
        return
    if config is None and run_dir is not None and (run_dir / "config.yaml").is_file():
        config = run_dir / "config.yaml"            # the run's model, not the defaults' 12 layers
    cfg = _load(config, overrides)
    with _errors():
        params = _parameters(cfg, run_dir)
    versions = {"graphmert": __version__, "python": platform.python_version()}
    for mod in ("torch", "torch_geometric", "tokenizers", "spacy", "scispacy", "rdflib", "dask",
                "numpy", "pyarrow"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover - optional at info time
            versions[mod] = "not installed"
    import torch

    device = {"cuda_available": torch.cuda.is_available(),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
              "threads": torch.get_num_threads()}
    report = {"config": to_dict(cfg), "parameters": params, "versions": versions, "device": device}
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=str))
        return
    typer.echo(f"# resolved config: {config or 'the defaults'}" + (", with the overrides" if overrides else ""))
    typer.echo(yaml.safe_dump(report["config"], sort_keys=False).rstrip())
    typer.echo("# parameters")
    for k in ("embeddings", "encoder", "relations", "heads", "total"):
        typer.echo(f"{k}: {params[k]:,}")
    typer.echo(f"(vocabulary {params['vocab_size']:,}; {params['num_relations']} relations from "
               f"{params['relations_from']}, {params['per_relation']:,} parameters each)")
    typer.echo("# versions")
    for k, v in versions.items():
        typer.echo(f"{k}: {v}")
    typer.echo("# device")
    for k, v in device.items():
        typer.echo(f"{k}: {v}")


def _override_text(value) -> str:
    """A default as it would be written in a ``section.key=value`` override."""
    if isinstance(value, str):
        return value if value else "''"
    return json.dumps(value, separators=(",", ":"))


def _print_keys(as_json: bool) -> None:
    """``info --keys``: every key of :func:`graphmert.config.describe`, grouped by section."""
    rows = describe()
    if as_json:
        typer.echo(json.dumps([{"key": k, "type": t, "default": d, "help": h} for k, t, d, h in rows],
                              indent=2, default=str))
        return
    section = None
    for key, tp, default, help_ in rows:
        if key.split(".")[0] != section:
            section = key.split(".")[0]
            typer.echo(f"{'' if section == rows[0][0].split('.')[0] else chr(10)}# {section}")
        typer.echo(f"{key}={_override_text(default)}  ({tp}){'  ' + help_ if help_ else ''}")


# -- serve: the local explorer (pipelines/serve.py, docs/EXPLORER.md) ------------------------------


@app.command()
def serve(run_dir: Path = typer.Option(..., "--run-dir", "-r", file_okay=False,
                                       help="Run directory whose knowledge graph to browse (it needs "
                                            "extract/triples.jsonl; SPARQL also needs export/store)."),
          port: int = typer.Option(8765, "--port", "-p",
                                   help="Port to listen on; 0 picks any free port."),
          host: str = typer.Option("127.0.0.1", "--host",
                                   help="Loopback address to listen on (127.0.0.1, ::1 or localhost); "
                                        "other addresses are refused: the explorer has no login.")
          ) -> None:
    """Browse a run's knowledge graph in a web browser: a read-only local server.

    Search entities by name or CURIE, see each entity's triples with their evidence sentences (head
    and tail highlighted), follow links to neighbours, filter by relation and confidence, download
    the view as TSV, and run SPARQL on the run's store. Prints the URL to open; Ctrl-C stops it.
    Nothing is written and no file outside the explorer's own page is served. docs/EXPLORER.md.
    """
    with _errors():
        from pipelines.serve import make_server, serve_until_interrupted

        server = make_server(run_dir, host, port)
    typer.echo(f"GraphMERT explorer for {run_dir}: open {server.url}  (Ctrl-C stops it)")
    serve_until_interrupted(server)
    typer.echo("explorer stopped")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"graphmert {__version__} (code fingerprint {package_fingerprint()})")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and the code fingerprint, and exit.")
          ) -> None:
    """GraphMERT: distil a knowledge graph from biomedical abstracts and a seed KG."""


def reflow(text: str) -> str:
    """``text`` (a docstring, dedented) with each paragraph's lines joined into one: Typer's rich help
    keeps a docstring's line breaks after the first paragraph, so lines wrapped at the source's width
    came out ragged at a terminal's. Paragraphs stay apart, and so do the lines of a list (a line
    starting with "-", "*" or a digit and ".")."""
    out = []
    for para in inspect.cleandoc(text or "").split("\n\n"):
        lines = para.splitlines()
        if any(_LIST_ITEM.match(line) for line in lines):
            out.append(para)
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


_LIST_ITEM = re.compile(r"\s*([-*]|\d+\.)\s")

#: ``graphmert --help`` lists the commands a user starts from apart from the stages, which it lists in
#: the order ``graphmert run`` runs them
STAGE_PANEL = "Stages, one at a time (graphmert run runs them in this order)"
_stage_names = [e.cli_name for e in CATALOG.values()]


def _command_name(info: typer.models.CommandInfo) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


for _info in app.registered_commands:           # every command's help, as the terminal wraps it
    _info.help = reflow(_info.help or inspect.getdoc(_info.callback) or "")
    _info.rich_help_panel = STAGE_PANEL if _command_name(_info) in _stage_names else None
app.registered_commands.sort(key=lambda c: _stage_names.index(_command_name(c)) if _command_name(c) in _stage_names
                             else -1)


def main(argv: Optional[list[str]] = None) -> None:
    app(args=argv, prog_name="graphmert")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
