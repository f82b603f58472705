"""``graphmert serve``: a read-only local web explorer over a run's knowledge graph (docs/EXPLORER.md).

A standard-library :class:`~http.server.ThreadingHTTPServer` bound to a loopback address serves

=============================  ==================================================================
``GET /``                      the page (``pipelines/explorer_static/index.html``; ``/favicon.ico``:
                               204, no icon)
``GET /static/<file>``         the page's script and style sheet: only the files of the package's
                               own ``explorer_static`` folder, read into memory at start
``GET /api/summary``           run name, triple and entity counts, whether SPARQL is available
``GET /api/search?q=&limit=``  entities by name or CURIE (:meth:`ExplorerIndex.search`)
``GET /api/entity?id=``        an entity and its triples, both directions, with evidence spans;
                               filters ``relation=`` (repeatable), ``min_confidence=``, ``evidence=``
                               (sentences per triple, 1–50)
``GET /api/relations``         the run's relations with Biolink predicate and triple count
``GET|POST /api/sparql``       a SPARQL query (``query=`` parameter, a form body, or an
                               ``application/sparql-query`` body) on the run's store
                               (``RUN/export/store``, :mod:`graphmert.export.store`): JSON
                               ``kind``, ``columns``, ``rows``, ``boolean``; 400 with the message
                               for a malformed query or an update, 503 when the run has no store
``GET /api/view.tsv?id=``      the current view (same filters; no ``id``: the whole graph) as a
                               TSV download (:func:`write_view_tsv`)
=============================  ==================================================================

Everything else is 404; a path with ``.``/``..`` segments, backslashes or NUL bytes (also percent-
encoded), or a request target that is not a plain path (``http://…``, ``//host``) is refused (403 /
400), and methods other than GET and HEAD (POST only for ``/api/sparql``) get 405. The server reads
``RUN/extract/triples.jsonl`` and ``RUN/config.yaml`` once at start and never opens another run
file on request (the SPARQL store is opened read-only); it writes nothing. Requests whose ``Host``
header is not a loopback name are refused too, so a web page elsewhere cannot reach the server by
DNS rebinding.
"""

from __future__ import annotations

import errno
import io
import ipaddress
import json
import logging
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from graphmert.config import ConfigError, ExportConfig, load_config
from graphmert.export.explorer import ExplorerError, ExplorerIndex, write_view_tsv
from graphmert.extract.triples import read_triples_jsonl

__all__ = ["ServeError", "Explorer", "ExplorerServer", "open_explorer", "make_server",
           "serve_until_interrupted", "check_host", "DEFAULT_PORT", "TRIPLES_FILE"]

log = logging.getLogger("graphmert.serve")

DEFAULT_PORT = 8765
TRIPLES_FILE = Path("extract") / "triples.jsonl"
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8"}
MAX_BODY = 256 * 1024            # bytes of a POSTed SPARQL query
MAX_ROWS = 5000                  # SPARQL result rows sent to the page
LISTEN_BACKLOG = 1024            # connections the kernel queues before the server accepts them
CLIENT_TIMEOUT = 30.0            # seconds a connection may wait between bytes of its request
_STATIC_NAME = re.compile(r"^[A-Za-z0-9_-]+\.(?:html|js|css)$")
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
}


class ServeError(ConfigError):
    """The explorer cannot start as asked (no triples in the run directory, a non-loopback host, the
    port in use): a usage error, whose message says what to change."""


# --------------------------------------------------------------------------------------------------
# Start: the run's index, the static files, the store
# --------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Explorer:
    """What the request handlers read: the run directory, its index, the page's files (name →
    (bytes, content type)) and the SPARQL store, opened on first use (:meth:`store`)."""

    run_dir: Path
    index: ExplorerIndex
    static: dict[str, tuple[bytes, str]]
    _store: Any = field(default=None, init=False)
    _store_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def store(self) -> tuple[Any, str]:
        """(the read-only store, "") or (None, why there is none). A store built while the server
        runs (``graphmert load``) is found by the next query."""
        with self._store_lock:
            if self._store is not None:
                return self._store, ""
            try:
                from graphmert.export import store as kgstore
            except ImportError as e:
                return None, f"SPARQL needs the store module and pyoxigraph ({e})"
            path = self.run_dir / "export" / kgstore.STORE_DIR
            try:
                self._store = kgstore.open_store(path)
            except OSError as e:            # StoreError (no store here: its message says how to
                return None, f"SPARQL is unavailable: {e}"    # build one) or an unreadable folder
            return self._store, ""


def load_static() -> dict[str, tuple[bytes, str]]:
    """The page's files: every regular file of ``pipelines/explorer_static`` whose name is a plain
    ``name.html|js|css`` (no sub-folders, no links), read once."""
    folder = resources.files("pipelines") / "explorer_static"
    out = {}
    for item in folder.iterdir():
        name = item.name
        if _STATIC_NAME.match(name) and item.is_file() and not Path(str(item)).is_symlink():
            out[name] = (item.read_bytes(), STATIC_TYPES[Path(name).suffix])
    if "index.html" not in out:
        raise ServeError(f"the explorer page is missing from the installation ({folder}/index.html)")
    return out


def _export_config(run_dir: Path) -> ExportConfig:
    """The run's export settings (``RUN/config.yaml``, as the export stage used them), else the
    defaults: the page then shows the CURIEs and predicates of the run's export files."""
    path = run_dir / "config.yaml"
    return load_config(path).export if path.is_file() else ExportConfig()


def open_explorer(run_dir: Path) -> Explorer:
    """Check the run directory and index its triples. Raises :class:`ServeError` when it has no
    extracted triples, :class:`~graphmert.config.ConfigError` for a bad ``config.yaml``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ServeError(f"--run-dir {run_dir}: no such directory")
    path = run_dir / TRIPLES_FILE
    if not path.is_file():
        raise ServeError(f"{run_dir}: the run has no extracted triples ({path} is missing); run "
                         f"`graphmert extract --run-dir {run_dir}` first")
    try:
        index = ExplorerIndex.from_triples(read_triples_jsonl(path), _export_config(run_dir))
    except ValueError as e:
        if isinstance(e, ConfigError):
            raise
        raise ServeError(str(e)) from None
    return Explorer(run_dir=run_dir, index=index, static=load_static())


def check_host(host: str) -> str:
    """``host`` when it is ``localhost`` or a loopback address, else :class:`ServeError`: the
    explorer has no authentication, so it listens where only this machine can reach it."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ServeError(f"--host {host}: the explorer listens on a loopback address only (127.0.0.1, "
                     "::1 or localhost): it has no login; to reach it from elsewhere, forward the "
                     "port, e.g. `ssh -L 8765:127.0.0.1:8765 HOST`")


class ExplorerServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection (daemon threads, so Ctrl-C never waits on a
    client), so a slow client holds its own thread only, and no port sharing, so a port in use is an
    error rather than a silent second listener.

    Its listen backlog is :data:`LISTEN_BACKLOG` (the kernel caps it at ``net.core.somaxconn``), not
    socketserver's 5: with 200 clients connecting at once a backlog of 5 dropped connections,
    which the clients' kernels retried 1, 3, 7… seconds later (p99 over 30 s, time-outs:
    docs/experiments/explorer-load.md)."""

    daemon_threads = True
    allow_reuse_port = False
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], explorer: Explorer) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.explorer = explorer
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def make_server(run_dir: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> ExplorerServer:
    """An explorer server for ``run_dir`` listening on ``host:port`` (``port`` 0: any free port; the
    chosen one is in :attr:`ExplorerServer.url`). Raises :class:`ServeError` for a non-loopback host,
    a port out of range or in use, or a run without triples."""
    host = check_host(host)
    if not 0 <= port <= 65535:
        raise ServeError(f"--port {port}: not a port number (0 to 65535; 0 = any free port)")
    explorer = open_explorer(run_dir)
    try:
        return ExplorerServer((host, port), explorer)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is already in use (another explorer or program); "
                             "choose another with --port N, or --port 0 for any free port") from None
        if e.errno == errno.EACCES:
            raise ServeError(f"port {port} on {host}: permission denied (ports below 1024 need "
                             "privileges); choose another with --port N") from None
        raise


def serve_until_interrupted(server: ExplorerServer) -> None:
    """Serve until Ctrl-C (or :meth:`~socketserver.BaseServer.shutdown`), then close the socket."""
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# --------------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Response:
    """What a route answers: status, body and its content type, and extra headers."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


class HttpError(Exception):
    """A request the server refuses: answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _json(data: Any, status: int = 200) -> Response:
    return Response(status=status, body=json.dumps(data, ensure_ascii=False).encode("utf-8"))


def _param(params: dict[str, list[str]], name: str, default: str = "") -> str:
    values = params.get(name)
    return values[-1] if values else default


def _number(params: dict[str, list[str]], name: str, default: float, lo: float, hi: float) -> float:
    text = _param(params, name, "")
    try:
        value = float(text) if text.strip() else default
    except ValueError:
        raise HttpError(400, f"{name}: {text!r} is not a number") from None
    if not lo <= value <= hi:                                   # also refuses NaN
        raise HttpError(400, f"{name}: {text!r} is not a number from {lo:g} to {hi:g}")
    return value


def request_path(target: str) -> str:
    """The decoded path of a request target, or :class:`HttpError`: 400 for a target that is not a
    plain ``/path`` (an absolute URL, ``//authority``, ``*``), 403 for ``.``/``..`` segments,
    backslashes or NUL / control bytes, percent-encoded or not."""
    if not target.startswith("/") or target.startswith("//"):
        raise HttpError(400, "the request target must be a path starting with a single '/'")
    path = urlsplit(target).path
    decoded = unquote(unquote(path))            # twice: %252e%252e is refused too
    if "\\" in decoded or any(ord(c) < 32 or ord(c) == 127 for c in decoded):
        raise HttpError(403, "forbidden path")
    if any(seg in (".", "..") for seg in decoded.split("/")):
        raise HttpError(403, "forbidden path: no '.' or '..' segments")
    return decoded


def _static(app: Explorer, name: str) -> Response:
    hit = app.static.get(name)
    if hit is None:
        raise HttpError(404, f"no static file {name!r}")
    return Response(body=hit[0], content_type=hit[1])


def _summary(app: Explorer, params) -> Response:
    store, problem = app.store()
    return _json({"run": app.run_dir.resolve().name, "triples": len(app.index.triples),
                  "entities": len(app.index.entities), "sparql": store is not None,
                  "sparql_problem": problem})


def _search(app: Explorer, params) -> Response:
    limit = int(_number(params, "limit", 20, 1, 200))
    hits = app.index.search(_param(params, "q"), limit)
    return _json({"query": _param(params, "q"), "results": [e.to_dict() for e in hits]})


def _filters(app: Explorer, params) -> dict[str, Any]:
    relations = [r for r in params.get("relation", []) if r] or None
    return {"relations": relations,
            "min_confidence": _number(params, "min_confidence", 0.0, 0.0, 1.0)}


def _entity(app: Explorer, params) -> Response:
    ref = _param(params, "id").strip()
    if not ref:
        raise HttpError(400, "id: give an entity CURIE (search for it by name first)")
    entity = app.index.entity(ref)
    if entity is None:
        raise HttpError(404, f"no entity {ref!r} in this run; search for it by name")
    evidence = int(_number(params, "evidence", 5, 1, 50))
    edges = app.index.edges(entity.key, max_evidence=evidence, **_filters(app, params))
    return _json({"entity": entity.to_dict(), "triples": [e.to_dict() for e in edges]})


def _relations(app: Explorer, params) -> Response:
    return _json({"relations": app.index.relations()})


def _view_tsv(app: Explorer, params) -> Response:
    ref = _param(params, "id").strip()
    entity = app.index.entity(ref) if ref else None
    if ref and entity is None:
        raise HttpError(404, f"no entity {ref!r} in this run")
    edges = app.index.edges(entity.key if entity else None, max_evidence=0, **_filters(app, params))
    buf = io.StringIO()
    write_view_tsv(edges, buf)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", entity.curie if entity else "graph").strip("._") or "view"
    return Response(body=buf.getvalue().encode("utf-8"),
                    content_type="text/tab-separated-values; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="graphmert-{stem}.tsv"'})


def _sparql(app: Explorer, params) -> Response:
    text = _param(params, "query")
    if not text.strip():
        raise HttpError(400, "query: give a SPARQL query (SELECT, ASK, CONSTRUCT or DESCRIBE)")
    store, problem = app.store()
    if store is None:
        raise HttpError(503, problem)
    from graphmert.export import store as kgstore

    try:
        result = kgstore.run_query(store, text)
    except kgstore.QueryError as e:
        raise HttpError(400, str(e)) from None
    rows = result.rows
    return _json({"kind": result.kind, "columns": list(result.columns), "rows": rows[:MAX_ROWS],
                  "boolean": result.boolean, "total": len(rows), "truncated": len(rows) > MAX_ROWS})


GET_ROUTES: dict[str, Callable[[Explorer, dict], Response]] = {
    "/api/summary": _summary, "/api/search": _search, "/api/entity": _entity,
    "/api/relations": _relations, "/api/sparql": _sparql, "/api/view.tsv": _view_tsv,
}
POST_ROUTES = {"/api/sparql": _sparql}


def _loopback_host_header(value: str | None) -> bool:
    """Whether a ``Host`` header names this machine (``localhost`` or a loopback address)."""
    if not value:
        return False
    host = urlsplit("//" + value).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Handler(BaseHTTPRequestHandler):
    """Routes a request to :data:`GET_ROUTES` / :data:`POST_ROUTES` or a static file and writes the
    answer; every refusal is JSON ``{"error": ...}`` with its status."""

    server: ExplorerServer
    server_version = "graphmert-explorer"
    protocol_version = "HTTP/1.1"
    #: a client that stops sending (a half-sent request, an idle keep-alive connection) is
    #: disconnected after this many seconds, so it cannot hold its thread for ever
    timeout = CLIENT_TIMEOUT

    def version_string(self) -> str:
        return self.server_version            # no Python version in the Server header

    def do_GET(self) -> None:
        self._answer(self._route_get, body=True)

    def do_HEAD(self) -> None:
        self._answer(self._route_get, body=False)

    def do_POST(self) -> None:
        self._answer(self._route_post, body=True)

    def _refuse_method(self) -> None:
        self._answer(self._not_allowed, body=True)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    def _not_allowed(self) -> Response:
        path = request_path(self.path)
        allow = "GET, HEAD, POST" if path in POST_ROUTES else "GET, HEAD"
        raise _MethodNotAllowed(allow)

    def _route_get(self) -> Response:
        path = request_path(self.path)
        app = self.server.explorer
        if path in ("/", "/index.html"):
            return _static(app, "index.html")
        if path == "/favicon.ico":                    # browsers ask for it: no icon, no error
            return Response(status=204, content_type="image/x-icon")
        if path.startswith("/static/"):
            name = path[len("/static/"):]
            if not _STATIC_NAME.match(name):
                raise HttpError(404, "not found")
            return _static(app, name)
        route = GET_ROUTES.get(path)
        if route is None:
            raise HttpError(404, f"not found: {path} (the explorer serves its page and /api/ only)")
        return route(app, parse_qs(urlsplit(self.path).query, keep_blank_values=True))

    def _route_post(self) -> Response:
        path = request_path(self.path)
        route = POST_ROUTES.get(path)
        if route is None:
            raise _MethodNotAllowed("GET, HEAD")
        params = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        params.update(self._form())
        return route(self.server.explorer, params)

    def _form(self) -> dict[str, list[str]]:
        """The POST body: ``application/sparql-query`` (the query itself) or a URL-encoded form."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise HttpError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            raise HttpError(413, f"the request body is over {MAX_BODY} bytes")
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length > 0 else ""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype == "application/sparql-query":
            return {"query": [body]}
        return parse_qs(body, keep_blank_values=True)

    def _answer(self, route: Callable[[], Response], body: bool) -> None:
        try:
            if not _loopback_host_header(self.headers.get("Host")):
                raise HttpError(403, "the Host header must name this machine (localhost / 127.0.0.1)")
            response = route()
        except _MethodNotAllowed as e:
            response = _json({"error": f"method {self.command} not allowed here"}, 405)
            response.headers["Allow"] = e.allow
        except HttpError as e:
            response = _json({"error": str(e)}, e.status)
        except ExplorerError as e:
            response = _json({"error": str(e)}, 400)
        except Exception as e:  # noqa: BLE001 - a bug: answer 500, keep the traceback in the log
            log.exception("explorer: %s %s failed", self.command, self.path)
            response = _json({"error": f"internal error: {type(e).__name__}: {e}"}, 500)
        try:
            self._send(response, body)
        except (BrokenPipeError, ConnectionResetError) as e:
            # The client left before its answer was written (a closed tab, a client time-out):
            # nothing is wrong with the server, so no traceback; the connection is done.
            log.debug("explorer: %s %s: the client closed the connection (%s)",
                      self.command, self.path, type(e).__name__)
            self.close_connection = True

    def _send(self, r: Response, body: bool) -> None:
        self.send_response(r.status)
        for k, v in {**_HEADERS, "Content-Type": r.content_type,
                     "Content-Length": str(len(r.body)), **r.headers}.items():
            self.send_header(k, v)
        if r.status >= 400 and self.command not in ("GET", "HEAD"):
            self.send_header("Connection", "close")     # an unread body must not be parsed as a request
            self.close_connection = True
        self.end_headers()
        if body:
            self.wfile.write(r.body)

    def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 - the base class's name
        log.debug("explorer: " + format, *args)


class _MethodNotAllowed(Exception):
    def __init__(self, allow: str) -> None:
        super().__init__(allow)
        self.allow = allow
