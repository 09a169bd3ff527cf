"""The search's own body handling (api/json_body.py) against FastAPI's, over HTTP.

A body sent as exactly ``application/json`` that the model's JSON validator accepts skips FastAPI's
handler; any other content type naming JSON (``; charset=utf-8``) always takes it. Every body here,
valid or not, is sent both ways and must get the same status and the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import Depends

from cortadel_server.api.deps import Authorized, Service
from cortadel_server.api.json_body import JsonBodyRoute
from cortadel_server.api.schemas import SearchMemoriesRequest
from cortadel_server.testing import ServerProcess

SEARCH = "/api/v1/memories/search"
FAST = {"content-type": "application/json"}
FASTAPI = {"content-type": "application/json; charset=utf-8"}


def answer(response: httpx.Response) -> tuple[int, Any]:
    """Status and body, the search's phase timings left out (they differ from one search to the next)."""
    body = response.json()
    for hit in body.get("results", []) if isinstance(body, dict) else []:
        hit["attributes"].pop("timings_ms", None)
    return response.status_code, body


def bodies(user: str) -> list[bytes]:
    valid = [
        {"user_id": user, "query": "where does Ana keep the bike"},
        {"user_id": user, "query": "fern", "top_k": 2, "mode": "text"},
        {"user_id": user, "query": "spare key", "top_k": 3.0, "mode": "deep", "include_faded": False, "rerank": None},
        {"user_id": user, "query": "bike 🚲 é", "mode": "vector", "as_of": 4102444800, "known_at": "2100-01-01T00:00:00Z"},
        {"user_id": user, "query": "shed", "session_id": "s1", "include_superseded": True, "token_budget": 0},
    ]
    raw = [
        b'{"user_id": "%s", "query": "a", "query": "bike"}',  # a repeated key: the last wins
        b'{"user_id": "%s", "query": "\\ud83d\\udeb2 bike"}',  # an escaped surrogate pair
        b'{"user_id": "%s", "query": "bike"}\n\t ',
        b'{"user_id": "%s", "query": "\\ud800"}',  # a lone surrogate
        b'{"user_id": "%s", "query": "bike", "as_of": NaN}',
        b'{"user_id": "%s", "query": "bike", "as_of": 1e400}',
        b'\xef\xbb\xbf{"user_id": "%s", "query": "bike"}',  # a UTF-8 byte order mark
        b'{"user_id": "%s", "query": "bi\xffke"}',  # not UTF-8
        b'{"user_id": "%s", "query": "bi\tke"}',  # a raw control character
        b'{"user_id": "%s", "query": "bike",}',
        b'{"user_id": "%s", "query": "bike"} {}',
        b'{"user_id": "%s", "query": ""}',
        b'{"user_id": "%s", "query": "bike", "top_k": true}',
        b'{"user_id": "%s", "query": "bike", "top_k": 10.5}',
        b'{"user_id": "%s", "query": "bike", "mode": "fuzzy"}',
        b'{"user_id": "%s", "query": "bike", "userId": "x"}',
        b'{"user_id": "%s", "query": ["bike"]}',
        b'{"user_id": "%s", "query": ',
        b'["%s"]',
        b'"%s"',
    ]
    return [json.dumps(b).encode() for b in valid] + [r.replace(b"%s", user.encode()) for r in raw] + [b"", b"null", b"{}"]


@pytest.fixture()
def stored(api: httpx.Client, user: str) -> str:
    for text in ("Ana keeps her bike in the blue shed.", "The spare key is under the red pot.", "Ana waters the fern on Mondays."):
        assert api.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False, "session_id": "s1"}).status_code == 200
    return user


def test_every_body_gets_fastapis_answer(api: httpx.Client, stored: str) -> None:
    statuses = []
    for body in bodies(stored):
        fast = answer(api.post(SEARCH, content=body, headers=FAST))
        assert fast == answer(api.post(SEARCH, content=body, headers=FASTAPI)), body
        statuses.append(fast[0])
    assert statuses == [200] * 8 + [400] * 3 + [200] + [400] * 16
    found = answer(api.post(SEARCH, content=bodies(stored)[0], headers=FAST))[1]
    assert found["results"][0]["content"] == "Ana keeps her bike in the blue shed."
    assert found["total"] == 3


def test_refusals_are_the_contracts(api: httpx.Client, user: str) -> None:
    malformed = api.post(SEARCH, content=b'{"user_id": "u", "query": ', headers=FAST)
    assert malformed.status_code == 400
    assert malformed.json() == {
        "type": "https://tools.ietf.org/html/rfc9110#section-15.5.1", "title": "One or more validation errors occurred.",
        "status": 400, "code": "validation_error", "message": "Malformed JSON body", "detail": "Malformed JSON body",
        "errors": {"body": ["Malformed JSON: Expecting value"]},
    }
    unknown_mode = api.post(SEARCH, json={"user_id": user, "query": "q", "mode": "fuzzy"})
    assert unknown_mode.status_code == 400
    assert unknown_mode.json()["errors"] == {"mode": ["Must be one of hybrid, text, vector, deep"]}
    plain = api.post(SEARCH, content=json.dumps({"user_id": user, "query": "q"}), headers={"content-type": "text/plain"})
    assert plain.status_code == 400
    assert plain.json()["errors"] == {"body": ["Input should be a valid dictionary or object to extract fields from"]}


def test_a_key_searches_only_for_its_user(auth_server: ServerProcess, user: str) -> None:
    key = auth_server.mint_key(user)
    with httpx.Client(base_url=auth_server.base_url, timeout=30, headers={"authorization": f"Bearer {key}"}) as api:
        assert api.post("/api/v1/memories", json={"user_id": user, "text": "Ana keeps her bike in the blue shed.", "infer": False}).status_code == 200
        other = api.post(SEARCH, json={"user_id": "someone-else", "query": "bike"})
        assert (other.status_code, other.json()) == (403, {
            "status": 403, "code": "forbidden", "message": "API key is not valid for user 'someone-else'", "detail": None})
        own = api.post(SEARCH, json={"query": "bike"})  # the key's user filled in
        assert own.status_code == 200
        assert [hit["content"] for hit in own.json()["results"]] == ["Ana keeps her bike in the blue shed."]


async def _admin_only() -> None: ...


def test_an_endpoint_of_another_shape_is_refused_at_startup() -> None:
    async def with_query(body: Authorized[SearchMemoriesRequest], service: Service, limit: int = 3) -> None: ...

    async def searching(body: Authorized[SearchMemoriesRequest], service: Service) -> None: ...

    with pytest.raises(TypeError, match="with_query: a JsonBodyRoute's endpoint takes"):
        JsonBodyRoute("/x", with_query, methods=["POST"])
    with pytest.raises(TypeError, match="searching: a JsonBodyRoute's endpoint takes"):  # a dependency it would skip
        JsonBodyRoute("/x", searching, methods=["POST"], dependencies=[Depends(_admin_only)])
    assert JsonBodyRoute("/x", searching, methods=["POST"]).operation_id is None
