"""Exception handlers: every error leaves as the contract's JSON body, logged with its request id."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from cortadel_server.api import schemas
from cortadel_server.api.middleware import error_body
from cortadel_server.errors import CortadelError, RequestError, ValidationFailed

log = logging.getLogger("cortadel.api")

VALIDATION_TYPE = "https://tools.ietf.org/html/rfc9110#section-15.5.1"


def _request_id(request: Request) -> str | None:
    request_id: str | None = request.scope.get("state", {}).get("request_id")
    return request_id


def validation_response(request: Request, errors: dict[str, list[str]], detail: str | None = None) -> JSONResponse:
    body = {
        "type": VALIDATION_TYPE,
        "title": "One or more validation errors occurred.",
        "status": 400,
        "code": "validation_error",
        "message": detail or summary(errors),
        "detail": detail,
        "errors": errors,
    }
    log.info("400 validation_error %s %s request_id=%s errors=%s", request.method, request.url.path, _request_id(request), errors)
    return JSONResponse(body, status_code=400)


def summary(errors: dict[str, list[str]]) -> str:
    """One line naming each bad field and its first problem."""
    return "; ".join(f"{k}: {v[0]}" for k, v in errors.items())


def _field_name(loc: tuple[Any, ...]) -> str:
    # The first element says where the field was (body, query, path, header); the rest is its path.
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)]
    return ".".join(parts) or "body"


def field_errors(exc: RequestValidationError | ValidationError) -> tuple[dict[str, list[str]], str | None]:
    """The problems per field of a request body (or of one item of a batch), and the whole body's."""
    errors: dict[str, list[str]] = {}
    detail = None
    for err in exc.errors():
        kind = err.get("type", "")
        if kind == "json_invalid":
            detail = "Malformed JSON body"
            errors.setdefault("body", []).append(f"Malformed JSON: {err.get('ctx', {}).get('error', 'could not parse')}")
            continue
        if kind == "missing" and tuple(err.get("loc", ())) == ("body",):
            errors.setdefault("body", []).append("A JSON body is required")
            continue
        name = _field_name(tuple(err.get("loc", ())))
        if kind == "extra_forbidden":
            message = "Unknown field (fields are snake_case)"
        else:
            message = err.get("msg", "Invalid value").removeprefix("Value error, ")
        errors.setdefault(name, []).append(message)
    return errors, detail


#: How the spec names each error status (413 as the reference contract spells it).
_ERROR_PHRASES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
    413: "Payload Too Large", 415: "Unsupported Media Type", 500: "Internal Server Error",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of an operation: the validation body for 400, the contract's
    error body for the rest."""
    return {
        status: {
            "model": schemas.ValidationProblemDetails if status == 400 else schemas.ErrorResponse,
            "description": _ERROR_PHRASES[status],
        }
        for status in statuses
    }


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors, detail = field_errors(exc)
        return validation_response(request, errors, detail)

    @app.exception_handler(ValidationFailed)
    async def on_validation_failed(request: Request, exc: ValidationFailed) -> JSONResponse:
        return validation_response(request, exc.errors, exc.message)

    @app.exception_handler(RequestError)
    async def on_request_error(request: Request, exc: RequestError) -> JSONResponse:
        log.info("%s %s %s %s request_id=%s: %s", exc.status, exc.code, request.method, request.url.path, _request_id(request), exc.message)
        return JSONResponse(error_body(exc.status, exc.code, exc.message, exc.detail), status_code=exc.status)

    @app.exception_handler(HTTPException)
    async def on_http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400:  # e.g. a body the framework could not parse: the documented 400 body
            return validation_response(request, {"body": [str(exc.detail)]}, str(exc.detail))
        code = {404: "not_found", 405: "method_not_allowed", 415: "unsupported_media_type"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(exc.status_code, code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(CortadelError)
    async def on_server_error(request: Request, exc: CortadelError) -> JSONResponse:
        log.error("503 %s %s request_id=%s: %s", request.method, request.url.path, _request_id(request), exc)
        return JSONResponse(error_body(503, "unavailable", str(exc)), status_code=503)
