"""Optional helper LLM for extraction (DESIGN §8): head discovery and tail combination.

The paper asks a helper LLM to (a) find the head entities of a text chunk and (b) combine the top-k
tokens the model predicts for a head's masked leaf slots into a tail phrase. Here the helper is off by
default (``extract.llm_url = None``); when on, everything it proposes is re-scored by our own model
downstream, so this module only returns *strings*: heads grounded to character spans of the chunk, and
candidate tail phrases.

Transport is any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint (vLLM, llama.cpp,
Ollama, OpenAI), spoken with the standard library only::

    request   {"model": m, "messages": [{"role": .., "content": ..}, ..], "temperature": 0, **params}
    response  {"choices": [{"message": {"content": "<reply>"}}, ..]}

Failures are retried with exponential backoff — attempt ``a`` (0-based) waits ``backoff · 2^a``
seconds, or the server's ``Retry-After`` (seconds, capped at :data:`MAX_RETRY_AFTER`) — on connection
errors, timeouts, HTTP 429 and 5xx; any other 4xx and any malformed reply fail at once. Every failure
surfaces as :class:`LLMError` naming the URL and the problem.

Replies are parsed leniently (:func:`parse_string_list`): a JSON array (bare, inside a ```` ```json ````
fence, or embedded in prose), a JSON object holding one array, else one item per line with bullets,
numbering and quotes stripped.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Optional, Sequence

from graphmert.config import ConfigError, ExtractConfig
from graphmert.errors import GraphmertError

__all__ = [
    "LLMError",
    "LLMClient",
    "discover_heads",
    "combine_tail",
    "parse_string_list",
    "render_slot_tokens",
    "wordpiece_join",
    "HEADS_SYSTEM",
    "HEADS_PROMPT",
    "TAIL_SYSTEM",
    "TAIL_PROMPT",
    "MAX_TAILS",
    "MAX_TAIL_CHARS",
    "MAX_RETRY_AFTER",
]

log = logging.getLogger("graphmert.extract")

MAX_RETRY_AFTER = 60.0  # seconds: longest server-requested wait honoured before a retry
MAX_TAILS = 3  # candidate tail phrases asked for and kept per (head, relation)
MAX_TAIL_CHARS = 100  # longer "phrases" are the LLM rambling, not a tail
_DEFAULT_BACKOFF = 0.5  # seconds before the first retry; doubles each retry
_ERROR_BODY_CHARS = 200  # how much of an error response body an LLMError quotes

HEADS_SYSTEM = "You are a biomedical named-entity tagger. You answer with JSON only."

HEADS_PROMPT = """\
List every biomedical entity mention in the text below: diseases, symptoms, chemicals and drugs, \
genes and proteins, anatomy, cells, organisms, procedures.
Copy each mention exactly as it is written in the text (same spelling and case); do not explain, \
expand abbreviations or invent entities.
Answer with a JSON array of strings only, for example ["insulin", "type 2 diabetes"]; answer [] if \
there are none.

Text:
{text}"""

TAIL_SYSTEM = "You complete biomedical knowledge-graph triples. You answer with JSON only."

TAIL_PROMPT = """\
Head entity: {head}
Relation: {relation}
Sentence: {sentence}

A language model predicted the tail entity of this triple as a sequence of word-piece slots; for \
each slot its most likely pieces are listed, best first. A piece written "…xyz" continues the \
word before it with no space.
{slots}
Reading of the best piece per slot: {best}

Combine these pieces into at most {max_tails} short tail phrases (biomedical entity names) that \
complete ({head}, {relation}, ?) and fit the sentence, best first.
Answer with a JSON array of strings only, for example ["insulin resistance"]."""

_SPECIAL_TOKEN = re.compile(r"^(\[[A-Za-z_]+\]|<[^<>\s]+>)$")  # [PAD] [MASK] [CLS] <pad> </s> …
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s+")


class LLMError(GraphmertError, RuntimeError):
    """The helper LLM could not be reached or answered something unusable. The message names the URL."""


def _retry_delay(attempt: int, backoff: float, retry_after: Optional[str]) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``Retry-After`` seconds when given (capped at
    :data:`MAX_RETRY_AFTER`), else ``backoff · 2^attempt``. An HTTP-date ``Retry-After`` is honoured too."""
    if retry_after is not None:
        value = retry_after.strip()
        try:
            seconds = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
                seconds = when.timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                seconds = None
        if seconds is not None and seconds == seconds:  # not NaN
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
    return backoff * (2.0 ** attempt)


class LLMClient:
    """Minimal OpenAI-compatible chat-completions client with timeouts and retries.

    Args:
        base_url: endpoint root, e.g. ``http://127.0.0.1:8000/v1``; requests go to
            ``{base_url}/chat/completions``.
        model: model name sent with every request.
        api_key: sent as ``Authorization: Bearer <key>`` when set.
        timeout: seconds per HTTP request (connect and each read).
        retries: retries after the first attempt of a retryable failure.
        backoff: seconds before the first retry; doubled for each further retry.

    ``stats`` counts ``requests`` (HTTP attempts), ``retries`` and ``failures`` (calls of :meth:`chat`
    that raised :class:`LLMError`). The client holds no connection and is safe to share between threads.
    """

    def __init__(self, base_url: str, model: str, api_key: Optional[str] = None,
                 timeout: float = ExtractConfig.llm_timeout, retries: int = ExtractConfig.llm_retries,
                 backoff: float = _DEFAULT_BACKOFF) -> None:
        if not isinstance(base_url, str) or not re.match(r"^https?://[^/\s]+", base_url):
            raise ValueError(f"LLM base_url must be an http(s) URL, got {base_url!r}")
        if not timeout > 0:
            raise ValueError(f"LLM timeout must be > 0 seconds, got {timeout!r}")
        if not (isinstance(retries, int) and retries >= 0):
            raise ValueError(f"LLM retries must be an integer >= 0, got {retries!r}")
        if not backoff >= 0:
            raise ValueError(f"LLM backoff must be >= 0 seconds, got {backoff!r}")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.api_key = api_key or None
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.stats: dict[str, int] = {"requests": 0, "retries": 0, "failures": 0}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: ExtractConfig) -> Optional["LLMClient"]:
        """The client configured by ``extract.llm_*``, or None when ``extract.llm_url`` is None (off).
        The API key is read from the environment variable named by ``extract.llm_api_key_env``
        (absent or empty: no key)."""
        if cfg.llm_url is None:
            return None
        if not re.match(r"^https?://[^/\s]+", cfg.llm_url):
            raise ConfigError(f"extract.llm_url: must be an http(s) URL, got {cfg.llm_url!r}")
        return cls(cfg.llm_url, cfg.llm_model, api_key=os.environ.get(cfg.llm_api_key_env) or None,
                   timeout=cfg.llm_timeout, retries=cfg.llm_retries)

    def __repr__(self) -> str:
        return (f"LLMClient({self.base_url!r}, model={self.model!r}, timeout={self.timeout}, "
                f"retries={self.retries}, key={'set' if self.api_key else 'none'})")

    def _count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def chat(self, messages: list[dict], **params: Any) -> str:
        """POST ``messages`` (OpenAI chat format) and return the first choice's message content.

        ``params`` are added to the request body (``max_tokens``, ``stop``, …; ``temperature``
        overrides the default 0). Raises :class:`LLMError` when every attempt failed, on a
        non-retryable HTTP status, or on a reply without ``choices[0].message.content``.
        """
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str) for m in messages):
            raise ValueError("messages must be a non-empty list of {'role': str, 'content': str}")
        for key in ("model", "messages"):
            if key in params:
                raise ValueError(f"chat() sets {key!r} itself; it cannot be passed as a parameter")
        body = {"model": self.model, "messages": messages, "temperature": 0, **params}
        try:
            data = json.dumps(body).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise ValueError(f"chat() parameters are not JSON-serialisable: {e}") from None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            raw = self._post(data, headers)
            return self._content(raw)
        except LLMError:
            self._count("failures")
            raise

    def _post(self, data: bytes, headers: dict[str, str]) -> bytes:
        """The response body of the first successful attempt; retries retryable failures."""
        for attempt in range(self.retries + 1):
            retry_after: Optional[str] = None
            self._count("requests")
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.read()
            except urllib.error.HTTPError as e:
                detail = _error_body(e)
                problem = f"HTTP {e.code} {e.reason}{': ' + detail if detail else ''}"
                if not (e.code == 429 or e.code >= 500):
                    raise LLMError(f"helper LLM at {self.url}: {problem} (not retried)") from None
                retry_after = e.headers.get("Retry-After") if e.headers is not None else None
            except (OSError, http.client.HTTPException) as e:  # URLError, refused, reset, timeout
                reason = e.reason if isinstance(e, urllib.error.URLError) else e
                kind = "timed out" if isinstance(reason, TimeoutError) else "connection failed"
                problem = f"{kind} after {self.timeout:g} s" if kind == "timed out" \
                    else f"{kind}: {reason}"
            if attempt == self.retries:
                raise LLMError(f"helper LLM at {self.url}: {problem} "
                               f"({attempt + 1} attempt{'s' if attempt else ''})")
            delay = _retry_delay(attempt, self.backoff, retry_after)
            log.warning("helper LLM at %s: %s; retry %d/%d in %.2f s", self.url, problem,
                        attempt + 1, self.retries, delay)
            self._count("retries")
            time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _content(self, raw: bytes) -> str:
        """``choices[0].message.content`` of a response body, or LLMError saying what is missing."""
        try:
            reply = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            snippet = raw[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise LLMError(f"helper LLM at {self.url}: response is not JSON: {snippet!r}") from None
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or not choices:
            raise LLMError(f"helper LLM at {self.url}: response has no 'choices' "
                           f"(keys: {sorted(reply) if isinstance(reply, dict) else type(reply).__name__})")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise LLMError(f"helper LLM at {self.url}: response has no string "
                           f"'choices[0].message.content'")
        return content


def _error_body(e: urllib.error.HTTPError) -> str:
    """The start of an HTTP error body (the server's message), or '' when unreadable."""
    try:
        text = e.read()[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------------
# Reply parsing
# --------------------------------------------------------------------------------------------------


def _json_strings(value: Any) -> Optional[list[str]]:
    """The strings of a JSON array (or of the single array inside an object), else None."""
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else None
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return None


def parse_string_list(reply: str) -> list[str]:
    """The list of strings an LLM reply holds, stripped, empty ones dropped, order kept.

    Tried in turn: the content of the first ```` ``` ```` fence (or the whole reply) as JSON; the span
    from its first ``[`` to its last ``]`` as JSON; one item per non-empty line, with bullets
    (``-``, ``*``, ``1.``), surrounding quotes and trailing commas removed.
    """
    fence = _FENCE.search(reply)
    body = (fence.group(1) if fence else reply).strip()
    candidates = [body]
    if "[" in body and "]" in body:
        candidates.append(body[body.index("["):body.rindex("]") + 1])
    for candidate in candidates:
        try:
            items = _json_strings(json.loads(candidate))
        except ValueError:
            continue
        if items is not None:
            return [s.strip() for s in items if s.strip()]
    out = []
    for line in body.splitlines():
        line = _BULLET.sub("", line.strip()).strip().rstrip(",").strip()
        if line.startswith("```") or line in ("[", "]"):
            continue
        if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
            line = line[1:-1].strip()
        if line:
            out.append(line)
    return out


# --------------------------------------------------------------------------------------------------
# (a) head discovery
# --------------------------------------------------------------------------------------------------


def _occurrences(text: str, surface: str, flags: int) -> list[tuple[int, int]]:
    """Non-overlapping word-bounded spans of ``surface`` in ``text`` (left to right)."""
    pattern = re.compile(re.escape(surface), flags)
    spans, pos = [], 0
    while (m := pattern.search(text, pos)) is not None:
        start, end = m.span()
        cut_left = surface[0].isalnum() and start > 0 and text[start - 1].isalnum()
        cut_right = surface[-1].isalnum() and end < len(text) and text[end].isalnum()
        if cut_left or cut_right:  # inside a longer word: "ACE" in "surface"
            pos = start + 1
            continue
        spans.append((start, end))
        pos = end
    return spans


def discover_heads(client: LLMClient, text: str) -> list[tuple[int, int, str]]:
    """Head entity mentions of ``text`` proposed by the helper LLM, grounded in the text.

    Each proposed string is looked up in ``text`` case-sensitively, else case-insensitively, as a
    whole-word match (it may not start or end inside a longer word); ungrounded strings are dropped.
    Where spans of different strings overlap, the longer (then earlier) span wins. Returns sorted,
    distinct ``(start, end, surface)`` with ``surface == text[start:end]``.
    """
    if not text.strip():
        return []
    reply = client.chat([{"role": "system", "content": HEADS_SYSTEM},
                         {"role": "user", "content": HEADS_PROMPT.format(text=text)}])
    spans: set[tuple[int, int]] = set()
    for surface in dict.fromkeys(parse_string_list(reply)):
        found = _occurrences(text, surface, 0) or _occurrences(text, surface, re.IGNORECASE)
        spans.update(found)
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda s: (s[0] - s[1], s[0])):  # longest first
        if all(end <= s or start >= e for s, e in kept):
            kept.append((start, end))
    return [(s, e, text[s:e]) for s, e in sorted(kept)]


# --------------------------------------------------------------------------------------------------
# (b) tail combination
# --------------------------------------------------------------------------------------------------


def wordpiece_join(pieces: Sequence[str]) -> str:
    """Detokenise WordPiece: ``["hyper", "##tension", "drug"]`` → ``"hypertension drug"``."""
    out = ""
    for piece in pieces:
        if piece.startswith("##"):
            out += piece[2:]
        else:
            out += (" " if out else "") + piece
    return out


def render_slot_tokens(slot_tokens: Sequence[Sequence[str]]) -> tuple[list[str], str]:
    """Prompt text for the top tokens of each leaf slot: one line per non-empty slot (special tokens
    such as ``[PAD]`` dropped, a ``##`` continuation shown as ``…piece``) and the WordPiece reading
    of the best token of each slot."""
    lines, best = [], []
    for tokens in slot_tokens:
        tokens = [t for t in tokens if t and not _SPECIAL_TOKEN.match(t) and t != "##"]
        if not tokens:
            continue
        shown = ", ".join("…" + t[2:] if t.startswith("##") else t for t in tokens)
        lines.append(f"slot {len(lines) + 1}: {shown}")
        best.append(tokens[0])
    return lines, wordpiece_join(best).lstrip()


def combine_tail(client: LLMClient, head: str, relation: str, slot_tokens: list[list[str]],
                 sentence: str) -> list[str]:
    """Up to :data:`MAX_TAILS` tail phrases the helper LLM builds from the top tokens of the head's
    leaf slots (``slot_tokens[i]``: slot i's tokens, best first), best first.

    Empty strings and strings longer than :data:`MAX_TAIL_CHARS` are dropped, duplicates removed
    case-insensitively (first spelling kept). No request is made when every slot is empty.
    """
    if not isinstance(head, str) or not head.strip():
        raise ValueError(f"combine_tail: head must be a non-empty string, got {head!r}")
    if not isinstance(relation, str) or not relation.strip():
        raise ValueError(f"combine_tail: relation must be a non-empty string, got {relation!r}")
    if not isinstance(slot_tokens, (list, tuple)) or not all(
            isinstance(slot, (list, tuple)) and all(isinstance(t, str) for t in slot)
            for slot in slot_tokens):
        raise ValueError("combine_tail: slot_tokens must be a list of lists of token strings")
    lines, best = render_slot_tokens(slot_tokens)
    if not lines:
        return []
    prompt = TAIL_PROMPT.format(head=head, relation=relation, sentence=sentence,
                                slots="\n".join(lines), best=best, max_tails=MAX_TAILS)
    reply = client.chat([{"role": "system", "content": TAIL_SYSTEM},
                         {"role": "user", "content": prompt}])
    tails: list[str] = []
    seen: set[str] = set()
    for phrase in parse_string_list(reply):
        phrase = " ".join(phrase.split())
        key = phrase.casefold()
        if not phrase or len(phrase) > MAX_TAIL_CHARS or key in seen:
            continue
        seen.add(key)
        tails.append(phrase)
    return tails[:MAX_TAILS]
