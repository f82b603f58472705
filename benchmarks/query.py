"""SPARQL over an export: load time and query latency, Oxigraph store vs rdflib, at 100k and 1M triples.

    .venv/bin/python benchmarks/query.py [--sizes 100000 1000000] [--repeats 5] [--rdflib-max N]
                                         [--piece-mb MB] [--timeout S] [--out FILE]

Data: the synthetic merged triples of ``benchmarks/export.py`` (genes, diseases, chemicals and
phenotypes with CURIEs, eight relations, 1–3 evidence sentences and documents each) written by the
exporter's own N-Triples writer (:func:`graphmert.export.rdf.write_ntriples`: the association node
with biolink:subject / predicate / object, confidence, supporting text, publications; labels and
categories of the entities), cut to exactly N distinct statements (shards repeat the descriptions
of their entities; repeats are dropped, so both engines hold exactly N triples).

Per size, each engine runs in its own subprocess (peak RSS is that engine's alone; a run past
``--timeout`` seconds is reported as such):

* ``oxigraph`` — :func:`graphmert.export.store.build_store` (bulk load into an on-disk store in
  pieces of ``--piece-mb`` MB, 32 by default: the loader's memory follows the piece; a piece larger
  than the file loads it whole), flushed, then the store is reopened read-only (:func:`~graphmert.export.store.open_store`, timed
  as ``open s``) and queried through :func:`~graphmert.export.store.run_query`;
* ``rdflib`` — ``rdflib.Graph().parse(kg.nt)`` (its in-memory store; there is nothing to reopen: a
  new process parses again), then ``Graph.query``.

Queries (latency: the median of ``--repeats`` runs, results fully read; the row count must be the
same for both engines):

* ``T2D-like``  — the README's "genes associated with type 2 diabetes" query, for the disease with
  the most associations (found beforehand, not timed);
* ``count by predicate`` — associations per Biolink predicate (``COUNT … GROUP BY``), a full scan;
* ``one-hop``   — every statement into or out of that disease, with the labels of its neighbours.

``--rdflib-max`` skips rdflib above that many triples (the row shows why).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, write_json  # noqa: E402

from graphmert.export.store import LOAD_PIECE_BYTES  # noqa: E402

ENGINES = ("oxigraph", "rdflib")
PREFIXES = """PREFIX biolink: <https://w3id.org/biolink/vocab/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
QUERIES = {
    "T2D-like": PREFIXES + """
SELECT ?gene ?name ?predicate ?confidence
       (GROUP_CONCAT(DISTINCT ?text; separator=" | ") AS ?evidence)
       (GROUP_CONCAT(DISTINCT STR(?publication); separator=" ") AS ?publications)
WHERE {
  ?association a biolink:Association ;
               biolink:predicate ?predicate ;
               biolink:has_confidence_score ?confidence .
  { ?association biolink:subject ?gene ; biolink:object <DISEASE> . }
  UNION
  { ?association biolink:subject <DISEASE> ; biolink:object ?gene . }
  ?gene a biolink:Gene ;
        rdfs:label ?name .
  OPTIONAL { ?association biolink:supporting_text ?text }
  OPTIONAL { ?association biolink:publications ?publication }
}
GROUP BY ?gene ?name ?predicate ?confidence
ORDER BY DESC(?confidence) ?gene
""",
    "count by predicate": PREFIXES + """
SELECT ?predicate (COUNT(?association) AS ?n)
WHERE { ?association biolink:predicate ?predicate }
GROUP BY ?predicate ORDER BY DESC(?n)
""",
    "one-hop": PREFIXES + """
SELECT ?direction ?p ?neighbour ?label
WHERE {
  { <DISEASE> ?p ?neighbour . BIND("out" AS ?direction) }
  UNION
  { ?neighbour ?p <DISEASE> . BIND("in" AS ?direction) }
  OPTIONAL { ?neighbour rdfs:label ?label }
}
""",
}
TOP_DISEASE = PREFIXES + """
SELECT ?d (COUNT(?a) AS ?n) WHERE { ?a biolink:object ?d . ?d a biolink:Disease }
GROUP BY ?d ORDER BY DESC(?n) ?d LIMIT 1
"""


def make_ntriples(n: int, path: Path) -> int:
    """Write exactly ``n`` distinct N-Triples statements shaped like the export to ``path``."""
    from export import synthetic_shards            # benchmarks/export.py

    from graphmert.config import ExportConfig
    from graphmert.export.rdf import RunInfo, write_ntriples
    from graphmert.export.terms import ExportTerms

    merged, full = max(10, n // 6), path.with_suffix(".full.nt")
    while True:
        write_ntriples(synthetic_shards(merged, 10_000), full, ExportTerms(ExportConfig()),
                       RunInfo(config_hash="bench"))
        seen: set[bytes] = set()
        with open(full, "rb") as src, open(path, "wb") as out:
            for line in src:
                key = hashlib.blake2b(line, digest_size=12).digest()
                if key not in seen and len(seen) < n:
                    seen.add(key)
                    out.write(line)
        full.unlink()
        if len(seen) == n:
            return n
        merged = int(merged * 1.3) + 1


def _peak_mb() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss``, not inherited from the parent that
    forked it), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0    # KiB on Linux


def _timed(fn, repeats: int) -> tuple[float, int]:
    """(median seconds, rows) of ``repeats`` calls of ``fn`` (which returns its row count)."""
    times, rows = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), rows


def worker(engine: str, nt: Path, disease: str, repeats: int, folder: Path, piece_mb: float) -> dict:
    """Load ``nt`` into ``engine`` (Oxigraph in pieces of ``piece_mb`` MB) and time the queries;
    returns one table row."""
    queries = {k: q.replace("DISEASE", disease) for k, q in QUERIES.items()}
    row: dict = {"engine": engine}
    if engine == "oxigraph":
        from graphmert.export.store import build_store, open_store, run_query

        baseline = _peak_mb()
        info = build_store([nt], folder / "store", piece_bytes=max(1, round(piece_mb * 2**20)))
        row["load s"], row["triples"], row["piece MB"] = info["seconds"], info["triples"], piece_mb
        t = time.perf_counter()
        store = open_store(folder / "store")
        row["open s"] = time.perf_counter() - t

        def run(q: str) -> int:
            return len(run_query(store, q).rows)
    else:
        import rdflib

        baseline = _peak_mb()
        t = time.perf_counter()
        g = rdflib.Graph().parse(nt, format="nt")
        row["load s"], row["triples"], row["open s"] = time.perf_counter() - t, len(g), "—"

        def run(q: str) -> int:
            return len(list(g.query(q)))
    for name, q in queries.items():
        seconds, rows = _timed(lambda: run(q), repeats)
        row[f"{name} ms"] = seconds * 1000
        row[f"{name} rows"] = rows
    row["peak RSS MB"] = _peak_mb()
    row["RSS growth MB"] = row["peak RSS MB"] - baseline
    if engine == "oxigraph":
        row["store MB"] = sum(p.stat().st_size for p in (folder / "store").iterdir()) / 1e6
    return row


def top_disease(nt: Path, folder: Path) -> str:
    """The disease with the most associations (an Oxigraph store built for the purpose)."""
    from graphmert.export.store import build_store, open_store, run_query

    build_store([nt], folder / "pick")
    return run_query(open_store(folder / "pick"), TOP_DISEASE).rows[0][0]


def _run_engine(engine: str, n: int, nt: Path, disease: str, args, tmp: Path) -> dict:
    if engine == "rdflib" and n > args.rdflib_max:
        return {"engine": engine, "triples": n, "load s": f"— (skipped: > --rdflib-max {args.rdflib_max})"}
    d = tmp / f"{engine}-{n}"
    d.mkdir()
    cmd = [sys.executable, __file__, "--worker", engine, "--nt", str(nt), "--disease", disease,
           "--repeats", str(args.repeats), "--dir", str(d), "--piece-mb", str(args.piece_mb)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"engine": engine, "triples": n, "load s": f"— (over --timeout {args.timeout:.0f}s)"}
    if proc.returncode:
        return {"engine": engine, "triples": n,
                "load s": f"— (failed, exit {proc.returncode}: {proc.stderr.strip()[-200:]})"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=5, help="query runs; the median is reported")
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    ap.add_argument("--rdflib-max", type=int, default=10_000_000, help="skip rdflib above this size")
    ap.add_argument("--piece-mb", type=float, default=LOAD_PIECE_BYTES / 2**20,
                    help="Oxigraph's bulk-load piece in MB (graphmert.export.store.LOAD_PIECE_BYTES by "
                         "default; larger than the file: one call, the whole file at once)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per engine and size")
    ap.add_argument("--out", type=Path, default=None)
    for hidden in ("--worker", "--nt", "--disease", "--dir"):
        ap.add_argument(hidden, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.nt), args.disease, args.repeats, Path(args.dir),
                                args.piece_mb)))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="graphmert-query-bench-") as tmp:
        tmp = Path(tmp)
        for n in args.sizes:
            nt = tmp / f"kg-{n}.nt"
            t = time.perf_counter()
            make_ntriples(n, nt)
            disease = top_disease(nt, tmp / f"pick-{n}")
            print(f"{n:,} triples: generated in {time.perf_counter() - t:.0f}s; disease {disease}",
                  flush=True)
            for engine in args.engines:
                rows.append({"size": n, **_run_engine(engine, n, nt, disease, args, tmp)})
                print(f"  {engine}: {rows[-1].get('load s')}", flush=True)
            nt.unlink()
    check = {}
    for n in args.sizes:
        done = [r for r in rows if r["size"] == n and "T2D-like rows" in r]
        if len(done) > 1:
            check[str(n)] = all(done[0][f"{q} rows"] == r[f"{q} rows"] for r in done for q in QUERIES)
    machine = _machine()
    print_table(rows, f"SPARQL: Oxigraph store vs rdflib ({machine}); latency = median of "
                      f"{args.repeats} runs")
    print(f"\nsame row counts for both engines: {check}")
    write_json("query", rows, args.out, machine=machine, repeats=args.repeats, same_rows=check,
               piece_mb=args.piece_mb,
               command="benchmarks/query.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
