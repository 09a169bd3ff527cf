"""The SDK's one exception tree. Every failure a call can raise is a ``CortadelError``.

    CortadelError                 status, code, message (status 0: no HTTP response)
    ├── ValidationError           400 / 422, with per-field messages in ``errors``
    ├── AuthenticationError       401: missing or wrong API key
    ├── PermissionDeniedError     403: the key belongs to another user
    ├── NotFoundError             404 where "absent" is not a normal answer
    ├── ServerError               5xx
    └── TransportError            no usable response: connection failed, non-JSON body
        └── RequestTimeoutError   the request ran past the client's timeout

Other statuses (409, 413, 429, ...) raise ``CortadelError`` itself. ``asyncio.CancelledError``
is never wrapped: a cancelled call cancels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class CortadelError(Exception):
    """A call to the Cortadel server failed.

    ``status`` is the HTTP status (0 when no response arrived), ``code`` the server's
    machine-readable error code (``not_found``, ``validation_error``, ``unauthorized``, ...),
    ``message`` a sentence for people.
    """

    def __init__(self, status: int, code: str, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class ValidationError(CortadelError):
    """The server rejected the request body or query. ``errors`` maps field names to messages."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        detail: str | None = None,
        errors: Mapping[str, list[str]] | None = None,
    ) -> None:
        super().__init__(status, code, message, detail=detail)
        self.errors: dict[str, list[str]] = dict(errors or {})


class AuthenticationError(CortadelError):
    """401: the API key is missing, malformed or not valid for this server."""


class PermissionDeniedError(CortadelError):
    """403: the API key is valid but bound to another user."""


class NotFoundError(CortadelError):
    """404 on an operation whose contract has no "absent" answer (a wrong base URL, usually)."""


class ServerError(CortadelError):
    """The server failed (5xx)."""


class TransportError(CortadelError):
    """No usable HTTP response: the connection failed, or the body was not JSON."""


class RequestTimeoutError(TransportError):
    """The request did not complete within the client's timeout."""


_BY_STATUS: dict[int, type[CortadelError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
}


def error_from_body(status: int, body: Any) -> CortadelError:
    """Translate an HTTP error response's JSON body into the matching exception.

    Two body shapes arrive: the unified ``{"status", "code", "message", "detail"}`` error and,
    for model validation failures, a problem document ``{"title", "detail", "errors": {...}}``.
    """
    body = body if isinstance(body, dict) else {}
    errors = body.get("errors")
    if isinstance(errors, dict) or status in (400, 422):
        fields = {str(k): _as_messages(v) for k, v in (errors or {}).items()} if isinstance(errors, dict) else {}
        message = body.get("detail") or body.get("title") or body.get("message") or "Validation failed."
        if fields:
            listed = ", ".join(f"{name}: {'; '.join(msgs)}" for name, msgs in fields.items())
            message = f"{message} ({listed})"
        return ValidationError(
            status,
            body.get("code") or "validation_error",
            message,
            detail=_opt_str(body.get("detail")),
            errors=fields,
        )
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else CortadelError)
    return cls(
        status,
        body.get("code") or "http_error",
        body.get("message") or "The request failed.",
        detail=_opt_str(body.get("detail")),
    )


def _as_messages(value: Any) -> list[str]:
    if isinstance(value, list):
        return ["" if v is None else str(v) for v in value]
    return ["" if value is None else str(value)]


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
