"""The LLM extractor and verdict against a scripted OpenAI-compatible server, in process and over HTTP."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.errors import ExtractionFailed
from cortadel_server.pipeline.decide import decide
from cortadel_server.pipeline.llm import (
    FACTS_SCHEMA,
    LlmExtractor,
    LlmJudge,
)
from cortadel_server.pipeline.model import (
    Candidate,
    Decision,
    Event,
    Intent,
    MemoryType,
    Neighbour,
    Turn,
)
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.llm import OpenAIChatClient
from cortadel_server.testing import database_for, running_server

CHAT = "/v1/chat/completions"
SAID_AT = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
TURNS = [
    Turn("user", "Hi there!", "t1", SAID_AT),
    Turn("assistant", "Hello! How can I help?", "t2", SAID_AT),
    Turn("user", "I moved to Lisbon last month and I only ship to production on Tuesdays.", "t3", SAID_AT),
]


def fact(text: str, turn: int = 3, **fields: Any) -> dict[str, Any]:
    return {
        "text": text, "turn": turn, "intent": "remember", "target": None, "reconfirm": False,
        "time_expression": None, "memory_type": "semantic", "categories": [], **fields,
    }


GOOD = {"facts": [
    fact("User moved to Lisbon last month.", time_expression="last month", memory_type="episodic", categories=["personal", "travel"]),
    fact("User only ships to production on Tuesdays.", memory_type="procedural", categories=["work", "unknown-label"]),
]}


@pytest.fixture
def api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


_open: list[OpenAIChatClient] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def client(api: ScriptedOpenAI, timeout: float = 2.0) -> OpenAIChatClient:
    chat = OpenAIChatClient(api.v1_url, model="extractor-test", timeout=timeout, policy=RetryPolicy(base_delay=0.01))
    _open.append(chat)
    return chat


def test_a_good_answer_becomes_candidates_with_resolved_time_and_one_call(api: ScriptedOpenAI) -> None:
    api.enqueue(CHAT, Reply.chat(GOOD, prompt_tokens=120, completion_tokens=40))
    moved, ships = LlmExtractor(client(api)).extract(TURNS)
    assert (moved.text, moved.intent, moved.memory_type) == ("User moved to Lisbon last month.", Intent.REMEMBER, MemoryType.EPISODIC)
    assert moved.source_turn_uuids == ("t3",)
    assert moved.valid_at == SAID_AT - timedelta(days=31)  # 15 June minus one calendar month
    assert moved.categories == ("personal", "travel")
    assert (ships.text, ships.memory_type, ships.categories) == (
        "User only ships to production on Tuesdays.", MemoryType.PROCEDURAL, ("work",),
    )
    assert ships.valid_at == SAID_AT
    [request] = api.requests_to(CHAT)
    body = request.body
    assert body["response_format"]["json_schema"]["schema"] == FACTS_SCHEMA
    transcript = body["messages"][1]["content"]
    assert transcript.splitlines() == [
        "[1] user: Hi there!", "[2] assistant: Hello! How can I help?",
        "[3] user: I moved to Lisbon last month and I only ship to production on Tuesdays.",
    ]


def test_malformed_json_gets_one_repair_request(api: ScriptedOpenAI) -> None:
    api.enqueue(CHAT, Reply.chat("{\"facts\": [ {\"text\": "), Reply.chat(GOOD))
    candidates = LlmExtractor(client(api)).extract(TURNS)
    assert [c.text for c in candidates] == ["User moved to Lisbon last month.", "User only ships to production on Tuesdays."]
    assert len(api.requests_to(CHAT)) == 2


def test_an_answer_naming_a_turn_that_does_not_exist_is_repaired(api: ScriptedOpenAI) -> None:
    api.enqueue(CHAT, Reply.chat({"facts": [fact("User likes tea.", turn=9)]}), Reply.chat({"facts": [fact("User likes tea.", turn=1)]}))
    [candidate] = LlmExtractor(client(api)).extract(TURNS)
    assert (candidate.text, candidate.source_turn_uuids) == ("User likes tea.", ("t1",))
    repair = api.requests_to(CHAT)[1].body["messages"][-1]["content"]
    assert "facts[0].turn must be a message number from 1 to 3" in repair


def test_429_then_success(api: ScriptedOpenAI) -> None:
    api.enqueue(CHAT, Reply.error(429, retry_after=0), Reply.chat(GOOD))
    assert len(LlmExtractor(client(api)).extract(TURNS)) == 2
    assert len(api.requests_to(CHAT)) == 2


def test_a_timeout_falls_back_to_the_rules_extractor(api: ScriptedOpenAI) -> None:
    api.handle(CHAT, lambda request: dataclasses.replace(Reply.chat(GOOD), delay=1.0))
    extractor = LlmExtractor(client(api, timeout=0.2), fallback=RulesExtractor())
    candidates = extractor.extract(TURNS)
    assert [c.text for c in candidates] == ["User moved to Lisbon last month.", "User only ships to production on Tuesdays."]
    assert candidates[0].valid_at == SAID_AT - timedelta(days=31)


def test_the_provider_down_without_fallback_raises_extraction_failed(api: ScriptedOpenAI) -> None:
    api.handle(CHAT, lambda request: Reply.error(503, "overloaded"))
    with pytest.raises(ExtractionFailed, match="fact extraction failed"):
        LlmExtractor(client(api)).extract(TURNS)
    assert len(api.requests_to(CHAT)) == 3  # the client's retries, then the outage is reported


def test_the_verdict_settles_an_ambiguous_candidate(api: ScriptedOpenAI) -> None:
    candidate = Candidate("User is learning the piano with a teacher.", Intent.REMEMBER, SAID_AT, SAID_AT)
    neighbours = [Neighbour("m1", "User is learning the piano."), Neighbour("m2", "User likes tea.")]
    ruled = decide(candidate, neighbours)
    assert (ruled.event, ruled.ambiguous) == (Event.ADD, True)

    api.enqueue(CHAT, Reply.chat({"verdict": "update", "existing_id": "m1"}, prompt_tokens=50, completion_tokens=5))
    assert LlmJudge(client(api)).judge(candidate, neighbours, ruled) == Decision(Event.SUPERSEDE, ("m1",), "llm: update")
    prompt = api.requests_to(CHAT)[0].body["messages"][0]["content"]
    assert '- id=m1: "User is learning the piano."' in prompt

    api.handle(CHAT, lambda request: Reply.error(500))
    assert LlmJudge(client(api)).judge(candidate, neighbours, ruled) is ruled


@pytest.fixture(scope="module")
def llm_api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def test_over_http_llm_facts_are_stored_and_an_outage_reports_error_items(llm_api: ScriptedOpenAI, backend: str) -> None:
    env = {
        "CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": llm_api.v1_url, "CORTADEL_LLM_MODEL": "scripted",
        "CORTADEL_LLM_FALLBACK": "error", "CORTADEL_LLM_TIMEOUT": "2",
    }
    with running_server(env=env, database_url=database_for(backend)) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        messages = [{"role": "user", "content": "I moved to Lisbon last month and I only ship to production on Tuesdays.", "uuid": "u-9"}]
        llm_api.enqueue(CHAT, Reply.chat({"facts": [fact("User moved to Lisbon last month.", turn=1, time_expression="last month")]}))
        body = http.post("/api/v1/memories/from-conversation", json={"user_id": "llm-user", "messages": messages}).json()
        [stored] = body["results"]
        assert (stored["event"], stored["memory"]) == ("ADD", "User moved to Lisbon last month.")
        item = http.get(f"/api/v1/memories/{stored['id']}", params={"user_id": "llm-user"}).json()
        assert item["text"] == "User moved to Lisbon last month."

        llm_api.handle(CHAT, lambda request: Reply.error(503, "down"))
        body = http.post("/api/v1/memories/from-conversation", json={"user_id": "llm-user", "messages": messages}).json()
        [failed] = body["results"]
        assert failed["event"] == "ERROR" and failed["id"] == ""
        assert "fact extraction failed" in failed["error"]
        listed = http.get("/api/v1/memories", params={"user_id": "llm-user"}).json()
        assert [m["content"] for m in listed["items"]] == ["User moved to Lisbon last month."]
        sent = [json.dumps(r.body) for r in llm_api.requests_to(CHAT)]
        assert all("scripted" in s for s in sent)
