"""The entity linker's build time, size, load time and linking throughput, with and without the
reference vocabularies (``ner.vocabularies``: NCBI Gene per species, orthologs, MeSH descriptors).

    .venv/bin/python benchmarks/linker.py [--config configs/biored-raw.yaml] [--documents N]
                                          [--passes 3] [--out FILE]

The linker is built as the ``link`` stage builds it (:func:`pipelines.stages.link.build_linker`'s
inputs: the gold-annotated documents of ``ner.paths`` from ``ner.sources``, the seed KG, the
cross-reference and names tables of ``--config``), once with no vocabularies and once with the
config's, each in a fresh process so that the peak resident memory is the build's own. Each then
saves the linker (time, gzipped bytes), loads it back (time), and links the mentions of the first
``--documents`` documents of BioRED dev, their ids removed, ``--passes`` times (mentions/s over the
passes after the first, whose look-ups fill the fuzzy index and its cache).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, require_shared, write_json  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(config: Path, vocabularies: bool, documents: int, passes: int) -> dict:
    """One row: build, save, load and link (see the module docstring), in this process."""
    from graphmert.config import load_config
    from graphmert.corpus.readers import read_corpus
    from graphmert.kg.loaders import load_kg
    from graphmert.ner.corpus import annotated_documents
    from graphmert.ner.linking import EntityLinker

    cfg = load_config(config)
    t0 = time.perf_counter()
    docs = list(annotated_documents(read_corpus(cfg.ner.paths), cfg.ner.sources))
    kg = load_kg(cfg.kg)
    read_s = time.perf_counter() - t0
    sources = cfg.ner.vocabularies if vocabularies else []
    t0 = time.perf_counter()
    linker = EntityLinker.build(docs, kg, cfg.ner.xref_tables, name_tables=cfg.ner.name_tables,
                                fuzzy_threshold=cfg.ner.fuzzy_threshold, vocabularies=sources)
    build_s = time.perf_counter() - t0
    peak = _peak_rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        path = linker.save(Path(tmp) / "linker.json.gz")
        save_s, size = time.perf_counter() - t0, path.stat().st_size
        t0 = time.perf_counter()
        linker = EntityLinker.load(path)
        load_s = time.perf_counter() - t0
    dev = [replace(d, mentions=[replace(m, ids=[]) for m in d.mentions])
           for d in list(read_corpus([require_shared("biored", "Dev.PubTator")]))[:documents]]
    mentions = sum(len(d.mentions) for d in dev)
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for d in dev:
            linker.link_mentions(d)
        times.append(time.perf_counter() - t0)
    steady = times[1:] or times
    return {"vocabularies": len(sources), "read inputs s": read_s, "build s": build_s,
            "peak RSS MB": peak, "file MB": size / 1e6, "save s": save_s, "load s": load_s,
            "mentions": mentions, "first pass mentions/s": mentions / times[0],
            "mentions/s": mentions * len(steady) / sum(steady)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "biored-raw.yaml")
    ap.add_argument("--documents", type=int, default=100, help="BioRED dev documents linked")
    ap.add_argument("--passes", type=int, default=3, help="linking passes over them")
    ap.add_argument("--one", choices=("with", "without"), help=argparse.SUPPRESS)  # a child process
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(measure(a.config, a.one == "with", a.documents, a.passes)))
        return
    require_shared("biored", "Dev.PubTator")
    rows = []
    for which in ("without", "with"):
        res = subprocess.run([sys.executable, __file__, "--config", str(a.config), "--documents",
                              str(a.documents), "--passes", str(a.passes), "--one", which],
                             cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"the {which}-vocabularies run failed:\n{res.stderr[-3000:]}")
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print_table(rows, f"entity linker, {a.config.name}: build, file, load, linking throughput")
    write_json("linker", rows, a.out, config=str(a.config), documents=a.documents, passes=a.passes)


if __name__ == "__main__":
    main()
