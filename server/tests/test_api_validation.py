"""Bad input: a clear 4xx with the contract's error body, never a 500, never a partial write."""

from __future__ import annotations

import httpx
import pytest


def assert_validation(response: httpx.Response, field: str) -> dict:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["status"] == 400
    assert body["title"] == "One or more validation errors occurred."
    assert body["code"] == "validation_error"
    assert field in body["errors"], body["errors"]
    assert isinstance(body["errors"][field], list) and body["errors"][field][0]
    return body


def total(api: httpx.Client, user: str) -> int:
    return api.get("/api/v1/memories", params={"user_id": user}).json()["total"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "hello there friend"}, "user_id"),
        ({"user_id": "", "text": "hello there friend"}, "user_id"),
        ({"user_id": "u"}, "text"),
        ({"user_id": "u", "text": ""}, "text"),
        ({"user_id": "u", "text": "x" * 50001}, "text"),
        ({"user_id": "u", "text": "ok", "userId": "u"}, "userId"),
        ({"user_id": "u", "text": "ok", "metadata": [1, 2]}, "metadata"),
        ({"user_id": "u", "text": "ok", "memory_type": "dreamy"}, "memory_type"),
        ({"user_id": "u", "text": "ok", "infer": "maybe"}, "infer"),
    ],
)
def test_add_rejects_bad_bodies(api: httpx.Client, body: dict, field: str) -> None:
    assert_validation(api.post("/api/v1/memories", json=body), field)


def test_add_accepts_the_longest_text_and_explicit_nulls(api: httpx.Client, user: str) -> None:
    longest = "word " * 10000
    response = api.post("/api/v1/memories", json={"user_id": user, "text": longest[:50000], "infer": False})
    assert response.status_code == 200 and response.json()["event"] == "ADD"
    nulls = {"user_id": user, "text": "Null-laden add works.", "app": None, "memory_type": None,
             "metadata": None, "infer": None, "project": None, "tags": None}
    response = api.post("/api/v1/memories", json=nulls)
    assert response.status_code == 200
    assert response.json()["content"] == "Null-laden add works."
    assert response.json()["metadata"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_id": "u", "query": ""}, "query"),
        ({"user_id": "u", "query": "q" * 5001}, "query"),
        ({"user_id": "u", "query": "q", "top_k": 0}, "top_k"),
        ({"user_id": "u", "query": "q", "top_k": 51}, "top_k"),
        ({"user_id": "u", "query": "q", "token_budget": -1}, "token_budget"),
        ({"user_id": "u", "query": "q", "mode": "fuzzy"}, "mode"),
        ({"user_id": "u", "query": "q", "rerank": "llm"}, "rerank"),
        ({"user_id": "u", "query": "q", "topK": 3}, "topK"),
        ({"user_id": "u", "query": "q", "as_of": "last tuesday-ish"}, "as_of"),
    ],
)
def test_search_rejects_bad_bodies(api: httpx.Client, body: dict, field: str) -> None:
    assert_validation(api.post("/api/v1/memories/search", json=body), field)


def test_search_accepts_nulls_and_minimal_body(api: httpx.Client, user: str) -> None:
    body = {"user_id": user, "query": "anything", "mode": None, "app_name": None, "session_id": None,
            "rerank": None, "memory_type": None, "top_k": None, "token_budget": None}
    response = api.post("/api/v1/memories/search", json=body)
    assert response.status_code == 200
    assert response.json() == {"query": "anything", "results": [], "total": 0}


@pytest.mark.parametrize(
    ("params", "field"),
    [({"page": 0}, "page"), ({"size": 0}, "size"), ({"size": 101}, "size"), ({"page": "x"}, "page"),
     ({"as_of": "yesterday-ish"}, "as_of")],
)
def test_list_rejects_bad_query(api: httpx.Client, user: str, params: dict, field: str) -> None:
    assert_validation(api.get("/api/v1/memories", params={"user_id": user, **params}), field)


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [("/api/v1/memories", {"page": "2.0"}, "page"), ("/api/v1/memories", {"size": "1e1"}, "size"),
     ("/api/v1/communities", {"level": "0.0"}, "level"), ("/api/v1/reconcile/suggestions", {"limit": "5.5"}, "limit")],
)
def test_integer_query_parameters_are_written_in_digits(api: httpx.Client, user: str, path: str, params: dict, field: str) -> None:
    body = assert_validation(api.get(path, params={"user_id": user, **params}), field)
    assert body["errors"][field] == ["Must be an integer"]
    assert api.get(path, params={"user_id": user, field: "1"}).status_code == 200


def test_list_requires_user_id(api: httpx.Client) -> None:
    assert_validation(api.get("/api/v1/memories"), "user_id")


@pytest.mark.parametrize(
    ("body", "field"),
    [({"user_id": "u"}, "memory_ids"), ({"user_id": "u", "memory_ids": []}, "memory_ids"),
     ({"memory_ids": ["a"]}, "user_id"), ({"user_id": "u", "memory_ids": ["a"], "ids": ["b"]}, "ids")],
)
def test_delete_rejects_bad_bodies(api: httpx.Client, body: dict, field: str) -> None:
    assert_validation(api.request("DELETE", "/api/v1/memories", json=body), field)


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/v1/memories"), ("POST", "/api/v1/memories/search"), ("DELETE", "/api/v1/memories"),
     ("POST", "/api/v1/memories/from-conversation")],
)
def test_malformed_json_is_400(api: httpx.Client, method: str, path: str) -> None:
    response = api.request(method, path, content=b'{"user_id": "u", "text": ', headers={"content-type": "application/json"})
    body = assert_validation(response, "body")
    assert body["detail"] == "Malformed JSON body"


def test_oversized_bodies_are_413_and_store_nothing(api: httpx.Client, user: str) -> None:
    big_metadata = {"blob": "x" * (2 * 1024 * 1024)}
    response = api.post("/api/v1/memories", json={"user_id": user, "text": "too big", "metadata": big_metadata})
    assert response.status_code == 413
    assert response.json() == {**response.json(), "status": 413, "code": "payload_too_large"}
    response = api.post("/api/v1/memories/search", json={"user_id": user, "query": "q", "pad": "y" * 400_000})
    assert response.status_code == 413
    assert total(api, user) == 0


def test_oversized_body_without_content_length_is_413(api: httpx.Client, user: str) -> None:
    def chunks():
        yield b'{"user_id": "' + user.encode() + b'", "query": "'
        for _ in range(40):
            yield b"z" * 10_000
        yield b'"}'

    response = api.post("/api/v1/memories/search", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_unknown_route_and_method_use_the_error_body(api: httpx.Client) -> None:
    missing = api.get("/api/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    wrong = api.put("/api/v1/memories", json={})
    assert wrong.status_code == 405 and wrong.json()["status"] == 405


def test_unexpected_errors_become_the_contract_500() -> None:
    import asyncio

    from cortadel_server.api.app import create_app
    from cortadel_server.config import Settings

    app = create_app(Settings())

    @app.get("/api/v1/boom")
    def boom() -> None:
        raise RuntimeError("kaboom")

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/api/v1/boom")

    response = asyncio.run(call())
    assert response.status_code == 500
    body = response.json()
    assert body == {"status": 500, "code": "internal_error", "message": "Internal server error",
                    "detail": response.headers["x-request-id"]}
    assert "kaboom" not in response.text
