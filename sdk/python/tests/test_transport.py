"""What the clients put on the wire and how they treat slow, failing or odd answers, checked
against a scripted loopback server."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from scripted_server import Reply, ScriptedServer
from sdk_support import Connect

from cortadel import (
    AddOptions,
    ChatMessage,
    ConversationOptions,
    CortadelClient,
    ListOptions,
    RequestTimeoutError,
    Retry,
    SearchOptions,
    ServerError,
    SyncCortadelClient,
    TransportError,
)

EMPTY_PAGE = {"items": [], "total": 0, "page": 1, "size": 20, "pages": 0}
UNAVAILABLE = Reply(503, {"status": 503, "code": "unavailable", "message": "database is restarting", "detail": None})


def test_add_sends_contract_fields_only(connect: Connect) -> None:
    with ScriptedServer(Reply(body={"id": "m1", "event": "ADD"})) as srv:
        client = connect(srv.base_url, "alice", api_key="k-123")
        client.add("Alice ships on Fridays.", AddOptions(app="crm", metadata={"tier": 2}, memory_type="semantic"))
    (seen,) = srv.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/memories")
    assert seen.body == {
        "user_id": "alice",
        "text": "Alice ships on Fridays.",
        "infer": True,
        "app": "crm",
        "memory_type": "semantic",
        "metadata": {"tier": 2},
    }
    assert seen.headers["Authorization"] == "Bearer k-123"


def test_conversation_and_delete_bodies(connect: Connect) -> None:
    with ScriptedServer(Reply(body={"no_facts_extracted": True}), Reply(body={"message": "Deleted 2 memories"})) as srv:
        client = connect(srv.base_url, "alice")
        result = client.add_conversation(
            [ChatMessage("user", "hi", uuid="t1"), ChatMessage("assistant", "hello")],
            ConversationOptions(tags=["a"], session_id="s1"),
        )
        message = client.delete(iter(["m1", "m2"]))
    assert result.no_facts_extracted is True and result.results is None
    assert message == "Deleted 2 memories"
    assert srv.seen[0].body == {
        "user_id": "alice",
        "messages": [{"role": "user", "content": "hi", "uuid": "t1"}, {"role": "assistant", "content": "hello"}],
        "is_agent_memory": False,
        "tags": ["a"],
        "session_id": "s1",
    }
    assert (srv.seen[1].method, srv.seen[1].body) == ("DELETE", {"user_id": "alice", "memory_ids": ["m1", "m2"]})


def test_point_in_time_parameters_travel_as_utc_iso(connect: Connect) -> None:
    valid = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    with ScriptedServer(Reply(body={"query": "q", "results": [], "total": 0}), Reply(body=EMPTY_PAGE)) as srv:
        client = connect(srv.base_url, "alice")
        client.search("q", SearchOptions(top_k=3, as_of=valid, known_at="2024-05-01T00:00:00Z", tag="work"))
        client.list(ListOptions(page=2, size=5, include_superseded=True, as_of=datetime(2024, 1, 1), known_at=valid))
    assert srv.seen[0].body == {
        "query": "q",
        "user_id": "alice",
        "app_name": "cortadel-python",
        "top_k": 3,
        "mode": "hybrid",
        "as_of": "2024-01-02T01:04:05Z",
        "known_at": "2024-05-01T00:00:00Z",
        "tag": "work",
    }
    url = urlsplit(srv.seen[1].path)
    assert url.path == "/api/v1/memories"
    assert parse_qs(url.query) == {
        "user_id": ["alice"],
        "page": ["2"],
        "size": ["5"],
        "include_superseded": ["true"],
        "as_of": ["2024-01-01T00:00:00Z"],
        "known_at": ["2024-01-02T01:04:05Z"],
    }


def test_memory_id_is_escaped_in_the_path(connect: Connect) -> None:
    with ScriptedServer(Reply(404, {"status": 404, "code": "not_found", "message": "no"})) as srv:
        client = connect(srv.base_url, "a b")
        assert client.get("x/../y") is None
        assert client.history("x/../y") is None
    assert [s.path for s in srv.seen] == [
        "/api/v1/memories/x%2F..%2Fy?user_id=a+b",
        "/api/v1/memories/x%2F..%2Fy/history?user_id=a+b",
    ]


def test_environment_supplies_base_url_and_key(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedServer(Reply(body=EMPTY_PAGE)) as srv:
        monkeypatch.setenv("CORTADEL_BASE_URL", srv.base_url)
        monkeypatch.setenv("CORTADEL_API_KEY", "env-key")
        assert connect(user_id="alice").list().total == 0
    assert srv.seen[0].headers["Authorization"] == "Bearer env-key"


def test_degraded_health_is_a_result(connect: Connect) -> None:
    report = {"status": "degraded", "checked_at": "2026-01-01T00:00:00Z", "checks": {"memgraph": {"ok": False, "error": "locked"}}}
    with ScriptedServer(Reply(503, report)) as srv:
        health = connect(srv.base_url, "alice").health()
    assert (health.status, health.checks) == ("degraded", {"memgraph": {"ok": False, "error": "locked"}})


def test_non_json_answers_are_transport_errors(connect: Connect) -> None:
    with ScriptedServer(Reply(502, "<html>Bad Gateway</html>"), Reply(200, "<html>login</html>")) as srv:
        client = connect(srv.base_url, "alice")
        with pytest.raises(TransportError) as bad_gateway:
            client.list()
        with pytest.raises(TransportError) as html_ok:
            client.list()
    assert (bad_gateway.value.status, bad_gateway.value.code) == (502, "transport_error")
    assert "text/html" in html_ok.value.message


def test_redirects_are_not_followed(connect: Connect) -> None:
    with ScriptedServer(Reply(307, {"moved": True}), Reply(body=EMPTY_PAGE)) as srv, pytest.raises(TransportError) as caught:
        connect(srv.base_url, "alice").list()
    assert (caught.value.status, caught.value.code) == (307, "redirect")
    assert len(srv.seen) == 1


def test_refused_connection_is_a_transport_error(connect: Connect) -> None:
    with ScriptedServer() as srv:
        url = srv.base_url
    with pytest.raises(TransportError) as caught:
        connect(url, "alice").health()
    assert (caught.value.status, caught.value.code) == (0, "transport_error")
    assert caught.value.message.startswith(f"Cannot reach Cortadel at {url}/api/health: ")


def test_timeout_raises_request_timeout(connect: Connect) -> None:
    with ScriptedServer(Reply(body=EMPTY_PAGE, delay=10)) as srv:
        client = connect(srv.base_url, "alice", timeout=0.3)
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError) as caught:
            client.list()
        elapsed = time.monotonic() - started
    assert (caught.value.status, caught.value.code) == (0, "timeout")
    assert 0.25 <= elapsed < 3


def test_no_retry_by_default(connect: Connect) -> None:
    with ScriptedServer(UNAVAILABLE, Reply(body=EMPTY_PAGE)) as srv, pytest.raises(ServerError) as caught:
        connect(srv.base_url, "alice").list()
    assert (caught.value.status, caught.value.code, caught.value.message) == (503, "unavailable", "database is restarting")
    assert len(srv.seen) == 1


def test_opt_in_retry_repeats_idempotent_calls(connect: Connect) -> None:
    with ScriptedServer(UNAVAILABLE, UNAVAILABLE, Reply(body={**EMPTY_PAGE, "total": 7})) as srv:
        page = connect(srv.base_url, "alice", retry=Retry(attempts=3, backoff=0.01)).list()
    assert page.total == 7
    assert len(srv.seen) == 3


def test_retry_gives_up_after_its_attempts(connect: Connect) -> None:
    with ScriptedServer(UNAVAILABLE) as srv, pytest.raises(ServerError):
        connect(srv.base_url, "alice", retry=Retry(attempts=2, backoff=0.01)).search("q")
    assert len(srv.seen) == 2


def test_retry_never_repeats_writes(connect: Connect) -> None:
    with ScriptedServer(UNAVAILABLE, Reply(body={"id": "m1", "event": "ADD"})) as srv, pytest.raises(ServerError):
        connect(srv.base_url, "alice", retry=Retry(attempts=3, backoff=0.01)).add("once")
    assert len(srv.seen) == 1


def test_retry_after_timeout_on_reads(connect: Connect) -> None:
    with ScriptedServer(Reply(body=EMPTY_PAGE, delay=10), Reply(body={**EMPTY_PAGE, "total": 1})) as srv:
        client = connect(srv.base_url, "alice", timeout=0.3, retry=Retry(attempts=2, backoff=0.01))
        assert client.list().total == 1
    assert len(srv.seen) == 2


def test_cancelling_a_call_cancels_it_and_the_client_stays_usable() -> None:
    async def scenario(base_url: str) -> float:
        async with CortadelClient(base_url, "alice") as client:
            task = asyncio.create_task(client.list())
            await asyncio.sleep(0.2)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert task.cancelled()
            assert (await client.list()).total == 3
            return time.monotonic() - started

    with ScriptedServer(Reply(body=EMPTY_PAGE, delay=10), Reply(body={**EMPTY_PAGE, "total": 3})) as srv:
        assert asyncio.run(scenario(srv.base_url)) < 2


def test_caller_supplied_http_clients_stay_open() -> None:
    with ScriptedServer(Reply(body=EMPTY_PAGE)) as srv:
        with httpx.Client() as own:
            with SyncCortadelClient(srv.base_url, "alice", http_client=own) as client:
                client.list()
            assert not own.is_closed
            assert own.get(f"{srv.base_url}/x").json() == EMPTY_PAGE

        async def use_async() -> bool:
            async with httpx.AsyncClient() as own_async:
                async with CortadelClient(srv.base_url, "alice", http_client=own_async) as client:
                    await client.list()
                return own_async.is_closed

        assert asyncio.run(use_async()) is False


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="base_url"):
        SyncCortadelClient("localhost:3001", "alice")
    with pytest.raises(ValueError, match="user_id"):
        CortadelClient("http://localhost:3001", "  ")
    with pytest.raises(TypeError, match="httpx.Client"):
        SyncCortadelClient("http://localhost:3001", "alice", http_client=httpx.AsyncClient())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="attempts"):
        Retry(attempts=0)


def test_response_json_is_decoded_with_nulls_as_absent(connect: Connect) -> None:
    item = {"id": "m1", "content": "x", "created_at": 1700000000, "state": None, "categories": None,
            "is_global": None, "metadata_": {"a": 1}, "valid_at": "2023-11-14T22:13:20Z"}
    with ScriptedServer(Reply(body={"items": [item], "total": 1, "page": 1, "size": 20, "pages": 1})) as srv:
        (got,) = connect(srv.base_url, "alice").list().items
    assert (got.state, got.categories, got.is_global, got.metadata, got.created_at) == ("active", [], False, {"a": 1}, 1700000000)
    assert json.dumps(got.valid_at) == '"2023-11-14T22:13:20Z"'
