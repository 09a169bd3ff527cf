"""What both clients share around the wire: configuration, request building, reading the
response, translating httpx's exceptions, and the retry decision."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast
from urllib.parse import urlparse

import httpx

from ._errors import CortadelError, RequestTimeoutError, TransportError, error_from_body
from ._operations import Call, Scope
from ._version import __version__

T = TypeVar("T")

DEFAULT_BASE_URL = "http://localhost:3001"
DEFAULT_TIMEOUT = 100.0
"""Seconds the client waits on each network phase of a call (connect, send, each read) before
raising ``RequestTimeoutError``."""
DEFAULT_APP_NAME = "cortadel-python"


@dataclass(frozen=True)
class Retry:
    """Opt-in retries for idempotent calls (``get``, ``list``, ``search``, ``history``,
    ``health``, ``delete``); ``add`` and ``add_conversation`` are never sent twice.

    A call is tried at most ``attempts`` times in all. It is tried again after a transport
    failure or timeout, or an answer whose status is in ``statuses``, waiting ``backoff``
    seconds, then twice that, and so on, never more than ``max_backoff``.
    """

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({502, 503, 504}))

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("Retry.attempts must be at least 1.")

    def delay_after(self, call: Call[Any], attempt: int, error: CortadelError) -> float | None:
        """Seconds to wait before trying ``call`` again after ``error`` on try number
        ``attempt`` (1-based), or ``None`` to give up and raise."""
        if not call.idempotent or attempt >= self.attempts:
            return None
        if not isinstance(error, TransportError) and error.status not in self.statuses:
            return None
        return float(min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff))


HttpClient = httpx.Client | httpx.AsyncClient


class Endpoint:
    """The validated settings of one client: where, as whom, and how long to wait."""

    def __init__(
        self,
        base_url: str | None,
        user_id: str | None,
        api_key: str | None,
        app_name: str,
        timeout: float,
    ) -> None:
        url = (base_url if base_url is not None else os.environ.get("CORTADEL_BASE_URL") or DEFAULT_BASE_URL).strip()
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an absolute http(s) URL, got {url!r}")
        if user_id is not None and not user_id.strip():
            raise ValueError("user_id must not be blank; omit it to let the API key decide the user.")
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds.")
        self.base_url = url.rstrip("/")
        self.scope = Scope(user_id=user_id, app_name=app_name.strip() or DEFAULT_APP_NAME)
        key = api_key if api_key is not None else os.environ.get("CORTADEL_API_KEY")
        self.headers = {"Accept": "application/json", "User-Agent": f"cortadel-python/{__version__}"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.timeout = httpx.Timeout(timeout)

    def request(self, http: HttpClient, call: Call[Any]) -> httpx.Request:
        return http.build_request(
            call.method,
            self.base_url + call.path,
            params=call.params,
            json=call.body,
            headers=self.headers,
        )


@contextmanager
def translated_transport_errors(request: httpx.Request) -> Iterator[None]:
    """Turn httpx's exceptions into ours; everything else (cancellation included) passes.
    The message names the URL (without its query) so a wrong base URL or port is plain to see."""
    try:
        yield
    except httpx.TimeoutException as e:
        raise RequestTimeoutError(0, "timeout", f"The request timed out ({type(e).__name__}).") from e
    except httpx.HTTPError as e:
        where = request.url.copy_with(query=None)
        raise TransportError(0, "transport_error", f"Cannot reach Cortadel at {where}: {e or type(e).__name__}") from e


def finish(call: Call[T], response: httpx.Response) -> T:
    """Read a complete response as ``call``'s result, or raise the matching error."""
    status = response.status_code
    if status == 404 and call.absent_on_404:
        return cast(T, None)
    if 300 <= status < 400:
        where = response.headers.get("location") or "elsewhere"
        raise TransportError(status, "redirect", f"HTTP {status}: the server redirects to {where}; redirects are not followed.")
    body = _json_body(response)
    if 200 <= status < 300 or (status == 503 and call.body_on_503):
        if not isinstance(body, dict):
            raise TransportError(status, "transport_error", _not_json(response))
        return call.decode(body)
    if body is None:
        raise TransportError(status, "transport_error", _not_json(response))
    raise error_from_body(status, body)


def _json_body(response: httpx.Response) -> Any:
    if "json" not in response.headers.get("content-type", "") or not response.content:
        return None
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def _not_json(response: httpx.Response) -> str:
    kind = response.headers.get("content-type") or "no content type"
    return f"HTTP {response.status_code} from {response.request.url.path} did not carry a JSON object ({kind})."
