"""Helper-LLM client (DESIGN §8) against a scripted OpenAI-compatible stub server on 127.0.0.1:
request contract, retry policy, error messages, and the parsing/grounding of replies."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graphmert.config import ConfigError, ExtractConfig
from graphmert.extract.llm import (MAX_RETRY_AFTER, MAX_TAIL_CHARS, LLMClient, LLMError,
                                   _retry_delay, combine_tail, discover_heads, parse_string_list,
                                   render_slot_tokens, wordpiece_join)


def completion(content: str) -> dict:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}


class Stub:
    """Answers POSTs from a script of (status, body, headers, delay_s); records every request."""

    def __init__(self) -> None:
        self.script: list[tuple[int, object, dict, float]] = []
        self.requests: list[dict] = []
        self.release = threading.Event()  # set at teardown: ends any scripted hang at once
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": json.loads(raw)})
                status, body, headers, delay = (stub.script.pop(0) if stub.script else
                                                (599, "unscripted request", {}, 0.0))
                if delay:
                    stub.release.wait(delay)
                payload = (body if isinstance(body, bytes) else
                           body.encode() if isinstance(body, str) else json.dumps(body).encode())
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout) and closed the socket
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # a short poll interval: shutdown() waits up to one interval
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    def add(self, status: int = 200, body: object = None, headers: dict | None = None,
            delay: float = 0.0) -> "Stub":
        self.script.append((status, body if body is not None else completion("[]"), headers or {},
                            delay))
        return self


@pytest.fixture
def stub(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # urllib would send 127.0.0.1 through a proxy
    s = Stub()
    s.thread.start()
    yield s
    s.release.set()
    s.server.shutdown()
    s.server.server_close()
    s.thread.join(timeout=5)


def client(stub: Stub, **kw) -> LLMClient:
    kw = {"timeout": 2.0, "retries": 2, "backoff": 0.0, **kw}
    return LLMClient(stub.url, "bio-llm", **kw)


# --------------------------------------------------------------------------------------------------
# transport
# --------------------------------------------------------------------------------------------------


def test_chat_request_contract(stub):
    stub.add(body=completion("hello"))
    c = client(stub, api_key="sk-test")
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert c.chat(messages, max_tokens=32) == "hello"
    (req,) = stub.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"] == {"model": "bio-llm", "messages": messages, "temperature": 0,
                           "max_tokens": 32}
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["headers"]["Content-Type"] == "application/json"
    assert c.stats == {"requests": 1, "retries": 0, "failures": 0}


def test_no_auth_header_without_key_and_trailing_slash(stub):
    stub.add(body=completion("ok"))
    c = LLMClient(stub.url + "/", "m", timeout=2.0)
    assert c.chat([{"role": "user", "content": "u"}]) == "ok"
    (req,) = stub.requests
    assert req["path"] == "/v1/chat/completions"
    assert "Authorization" not in req["headers"]


def test_500_then_success_is_retried(stub):
    stub.add(500, {"error": "overloaded"}).add(body=completion("ok"))
    c = client(stub)
    assert c.chat([{"role": "user", "content": "u"}]) == "ok"
    assert len(stub.requests) == 2
    assert c.stats == {"requests": 2, "retries": 1, "failures": 0}


def test_429_honours_retry_after(stub):
    # backoff 30 s would blow the time bound: the server's Retry-After: 0 must win
    stub.add(429, {"error": "rate limited"}, headers={"Retry-After": "0"}).add(body=completion("ok"))
    c = client(stub, backoff=30.0)
    t0 = time.monotonic()
    assert c.chat([{"role": "user", "content": "u"}]) == "ok"
    assert time.monotonic() - t0 < 2.0
    assert c.stats["retries"] == 1


def test_5xx_exhausts_retries(stub):
    for _ in range(3):
        stub.add(503, "down")
    c = client(stub, retries=2)
    with pytest.raises(LLMError, match=r"HTTP 503.*down.*3 attempts") as info:
        c.chat([{"role": "user", "content": "u"}])
    assert c.url in str(info.value)
    assert len(stub.requests) == 3
    assert c.stats == {"requests": 3, "retries": 2, "failures": 1}


def test_400_is_not_retried(stub):
    stub.add(400, {"error": {"message": "bad model name"}}).add(body=completion("never"))
    c = client(stub)
    with pytest.raises(LLMError, match=r"HTTP 400.*bad model name.*not retried") as info:
        c.chat([{"role": "user", "content": "u"}])
    assert stub.url in str(info.value)
    assert len(stub.requests) == 1
    assert c.stats == {"requests": 1, "retries": 0, "failures": 1}


def test_hang_times_out_after_retries(stub):
    for _ in range(2):
        stub.add(body=completion("late"), delay=3.0)
    c = client(stub, timeout=0.2, retries=1)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0\.2 s \(2 attempts\)"):
        c.chat([{"role": "user", "content": "u"}])
    assert time.monotonic() - t0 < 1.5
    assert c.stats == {"requests": 2, "retries": 1, "failures": 1}


@pytest.mark.parametrize("body, problem", [
    (b"<html>oops</html>", "not JSON"),
    ({"id": "x", "object": "chat.completion"}, "no 'choices'"),
    ({"choices": []}, "no 'choices'"),
    ({"choices": [{"message": {"role": "assistant"}}]}, "choices\\[0\\].message.content"),
    ({"choices": [{"text": "legacy completion"}]}, "choices\\[0\\].message.content"),
])
def test_malformed_response(stub, body, problem):
    stub.add(body=body)
    c = client(stub)
    with pytest.raises(LLMError, match=problem):
        c.chat([{"role": "user", "content": "u"}])
    assert len(stub.requests) == 1  # malformed is not retried
    assert c.stats["failures"] == 1


def test_connection_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = LLMClient(f"http://127.0.0.1:{port}/v1", "m", timeout=1.0, retries=1, backoff=0.0)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match=rf"127\.0\.0\.1:{port}.*connection failed.*2 attempts"):
        c.chat([{"role": "user", "content": "u"}])
    assert time.monotonic() - t0 < 2.0
    assert c.stats == {"requests": 2, "retries": 1, "failures": 1}


def test_retry_delay():
    assert _retry_delay(0, 0.5, None) == 0.5
    assert _retry_delay(3, 0.5, None) == 4.0
    assert _retry_delay(2, 0.5, "1.5") == 1.5
    assert _retry_delay(0, 0.5, "100000") == MAX_RETRY_AFTER
    assert _retry_delay(0, 0.5, "-3") == 0.0
    assert _retry_delay(1, 0.5, "soon") == 1.0  # unreadable: exponential backoff
    assert _retry_delay(0, 0.5, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_bad_arguments():
    with pytest.raises(ValueError, match="base_url"):
        LLMClient("127.0.0.1:8000/v1", "m")
    with pytest.raises(ValueError, match="timeout"):
        LLMClient("http://h/v1", "m", timeout=0)
    with pytest.raises(ValueError, match="retries"):
        LLMClient("http://h/v1", "m", retries=-1)
    c = LLMClient("http://h/v1", "m")
    with pytest.raises(ValueError, match="messages"):
        c.chat([{"role": "user"}])
    with pytest.raises(ValueError, match="'model'"):
        c.chat([{"role": "user", "content": "u"}], model="other")


def test_a_bad_llm_url_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match=r"extract\.llm_url: must be an http\(s\) URL, got '127\.0\.0\.1:8000/v1'"):
        LLMClient.from_config(ExtractConfig(llm_url="127.0.0.1:8000/v1"))
    assert LLMClient.from_config(ExtractConfig()) is None


def test_from_config(monkeypatch):
    assert LLMClient.from_config(ExtractConfig()) is None
    cfg = ExtractConfig(llm_url="http://127.0.0.1:9/v1", llm_model="m7", llm_api_key_env="GM_KEY",
                        llm_timeout=4.5, llm_retries=5)
    monkeypatch.setenv("GM_KEY", "secret")
    c = LLMClient.from_config(cfg)
    assert (c.url, c.model, c.api_key, c.timeout, c.retries) == (
        "http://127.0.0.1:9/v1/chat/completions", "m7", "secret", 4.5, 5)
    assert "secret" not in repr(c)
    monkeypatch.delenv("GM_KEY")
    assert LLMClient.from_config(cfg).api_key is None
    # defaults come from ExtractConfig
    d = LLMClient("http://h/v1", "m")
    assert (d.timeout, d.retries) == (ExtractConfig().llm_timeout, ExtractConfig().llm_retries)


# --------------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ('["a", "b c"]', ["a", "b c"]),
    ('Sure!\n```json\n["insulin", " TNF ", ""]\n```\nHope this helps.', ["insulin", "TNF"]),
    ('```\n["x"]\n```', ["x"]),
    ('The entities are ["p53", "MDM2"].', ["p53", "MDM2"]),
    ('{"entities": ["p53", 7, "MDM2"]}', ["p53", "MDM2"]),
    ('- insulin\n* "glucose",\n1. type 2 diabetes\n\n2) liver', ["insulin", "glucose",
                                                                 "type 2 diabetes", "liver"]),
    ('[]', []),
    ('', []),
])
def test_parse_string_list(reply, expected):
    assert parse_string_list(reply) == expected


# --------------------------------------------------------------------------------------------------
# (a) head discovery
# --------------------------------------------------------------------------------------------------

TEXT = "Insulin lowers glucose. In type 2 diabetes, insulin resistance rises; GLUCOSE uptake falls."


def test_discover_heads_grounding(stub):
    reply = ('```json\n["insulin", "glucose", "type 2 diabetes", "insulin resistance", '
             '"metformin", "diabetes", "lower"]\n```')
    stub.add(body=completion(reply))
    heads = discover_heads(client(stub), TEXT)
    # "insulin": case-sensitive match inside "insulin resistance" only → the longer span wins;
    # "glucose": case-sensitive occurrence exists, so "GLUCOSE" is not taken;
    # "diabetes" is nested in "type 2 diabetes"; "metformin" absent; "lower" only inside "lowers".
    expected = [(15, 22, "glucose"), (27, 42, "type 2 diabetes"), (44, 62, "insulin resistance")]
    assert heads == expected
    for start, end, surface in heads:
        assert TEXT[start:end] == surface
    body = stub.requests[0]["body"]
    assert body["temperature"] == 0 and TEXT in body["messages"][-1]["content"]


def test_discover_heads_case_insensitive_and_repeats(stub):
    stub.add(body=completion('["INSULIN", "uptake", "uptake"]'))
    text = "insulin and Insulin; uptake, uptake."
    assert discover_heads(client(stub), text) == [
        (0, 7, "insulin"), (12, 19, "Insulin"), (21, 27, "uptake"), (29, 35, "uptake")]


def test_discover_heads_line_reply_and_empty_text(stub):
    stub.add(body=completion("Entities:\n- glucose\n- nothing here"))
    c = client(stub)
    assert discover_heads(c, TEXT) == [(15, 22, "glucose")]
    assert discover_heads(c, "   ") == []
    assert len(stub.requests) == 1  # blank text makes no request


# --------------------------------------------------------------------------------------------------
# (b) tail combination
# --------------------------------------------------------------------------------------------------


def test_wordpiece_rendering():
    assert wordpiece_join(["hyper", "##tension", "drug", "##s"]) == "hypertension drugs"
    lines, best = render_slot_tokens([["hyper", "diabetes"], ["##tension", "mellitus"],
                                      ["[PAD]", "<pad>"], []])
    assert lines == ["slot 1: hyper, diabetes", "slot 2: …tension, mellitus"]
    assert best == "hypertension"


def test_combine_tail(stub):
    long = "x" * (MAX_TAIL_CHARS + 1)
    stub.add(body=completion(f'```json\n["hypertension", "", "Hypertension", "{long}", '
                             '"essential  hypertension", "renal disease", "fourth"]\n```'))
    tails = combine_tail(client(stub), "losartan", "treats",
                         [["hyper", "renal"], ["##tension", "disease"], ["[PAD]"]],
                         "Losartan is used for high blood pressure.")
    assert tails == ["hypertension", "essential hypertension", "renal disease"]
    prompt = stub.requests[0]["body"]["messages"][-1]["content"]
    for needle in ("losartan", "treats", "Losartan is used for high blood pressure.",
                   "slot 1: hyper, renal", "slot 2: …tension, disease", "hypertension"):
        assert needle in prompt
    assert "##" not in prompt and "[PAD]" not in prompt


def test_combine_tail_all_padding_makes_no_request(stub):
    assert combine_tail(client(stub), "h", "r", [["[PAD]"], []], "s.") == []
    assert stub.requests == []
    with pytest.raises(ValueError, match="slot_tokens"):
        combine_tail(client(stub), "h", "r", ["hyper"], "s.")
