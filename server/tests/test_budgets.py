"""Bounded work per write request: LLM deadlines, the write budget and client disconnects.

Issue #12 items 8 and 9: a reply trickling in byte by byte outlived the LLM timeout, verdict calls
added up with no per-request deadline, an oversized conversation cost minutes of CPU and the work
went on after the client had gone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.pipeline.llm import LlmJudge
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.pipeline.writer import ConversationTurn, Writer
from cortadel_server.providers import build_embedder
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.llm import OpenAIChatClient
from cortadel_server.storage.base import MemoryFilters
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess, running_server

CHAT = "/v1/chat/completions"
FACTS = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}
NO_FACTS = Reply.chat({"facts": []})


def fact(text: str, turn: int = 1) -> dict[str, object]:
    return {"text": text, "turn": turn, "intent": "remember", "target": None, "reconfirm": False,
            "time_expression": None, "memory_type": "semantic", "categories": []}


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as api:
        yield api


def test_a_reply_dripping_one_byte_at_a_time_ends_at_the_timeout(llm: ScriptedOpenAI) -> None:
    llm.enqueue(CHAT, NO_FACTS.dripping(0.1))  # ~300 bytes: 30 s, each read well inside the timeout
    chat = OpenAIChatClient(llm.v1_url, model="drip", timeout=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"^llm drip: no answer from http://127\.0\.0\.1:\d+/v1/chat/completions within 1s"):
            chat.complete_json([{"role": "user", "content": "hi"}], FACTS, "facts")
        assert 1.0 <= time.monotonic() - started < 1.6
        assert len(llm.requests) == 1
    finally:
        chat.close()


def test_a_deadline_ends_a_hung_call_before_the_timeout(llm: ScriptedOpenAI) -> None:
    llm.enqueue(CHAT, Reply.hung())
    chat = OpenAIChatClient(llm.v1_url, model="hung", timeout=30.0)
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"^llm hung: no answer from .* within 0\.[45]\d*s"):
            chat.complete_json([{"role": "user", "content": "hi"}], FACTS, "facts", deadline=started + 0.5)
        assert 0.5 <= time.monotonic() - started < 1.1
    finally:
        chat.close()


def test_no_retry_is_started_that_the_deadline_cannot_wait_for(llm: ScriptedOpenAI) -> None:
    llm.enqueue(CHAT, Reply.error(503, retry_after=5), NO_FACTS)
    chat = OpenAIChatClient(llm.v1_url, model="busy", timeout=2.0, policy=RetryPolicy(tries=3))
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"answered HTTP 503: .*scripted error.* \(no time left to try again\)$"):
            chat.complete_json([{"role": "user", "content": "hi"}], FACTS, "facts")
        assert time.monotonic() - started < 0.5
        assert len(llm.requests) == 1
    finally:
        chat.close()


def test_verdicts_share_the_request_deadline(tmp_path: Path, llm: ScriptedOpenAI) -> None:
    """Each ambiguous fact asks for a verdict; once the LLM time is spent the rule decision stands without a call."""
    embedder = build_embedder(Settings())
    storage = SqliteStorage(tmp_path / "cortadel.db")
    storage.ensure_vector_index(embedder.dim, "wordllama")
    chat = OpenAIChatClient(llm.v1_url, model="judge", timeout=30.0)
    try:
        writer = Writer(storage, embedder, RulesExtractor(), judge=LlmJudge(chat), llm_seconds=1.0)

        def say(*contents: str) -> list[tuple[str, str | None]]:
            outcomes = writer.add_conversation(
                "u", [ConversationTurn("user", c) for c in contents],
                is_agent_memory=False, app_name=None, tags=[], project=None, session_id=None, transcript_path=None,
            )
            return [(o.event, o.memory) for o in outcomes]

        assert say("I am learning the piano.", "I play tennis.") == [
            ("ADD", "User is learning the piano."), ("ADD", "User plays tennis."),
        ]
        assert llm.requests == []
        llm.handle(CHAT, lambda request: Reply.hung())
        started = time.monotonic()
        outcomes = say("I am learning the piano with a teacher.", "I play tennis on Sundays.")
        elapsed = time.monotonic() - started
        assert outcomes == [  # both ambiguous; the rules' own decisions stand
            ("ADD", "User is learning the piano with a teacher."), ("ADD", "User plays tennis on Sundays."),
        ]
        assert 1.0 <= elapsed < 2.0  # not 30 s per verdict
        assert len(llm.requests) == 1  # the second verdict was never asked for
        assert len(storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]) == 4
    finally:
        chat.close()
        storage.close()


@pytest.fixture(scope="module")
def budget_api() -> Iterator[httpx.Client]:
    """A server where one write request may work for two seconds."""
    with running_server(env={"CORTADEL_WRITE_BUDGET": "2.0"}) as server, httpx.Client(base_url=server.base_url, timeout=20) as api:
        yield api


def test_an_extraction_past_the_budget_is_refused_with_413(budget_api: httpx.Client) -> None:
    statements = " ".join(f"I visited city number {i} in May." for i in range(1500))  # ~50,000 characters
    messages = [{"role": "user", "content": statements[:50_000]} for _ in range(20)]  # ~1 MB, seconds of rules work
    started = time.monotonic()
    response = budget_api.post("/api/v1/memories/from-conversation", json={"user_id": "big", "messages": messages})
    elapsed = time.monotonic() - started
    assert response.status_code == 413, response.text[:300]
    assert response.json() == {
        "status": 413,
        "code": "payload_too_large",
        "message": "Extracting facts from this input takes longer than the 2 s one request may spend "
                   "(CORTADEL_WRITE_BUDGET); send it in smaller parts.",
        "detail": None,
    }
    assert 2.0 <= elapsed < 4.0
    listed = budget_api.get("/api/v1/memories", params={"user_id": "big", "include_superseded": "true"}).json()
    assert listed["total"] == 0  # refused before anything was stored


@pytest.fixture(scope="module")
def slow_llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as api:
        yield api


@pytest.fixture(scope="module")
def llm_server(slow_llm: ScriptedOpenAI) -> Iterator[ServerProcess]:
    """The `llm` extractor against the scripted model, two seconds of work per request."""
    env = {"CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": slow_llm.v1_url, "CORTADEL_LLM_MODEL": "slow",
           "CORTADEL_WRITE_BUDGET": "2.0"}
    with running_server(env=env) as server:
        yield server


def test_facts_the_budget_does_not_reach_come_back_as_errors(slow_llm: ScriptedOpenAI, llm_server: ServerProcess) -> None:
    with httpx.Client(base_url=llm_server.base_url, timeout=20) as api:
        for text in ("I am learning the piano.", "I play tennis.", "I am learning Spanish."):
            response = api.post("/api/v1/memories", json={"user_id": "many", "text": text, "infer": False})
            assert response.json()["event"] == "ADD", response.text
        slow_llm.requests.clear()
        # Each extracted fact is close to a stored one: a verdict call each, answering after 1.5 s.
        facts = [fact("User is learning the piano with a teacher."), fact("User plays tennis on Sundays."),
                 fact("User is learning Spanish with an app.")]
        slow_llm.enqueue(CHAT, Reply.chat({"facts": facts}))
        slow_llm.handle(CHAT, lambda request: dataclasses.replace(Reply.chat({"verdict": "new", "existing_id": None}), delay=1.5))
        started = time.monotonic()
        response = api.post("/api/v1/memories/from-conversation",
                            json={"user_id": "many", "messages": [{"role": "user", "content": "Piano, tennis and Spanish news."}]})
        elapsed = time.monotonic() - started
        assert response.status_code == 200, response.text
        assert [(r["event"], r["memory"], r["error"]) for r in response.json()["results"]] == [
            ("ADD", "User is learning the piano with a teacher.", None),  # the model's verdict, after 1.5 s
            ("ADD", "User plays tennis on Sundays.", None),  # its verdict cut at the 2 s deadline: the rules' decision
            ("ERROR", "User is learning Spanish with an app.",
             "Not stored: the request's 2 s budget (CORTADEL_WRITE_BUDGET) ran out; send this part again."),
        ]
        assert 2.0 <= elapsed < 3.0
        assert len(slow_llm.requests) == 3  # extraction and two verdicts, none for the refused fact
        listed = api.get("/api/v1/memories", params={"user_id": "many", "include_superseded": "true"}).json()
        assert sorted(item["content"] for item in listed["items"]) == [
            "I am learning Spanish.", "I am learning the piano.", "I play tennis.",
            "User is learning the piano with a teacher.", "User plays tennis on Sundays.",
        ]


def test_work_stops_when_the_client_goes_away(slow_llm: ScriptedOpenAI, llm_server: ServerProcess) -> None:
    slow_llm.requests.clear()
    answer = Reply.chat({"facts": [fact("User lives in Oslo."), fact("User works at Acme."), fact("User has a cat.")]})
    slow_llm.enqueue(CHAT, dataclasses.replace(answer, delay=1.5))
    body = {"user_id": "gone", "messages": [{"role": "user", "content": "I live in Oslo, work at Acme and have a cat."}]}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{llm_server.base_url}/api/v1/memories/from-conversation", json=body, timeout=0.5)
    time.sleep(2.5)  # the extraction answers 1 s after the disconnect; nothing may follow it
    assert len(slow_llm.requests) == 1
    listed = httpx.get(f"{llm_server.base_url}/api/v1/memories", params={"user_id": "gone", "include_superseded": "true"}).json()
    assert (listed["total"], listed["items"]) == (0, [])
