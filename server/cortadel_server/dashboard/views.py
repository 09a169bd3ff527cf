"""Rendering: the template environment, the page response with its headers, and error pages.

Autoescaping is on for every template, so stored text (a memory holding ``<script>``) is shown as
text; nothing is marked safe. The Content-Security-Policy allows only this server's own stylesheet
and script, which also keeps any page from loading anything from elsewhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from cortadel_server.api.deps import is_admin, key_user
from cortadel_server.api.render import iso
from cortadel_server.dashboard.session import CSRF_FIELD, csrf_token, issue_csrf, signed_in
from cortadel_server.errors import RequestError, ValidationFailed

HERE = Path(__file__).parent

ENV = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,  # a misspelt name in a template fails its test, never renders blank
    trim_blocks=True,
    lstrip_blocks=True,
)

HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",  # the pages hold what users said
}


def when(seconds: float | None) -> str:
    """A Unix time as the pages show it: UTC, to the second."""
    if seconds is None:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def age(seconds: float) -> str:
    """How long ago a Unix time was, in its largest whole unit ("4 min")."""
    elapsed = max(0.0, time.time() - seconds)
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if elapsed >= length:
            return f"{int(elapsed // length)} {unit}"
    return f"{int(elapsed)} s"


def size(count: int | None) -> str:
    if count is None:
        return "—"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]  # a float from here on
    raise AssertionError("unreachable")


ENV.filters["when"] = when
ENV.filters["iso"] = iso
ENV.filters["size"] = size
ENV.filters["age"] = age


@dataclass(frozen=True)
class Viewer:
    """Who is looking: a user's key, the admin credential, or nobody on an open server."""

    user: str | None
    admin: bool
    signed_in: bool

    @property
    def sees_every_user(self) -> bool:
        return self.user is None


def viewer_of(request: Request) -> Viewer:
    return Viewer(key_user(request), is_admin(request), signed_in(request))


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = ENV.get_template(template).render(
        viewer=viewer_of(request), csrf_field=CSRF_FIELD, csrf_token=csrf_token(request), **context
    )
    response = HTMLResponse(html, status_code=status, headers=HEADERS)
    issue_csrf(request, response)
    return response


def error_page(request: Request, error: RequestError) -> HTMLResponse:
    """The error the API would answer (status, code, message, per-field messages), as a page."""
    fields = error.errors if isinstance(error, ValidationFailed) else {}
    return page(request, "error.html", status=error.status, error=error, fields=fields)


def _validation_failed(exc: RequestValidationError) -> ValidationFailed:
    errors: dict[str, list[str]] = {}
    for item in exc.errors():
        location = [str(part) for part in item.get("loc", ())[1:]]
        errors.setdefault(".".join(location) or "form", []).append(
            "This field is required" if item.get("type") == "missing" else str(item.get("msg", "Invalid value"))
        )
    return ValidationFailed(errors)


class DashboardRoute(APIRoute):
    """A route whose errors are pages: a refused form shows why, with the API's status and messages."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_as_page(request: Request) -> Response:
            try:
                return await handle(request)
            except RequestValidationError as exc:
                return error_page(request, _validation_failed(exc))
            except RequestError as exc:
                return error_page(request, exc)

        return handle_as_page
