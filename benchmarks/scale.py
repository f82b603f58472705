"""Corpus scale: wall time and peak memory of each stage as the corpus grows, with a trained model
reused, on gold mentions and on raw text.

    .venv/bin/python benchmarks/scale.py [--sizes 10000 30000 100000] [--modes gold raw]
                                         [--config configs/small.yaml] [--texts FILE ...]
                                         [--reference RUN] [--train-steps 30] [--ner-minutes 3]
                                         [--workers 2] [--scheduler local] [--work DIR [--resume]]
                                         [--to STAGE] [--relations R ...]
                                         [--out FILE] [section.key=value ...]

1. **Corpus.** A corpus of N documents is written from ``--texts`` (default: the 3,165 shared
   abstracts and the 8,274 texts of ``pubmed_unlabeled/``, shuffled together with seed 0 so that
   every size holds the same mix), repeated with new ids (``<id>.r<k>`` for the k-th repeat) until
   it holds N. ``gold`` keeps each text's annotated
   entities (the abstracts that have them); ``raw`` drops them, so the recognizer and the linker find
   the mentions.
2. **Model.** One reference run is trained once and reused at every size: ``--reference RUN`` (a
   finished run whose tokenizer and train stages match ``--config``; for ``raw`` also its ner and
   link stages), or else a short training (``--train-steps``) on the first texts, written to
   ``WORK/reference``. The ``raw`` reference adds the ner and link stages of
   ``configs/biored-raw.yaml``'s ``ner`` section, with ``--ner-minutes`` of recognizer training.
3. **Stages.** Each size runs, in its own run directory, ``ingest``, ``tokenizer`` (loading the
   reference's), ``chunks``, ``build-graphs``, ``extract`` (the reference's model, copied in as the
   train stage) and ``export``, each as its own ``graphmert`` process, so that a stage's memory is its
   own; ``--to STAGE`` stops each size after that stage (``--to graphs`` reaches sizes the extract
   stage would take hours on). Every size asks the relations the reference model was trained on (:func:`trained_relations`,
   as ``extract.relations``), or the subset ``--relations`` names (fewer queries a document), so
   that the work per document does not change with the corpus. A
   sampler reads the resident set size of that process (the driver) and of every process it
   started (LocalCluster workers and nannies) every 0.2 s. Extraction keeps every triple the
   extractor proposes (:data:`KEEP_ALL`: the short-trained model would pass almost none), so that the
   merge and export handle a real volume.

The table gives, per mode, size and stage: wall time (with the process start: imports, config,
cluster), the stage's own elapsed time (its manifest) and that per 1,000 documents, the driver's and
the largest worker's peak RSS, and the work the shard tasks did (the sum of their seconds, ``tasks``
in the manifest). The scaling table divides each size's per-document stage time and peak RSS by the
smallest size's: 1.0 is linear time and flat memory. Each size's rows are kept in ``WORK/rows.jsonl``
as soon as it finishes; ``--resume`` skips the sizes found there (the large sizes take hours).

**Projection.** A stage's time is split three ways, at the largest size ``n`` measured:
- ``task_s``, the shard tasks' summed seconds: work that spreads over workers;
- ``serial_s``, the stage's time outside its task phases (``elapsed − phase_s``, where ``phase_s``
  sums the wall seconds of the manifest's task groups): the driver's own work (the merge, the
  writing), which does not spread and is charged per document;
- ``tail_s``, the task phases' wall beyond ``task_s / W`` on the ``W`` workers measured: the last
  tasks running alone while the others idle. It is about one task long whatever the corpus size, so
  it is charged once per stage, as one mean task of each task group (``tail_s``), not per document.

The projection for ``D`` documents on ``N`` workers is, per stage,
``D/n · (serial_s + task_s / N) + tail_s``. Rows this benchmark wrote before it kept the phase
seconds (no ``phase_s``) take ``driver_s = max(elapsed − task_s / W, 0)`` per document instead,
which charges the tail per document too: an upper bound.
``--project 36000000 --project-workers 16 64 256`` prints it for PubMed.

The sampler needs ``psutil`` (a dependency of Dask's distributed).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, require_shared, write_json  # noqa: E402

#: the stages run at every size, as ``graphmert`` commands (stage name → command)
STAGES = {"ingest": "ingest", "tokenizer": "tokenizer", "chunks": "chunks", "graphs": "build-graphs",
          "extract": "extract", "export": "export"}
DEFAULT_TEXTS = (("biomed_abstracts_corpus", "abstracts.jsonl.gz"), ("pubmed_unlabeled", "texts.jsonl.gz"))
#: a model trained for a few steps passes almost no triple through the confidence and β filters,
#: which would leave the merge, the triple files and export nothing to do: every size keeps every
#: triple the extractor proposes (the model's work is the same)
KEEP_ALL = {"min_confidence": 0.0, "beta": 0.0}
#: the prefixes of ``configs/biored-raw.yaml``'s extract keys that the raw mode does not take: the
#: controls, the relation typer and the heads pooled with it (its BioRED evaluation, not recognition),
#: and the confidence map fitted under those settings
EVALUATION_KEYS = ("control", "typer", "related", "lexical", "calibration")
#: the record fields a scale corpus keeps (``entities`` in gold mode only)
KEPT = ("doc_id", "title", "abstract", "text", "source")
RAW_CONFIG = ROOT / "configs" / "biored-raw.yaml"


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("graphmert")       # the console script users run
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pipelines.cli"]


def _texts(paths: list[Path]) -> Iterator[dict]:
    """Every record of ``paths``, in order (JSON Lines, gzipped or not)."""
    for p in paths:
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def write_corpus(paths: list[Path], size: int, mode: str, out: Path, shuffle: bool = True) -> int:
    """``size`` documents from the texts of ``paths`` (in an order shuffled with seed 0, so that
    every size holds the same mix of the files), repeated with new ids, into ``out`` (gzipped JSON
    Lines); ``mode`` 'raw' drops the entities. Returns the number of distinct texts written."""
    keep = KEPT + (("entities",) if mode == "gold" else ())
    records = [{k: r[k] for k in keep if k in r} | {"doc_id": str(r.get("doc_id") or r.get("id"))}
               for r in _texts(paths)]
    if not records:
        raise SystemExit(f"no texts in {', '.join(map(str, paths))}")
    if shuffle:
        random.Random(0).shuffle(records)
    tmp = out.with_name(out.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for i in range(size):
            rec, repeat = records[i % len(records)], i // len(records)
            doc_id = rec["doc_id"] if repeat == 0 else f"{rec['doc_id']}.r{repeat}"
            f.write(json.dumps({**rec, "doc_id": doc_id}) + "\n")
    tmp.replace(out)
    return min(size, len(records))


class RssSampler:
    """Peak resident set size of a process and of each process it started, sampled every
    ``interval`` seconds on a thread (psutil). ``driver_mb``: the process's peak; ``workers_mb``: the
    largest peak of any descendant; ``processes``: how many descendants were seen."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        import psutil

        self._psutil, self._root = psutil, psutil.Process(pid)
        self._interval, self._stop = interval, threading.Event()
        self._peaks: dict[int, int] = {}
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except self._psutil.Error:          # the process has exited
            return
        for p in procs:
            try:
                rss = p.memory_info().rss
            except self._psutil.Error:
                continue
            self._peaks[p.pid] = max(self._peaks.get(p.pid, 0), rss)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._interval)

    @property
    def driver_mb(self) -> float:
        return self._peaks.get(self._root.pid, 0) / 2**20

    @property
    def workers_mb(self) -> float:
        return max((v for k, v in self._peaks.items() if k != self._root.pid), default=0) / 2**20

    @property
    def processes(self) -> int:
        return len(self._peaks) - (self._root.pid in self._peaks)


def run_command(args: list[str], log: Path) -> tuple[float, RssSampler]:
    """``graphmert ARGS`` in the repository root with its output in ``log``: (wall seconds, sampler)."""
    t = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"$ graphmert {' '.join(args)}\n")
        out.flush()
        proc = subprocess.Popen(_command() + args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        with RssSampler(proc.pid) as rss:
            code = proc.wait()
    if code:
        raise SystemExit(f"graphmert {' '.join(args[:1])} failed ({code}); see {log}:\n"
                         + log.read_text()[-3000:])
    return time.perf_counter() - t, rss


def write_configs(work: Path, config: Path, train_steps: int, ner_minutes: float) -> dict[str, Path]:
    """The benchmark's config per mode over ``config``: ``gold`` adds the short training and
    :data:`KEEP_ALL`; ``raw`` adds ``configs/biored-raw.yaml``'s ``ner`` section (``--ner-minutes`` of
    training) and its extract options for recognised mentions: not ``extract.paths``, nor its
    controls and relation-typer settings (:data:`EVALUATION_KEYS`), which are BioRED's evaluation
    and need its typed relations; the controls stay ``config``'s, as in ``gold``."""
    gold = {"base": str(config.resolve()), "train": {"max_steps": train_steps}, "extract": dict(KEEP_ALL)}
    raw_src = yaml.safe_load(RAW_CONFIG.read_text())
    extract = {k: v for k, v in raw_src.get("extract", {}).items()
               if k != "paths" and not k.startswith(EVALUATION_KEYS)}
    raw = {**gold, "ner": {**raw_src["ner"], "max_minutes": ner_minutes}, "extract": {**extract, **KEEP_ALL}}
    out = {}
    for mode, body in (("gold", gold), ("raw", raw)):
        out[mode] = work / f"scale-{mode}.yaml"
        out[mode].write_text(yaml.safe_dump(body, sort_keys=False))
    return out


def build_reference(work: Path, configs: dict[str, Path], texts: list[Path], modes: list[str],
                    common: list[str]) -> Path:
    """A run with a trained model on the first texts (gold mentions): ingest → train; with ``raw`` in
    ``modes`` also the ner and link stages of the raw config. Stages already finished are skipped."""
    ref = work / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    corpus = work / "reference-corpus.jsonl.gz"
    if not corpus.exists():          # the first file's texts, once each, in order
        write_corpus(texts[:1], sum(1 for _ in _texts(texts[:1])), "gold", corpus, shuffle=False)
    log = ref / "benchmark.log"
    print(f"reference run: training a model in {ref} ...", flush=True)
    run_command(["run", "--config", str(configs["gold"]), "--run-dir", str(ref), "--from", "ingest",
                 "--to", "train", "--quiet", f"corpus.paths=[{corpus}]", *common], log)
    if "raw" in modes:
        for stage in ("ner", "link"):
            print(f"reference run: {stage} ...", flush=True)
            run_command([stage, "--config", str(configs["raw"]), "--run-dir", str(ref), "--quiet",
                         f"corpus.paths=[{corpus}]", *common], log)
    return ref


def check_reference(ref: Path, modes: list[str]) -> Path:
    """``ref`` when it holds what every size reuses: a tokenizer, the graphs it trained on and a
    trained model (and for ``raw`` the ner and link stages); otherwise an error naming what is missing."""
    need = [ref / "tokenizer" / "tokenizer.json", ref / "graphs" / "manifest.json",
            ref / "train" / "manifest.json"]
    need += [ref / s / "manifest.json" for s in ("ner", "link") if "raw" in modes]
    missing = [str(p) for p in need if not p.is_file()]
    if missing:
        raise SystemExit(f"--reference {ref}: not a finished run to reuse; missing {', '.join(missing)}")
    return ref


def trained_relations(ref: Path) -> list[str]:
    """The relations the reference model was trained on: those its checkpoint records, else (a
    reference trained before checkpoints recorded them) those its graphs injected. The extract stage
    reads the checkpoint's list itself; for an older reference it would ask the relations each size's
    own graphs inject, which grow with the corpus (4 at 1,000 documents, 9 at 10,000 in the first
    measurement) and with them the work per document, so every size is given the list."""
    from graphmert.model.checkpoint import read_trained_relations

    model = ref / "train" / "model"
    if (model / "config.json").is_file():
        recorded = read_trained_relations(model, json.loads((model / "relation_map.json").read_text()))
        if recorded is not None:
            return recorded
    injected = json.loads((ref / "graphs" / "manifest.json").read_text()).get("injections_per_relation", {})
    return sorted(r for r, n in injected.items() if n)


def asked_relations(ref: Path, chosen: list[str] | None) -> list[str]:
    """The relations every size asks: ``chosen`` (``--relations``), each one the reference model was
    trained on, else all of those (:func:`trained_relations`)."""
    trained = trained_relations(ref)
    unknown = sorted(set(chosen or ()) - set(trained))
    if unknown:
        raise SystemExit(f"--relations: the reference model {ref / 'train' / 'model'} was not trained on "
                         f"{', '.join(unknown)}; it knows {', '.join(trained)}")
    return list(chosen) if chosen else trained


def _link_copy(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)


def _task_seconds(manifest: dict, key: str = "task_seconds") -> float:
    """The sum of ``key`` over the manifest's task groups: ``task_seconds`` (the tasks' own seconds)
    or ``seconds`` (each phase's wall time)."""
    return sum(t.get(key, 0.0) for t in manifest.get("tasks", {}).values())


def _mean_tasks(manifest: dict) -> float:
    """One mean task of each task group, summed: about the tail a phase's last task runs alone."""
    return sum(t.get("task_seconds", 0.0) / t["ran"] for t in manifest.get("tasks", {}).values()
               if t.get("ran"))


def run_size(work: Path, ref: Path, config: Path, texts: list[Path], mode: str, size: int,
             common: list[str], last: str = "export", relations: list[str] | None = None) -> list[dict]:
    """One corpus size through the stages of :data:`STAGES` up to ``last``: a row per stage.
    ``relations``: those extraction asks (default: every one the reference was trained on)."""
    run_dir = work / f"{mode}-{size}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    corpus = work / f"corpus-{mode}-{size}.jsonl.gz"
    if not corpus.exists():
        write_corpus(texts, size, mode, corpus)
    _link_copy(ref / "train", run_dir / "train")
    if mode == "raw":
        for stage in ("ner", "link"):
            _link_copy(ref / stage, run_dir / stage)
    log = run_dir / "benchmark.log"
    args = ["--config", str(config), "--run-dir", str(run_dir), "--quiet", f"corpus.paths=[{corpus}]",
            f"tokenizer.path={ref / 'tokenizer' / 'tokenizer.json'}",
            f"extract.relations=[{','.join(relations or trained_relations(ref))}]", *common]
    for stage in ("ner", "link"):      # gold: empty stages; raw: the reference's, skipped as up to date
        run_command([stage, *args], log)
    rows = []
    names = list(STAGES)
    for stage in names[:names.index(last) + 1]:
        command = STAGES[stage]
        print(f"{mode} {size}: {stage} ...", flush=True)
        wall, rss = run_command([command, *args], log)
        m = json.loads((run_dir / stage / "manifest.json").read_text())
        rows.append({"mode": mode, "documents": size, "stage": stage, "wall_s": round(wall, 1),
                     "stage_s": round(m["elapsed_s"], 1),
                     "s_per_1k_docs": round(1000 * m["elapsed_s"] / size, 2),
                     "task_s": round(_task_seconds(m), 1), "phase_s": round(_task_seconds(m, "seconds"), 1),
                     "tail_s": round(_mean_tasks(m), 1), "driver_MB": round(rss.driver_mb),
                     "worker_MB": round(rss.workers_mb), "processes": rss.processes,
                     "outputs": _outputs(stage, m)})
    return rows


def _outputs(stage: str, m: dict) -> str:
    """What the stage made, from its manifest (for the table)."""
    keys = {"ingest": ("documents",), "tokenizer": ("vocab_size",), "chunks": ("chunks",),
            "graphs": ("graphs", "injections"), "extract": ("triples", "recognized_documents"),
            "export": ("triples",)}[stage]
    return ", ".join(f"{k}={m[k]}" for k in keys if k in m)


def _ratio(value: float, base: float) -> float | None:
    """``value / base``, or None where the smallest size has nothing to compare with (a stage that
    ran in the driver alone has no worker peak; one that took no time has no time per document)."""
    return round(value / base, 2) if base > 0 else None


def scaling(rows: list[dict]) -> list[dict]:
    """Per mode and stage: each size's seconds per document and peak RSS over the smallest size's."""
    out = []
    for (mode, stage), group in itertools.groupby(sorted(rows, key=lambda r: (r["mode"], r["stage"],
                                                                             r["documents"])),
                                                  key=lambda r: (r["mode"], r["stage"])):
        group = list(group)
        first = group[0]
        for r in group[1:]:
            out.append({"mode": mode, "stage": stage,
                        "sizes": f"{first['documents']} → {r['documents']}",
                        "time_per_doc_ratio": _ratio(r["stage_s"] / r["documents"],
                                                     first["stage_s"] / first["documents"]),
                        "driver_MB_ratio": _ratio(r["driver_MB"], first["driver_MB"]),
                        "worker_MB_ratio": _ratio(r["worker_MB"], first["worker_MB"])})
    return out


def projection(rows: list[dict], documents: int, workers_measured: int, workers: list[int]) -> list[dict]:
    """Hours for ``documents`` on each count of ``workers`` (module docstring), per mode, from the
    largest size measured."""
    out = []
    for mode in sorted({r["mode"] for r in rows}):
        largest = max(r["documents"] for r in rows if r["mode"] == mode)
        stage_rows = [r for r in rows if r["mode"] == mode and r["documents"] == largest]
        for n in workers:
            total = sum(_projected_seconds(r, documents / largest, workers_measured, n) for r in stage_rows)
            out.append({"mode": mode, "documents": documents, "from": largest, "workers": n,
                        "hours": round(total / 3600, 1)})
    return out


def _projected_seconds(row: dict, scale: float, workers_measured: int, workers: int) -> float:
    """One stage's seconds at ``scale`` times its documents on ``workers`` (module docstring)."""
    if "phase_s" not in row:                              # measured before the phase seconds
        driver = max(row["stage_s"] - row["task_s"] / workers_measured, 0.0)
        return scale * (driver + row["task_s"] / workers)
    serial = max(row["stage_s"] - row["phase_s"], 0.0)
    return scale * (serial + row["task_s"] / workers) + row["tail_s"]


def measure(work: Path, ref: Path, configs: dict[str, Path], texts: list[Path], modes: list[str],
            sizes: list[int], common: list[str], resume: bool, last: str = "export",
            relations: list[str] | None = None) -> list[dict]:
    """Every mode and size through :func:`run_size`; each size's rows are appended to
    ``WORK/rows.jsonl`` as it finishes, so that hours of measurement survive a stop. With ``resume``
    the sizes found there are not run again (without it the file starts empty)."""
    done_file = work / "rows.jsonl"
    rows = [json.loads(line) for line in done_file.read_text().splitlines()] \
        if resume and done_file.exists() else []
    if not resume:
        done_file.write_text("")
    finished = {(r["mode"], r["documents"]) for r in rows}
    for mode in modes:
        for size in sizes:
            if (mode, size) in finished:
                print(f"{mode} {size}: measured before ({done_file})", flush=True)
                continue
            new = run_size(work, ref, configs[mode], texts, mode, size, common, last, relations=relations)
            with done_file.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in new)
            rows += new
    return [r for r in rows if r["mode"] in modes and r["documents"] in sizes]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 30000, 100000])
    ap.add_argument("--modes", nargs="+", choices=["gold", "raw"], default=["gold", "raw"])
    ap.add_argument("--config", type=Path, default=Path("configs/small.yaml"),
                    help="the run config (model, seed KG, settings; its corpus is replaced)")
    ap.add_argument("--texts", type=Path, nargs="+", default=None,
                    help="JSON Lines texts to build corpora from (default: the shared abstracts, "
                         "then pubmed_unlabeled); the reference model trains on the first file")
    ap.add_argument("--reference", type=Path, default=None,
                    help="a finished run to reuse (tokenizer, train; ner and link for raw)")
    ap.add_argument("--train-steps", type=int, default=30, help="the reference model's training steps")
    ap.add_argument("--ner-minutes", type=float, default=3.0, help="the reference recognizer's budget")
    ap.add_argument("--workers", type=int, default=2, help="pipeline.workers")
    ap.add_argument("--scheduler", default="local", help="pipeline.scheduler ('local', 'synchronous')")
    ap.add_argument("--work", type=Path, default=None, help="keep corpora and runs here (else a temp dir)")
    ap.add_argument("--project", type=int, default=36_000_000, help="documents to project the time for")
    ap.add_argument("--project-workers", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--resume", action="store_true",
                    help="keep the sizes already measured in WORK/rows.jsonl (needs --work)")
    ap.add_argument("--to", choices=list(STAGES), default="export",
                    help="the last stage run at each size (the sizes' rows then cover the stages up to it; "
                         "the extract stage takes most of the time: --to graphs measures the rest at sizes "
                         "extract would take hours on)")
    ap.add_argument("--relations", nargs="+", default=None,
                    help="ask only these of the reference model's relations (default: all of them); "
                         "fewer relations are fewer queries a document, for sizes that would take hours")
    ap.add_argument("overrides", nargs="*", help="extra dotted overrides for every run")
    args = ap.parse_args()
    texts = args.texts or [require_shared(*p) for p in DEFAULT_TEXTS]
    if "raw" in args.modes:
        require_shared("reference_vocabularies")
    if args.resume and args.work is None:
        ap.error("--resume needs --work (the folder whose rows.jsonl holds the sizes measured)")
    os.environ.pop("DASK_SCHEDULER_ADDRESS", None)      # this benchmark starts its own clusters
    work = (args.work or Path(tempfile.mkdtemp(prefix="graphmert-scale-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    common = [f"pipeline.scheduler={args.scheduler}", f"pipeline.workers={args.workers}", *args.overrides]
    try:
        configs = write_configs(work, ROOT / args.config, args.train_steps, args.ner_minutes)
        ref = check_reference(args.reference.resolve(), args.modes) if args.reference else \
            build_reference(work, configs, texts, args.modes, common)
        relations = asked_relations(ref, args.relations)
        rows = measure(work, ref, configs, texts, args.modes, sorted(args.sizes), common, args.resume, args.to,
                       relations=relations)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    measured = 1 if args.scheduler == "synchronous" else args.workers
    print_table(rows, f"stages by corpus size ({args.config}, {args.scheduler} scheduler, "
                      f"{args.workers} workers, {os.cpu_count()} CPUs)")
    ratios = scaling(rows)
    print_table(ratios, "per-document time and peak RSS over the smallest size (1.0: linear, flat)")
    proj = projection(rows, args.project, measured, args.project_workers)
    print_table(proj, "projection: per stage, (serial + task / workers) per document, plus one tail "
                      "(module docstring)")
    write_json("scale", rows, args.out, config=str(args.config), scheduler=args.scheduler,
               workers=args.workers, cpus=os.cpu_count(), scaling=ratios, projection=proj,
               overrides=args.overrides, relations=relations)


if __name__ == "__main__":
    main()
