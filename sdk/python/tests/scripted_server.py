"""A tiny HTTP server on loopback that answers from a script, for what the real server cannot
be made to do on demand: answer slowly, fail then recover, send a non-JSON page."""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing.Self is 3.11+; typing_extensions is needed only by the type checker
    from typing_extensions import Self



@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)
    """A dict or list is sent as JSON; a str as text/html."""
    delay: float = 0.0
    """Seconds to wait before answering (cut short when the server stops)."""


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any | None


class ScriptedServer:
    """Serves ``replies`` in order (the last one repeats) and records every request."""

    def __init__(self, *replies: Reply) -> None:
        self._replies = deque(replies or (Reply(),))
        self._stopping = threading.Event()
        self.seen: list[Seen] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an IPv4 socket's address; bytes only for AF_UNIX
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self) -> Reply:
        return self._replies.popleft() if len(self._replies) > 1 else self._replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.seen.append(
                    Seen(self.command, self.path, dict(self.headers.items()), json.loads(raw) if raw else None)
                )
                reply = server._next_reply()
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                if isinstance(reply.body, str):
                    payload, kind = reply.body.encode(), "text/html; charset=utf-8"
                else:
                    payload, kind = json.dumps(reply.body).encode(), "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = _serve

        return Handler
