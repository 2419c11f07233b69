"""A local OpenAI-compatible chat-completions server for offline experiments and tests.

Point litellm at it (``model="openai/<any name>"``, ``api_base=server.base_url``, any
``api_key``) and the lab's summarizers and judges run their real HTTP path on 127.0.0.1 without
a provider. Notebooks use it to compare "models" offline; the test suite uses it to inject
failures. It is not a model: by default every request gets a short deterministic completion
derived from the request (:func:`default_completion`).

Scripted behaviours:

* ``latency=`` seconds before every answer (or ``Reply(delay=...)`` for one);
* errors: queue ``Reply(status=429, headers={"Retry-After": "1"})``, 500/503, 401/403, raw
  bodies, ``text=None`` (empty) or ``reasoning=`` (reasoning-only) replies with :meth:`enqueue`;
* per-model styles: ``styles={"fake-detailed": detailed_style}`` answers requests for that
  model name (with or without the ``openai/`` prefix) with its own function of the request;
* every request is logged (:attr:`FakeOpenAIServer.requests`) with the highest concurrency seen.

>>> with FakeOpenAIServer(styles={"detailed": detailed_style}) as server:
...     server.enqueue(Reply(status=429, headers={"Retry-After": "0"}), Reply(text="hello"))
...     server.base_url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "server_error",
    503: "server_error",
}


@dataclass(frozen=True)
class Reply:
    """One scripted response.

    ``status`` != 200 returns an OpenAI-style error body. ``text`` is the message content
    (``None`` = JSON ``null`` content, useful with ``reasoning`` for reasoning-only replies);
    ``delay`` seconds are slept before answering (on top of the server latency).
    """

    status: int = 200
    text: str | None = "ok"
    reasoning: str | None = None
    delay: float = 0.0
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    raw_body: bytes | None = None  # sent verbatim (status still applies)
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers, e.g. Retry-After


def default_completion(body: dict[str, Any]) -> str:
    """Deterministic, shrinking completion for a request: a hash tag plus the segment's opening.

    The text depends only on the request's messages, is short (≈ 40 words) whatever the input,
    and ends with the ``Expand for details about:`` footer, so engine escalation stays normal.
    """
    messages = body.get("messages") or []
    user = ""
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            user = content if isinstance(content, str) else json.dumps(content)
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    segment = user
    for tag in ("<conversation_segment>", "<conversation_to_condense>", "<source>"):
        if tag in user:
            segment = user.split(tag, 1)[1]
            break
    words = [w for w in segment.replace("\n", " ").split(" ") if w and not w.startswith("</")][:30]
    return f"Fake summary {digest}: " + " ".join(words) + "\nExpand for details about: fake details"


def detailed_style(body: dict[str, Any]) -> str:
    """A second "model": the default completion relabelled, plus a line of specifics (longer)."""
    text = default_completion(body)
    return text.replace("Fake summary", "Detailed summary") + "\n- decisions, names and dates kept verbatim"


@dataclass
class LoggedRequest:
    """A request as the server saw it (headers lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float
    status: int = 0


@dataclass
class _State:
    queue: deque[Reply] = field(default_factory=deque)
    log: list[LoggedRequest] = field(default_factory=list)
    latency: float = 0.0
    responder: Callable[[dict[str, Any]], str] = default_completion
    styles: dict[str, Callable[[dict[str, Any]], str]] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr access logs
        return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        entry = LoggedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time())
        with state.lock:
            state.log.append(entry)
            reply = state.queue.popleft() if state.queue else None
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            delay = state.latency + (reply.delay if reply else 0.0)
            if delay > 0:
                time.sleep(delay)
            status, payload = self._response(body, reply)
            entry.status = status
        finally:
            # Leave the in-flight count before answering: a client may send its next request as
            # soon as it has read this one's response.
            with state.lock:
                state.in_flight -= 1
        self._send(status, payload, reply.headers if reply else None)

    def _response(self, body: Any, reply: Reply | None) -> tuple[int, bytes]:
        state = self.server.state
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return 404, b'{"error": {"message": "unknown endpoint"}}'
        if body is None:
            return 400, b'{"error": {"message": "body is not JSON", "type": "invalid_request_error"}}'
        if reply is None:
            model = str(body.get("model") or "")
            style = state.styles.get(model) or state.styles.get(model.split("/", 1)[-1]) or state.responder
            reply = Reply(text=style(body))
        if reply.raw_body is not None:
            return reply.status, reply.raw_body
        if reply.status != 200:
            error = {
                "message": f"fake server error {reply.status}",
                "type": _ERROR_TYPES.get(reply.status, "server_error"),
                "code": str(reply.status),
            }
            return reply.status, json.dumps({"error": error}).encode()
        return 200, json.dumps(_completion_body(body, reply)).encode()


def _completion_body(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content") or "")) for m in request.get("messages") or [])
    text = reply.text or ""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else max(1, prompt_chars // 4)
    completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else max(0, len(text) // 4)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class FakeOpenAIServer:
    """Start with ``with FakeOpenAIServer(latency=0.2) as server:`` (or ``start()``/``stop()``).

    ``base_url`` ends in ``/v1`` (what litellm's ``api_base`` wants for ``openai/...`` models).
    """

    def __init__(
        self,
        latency: float = 0.0,
        responder: Callable[[dict[str, Any]], str] | None = None,
        styles: dict[str, Callable[[dict[str, Any]], str]] | None = None,
    ) -> None:
        self._state = _State(latency=latency, responder=responder or default_completion, styles=dict(styles or {}))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._server = _Server(self._state)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    @property
    def latency(self) -> float:
        return self._state.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._state.latency = seconds

    def set_responder(self, responder: Callable[[dict[str, Any]], str]) -> None:
        """Replace the default completion function (used when the queue is empty)."""
        self._state.responder = responder

    def enqueue(self, *replies: Reply) -> None:
        """Queue scripted replies, consumed one per request in arrival order."""
        with self._state.lock:
            self._state.queue.extend(replies)

    def clear(self) -> None:
        """Forget queued replies, the request log and the concurrency high-water mark."""
        with self._state.lock:
            self._state.queue.clear()
            self._state.log.clear()
            self._state.max_in_flight = 0

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._state.lock:
            return list(self._state.log)

    @property
    def completion_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    @property
    def pending(self) -> int:
        with self._state.lock:
            return len(self._state.queue)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until no request is being handled (e.g. a slow reply a timed-out client left)."""
        deadline = time.monotonic() + timeout
        while self._state.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        if self._state.in_flight:
            raise TimeoutError(f"fake server still busy with {self._state.in_flight} request(s) after {timeout} s")

    @property
    def max_in_flight(self) -> int:
        """Most requests the server was handling at the same time."""
        return self._state.max_in_flight


__all__ = ["FakeOpenAIServer", "LoggedRequest", "Reply", "default_completion", "detailed_style"]
