"""A route that validates its JSON body in one pass of pydantic-core and calls its endpoint itself.

FastAPI answers a request with a body by parsing its content type with ``email.message``, the body
with ``json.loads``, validating the result in Python mode, then solving the endpoint's dependencies
through exit stacks and caches: most of what the event loop spends on a search, whose own work
runs on a read worker (docs/performance.md). A ``JsonBodyRoute`` takes a body sent as
``application/json`` that its model's ``model_validate_json`` accepts (pydantic-core parses and
validates in one pass) straight to its endpoint, with what ``Authorized[Model]`` and ``Service``
resolve to: the body, authorized for its ``user_id``, and the service.

Whatever that validator refuses, and every other content type, goes through FastAPI's own handler,
so each refusal is FastAPI's: the same status and error body, the messages of Python's JSON parser.
What it accepts, FastAPI accepts as the same model (tests/test_json_body_route.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from cortadel_server.api.deps import authorize, get_service

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class JsonBodyRoute(APIRoute):
    """An operation whose endpoint is ``async def (body: Authorized[Model], service: Service)``,
    with no other dependencies (of its own or of its router: the short way would skip them); its
    spec is FastAPI's, from that signature, as for any route."""

    def get_route_handler(self) -> Handler:
        standard = super().get_route_handler()
        endpoint = self.endpoint
        model = self.body_field.field_info.annotation if self.body_field is not None else None
        if self.dependencies or list(inspect.signature(endpoint).parameters) != ["body", "service"] or not (
            isinstance(model, type) and issubclass(model, BaseModel)
        ):
            raise TypeError(f"{endpoint.__name__}: a JsonBodyRoute's endpoint takes (body: Authorized[Model], service: Service)")

        async def handle(request: Request) -> Response:
            if request.headers.get("content-type") == "application/json":
                try:
                    body = model.model_validate_json(await request.body())
                except ValidationError:
                    pass  # FastAPI's handler reads it again and tells what is wrong, as it always has
                else:
                    authorize(request, body.user_id)  # type: ignore[attr-defined]  # every Authorized model has one
                    response: Response = await endpoint(body, get_service(request))
                    return response
            return await standard(request)

        return handle
