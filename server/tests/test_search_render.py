"""The search answer is rendered as plain dicts, byte for byte what its response models give; and
no route dependency of ours costs a worker-thread hand-off."""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse
from test_api_memories import add

from cortadel_server.api import schemas
from cortadel_server.api.app import create_app
from cortadel_server.api.request_metrics import endpoints
from cortadel_server.config import Settings


def test_search_body_is_byte_for_byte_the_models_dump(api: httpx.Client, user: str) -> None:
    before = time.time()
    tagged = add(api, user, "Ana keeps sourdough starter in the fridge.", tags=["kitchen", "bread"], project="home",
                 metadata={"source": "chat", "n": 1})["id"]
    plain = add(api, user, "Ana bakes sourdough on Sundays — ünïcode too.")["id"]
    response = api.post("/api/v1/memories/search", json={"user_id": user, "query": "Ana sourdough", "top_k": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    # What the route answered before it skipped the models: the models' dump, through JSONResponse.
    through_models = JSONResponse(schemas.SearchResponse.model_validate(body).model_dump(by_alias=True)).body
    assert response.content == through_models
    assert (body["query"], body["total"], sorted(r["id"] for r in body["results"])) == ("Ana sourdough", 2, sorted([tagged, plain]))
    hit = next(r for r in body["results"] if r["id"] == tagged)
    assert list(hit) == [f.serialization_alias or name for name, f in schemas.HybridSearchResult.model_fields.items()]
    assert (hit["content"], hit["tags"], hit["project_id"], hit["source"], hit["global"]) == (
        "Ana keeps sourdough starter in the fridge.", ["kitchen", "bread"], "home", "chat", False)
    assert before - 1 <= datetime.fromisoformat(hit["created_at"]).timestamp() <= time.time() + 1
    assert hit["member_ids"] == [] and hit["similar_ids"] == []
    assert hit["text_rank"] in (1, 2) and hit["rrf_score"] > 0


def _ours(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        if sub.call is not None and sub.call.__module__.startswith("cortadel_server"):
            yield sub.call
        yield from _ours(sub)


def test_route_dependencies_run_on_the_event_loop() -> None:
    """FastAPI runs a plain ``def`` dependency on a worker thread: a hand-off and back per request
    for what is a dict lookup (two on every search before they were made ``async``)."""
    routes = [r for r in endpoints(create_app(Settings()).routes) if isinstance(r, APIRoute)]
    calls = {call for route in routes for call in _ours(route.dependant)}
    assert {c.__name__ for c in calls} >= {"_service", "authorized_body", "_query_user", "_query_user_or_key", "_admin_only"}
    assert [c.__qualname__ for c in calls if not inspect.iscoroutinefunction(c)] == []
