"""The dashboard's two cookies: the login key and the CSRF token.

The key cookie is HttpOnly and SameSite=Strict: script cannot read it and no other site's page can
make the browser send it. Every form also carries the CSRF token, compared with its own cookie
(double submit), so a form posted from elsewhere fails even on an open server, which has no key.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import Request, Response

from cortadel_server.api.middleware import DASHBOARD_COOKIE
from cortadel_server.errors import Forbidden

CSRF_COOKIE = "cortadel_csrf"
#: the hidden field every dashboard form carries
CSRF_FIELD = "csrf_token"
#: the key cookie lasts a working day; the browser forgets it at logout or when it expires
KEY_MAX_AGE = 12 * 3600


def csrf_token(request: Request) -> str:
    """The request's CSRF token: the one its cookie holds, or a new one (``issue_csrf`` sets it)."""
    token: str | None = getattr(request.state, "csrf_token", None)
    if token is None:
        token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        request.state.csrf_token = token
    return token


def issue_csrf(request: Request, response: Response) -> None:
    token = csrf_token(request)
    if request.cookies.get(CSRF_COOKIE) != token:
        _set(request, response, CSRF_COOKIE, token, max_age=None)


def check_csrf(request: Request, sent: str) -> None:
    expected = request.cookies.get(CSRF_COOKIE)
    if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise Forbidden("The form expired or came from another site: reload the page and send it again")


def remember_key(request: Request, response: Response, key: str) -> None:
    _set(request, response, DASHBOARD_COOKIE, key, max_age=KEY_MAX_AGE)


def forget_key(response: Response) -> None:
    response.delete_cookie(DASHBOARD_COOKIE, path="/", httponly=True, samesite="strict")


def signed_in(request: Request) -> bool:
    return DASHBOARD_COOKIE in request.cookies


def _set(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
