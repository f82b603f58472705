"""``graphmert serve`` (pipelines/serve.py): the explorer's HTTP server over a small run directory.

A server on a free loopback port, in a thread, answers with the page, its static files and the JSON
API; it refuses traversal, other methods and foreign Host headers, writes nothing, and the command
line reports a port in use, a run without triples and a non-loopback host on one line.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.parse
from pathlib import Path

import pytest
from typer.testing import CliRunner

from export.helpers import make_triples
from graphmert.extract.triples import write_triples_jsonl
from pipelines.cli import app
from pipelines.serve import ServeError, check_host, make_server, request_path

runner = CliRunner()


def _store_module():
    try:
        from graphmert.export import store
    except ImportError:
        return None
    return store


def _build_store(run_dir: Path) -> bool:
    """Export the triples as N-Triples and load them into ``RUN/export/store`` when the store
    module is installed; False when it is not."""
    store = _store_module()
    if store is None:
        return False
    from graphmert.config import ExportConfig
    from graphmert.export.rdf import RunInfo, write_ntriples
    from graphmert.export.terms import ExportTerms

    nt = run_dir / "export" / "kg.nt"
    nt.parent.mkdir(parents=True, exist_ok=True)
    write_ntriples([make_triples()], nt, ExportTerms(ExportConfig()), RunInfo(config_hash="c0"))
    store.build_store(nt, run_dir / "export" / store.STORE_DIR)
    return True


def _make_run(root: Path, with_store: bool) -> Path:
    run = root / "run"
    (run / "extract").mkdir(parents=True)
    write_triples_jsonl(make_triples(), run / "extract" / "triples.jsonl")
    if with_store:
        _build_store(run)
    return run


class Client:
    """Raw HTTP requests to the server (http.client sends the target exactly as given)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def request(self, method: str, target: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, target, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def get(self, target: str) -> tuple[int, dict[str, str], bytes]:
        return self.request("GET", target)

    def json(self, target: str, status: int = 200) -> dict:
        code, headers, body = self.get(target)
        assert code == status, body
        assert headers["content-type"].startswith("application/json")
        return json.loads(body)


def _serve(run: Path):
    server = make_server(run, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    run = _make_run(tmp_path_factory.mktemp("serve"), with_store=True)
    server, thread = _serve(run)
    yield Client(server.server_address[1]), run
    server.shutdown()
    server.server_close()
    thread.join(5)


def _q(**params) -> str:
    return urllib.parse.urlencode(params, doseq=True)


def test_page_and_static_files(served):
    client, _ = served
    code, headers, body = client.get("/")
    assert code == 200 and headers["content-type"] == "text/html; charset=utf-8"
    page = body.decode("utf-8")
    for needle in ('src="/static/app.js"', 'href="/static/style.css"', 'id="search"', 'id="triples"',
                   'id="relation-filter"', 'id="min-confidence"', 'id="download-tsv"',
                   'id="sparql-query"'):
        assert needle in page
    assert "http://" not in page.replace("http://www.w3.org/2000/01/rdf-schema#", "")  # no CDN
    code, headers, body = client.get("/static/app.js")
    assert code == 200 and headers["content-type"].startswith("text/javascript")
    assert b"innerHTML" not in body and b"textContent" in body
    code, headers, _ = client.get("/static/style.css")
    assert code == 200 and headers["content-type"].startswith("text/css")
    assert "default-src 'self'" in headers["content-security-policy"]
    code, headers, body = client.request("HEAD", "/")
    assert code == 200 and body == b"" and int(headers["content-length"]) == len(page.encode("utf-8"))
    assert client.get("/static/missing.js")[0] == 404
    assert client.get("/nothing/here")[0] == 404


def test_search_finds_entities(served):
    client, _ = served
    data = client.json("/api/search?" + _q(q="type 2 diabetes"))
    assert [e["curie"] for e in data["results"]] == ["MESH:D003924"]
    assert data["results"][0]["name"] == "type 2 diabetes" and data["results"][0]["degree"] == 3
    data = client.json("/api/search?" + _q(q="NCBIGene:6934"))
    assert data["results"][0]["name"] == "TCF7L2"
    assert client.json("/api/search?" + _q(q="zzz"))["results"] == []
    assert len(client.json("/api/search?" + _q(q="", limit=2))["results"]) == 2
    assert "limit" in client.json("/api/search?" + _q(q="a", limit="many"), 400)["error"]


def test_entity_triples_with_highlight_offsets(served):
    client, _ = served
    data = client.json("/api/entity?" + _q(id="MESH:D003924"))
    assert data["entity"]["curie"] == "MESH:D003924"
    by_neighbour = {t["neighbour"]["name"]: t for t in data["triples"]}
    assert set(by_neighbour) == {"TCF7L2", "KCNJ11", "metformin"}
    tcf = by_neighbour["TCF7L2"]
    assert (tcf["relation"], tcf["predicate"], tcf["evidence_count"], tcf["direction"]) == (
        "associated_with", "biolink:associated_with", 2, "in")
    assert [e["confidence"] for e in tcf["evidence"]] == [0.91, 0.79]
    for e in tcf["evidence"]:
        s = e["sentence"]
        assert s[e["head"][0]:e["head"][1]] == "TCF7L2"
        assert s[e["tail"][0]:e["tail"][1]] == "type 2 diabetes"
        assert [p["text"] for p in e["segments"] if p["mark"] == "head"] == ["TCF7L2"]
        assert [p["text"] for p in e["segments"] if p["mark"] == "tail"] == ["type 2 diabetes"]
    # filters, and the neighbour's own view
    data = client.json("/api/entity?" + _q(id="MESH:D003924", relation="treats"))
    assert [t["neighbour"]["name"] for t in data["triples"]] == ["metformin"]
    data = client.json("/api/entity?" + _q(id="MESH:D003924", min_confidence="0.8"))
    assert sorted(t["neighbour"]["name"] for t in data["triples"]) == ["TCF7L2", "metformin"]
    data = client.json("/api/entity?" + _q(id=tcf["neighbour"]["curie"]))
    assert [t["neighbour"]["curie"] for t in data["triples"]] == ["MESH:D003924"]
    assert "not a relation" in client.json("/api/entity?" + _q(id="MESH:D003924", relation="x"), 400)["error"]
    assert "min_confidence" in client.json("/api/entity?" + _q(id="MESH:D003924", min_confidence="2"),
                                           400)["error"]
    assert "no entity" in client.json("/api/entity?" + _q(id="MESH:D000000"), 404)["error"]
    assert client.json("/api/entity", 400)["error"].startswith("id:")


def test_relations(served):
    client, _ = served
    rels = {r["relation"]: r for r in client.json("/api/relations")["relations"]}
    assert rels["treats"] == {"relation": "treats", "predicate": "biolink:treats", "triples": 1}


def test_tsv_download(served):
    client, _ = served
    code, headers, body = client.get("/api/view.tsv?" + _q(id="MESH:D003924", min_confidence="0.7"))
    assert code == 200 and headers["content-type"] == "text/tab-separated-values; charset=utf-8"
    assert headers["content-disposition"] == 'attachment; filename="graphmert-MESH_D003924.tsv"'
    lines = body.decode("utf-8").splitlines()
    assert lines[0].split("\t") == ["subject", "subject_name", "predicate", "relation", "object",
                                    "object_name", "confidence", "evidence_count", "publications"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [(r[0], r[3], r[4]) for r in rows] == [
        ("NCBIGene:6934", "associated_with", "MESH:D003924"), ("MESH:D008687", "treats", "MESH:D003924"),
        ("NCBIGene:3767", "associated_with", "MESH:D003924")]
    code, _, body = client.get("/api/view.tsv")                       # no entity: the whole graph
    assert code == 200 and len(body.decode("utf-8").splitlines()) == 1 + 6


TRAVERSALS = ["/static/../../etc/passwd", "/static/../extract/triples.jsonl", "/../extract/triples.jsonl",
              "/%2e%2e/%2e%2e/etc/passwd", "/static/%2e%2e/%2e%2e/extract/triples.jsonl",
              "/static/..%2f..%2fextract%2ftriples.jsonl", "/static/%252e%252e/app.js",
              "/extract/triples.jsonl", "/config.yaml", "/static/..\\..\\config.yaml",
              "/static/%5c..%5cconfig.yaml", "/static/./app.js", "/static/app.js%00.css", "/etc/passwd",
              "//etc/passwd", "http://127.0.0.1/extract/triples.jsonl", "file:///etc/passwd",
              "/static/explorer_static/app.js", "/static/", "/pipelines/serve.py"]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_paths_outside_the_page_are_refused(served, target):
    client, _ = served
    code, _, body = client.get(target)
    assert code in (400, 403, 404), (target, code)
    assert b"head_id" not in body and b"root:" not in body
    assert json.loads(body)["error"]


def test_request_path_rules():
    assert request_path("/api/search?q=a%20b") == "/api/search"
    for target, status in (("/a/%2e%2E/b", 403), ("/a/.", 403), ("/a\\b", 403), ("/%00", 403),
                           ("http://x/", 400), ("//x/y", 400), ("*", 400)):
        with pytest.raises(Exception) as e:
            request_path(target)
        assert e.value.status == status, target


@pytest.mark.parametrize("method,target", [("POST", "/api/search"), ("POST", "/"), ("PUT", "/"),
                                           ("DELETE", "/api/entity?id=MESH:D003924"),
                                           ("PATCH", "/static/app.js"), ("OPTIONS", "/"),
                                           ("PUT", "/api/sparql")])
def test_other_methods_are_refused(served, method, target):
    client, _ = served
    code, headers, _ = client.request(method, target, body=b"x=1")
    assert code == 405 and "GET" in headers["allow"]


def test_foreign_host_header_is_refused(served):
    client, _ = served
    code, _, body = client.request("GET", "/api/relations", headers={"Host": "evil.example:8765"})
    assert code == 403 and b"Host" in body
    code, _, _ = client.request("GET", "/api/relations", headers={"Host": f"localhost:{client.port}"})
    assert code == 200


def test_the_server_writes_nothing(served):
    client, run = served
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in run.rglob("*") if p.is_file()}
    client.get("/api/view.tsv")
    client.get("/api/entity?id=MESH:D003924")
    client.request("POST", "/api/sparql", body=b"ASK { ?s ?p ?o }",
                   headers={"Content-Type": "application/sparql-query"})
    after = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in run.rglob("*") if p.is_file()}
    assert after == before


# -- SPARQL -----------------------------------------------------------------------------------------

needs_store = pytest.mark.skipif(_store_module() is None,
                                 reason="graphmert.export.store (and pyoxigraph) is not installed")


@needs_store
def test_sparql_select_ask_and_errors(served):
    client, _ = served
    query = ("PREFIX biolink: <https://w3id.org/biolink/vocab/>\n"
             "SELECT ?s WHERE { ?a biolink:object <http://id.nlm.nih.gov/mesh/D003924> ; "
             "biolink:subject ?s } ORDER BY ?s")
    data = client.json("/api/sparql?" + _q(query=query))
    assert data["kind"] == "select" and data["columns"] == ["s"]
    assert len(data["rows"]) == 3 and data["truncated"] is False
    code, _, body = client.request("POST", "/api/sparql", body=b"ASK { ?s ?p ?o }",
                                   headers={"Content-Type": "application/sparql-query"})
    assert code == 200 and json.loads(body)["boolean"] is True
    code, _, body = client.request("POST", "/api/sparql", body=_q(query="ASK { ?s ?p ?o }").encode(),
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert code == 200 and json.loads(body)["kind"] == "ask"
    bad = client.json("/api/sparql?" + _q(query="SELECT WHERE {"), 400)
    assert bad["error"]
    update = client.json("/api/sparql?" + _q(query="INSERT DATA { <a:x> <a:y> <a:z> }"), 400)
    assert update["error"]
    assert client.json("/api/sparql", 400)["error"].startswith("query:")


def test_sparql_without_a_store_is_503(tmp_path):
    run = _make_run(tmp_path, with_store=False)
    server, thread = _serve(run)
    try:
        client = Client(server.server_address[1])
        error = client.json("/api/sparql?" + _q(query="ASK { ?s ?p ?o }"), 503)["error"]
        assert "store" in error
        summary = client.json("/api/summary")
        assert summary["sparql"] is False and summary["triples"] == 6 and summary["entities"] == 8
        assert client.json("/api/search?" + _q(q="metformin"))["results"][0]["curie"] == "MESH:D008687"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# -- the command line -------------------------------------------------------------------------------

def test_cli_port_in_use_is_a_clear_error(tmp_path):
    run = _make_run(tmp_path, with_store=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = runner.invoke(app, ["serve", "--run-dir", str(run), "--port", str(port)])
    assert r.exit_code == 2, r.output
    assert f"port {port} on 127.0.0.1 is already in use" in r.output and "--port" in r.output
    assert "Traceback" not in r.output


def test_cli_run_without_triples_and_bad_host(tmp_path):
    r = runner.invoke(app, ["serve", "--run-dir", str(tmp_path), "--port", "0"])
    assert r.exit_code == 2 and "graphmert extract" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["serve", "--run-dir", str(tmp_path / "nope"), "--port", "0"])
    assert r.exit_code == 2 and "no such directory" in r.output
    run = _make_run(tmp_path, with_store=False)
    r = runner.invoke(app, ["serve", "--run-dir", str(run), "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "loopback" in r.output
    r = runner.invoke(app, ["serve", "--run-dir", str(run), "--port", "70000"])
    assert r.exit_code == 2 and "--port 70000" in r.output
    r = runner.invoke(app, ["serve", "--help"])
    assert r.exit_code == 0 and "--run-dir" in r.output and "--port" in r.output


def test_check_host():
    assert check_host("127.0.0.1") == "127.0.0.1" and check_host("localhost") == "127.0.0.1"
    assert check_host("::1") == "::1" and check_host("127.0.0.2") == "127.0.0.2"
    for host in ("0.0.0.0", "192.168.1.4", "example.org", "::"):
        with pytest.raises(ServeError, match="loopback"):
            check_host(host)
