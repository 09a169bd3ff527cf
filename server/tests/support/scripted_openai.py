"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, standing in for a paid model API in tests.

    from support.scripted_openai import Reply, ScriptedOpenAI

    with ScriptedOpenAI() as api:
        api.enqueue("/v1/chat/completions", Reply.error(429, retry_after=0), Reply.chat({"facts": []}))
        client = OpenAIChatClient(api.v1_url, model="m")
        ...
        assert [r.path for r in api.requests] == ["/v1/chat/completions"] * 2
        assert api.requests[1].body["temperature"] == 0

Replies are queued per path (``/v1/chat/completions``, ``/v1/embeddings``, ``/v1/rerank``,
``/rerank`` or any other) and served first in, first out. When a path's queue is empty its handler
answers (``api.handle(path, fn)``, ``fn(request) -> Reply``); without one the server answers 500
with a message saying nothing was scripted, so a missing script shows up as a test failure.
Every request is recorded in ``api.requests`` in arrival order, whether or not it was answered.
Two misbehaving models: ``Reply.chat(...).dripping(1.0)`` sends its headers at once and then the
body one byte a second; ``Reply.hung()`` never answers (until the server stops).
``free_port()`` gives a loopback port with no listener, for "server is down" tests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import sys
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["RecordedRequest", "Reply", "ScriptedOpenAI", "free_port"]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the query string
    headers: dict[str, str]  # lower-cased names
    body: Any  # decoded JSON, or the raw text when it is not JSON


@dataclass(frozen=True)
class Reply:
    """One scripted answer: waits ``delay`` seconds, then sends ``status`` with ``body`` as JSON (bytes/str as is),
    one byte every ``drip`` seconds when that is set; ``hang`` never answers."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0
    hang: bool = False

    def dripping(self, seconds_per_byte: float) -> Reply:
        return dataclasses.replace(self, drip=seconds_per_byte)

    @classmethod
    def hung(cls) -> Reply:
        return cls(hang=True)

    @classmethod
    def chat(cls, content: Any, *, prompt_tokens: int = 0, completion_tokens: int = 0, model: str = "scripted") -> Reply:
        """A chat completion whose message content is ``content`` (a str as is, anything else JSON-encoded)."""
        text = content if isinstance(content, str) else json.dumps(content)
        return cls(body={
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        })

    @classmethod
    def embeddings(cls, vectors: list[list[float]], *, prompt_tokens: int = 0, model: str = "scripted") -> Reply:
        return cls(body={
            "object": "list",
            "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
        })

    @classmethod
    def error(cls, status: int, message: str = "scripted error", *, retry_after: float | None = None, delay: float = 0.0) -> Reply:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls(status=status, body={"error": {"message": message, "type": "scripted"}}, delay=delay, headers=headers)


Handler = Callable[[RecordedRequest], Reply]


def embedding_inputs(request: RecordedRequest) -> list[str]:
    """The texts an embeddings request asks for (``input`` is one text or a list)."""
    inputs = request.body["input"]
    return [inputs] if isinstance(inputs, str) else list(inputs)


def hashed_embeddings(request: RecordedRequest) -> Reply:
    """A handler for /v1/embeddings: each text's vector made from its hash (8 dimensions), so the
    same text always gets the same vector and different texts different ones."""
    return Reply.embeddings([[b / 255 - 0.5 for b in hashlib.sha256(t.encode()).digest()[:8]] for t in embedding_inputs(request)])


class ScriptedOpenAI:
    """The server. Use as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queues: defaultdict[str, deque[Reply]] = defaultdict(deque)
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # releases hung and dripping replies
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting --------------------------------------------------------------------------
    def enqueue(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self._queues[path].extend(replies)

    def handle(self, path: str, handler: Handler) -> None:
        """Answer ``path`` with ``handler(request)`` whenever its queue is empty."""
        with self._lock:
            self._handlers[path] = handler

    def pending(self, path: str) -> int:
        """Queued replies not yet served on ``path``."""
        with self._lock:
            return len(self._queues[path])

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- addresses --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``"""
        return f"http://127.0.0.1:{self.port}"

    @property
    def v1_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the base URL an OpenAI client is given."""
        return self.base_url + "/v1"

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> Self:
        scripted = self
        self._stopping.clear()

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                scripted._serve(self)

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _QuietServer(("127.0.0.1", 0), RequestHandler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            assert self._thread is not None
            self._thread.join()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving ----------------------------------------------------------------------------
    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        raw = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = http.path.split("?", 1)[0]
        request = RecordedRequest(http.command, path, {k.lower(): v for k, v in http.headers.items()}, body)
        with self._lock:
            self.requests.append(request)
            queue = self._queues[path]
            reply = queue.popleft() if queue else None
            handler = self._handlers.get(path)
        if reply is None:
            reply = self._answer(handler, request)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.hang:
            self._stopping.wait()
            http.close_connection = True  # the client sees the connection drop, not a silence
            return
        if isinstance(reply.body, bytes):
            payload = reply.body
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = json.dumps(reply.body).encode()
        http.send_response(reply.status)
        http.send_header("Content-Type", "application/json")
        http.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            http.send_header(name, value)
        http.end_headers()
        if not reply.drip:
            http.wfile.write(payload)
            return
        http.wfile.flush()
        for i in range(len(payload)):
            if self._stopping.wait(reply.drip):
                http.close_connection = True
                return
            http.wfile.write(payload[i : i + 1])
            http.wfile.flush()


    @staticmethod
    def _answer(handler: Handler | None, request: RecordedRequest) -> Reply:
        if handler is None:
            return Reply.error(500, f"scripted server: nothing scripted for {request.path}")
        try:
            return handler(request)
        except Exception as exc:  # noqa: BLE001 - reported to the client under test, which then fails loudly
            return Reply.error(500, f"scripted server: handler for {request.path} raised {exc!r}")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test) closes its socket mid-reply: not worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def free_port() -> int:
    """A loopback port nobody listens on right now (for connection-refused tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
