"""The explorer (``graphmert serve``) under concurrent load on loopback: latency and errors.

    .venv/bin/python benchmarks/explorer_load.py [--run-dir RUN] [--triples 5000] [--requests 200]
                                                 [--concurrency 200] [--slow-clients 5] [--out FILE]

The server is :func:`pipelines.serve.make_server` in a process of its own (so the load generator
does not share its interpreter lock), on a free loopback port, over ``--run-dir`` (a finished run,
e.g. the demo's) or, by default, a synthetic run of ``--triples`` triples with a SPARQL store.

``--requests`` requests go out from at most ``--concurrency`` client threads at once (the bound),
each on a connection of its own, released together: the run's page, ``/api/summary``,
``/api/relations``, ``/api/search``, ``/api/entity`` and a small ``/api/sparql`` SELECT in turn.
Before they start, ``--slow-clients`` connections are opened that send half a request line and then
nothing: a server that served one connection at a time, or ran out of workers, would stall behind
them. Reported: p50, p90, p99 and max latency (connect to last byte), requests per second, errors
(any status but 200, or a failed connection), and whether the slow clients were still connected
when the load finished (they must not have been answered or have blocked anyone).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, print_table, write_json  # noqa: E402

GENES = ["TCF7L2", "KCNJ11", "PPARG", "BRCA1", "TP53", "EGFR", "APOE", "INS", "LEP", "MTHFR"]
DISEASES = ["diabetes", "obesity", "breast cancer", "asthma", "hypertension", "alzheimer disease"]


def synthetic_triples(n: int, seed: int = 0) -> list:
    """``n`` merged gene → disease triples with one evidence sentence each, deterministically."""
    from graphmert.extract.triples import Evidence, Triple

    rng = random.Random(seed)
    out = []
    for i in range(n):
        g, d = rng.randrange(max(10, n // 4)), rng.randrange(max(6, n // 8))
        gene, dis = f"{GENES[g % len(GENES)]}{g}", f"{DISEASES[d % len(DISEASES)]} {d}"
        sentence = f"{gene} is associated with {dis} in cohort {i}."
        ev = Evidence(doc_id=f"doc{i}", chunk_id="c0", sentence=sentence, sentence_start=0,
                      head_start=0, head_end=len(gene), tail_start=sentence.index(dis),
                      tail_end=sentence.index(dis) + len(dis), confidence=0.5 + (i % 50) / 100)
        out.append(Triple(head_id=f"NCBIGene:{g}", head_name=gene, head_category="biolink:Gene",
                          relation="associated_with", tail_id=f"MESH:D{d:06d}", tail_name=dis,
                          tail_category="biolink:Disease", tail_source="mention",
                          confidence=ev.confidence, confidence_mean=ev.confidence, documents=[ev.doc_id],
                          evidence=[ev], run_id="load"))
    return out


def synthetic_run(folder: Path, n: int) -> Path:
    """A run directory with ``n`` synthetic triples (``extract/triples.jsonl``) and their store."""
    from graphmert.config import ExportConfig
    from graphmert.export.rdf import RunInfo, write_ntriples
    from graphmert.export.store import STORE_DIR, build_store
    from graphmert.export.terms import ExportTerms
    from graphmert.extract.triples import write_triples_jsonl

    triples = synthetic_triples(n)
    run = folder / "run"
    (run / "extract").mkdir(parents=True, exist_ok=True)
    write_triples_jsonl(triples, run / "extract" / "triples.jsonl")
    nt = run / "export" / "kg.nt"
    nt.parent.mkdir(parents=True, exist_ok=True)
    write_ntriples([triples], nt, ExportTerms(ExportConfig()), RunInfo(config_hash="load"))
    build_store(nt, run / "export" / STORE_DIR)
    return run


SERVER = """import sys
from pipelines.serve import make_server, serve_until_interrupted
server = make_server(sys.argv[1], port=0)
print(server.server_address[1], flush=True)
serve_until_interrupted(server)
"""


def start_server(run_dir: Path) -> tuple[subprocess.Popen, int]:
    """The explorer over ``run_dir`` in a child process: (process, port)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(run_dir)], stdout=subprocess.PIPE, text=True,
                            env=env)
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        raise SystemExit(f"the explorer did not start (exit {proc.wait()})")
    return proc, int(line)


def targets(port: int, n: int) -> list[str]:
    """``n`` request targets over the explorer's routes, in turn: fixed search words, and entity
    ids that the run's own ``/api/search`` gives (up to 50)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/api/search?q=a&limit=50")
    found = [e["curie"] for e in json.loads(conn.getresponse().read())["results"]] or ["none"]
    conn.close()
    query = urllib.parse.quote("SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 20")
    kinds = ["/", "/api/summary", "/api/relations", "/api/search?q={w}", "/api/entity?id={e}",
             f"/api/sparql?query={query}"]
    words = ["tcf", "diab", "obes", "brca", "asth", "egfr"]
    return [kinds[i % len(kinds)].format(w=words[i % len(words)], e=urllib.parse.quote(found[i % len(found)]))
            for i in range(n)]


def one_request(port: int, target: str, timeout: float) -> tuple[float, int | str]:
    """(seconds from connect to the last byte, status or the error's name)."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        r = conn.getresponse()
        r.read()
        return time.perf_counter() - t0, r.status
    except OSError as e:
        return time.perf_counter() - t0, type(e).__name__
    finally:
        conn.close()


def slow_clients(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that send half a request line and then nothing."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /api/summ")
        socks.append(s)
    return socks


def still_open(s: socket.socket) -> bool:
    """Whether the server has neither answered nor closed the slow connection ``s``."""
    s.setblocking(False)
    try:
        s.recv(1)                  # b"": closed by the server; bytes: answered
    except BlockingIOError:
        return True                # nothing to read yet: still waiting for the rest of its request
    except OSError:
        pass
    return False


def load(port: int, requests: int, concurrency: int, slow: int = 0, timeout: float = 30.0) -> dict:
    """Send ``requests`` requests with at most ``concurrency`` threads, all released at once, while
    ``slow`` slow clients hold connections; the latency percentiles, errors and throughput."""
    todo = targets(port, requests)
    hanging = slow_clients(port, slow)
    results: list[tuple[float, int | str, str]] = []
    lock, gate = threading.Lock(), threading.Barrier(min(concurrency, requests) + 1)
    it = iter(todo)

    def worker() -> None:
        gate.wait()
        while True:
            with lock:
                target = next(it, None)
            if target is None:
                return
            seconds, status = one_request(port, target, timeout)
            with lock:
                results.append((seconds, status, target))

    threads = [threading.Thread(target=worker) for _ in range(min(concurrency, requests))]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    open_slow = sum(still_open(s) for s in hanging)
    for s in hanging:
        s.close()
    return summarize(results, wall, requests, concurrency, slow, open_slow)


def summarize(results: list, wall: float, requests: int, concurrency: int, slow: int, open_slow: int) -> dict:
    """The row of one load run (latencies in milliseconds)."""
    ms = sorted(1000 * r[0] for r in results)
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    errors = [f"{r[2]}: {r[1]}" for r in results if r[1] != 200]
    return {"requests": requests, "concurrency": concurrency, "answered": len(results),
            "errors": len(errors), "p50 ms": round(q[49], 2), "p90 ms": round(q[89], 2),
            "p99 ms": round(q[98], 2), "max ms": round(ms[-1], 2), "req/s": round(len(ms) / wall, 1),
            "wall s": round(wall, 3), "slow clients": slow, "slow still open": open_slow,
            "first errors": errors[:5]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-dir", type=Path, help="a finished run to serve (default: a synthetic one)")
    ap.add_argument("--triples", type=int, default=5000, help="triples of the synthetic run")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=200, help="client threads at most (the bound)")
    ap.add_argument("--slow-clients", type=int, default=5)
    ap.add_argument("--out", type=Path, help="JSON results file (default: benchmarks/results/)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="graphmert-load-") as tmp:
        run = args.run_dir or synthetic_run(Path(tmp), args.triples)
        proc, port = start_server(run)
        try:
            row = load(port, args.requests, args.concurrency, args.slow_clients)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print_table([{k: v for k, v in row.items() if k != "first errors"}], "explorer under load (loopback)")
    for e in row["first errors"]:
        print("error:", e)
    write_json("explorer_load", [row], args.out, run=str(args.run_dir or f"synthetic, {args.triples} triples"))
    if row["errors"] or row["answered"] != args.requests:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
