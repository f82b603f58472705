"""The explorer under concurrent load (issue #51, deliverable 5): a fast run of the loopback load
benchmark (``benchmarks/explorer_load.py``: 20 requests at once, slow clients holding connections),
a slow client that never blocks a concurrent request and is disconnected after the handler's
time-out, and a listen backlog that queues a burst of connections instead of dropping them."""

from __future__ import annotations

import http.client
import importlib.util
import socket
import threading
import time
from pathlib import Path

import pytest

from export.helpers import make_triples
from graphmert.extract.triples import write_triples_jsonl
from pipelines import serve
from pipelines.serve import make_server

ROOT = Path(__file__).resolve().parents[1]


def _benchmark():
    spec = importlib.util.spec_from_file_location("explorer_load", ROOT / "benchmarks" / "explorer_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def server(tmp_path):
    run = tmp_path / "run"
    (run / "extract").mkdir(parents=True)
    write_triples_jsonl(make_triples(), run / "extract" / "triples.jsonl")
    srv = make_server(run, "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _get(port: int, target: str, timeout: float = 5.0) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def test_load_benchmark_smoke_20_concurrent_requests(tmp_path):
    """The benchmark's own synthetic run (triples and their SPARQL store), served in a thread."""
    bench = _benchmark()
    srv = make_server(bench.synthetic_run(tmp_path, 300), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        row = bench.load(srv.server_address[1], requests=20, concurrency=20, slow=3, timeout=10)
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
    assert (row["answered"], row["errors"]) == (20, 0), row["first errors"]
    assert row["slow still open"] == 3                 # neither answered nor dropped: still waiting
    assert 0 < row["p50 ms"] <= row["p99 ms"] <= row["max ms"] < 10_000


def test_slow_clients_do_not_block_a_concurrent_request(server):
    """A client that sent half a request line and one that sent nothing hold connections while a
    normal request is answered at once."""
    port = server.server_address[1]
    partial = socket.create_connection(("127.0.0.1", port), timeout=5)
    partial.sendall(b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n")   # no blank line: unfinished
    silent = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        time.sleep(0.2)                    # both connections are accepted and their threads reading
        t0 = time.perf_counter()
        assert _get(port, "/api/summary", timeout=3) == 200
        assert _get(port, "/api/relations", timeout=3) == 200
        assert time.perf_counter() - t0 < 3
    finally:
        partial.close()
        silent.close()


def test_a_stalled_client_is_disconnected_after_the_timeout(server, monkeypatch):
    """The handler has a time-out (of seconds; here cut to 0.3 s): a client that stops in the middle
    of its request is disconnected without an answer instead of holding its thread for ever."""
    assert serve.Handler.timeout is not None and 0 < serve.Handler.timeout <= 60
    monkeypatch.setattr(serve.Handler, "timeout", 0.3)
    s = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
    try:
        s.sendall(b"GET /api/summ")
        t0 = time.perf_counter()
        assert s.recv(1024) == b""             # the server closed it, without an answer
        assert time.perf_counter() - t0 < 4
    finally:
        s.close()


def test_a_burst_of_connections_is_queued_not_dropped(tmp_path):
    """300 clients connect before the server accepts any (it is not serving yet): each connect
    completes at once in the listen backlog. With socketserver's default backlog of 5, the
    connections past it were dropped and retried by the client's kernel a second or more later."""
    run = tmp_path / "run"
    (run / "extract").mkdir(parents=True)
    write_triples_jsonl(make_triples(), run / "extract" / "triples.jsonl")
    srv = make_server(run, "127.0.0.1", 0)
    socks = []
    try:
        for _ in range(300):
            socks.append(socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=0.5))
    except OSError as e:
        pytest.fail(f"connection {len(socks) + 1} of 300 was not queued: {type(e).__name__}: {e}")
    finally:
        for s in socks:
            s.close()
        srv.server_close()


def test_a_client_that_leaves_before_its_answer_is_no_server_error(server, monkeypatch, caplog):
    """Writing the answer to a client that has gone (a broken pipe, a reset) is logged at debug
    level, not reported as a server error with a traceback, and the server goes on answering."""
    errors = []
    monkeypatch.setattr(server, "handle_error", lambda request, address: errors.append(address))
    real_send = serve.Handler._send

    def gone(self, response, body):
        if self.path == "/api/relations":
            raise BrokenPipeError(32, "Broken pipe")
        return real_send(self, response, body)

    monkeypatch.setattr(serve.Handler, "_send", gone)
    port = server.server_address[1]
    with caplog.at_level("DEBUG", logger="graphmert.serve"):
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            _get(port, "/api/relations", timeout=3)
        assert _get(port, "/api/summary", timeout=3) == 200
    assert errors == []
    assert any("closed the connection (BrokenPipeError)" in r.getMessage() for r in caplog.records)
