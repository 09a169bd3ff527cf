"""GET /metrics, /livez and /readyz on a real server: a known sequence of calls, then the exact counts
read back with Prometheus' own text parser."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.curation.reconcile import RECONCILE
from cortadel_server.pipeline.enrich import ENRICH
from cortadel_server.storage.base import StoredJob
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess, running_server

ADMIN_KEY = "admin-key-for-metrics-tests"
AUTH_SECRET = "metrics-test-secret"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client, **headers: str) -> Samples:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def series(samples: Samples, name: str, label: str) -> dict[str, float]:
    """``name``'s values keyed by one label's value (the series that have only that label)."""
    return {dict(labels)[label]: value for (n, labels), value in samples.items() if n == name and len(labels) == 1}


def request_counts(samples: Samples) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["operation"], dict(labels)["status"]): value
        for (name, labels), value in samples.items()
        if name == "cortadel_request_duration_seconds_count"
    }


def mcp_calls(base_url: str, user: str) -> list[bool]:
    """One search_memory call and one call of a tool that does not exist, over the real MCP client."""

    async def run() -> list[bool]:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(f"{base_url}/mcp/metrics-test/{user}", http_client=http), mode="legacy") as client,
        ):
            found = await client.call_tool("search_memory", {"query": "Berlin"})
            unknown = await client.call_tool("no_such_tool", {})
            return [found.is_error, unknown.is_error]

    return anyio.run(run)


@pytest.fixture(scope="module")
def fresh_server() -> Iterator[ServerProcess]:
    """A server of its own: the counts below are every request it ever served."""
    with running_server() as server:
        yield server


def test_metrics_count_a_known_sequence_of_calls(fresh_server: ServerProcess) -> None:
    with httpx.Client(base_url=fresh_server.base_url, timeout=30) as api:
        add = {"user_id": "ann", "text": "I live in Berlin."}
        assert api.post("/api/v1/memories", json=add).json()["event"] == "ADD"
        assert api.post("/api/v1/memories", json=add).json()["event"] == "SKIP_DUPLICATE"
        assert api.post("/api/v1/memories", json={"user_id": "bob", "text": "I drink green tea."}).json()["event"] == "ADD"
        for query in ("Where does Ann live?", "capital"):
            assert api.post("/api/v1/memories/search", json={"user_id": "ann", "query": query}).status_code == 200
        invalid = api.post("/api/v1/memories/search", json={"user_id": "ann"})
        assert invalid.status_code == 400
        assert api.get("/api/v1/memories/no-such-id", params={"user_id": "ann"}).status_code == 404
        assert api.get("/no/such/path").status_code == 404
        assert api.get("/livez").json() == {"status": "alive"}
        assert mcp_calls(fresh_server.base_url, "ann") == [False, True]

        samples = scrape(api)
        counts = request_counts(samples)
        mcp_transport = {status for (operation, status) in counts if operation == "mcp"}
        assert mcp_transport <= {"200", "202"}
        assert {key: value for key, value in counts.items() if key[0] != "mcp"} == {
            ("Memories_Create", "200"): 3,
            ("Memories_Search", "200"): 2,
            ("Memories_Search", "400"): 1,
            ("Memories_Get", "404"): 1,
            ("unmatched", "404"): 1,
            ("Probes_Live", "200"): 1,
            ("mcp:search_memory", "ok"): 1,
            ("mcp:unknown", "error"): 1,
        }
        events = series(samples, "cortadel_write_events_total", "event")
        assert {event: count for event, count in events.items() if count} == {"ADD": 2, "SKIP_DUPLICATE": 1}
        assert events["SUPERSEDE"] == 0
        # two REST searches and the MCP one, each through the default recipe's arms
        phases = series(samples, "cortadel_search_phase_duration_seconds_count", "phase")
        assert phases == {"embed": 3, "text": 3, "vector": 3, "session": 3, "fusion": 3, "records": 3}
        phase_seconds = series(samples, "cortadel_search_phase_duration_seconds_sum", "phase")
        assert all(0 < seconds < 5 for seconds in phase_seconds.values()), phase_seconds
        assert series(samples, "cortadel_provider_errors_total", "provider") == {"embedder": 0, "reranker": 0, "llm": 0}
        assert 0 < samples[("process_resident_memory_bytes", frozenset())] < 4 * 1024**3

        # The scrape counts itself once it has answered; the enrichment jobs of the two ADDs drain.
        deadline = time.monotonic() + 20
        while (samples := scrape(api))[("cortadel_jobs_pending", frozenset())] != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert samples[("cortadel_jobs_pending", frozenset())] == 0
        assert request_counts(samples)[("Metrics_Scrape", "200")] >= 1
        on_disk = sum(p.stat().st_size for p in (fresh_server.data, Path(f"{fresh_server.data}-wal")) if p.exists())
        assert samples[("cortadel_storage_bytes", frozenset())] == on_disk


def test_readiness_names_the_database_and_the_embedder(fresh_server: ServerProcess) -> None:
    response = httpx.get(f"{fresh_server.base_url}/readyz", timeout=30)
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "checks": {"database": {"ok": True, "error": None}, "embeddings": {"ok": True, "error": None}},
    }


def test_llm_failures_are_counted_and_the_write_falls_back_to_rules() -> None:
    with ScriptedOpenAI() as llm:
        llm.handle("/v1/chat/completions", lambda request: Reply.error(400, "model not found"))
        env = {"CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "gone"}
        with running_server(env=env) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
            for user in ("carol", "dave"):
                written = api.post("/api/v1/memories", json={"user_id": user, "text": "I work at Acme."})
                assert written.json()["event"] == "ADD"
            samples = scrape(api)
    assert series(samples, "cortadel_provider_errors_total", "provider") == {"embedder": 0, "reranker": 0, "llm": 2}
    assert len(llm.requests_to("/v1/chat/completions")) == 2  # a 400 is not tried again


def test_metrics_take_the_admin_key_when_auth_is_on() -> None:
    env = {"CORTADEL_AUTH_SECRET": AUTH_SECRET, "CORTADEL_ADMIN_KEY": ADMIN_KEY}
    with running_server(env=env) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
        missing = api.get("/metrics")
        assert missing.status_code == 401
        assert missing.json() == {"status": 401, "code": "unauthorized", "message": "Missing API key", "detail": None}
        user_key = api.get("/metrics", headers={"Authorization": f"Bearer {server.mint_key('ann')}"})
        assert user_key.status_code == 403
        assert user_key.json()["code"] == "forbidden"
        assert user_key.json()["message"] == "This operation needs the admin credential; a user API key never passes"
        # the probes stay open, like /api/health
        assert api.get("/livez").status_code == 200
        assert api.get("/readyz").json()["status"] == "ready"
        counts = request_counts(scrape(api, authorization=f"Bearer {ADMIN_KEY}"))
    assert counts == {
        ("Metrics_Scrape", "401"): 1,
        ("Metrics_Scrape", "403"): 1,
        ("Probes_Live", "200"): 1,
        ("Probes_Ready", "200"): 1,
    }


def test_the_oldest_queued_job_of_each_kind_gives_the_queue_age(tmp_path: Path) -> None:
    db = tmp_path / "cortadel.db"
    written = time.time()
    not_due = written + 86400  # the workers leave them queued
    store = SqliteStorage(db)
    try:
        store.load_jobs("ann", [
            StoredJob(ENRICH, "m-1", {}, "queued", 0, not_due, None, written - 600),
            StoredJob(ENRICH, "m-2", {}, "queued", 0, not_due, None, written - 60),
            StoredJob(RECONCILE, None, {"run_id": "r-1"}, "queued", 1, not_due, "timed out", written - 120),
            StoredJob(RECONCILE, None, {"run_id": "r-0"}, "failed", 3, written, "gave up", written - 86400),  # not queued
        ])
    finally:
        store.close()
    with running_server(data=db) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
        before = time.time()
        samples = scrape(api)
        after = time.time()
    ages = series(samples, "cortadel_jobs_oldest_queued_age_seconds", "kind")
    assert set(ages) == {ENRICH, RECONCILE}
    assert 600 + (before - written) <= ages[ENRICH] <= 600 + (after - written)
    assert 120 + (before - written) <= ages[RECONCILE] <= 120 + (after - written)
    assert samples[("cortadel_jobs_pending", frozenset())] == 3
