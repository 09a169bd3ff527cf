"""Reproducers from the attack run: bad instants, paging overflow, lone surrogates, deep JSON, odd keys,
bodies read before authentication, limits, type coercion. Each answered 500 (or was silently accepted)
before; each must now be a clear 4xx with the contract's error body, and leave the user readable."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from cortadel_server.auth import mint_key
from cortadel_server.testing import ServerProcess, running_server
from tests.conftest import AUTH_SECRET

VALIDATION_KEYS = {"type", "title", "status", "code", "message", "detail", "errors"}


def assert_validation_400(response: httpx.Response, field: str) -> dict[str, object]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == VALIDATION_KEYS
    assert (body["status"], body["code"]) == (400, "validation_error")
    assert field in body["errors"], body["errors"]
    return body


@pytest.mark.parametrize("instant", [1e20, -1e20, "nan", "inf", "-inf", 1e308, "1e400", 253402300800, -62135596801])
def test_out_of_range_statement_times_are_400(api: httpx.Client, user: str, instant: object) -> None:
    body = assert_validation_400(api.post("/api/v1/memories", json={"user_id": user, "text": "I like tea.", "timestamp": instant}), "timestamp")
    assert body["errors"]["timestamp"] == ["Must be an instant between 1900-01-01 and 2999-12-31 (ISO 8601 or Unix seconds)"]
    conversation = {"user_id": user, "messages": [{"role": "user", "content": "I like tea.", "timestamp": instant}]}
    assert_validation_400(api.post("/api/v1/memories/from-conversation", json=conversation), "messages.0.timestamp")
    assert api.get("/api/v1/memories", params={"user_id": user}).json()["total"] == 0


@pytest.mark.parametrize("instant", ["nan", "inf", "-inf", "1e400", "-1e20"])
def test_out_of_range_point_in_time_queries_are_400(api: httpx.Client, user: str, instant: str) -> None:
    for field in ("as_of", "known_at"):
        assert_validation_400(api.get("/api/v1/memories", params={"user_id": user, field: instant}), field)
        assert_validation_400(api.post("/api/v1/memories/search", json={"user_id": user, "query": "tea", field: instant}), field)


def test_instants_inside_the_window_are_accepted(api: httpx.Client, user: str) -> None:
    added = api.post("/api/v1/memories", json={"user_id": user, "text": "I joined the chess club.", "timestamp": "1999-12-31T23:00:00Z"})
    assert added.status_code == 200, added.text
    got = api.get(f"/api/v1/memories/{added.json()['id']}", params={"user_id": user}).json()
    assert got["valid_at"].startswith("1999-12-31T23:00:00")


@pytest.mark.parametrize("page", [9223372036854775807, 2**62, 1_000_001])
def test_huge_pages_are_400(api: httpx.Client, user: str, page: int) -> None:
    body = assert_validation_400(api.get("/api/v1/memories", params={"user_id": user, "page": page}), "page")
    assert body["errors"]["page"] == ["Input should be less than or equal to 1000000"]


def test_the_last_allowed_page_is_empty_not_an_error(api: httpx.Client, user: str) -> None:
    listing = api.get("/api/v1/memories", params={"user_id": user, "page": 1_000_000, "size": 100})
    assert listing.status_code == 200 and listing.json()["items"] == []


@pytest.mark.parametrize(
    ("field", "raw", "where"),
    [
        ("tags", '["ok", "\\ud800"]', "tags"),
        ("metadata", '{"a": {"b": "x\\udc00"}}', "metadata"),
        ("metadata", '{"\\ud83d": 1}', "metadata"),
        ("text", '"I like \\ud800 tea."', "text"),
        ("app", '"\\udfff"', "app"),
    ],
)
def test_lone_surrogates_are_refused_and_never_poison_the_user(
    api: httpx.Client, user: str, field: str, raw: str, where: str
) -> None:
    good = api.post("/api/v1/memories", json={"user_id": user, "text": "I keep bees."})
    assert good.status_code == 200
    text = '"I like tea."' if field != "text" else raw
    body = f'{{"user_id": {json.dumps(user)}, "text": {text}' + (f', "{field}": {raw}' if field != "text" else "") + "}"
    refused = api.post("/api/v1/memories", content=body, headers={"content-type": "application/json"})
    problem = assert_validation_400(refused, where)
    assert "lone UTF-16 surrogate" in problem["errors"][where][0]
    # the user's reads all still work and show only the good memory
    listing = api.get("/api/v1/memories", params={"user_id": user})
    assert listing.status_code == 200 and [i["content"] for i in listing.json()["items"]] == ["User keeps bees."]
    found = api.post("/api/v1/memories/search", json={"user_id": user, "query": "bees tea"})
    assert found.status_code == 200 and [r["content"] for r in found.json()["results"]] == ["User keeps bees."]
    assert api.get(f"/api/v1/memories/{good.json()['id']}", params={"user_id": user}).status_code == 200


def test_valid_astral_characters_still_round_trip(api: httpx.Client, user: str) -> None:
    added = api.post("/api/v1/memories", json={"user_id": user, "text": "My cat is called 🐈 Mo.", "tags": ["🐈"], "metadata": {"e": "𝄞"}, "infer": False})
    assert added.status_code == 200, added.text
    got = api.get(f"/api/v1/memories/{added.json()['id']}", params={"user_id": user}).json()
    assert (got["text"], got["tags"], got["metadata_"]) == ("My cat is called 🐈 Mo.", ["🐈"], {"e": "𝄞"})


def test_metadata_nested_past_the_limit_is_400(api: httpx.Client, user: str) -> None:
    deep: object = "x"
    for _ in range(40):
        deep = {"a": deep}
    body = assert_validation_400(api.post("/api/v1/memories", json={"user_id": user, "text": "I like tea.", "metadata": deep}), "metadata")
    assert body["errors"]["metadata"][0].startswith("nested deeper than 32 levels at ")


@pytest.mark.parametrize(("field", "value"), [("infer", 0), ("infer", "false"), ("timestamp", False), ("timestamp", True)])
def test_no_coercion_of_booleans_and_instants(api: httpx.Client, user: str, field: str, value: object) -> None:
    assert_validation_400(api.post("/api/v1/memories", json={"user_id": user, "text": "I like tea.", field: value}), field)
    conversation = {"user_id": user, "messages": [{"role": "user", "content": "I like tea."}], "is_agent_memory": 0}
    assert_validation_400(api.post("/api/v1/memories/from-conversation", json=conversation), "is_agent_memory")
    assert api.get("/api/v1/memories", params={"user_id": user}).json()["total"] == 0


def test_an_unparsable_body_gets_the_documented_400_body(api: httpx.Client, user: str) -> None:
    deep = '{"user_id": "x", "text": "x", "metadata": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"
    body = assert_validation_400(api.post("/api/v1/memories", content=deep, headers={"content-type": "application/json"}), "body")
    assert body["code"] == "validation_error"


# -- with auth ------------------------------------------------------------------------------------
@pytest.fixture()
def auth_api(auth_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=auth_server.base_url, timeout=30) as client:
        yield client


def test_deep_json_under_auth_is_a_400_and_the_connection_lives(auth_api: httpx.Client, auth_server: ServerProcess) -> None:
    key = auth_server.mint_key("deep-user")
    deep = '{"text": "x", "metadata": ' + '{"a": ' * 1000 + "1" + "}" * 1000 + "}"
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    assert_validation_400(auth_api.post("/api/v1/memories", content=deep, headers=headers), "body")
    # same keep-alive connection still answers
    assert auth_api.get("/api/v1/memories", headers=headers).status_code == 200


def raw_request(port: int, head: bytes, body: bytes = b"", read_timeout: float = 10.0) -> tuple[int, bytes, float]:
    """Send ``head`` (+ ``body``) over a plain socket; the status, the response and seconds to answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as sock:
        started = time.monotonic()
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        elapsed = time.monotonic() - started
        head_end = data.find(b"\r\n\r\n")
        headers = data[:head_end].decode("latin-1")
        length = next((int(line.split(":", 1)[1]) for line in headers.split("\r\n") if line.lower().startswith("content-length:")), 0)
        rest = data[head_end + 4 :]
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
    return int(headers.split(" ", 2)[1]), rest, elapsed


@pytest.mark.parametrize("key", ["ck_é.abc", "ck_YWxpY2U.ünïcode", "\u2603"])
def test_a_non_ascii_key_is_401(auth_server: ServerProcess, key: str) -> None:
    head = (
        b"GET /api/v1/memories?user_id=alice HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + key.encode("utf-8")
        + b"\r\nConnection: close\r\n\r\n"
    )
    status, body, _ = raw_request(auth_server.port, head)
    assert status == 401
    assert json.loads(body) == {"status": 401, "code": "unauthorized", "message": "Invalid API key", "detail": None}


def test_a_key_with_padding_or_stray_bits_is_401(auth_api: httpx.Client) -> None:
    key = mint_key(AUTH_SECRET, "alice")
    encoded, _, signature = key[3:].rpartition(".")
    assert auth_api.get("/api/v1/memories", headers={"authorization": f"Bearer {key}"}).status_code == 200
    for variant in (f"ck_{encoded}==.{signature}", f"ck_{encoded}=.{signature}"):
        response = auth_api.get("/api/v1/memories", headers={"authorization": f"Bearer {variant}"})
        assert response.status_code == 401 and response.json()["message"] == "Invalid API key"
    # "alice" is 5 bytes: its last base64 character carries 2 unused bits; a decoder ignores them
    last = encoded[-1]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = encoded[:-1] + alphabet[alphabet.index(last) + 1]
    assert base64.urlsafe_b64decode(twin + "=" * (-len(twin) % 4)) == b"alice"
    response = auth_api.get("/api/v1/memories", headers={"authorization": f"Bearer ck_{twin}.{signature}"})
    assert response.status_code == 401


@pytest.mark.parametrize("path", ["/mcp/claude/alice", "/api/v1/memories/from-conversation", "/api/v1/memories"])
def test_an_unauthenticated_body_is_refused_before_it_is_read(auth_server: ServerProcess, path: str) -> None:
    # 140 MB announced, 1 KB sent: the 401 must come back without the server waiting for the rest.
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {140 * 1024 * 1024}\r\nConnection: close\r\n\r\n"
    ).encode()
    status, body, elapsed = raw_request(auth_server.port, head, b"{" + b" " * 1023, read_timeout=10)
    assert status == 401 and json.loads(body)["code"] == "unauthorized"
    assert elapsed < 5


def test_conversation_bodies_past_the_setting_are_413_before_they_are_read(tmp_path: object) -> None:
    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET, "CORTADEL_MAX_CONVERSATION_BYTES": "65536"}) as server:
        key = server.mint_key("alice")
        for path in ("/api/v1/memories/from-conversation", "/mcp/claude/alice"):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {65537}\r\nConnection: close\r\n\r\n"
            ).encode()
            status, body, elapsed = raw_request(server.port, head)
            assert status == 413 and json.loads(body) == {
                "status": 413, "code": "payload_too_large", "message": "Request body exceeds 65536 bytes", "detail": None,
            }
            assert elapsed < 5
        # a streamed (chunked) body is cut off as soon as it passes the limit
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            def chunks() -> Iterator[bytes]:
                yield b'{"messages": [{"role": "user", "content": "'
                for _ in range(100):
                    yield b"x" * 1024
            response = client.post("/api/v1/memories/from-conversation", content=chunks(), headers={"authorization": f"Bearer {key}"})
            assert response.status_code == 413
            small = {"messages": [{"role": "user", "content": "I live in Porto."}]}
            ok = client.post("/api/v1/memories/from-conversation", json=small, headers={"authorization": f"Bearer {key}"})
            assert ok.status_code == 200 and ok.json()["results"][0]["memory"] == "User lives in Porto."


def test_mcp_sessions_are_capped_by_the_setting() -> None:
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with running_server(env={"CORTADEL_MCP_MAX_SESSIONS": "2"}) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        opened = [client.post(f"/mcp/claude/user-{i}", json=initialize, headers=headers) for i in range(2)]
        assert [r.status_code for r in opened] == [200, 200]
        assert all(r.headers.get("mcp-session-id") for r in opened)
        refused = client.post("/mcp/claude/user-3", json=initialize, headers=headers)
        assert refused.status_code == 503 and "Too many open sessions" in refused.text
        # closing one makes room again
        closed = client.delete("/mcp/claude/user-0", headers={**headers, "mcp-session-id": opened[0].headers["mcp-session-id"]})
        assert closed.status_code == 200
        assert client.post("/mcp/claude/user-3", json=initialize, headers=headers).status_code == 200
