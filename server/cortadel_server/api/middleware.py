"""Pure-ASGI middleware, two layers: ``RequestMiddleware`` (request id, timing into the metrics, the
500 catcher) around ``AccessMiddleware`` (API key, body size limit, the key's user as default user_id).

They run before routing and body parsing, in that order: a bad key is a 401 before any of the body
is read, and an oversized body is a 413 as soon as it passes the limit, never read into memory whole.
Each layer is a coroutine frame and a wrapper of ``send`` on every request; these were six layers,
and one search paid for each (docs/performance.md).
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cortadel_server.api.request_metrics import operation_of
from cortadel_server.auth import is_admin_key, verify_key
from cortadel_server.metrics import current_request_id

log = logging.getLogger("cortadel.api")

Json = dict[str, Any]


def error_body(status: int, code: str, message: str, detail: str | None = None) -> Json:
    return {"status": status, "code": code, "message": message, "detail": detail}


async def send_json(send: Send, status: int, body: Json, request_id: str | None = None) -> None:
    payload = json.dumps(body).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if request_id:
        headers.append((b"x-request-id", request_id.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def replaying(body: bytes, receive: Receive) -> Receive:
    """A receive channel that hands over an already-read body once, then the rest of the stream."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class RequestMiddleware:
    """The outer layer of every HTTP request: its request id, its timing into the metrics, and the
    500 catcher, in one layer with one wrapper of ``send``.

    Every response carries ``X-Request-Id`` (the caller's, when it sent a sane one). The timing
    covers every layer inside it, so refusals (401, 413) and 500s count too. An unexpected
    exception becomes the contract's 500 body, logged with the request id; it is handled here rather
    than by Starlette's outermost error middleware, which re-raises after answering and so makes
    the server drop the client's keep-alive connection.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if _SAFE_REQUEST_ID.match(incoming) else new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        id_header = (b"x-request-id", request_id.encode())
        # the request id for what runs inside (metrics' error ring names the request a provider failed)
        id_token = current_request_id.set(request_id)
        status: int | None = None  # None until the response starts

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                headers.append(id_header)
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("500 %s %s request_id=%s", scope["method"], scope["path"], request_id)
            if status is None:
                await send_json(send_with_id, 500, error_body(500, "internal_error", "Internal server error", request_id))
        finally:
            application = scope["app"]  # set by Starlette before its middleware stack runs
            service = getattr(application.state, "service", None)  # none in an app built only for its spec
            if service is not None:
                # 500 is what the client gets if nothing was sent
                service.metrics.observe_request(
                    operation_of(application.router.routes, scope), status or 500, time.perf_counter() - started
                )
            current_request_id.reset(id_token)


_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: the bits ``uuid.UUID(version=4)`` sets: version 4, RFC 4122 variant
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_request_id() -> str:
    """A random version-4 UUID's 32 hex digits, from the process's generator (reseeded in a forked
    child): ``uuid.uuid4`` reads ``os.urandom``, a system call that lets go of the GIL, after which
    the event loop waited for the read workers to hand it back, on every request. An id names a
    request in the logs; it is no secret."""
    return f"{random.getrandbits(128) & _UUID4_CLEAR | _UUID4_SET:032x}"


#: the dashboard's login cookie (HttpOnly, SameSite=Strict): a browser sends no header, so on the
#: dashboard's pages the key may come from here
DASHBOARD_COOKIE = "cortadel_key"
DASHBOARD_LOGIN = "/ui/login"


def is_dashboard_path(path: str) -> bool:
    return path == "/" or path == "/ui" or path.startswith("/ui/")


def dashboard_key_from(scope: Scope) -> str | None:
    cookies = SimpleCookie()
    try:
        cookies.load(dict(scope["headers"]).get(b"cookie", b"").decode("latin-1"))
    except CookieError:
        return None  # a mangled Cookie header is no key
    morsel = cookies.get(DASHBOARD_COOKIE)
    return (morsel.value or None) if morsel is not None else None


def api_key_from(scope: Scope) -> str | None:
    """The key from ``Authorization: Bearer``, the ``API_KEY`` header or ``?api_key=``."""
    headers = dict(scope["headers"])
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    if b"api_key" in headers:
        return headers[b"api_key"].decode("latin-1").strip() or None
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get("api_key")
    return values[0] if values else None


class AccessMiddleware:
    """Who may ask and how much they may send, in one layer: the API key, the body limit, and the
    key's user as the default ``user_id``.

    The key comes from headers and the query string only (on the dashboard's pages also its login
    cookie, where a browser that is not signed in is sent to the login form), so an unauthenticated
    request is refused (401) before a byte of its body is read. With an auth secret, every path but
    the open ones needs a valid key. The user the key is bound to is put in
    ``scope["state"]["key_user"]``; routes compare it with the user they act for (403 on a mismatch).

    A body larger than the largest the contract allows for the operation is refused (413) as soon
    as it passes the limit, never read into memory whole.

    Clients holding a key may leave ``user_id`` out (the published SDKs do): the key's user fills it,
    in the query string of a GET, in the JSON body of a POST or DELETE under /api/v1/memories; a
    user_id that is present is left alone (and checked against the key by the route).
    """

    OPEN_PATHS = ("/api/health", "/livez", "/readyz", "/docs", "/openapi.json", "/redoc")
    #: where the admin credential is accepted (marked ``scope["state"]["admin"]``); elsewhere it is
    #: no key at all, so it can never act as a user
    ADMIN_PATHS = ("/api/v1/debug/", "/api/v1/users/", "/metrics", "/ui/")
    #: the dashboard's login form and its assets
    DASHBOARD_OPEN_PATHS = (DASHBOARD_LOGIN, "/ui/static/")

    def __init__(self, app: ASGIApp, secret: str | None, admin_key: str | None, limit_for: Callable[[str, str], int]) -> None:
        self.app = app
        self.secret = secret
        self.admin_key = admin_key
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not await self._admitted(scope, state, send):
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_json(send, 413, _too_large(limit), state.get("request_id"))
            return
        # Read the body up front (every operation parses all of it anyway), refusing it as soon as
        # it passes the limit, then replay it to the application.
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # disconnect: let the app see it
                return
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit:
                await send_json(send, 413, _too_large(limit), state.get("request_id"))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        user = state.get("key_user")
        if user is not None and scope["path"].startswith("/api/v1/memories"):
            scope, body = _default_user_id(scope, body, user)
        await self.app(scope, replaying(body, receive), send)

    async def _admitted(self, scope: Scope, state: dict[str, Any], send: Send) -> bool:
        """Whether the request's credential lets it through; if not, its refusal has been sent."""
        dashboard = is_dashboard_path(scope["path"])
        key = api_key_from(scope) or (dashboard_key_from(scope) if dashboard else None)
        if scope["path"].startswith(self.ADMIN_PATHS) and is_admin_key(self.admin_key, key):
            state["admin"] = True
            return True
        if self.secret is None or scope["path"].startswith(self.OPEN_PATHS + self.DASHBOARD_OPEN_PATHS):
            return True
        user = verify_key(self.secret, key) if key is not None else None
        if user is None and dashboard:  # a browser is sent to the login form instead
            await send({"type": "http.response.start", "status": 303, "headers": [(b"location", DASHBOARD_LOGIN.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return False
        if user is None:
            message = "Missing API key" if key is None else "Invalid API key"
            await send_json(send, 401, error_body(401, "unauthorized", message), state.get("request_id"))
            return False
        state["key_user"] = user
        return True


def _too_large(limit: int) -> Json:
    return error_body(413, "payload_too_large", f"Request body exceeds {limit} bytes")


def _default_user_id(scope: Scope, body: bytes, user: str) -> tuple[Scope, bytes]:
    """The request with ``user`` as its user_id where it names none: in the query string of a GET,
    in the JSON body otherwise."""
    if scope["method"] == "GET":
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if not query.get("user_id"):
            extra = urlencode({"user_id": user}).encode("latin-1")
            existing = scope.get("query_string", b"")
            scope = {**scope, "query_string": existing + b"&" + extra if existing else extra}
        return scope, body
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):
        parsed = None  # malformed or absurdly deep JSON: the route reports it as a 400
    if isinstance(parsed, dict) and parsed.get("user_id") is None:
        parsed["user_id"] = user
        body = json.dumps(parsed).encode("utf-8")
    return scope, body
