"""The OpenAI-compatible chat client against a scripted loopback server."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.scripted_openai import Reply, ScriptedOpenAI, free_port

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers import build_chat_client
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.llm import ChatClient, OpenAIChatClient
from cortadel_server.providers.llm.openai import REPAIR_PROMPT, parse_json_answer

CHAT = "/v1/chat/completions"
FAST = RetryPolicy(base_delay=0.01)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
    "additionalProperties": False,
}
MESSAGES = [
    {"role": "system", "content": "Extract durable facts about the user."},
    {"role": "user", "content": "I moved to Lisbon last week."},
]


def facts_only(data: Any) -> list[str]:
    if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
        raise ValueError("expected an object with a list under 'facts'")  # noqa: TRY004 - the client repairs on ValueError
    facts: list[str] = data["facts"]
    return facts


@pytest.fixture
def api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture
def client(api: ScriptedOpenAI) -> Iterator[OpenAIChatClient]:
    chat = OpenAIChatClient(api.v1_url, model="gpt-test", api_key="sk-llm", timeout=2.0, policy=FAST)
    yield chat
    chat.close()


def test_a_good_answer_comes_back_parsed_with_its_cost(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply.chat({"facts": ["lives in Lisbon"]}, prompt_tokens=42, completion_tokens=7))
    result = client.complete_json(MESSAGES, SCHEMA, "facts")
    assert result.data == {"facts": ["lives in Lisbon"]}
    assert (result.prompt_tokens, result.completion_tokens, result.calls) == (42, 7, 1)
    (request,) = api.requests
    assert request.path == CHAT
    assert request.headers["authorization"] == "Bearer sk-llm"
    assert request.body == {
        "model": "gpt-test",
        "messages": MESSAGES,
        "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "facts", "schema": SCHEMA, "strict": True}},
    }


def test_validate_decides_what_data_is(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply.chat({"facts": ["a", "b"]}))
    assert client.complete_json(MESSAGES, SCHEMA, "facts", validate=facts_only).data == ["a", "b"]


def test_malformed_json_gets_one_repair_request(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT,
                Reply.chat('{"facts": ["lives in Lisbon"', prompt_tokens=40, completion_tokens=9),
                Reply.chat({"facts": ["lives in Lisbon"]}, prompt_tokens=60, completion_tokens=8))
    result = client.complete_json(MESSAGES, SCHEMA, "facts")
    assert result.data == {"facts": ["lives in Lisbon"]}
    assert (result.prompt_tokens, result.completion_tokens, result.calls) == (100, 17, 2)
    repair = api.requests[1].body["messages"]
    assert repair[:2] == MESSAGES
    assert repair[2] == {"role": "assistant", "content": '{"facts": ["lives in Lisbon"'}
    assert repair[3]["role"] == "user"
    assert repair[3]["content"].startswith("Your previous answer could not be used: Expecting ")
    assert repair[3]["content"].endswith("matches the facts schema, nothing else.")


def test_a_validation_failure_is_repaired_too(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply.chat({"fact": "lives in Lisbon"}), Reply.chat({"facts": ["lives in Lisbon"]}))
    result = client.complete_json(MESSAGES, SCHEMA, "facts", validate=facts_only)
    assert result.data == ["lives in Lisbon"]
    assert api.requests[1].body["messages"][3]["content"] == REPAIR_PROMPT.format(
        error="expected an object with a list under 'facts'", schema_name="facts"
    )


def test_two_unusable_answers_raise(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply.chat("not json"), Reply.chat({"nope": 1}))
    with pytest.raises(ProviderError, match="no usable facts JSON after a repair request: expected an object"):
        client.complete_json(MESSAGES, SCHEMA, "facts", validate=facts_only)
    assert len(api.requests) == 2


def test_429_is_retried_after_retry_after(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply.error(429, "rate limited", retry_after=0.2), Reply.chat({"facts": []}, prompt_tokens=5, completion_tokens=2))
    started = time.monotonic()
    result = client.complete_json(MESSAGES, SCHEMA, "facts")
    assert time.monotonic() - started >= 0.2
    assert (result.data, result.calls, result.prompt_tokens) == ({"facts": []}, 1, 5)
    assert len(api.requests) == 2


def test_three_5xx_raise(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, *[Reply.error(502, "bad gateway")] * 3)
    with pytest.raises(ProviderError, match=r"HTTP 502.*gave up after 3 tries"):
        client.complete_json(MESSAGES, SCHEMA, "facts")
    assert len(api.requests) == 3


def test_a_timeout_raises_without_retrying(api: ScriptedOpenAI) -> None:
    api.enqueue(CHAT, Reply(body={}, delay=2.0))
    chat = OpenAIChatClient.from_settings(Settings(llm_url=api.v1_url, llm_model="slow", llm_timeout=0.3))
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"llm slow: no answer from .* within 0\.3s"):
            chat.complete_json(MESSAGES, SCHEMA, "facts")
        assert 0.3 <= time.monotonic() - started < 1.5
        assert len(api.requests) == 1
    finally:
        chat.close()


def test_a_server_that_is_down_fails_fast() -> None:
    chat = OpenAIChatClient(f"http://127.0.0.1:{free_port()}/v1", model="m")  # default retry policy
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"cannot reach .*Connection refused \(gave up after 3 tries\)"):
            chat.complete_json(MESSAGES, SCHEMA, "facts")
        assert time.monotonic() - started < 2.0
    finally:
        chat.close()


def test_token_counts_accumulate_and_each_call_is_logged(
    api: ScriptedOpenAI, client: OpenAIChatClient, caplog: pytest.LogCaptureFixture
) -> None:
    api.enqueue(CHAT,
                Reply.chat({"facts": []}, prompt_tokens=10, completion_tokens=3),
                Reply.chat("oops", prompt_tokens=20, completion_tokens=1),
                Reply.chat({"facts": ["x"]}, prompt_tokens=30, completion_tokens=4))
    with caplog.at_level(logging.INFO, logger="cortadel.llm"):
        client.complete_json(MESSAGES, SCHEMA, "facts")
        client.complete_json(MESSAGES, SCHEMA, "facts")
    assert (client.usage.prompt_tokens, client.usage.completion_tokens, client.usage.calls) == (60, 8, 3)
    calls = [r.getMessage() for r in caplog.records if r.getMessage().startswith("llm call")]
    assert len(calls) == 3
    assert calls[0].startswith("llm call model=gpt-test prompt_tokens=10 completion_tokens=3 latency_ms=")
    assert all(r.name == "cortadel.llm" and r.levelno == logging.INFO for r in caplog.records)


def test_a_reply_without_choices_raises(api: ScriptedOpenAI, client: OpenAIChatClient) -> None:
    api.enqueue(CHAT, Reply(body={"error": "model not loaded"}))
    with pytest.raises(ProviderError, match="reply without choices"):
        client.complete_json(MESSAGES, SCHEMA, "facts")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"facts": []}', {"facts": []}),
        ('```json\n{"facts": ["a"]}\n```', {"facts": ["a"]}),
        ('<think>They moved.</think>\n{"facts": ["b"]}', {"facts": ["b"]}),
    ],
)
def test_answers_may_be_fenced_or_preceded_by_thinking(content: str, expected: Any) -> None:
    assert parse_json_answer(content) == expected


@pytest.mark.parametrize("content", [None, "", "  ", "Sure! Here are the facts."])
def test_non_answers_are_value_errors(content: str | None) -> None:
    with pytest.raises(ValueError):
        parse_json_answer(content)


def test_build_chat_client_needs_url_and_model() -> None:
    assert build_chat_client(Settings()) is None
    assert build_chat_client(Settings(llm_url="http://127.0.0.1:1/v1")) is None
    chat = build_chat_client(Settings(llm_url="http://127.0.0.1:1/v1", llm_model="qwen2.5", llm_timeout=12.0))
    assert isinstance(chat, OpenAIChatClient) and isinstance(chat, ChatClient)
    assert chat.model == "qwen2.5"
    chat.close()
