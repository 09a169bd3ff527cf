"""The pure parts of bench.pipeline: the chat corpus, the scripted model's answers and counts, the label mapping."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from bench.pipeline.conversations import (
    CHATTER,
    conversation,
    conversations,
    statements,
    user_turn_kinds,
)
from bench.pipeline.labeled import as_labeled, differences
from bench.pipeline.scripted_llm import (
    answer,
    extraction_answer,
    parse_transcript,
    reported_usage,
    tokens,
    usage_of,
)

AT = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)


def test_conversations_are_deterministic_alternating_and_seeded() -> None:
    first = conversations(5, seed=0)
    assert first == conversations(5, seed=0)
    assert first[3] == conversation(3, seed=0)
    assert conversations(5, seed=1) != first
    assert all(len(c) == 10 and [m["role"] for m in c] == ["user", "assistant"] * 5 for c in first)


def test_user_turn_kinds_tells_chatter_from_statements() -> None:
    messages = [{"role": "user", "content": CHATTER[0]}, {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "I moved to Porto last month."}, {"role": "user", "content": CHATTER[2]}]
    assert user_turn_kinds(messages) == {"chatter": 2, "fact": 1}
    kinds = user_turn_kinds([m for c in conversations(200) for m in c])
    assert 0.5 < kinds["fact"] / (kinds["fact"] + kinds["chatter"]) < 0.7


def test_statements_are_first_person_and_repeatable() -> None:
    said = statements(50, seed=2)
    assert said == statements(50, seed=2)
    assert all(s.startswith(("I ", "I'm ", "My ", "We're ")) for s in said)
    assert not any(" a a" in s or " a e" in s for s in said)  # "an engineer", never "a engineer"


def test_parse_transcript_numbers_messages_and_keeps_continuation_lines() -> None:
    text = "[1] user: Hi\n[2] assistant: Hello!\n[3] user: Here is my list:\n- milk\n[9] user: not a message start"
    assert parse_transcript(text) == [("user", "Hi"), ("assistant", "Hello!"),
                                      ("user", "Here is my list:\n- milk\n[9] user: not a message start")]


def test_extraction_answer_is_the_rules_facts_in_the_llm_schema() -> None:
    system = "You turn a conversation into atomic, durable facts about the user for a long-term memory."
    facts = extraction_answer(system, "[1] user: Hi there!\n[2] assistant: Hello!\n[3] user: I moved to Lisbon last month.", AT)["facts"]
    assert facts == [{"text": "User moved to Lisbon last month.", "turn": 3, "intent": "remember", "target": None, "reconfirm": False,
                      "time_expression": "last month", "memory_type": "episodic", "categories": facts[0]["categories"]}]
    retract = extraction_answer(system, "[1] user: Forget everything about Bob.", AT)["facts"]
    assert [(f["intent"], f["target"]) for f in retract] == [("forget_entity", "Bob")]


def _request(schema: str, *contents: str) -> SimpleNamespace:
    messages = [{"role": "system", "content": contents[0]}, *({"role": "user", "content": c} for c in contents[1:])]
    return SimpleNamespace(body={"model": "m", "messages": messages, "response_format": {"type": "json_schema", "json_schema": {"name": schema}}})


def test_answers_report_usage_as_characters_over_four() -> None:
    reply = answer(_request("verdict", "x" * 7, "y" * 9))
    assert reply.body["choices"][0]["message"]["content"] == '{"verdict": "new", "existing_id": null}'
    assert reply.body["usage"] == {"prompt_tokens": 4, "completion_tokens": 10, "total_tokens": 14}
    assert (tokens(""), tokens("abcd"), tokens("abcde")) == (0, 1, 2)


def test_usage_of_counts_calls_by_schema_and_prompt_sizes() -> None:
    requests = [_request("facts", "abcd", "efgh"), _request("verdict", "abcdefgh")]
    usage = usage_of(requests)
    assert {k: usage[k] for k in ("calls", "calls_by_schema", "message_tokens")} == {"calls": 2, "calls_by_schema": {"facts": 1, "verdict": 1}, "message_tokens": 4}
    assert usage["request_body_tokens"] > usage["message_tokens"]


def test_reported_usage_sums_the_servers_llm_log_lines() -> None:
    log = ("03:01 INFO cortadel.pipeline llm extraction: facts=2 prompt_tokens=120 completion_tokens=30 calls=1\n"
           "03:01 INFO cortadel.http POST /api/v1/memories 200\n"
           "03:02 INFO cortadel.pipeline llm verdict: new prompt_tokens=50 completion_tokens=9 calls=2\n")
    assert reported_usage(log) == {"prompt_tokens": 170, "completion_tokens": 39, "calls": 3, "lines": 2}


def test_as_labeled_maps_results_on_stored_facts_to_the_label_that_targets_them() -> None:
    expected: list[dict[str, Any]] = [{"event": "ADD", "memory": "User loves sushi."},
                {"event": "SKIP_DUPLICATE", "memory": "User really loves sushi.", "targets": ["User loves sushi."]},
                {"event": "DELETE_ENTITY", "memory": "Forget everything about Bob.", "targets": ["Bob is User's manager.", "User plays tennis with Bob."]}]
    produced = [{"event": "ADD", "memory": "User loves sushi."}, {"event": "SKIP_DUPLICATE", "memory": "User loves sushi."},
                {"event": "DELETE_ENTITY", "memory": "Bob is User's manager."}, {"event": "DELETE_ENTITY", "memory": "User plays tennis with Bob."}]
    mapped = as_labeled(produced, expected)
    assert mapped == [{"event": e["event"], "memory": e["memory"]} for e in expected]
    assert differences("c", mapped, expected) is None
    wrong = as_labeled([{"event": "ADD", "memory": "User loves sushi."}, {"event": "ADD", "memory": "User really loves sushi."}], expected)
    assert differences("c", wrong, expected) == {
        "conversation": "c", "unexpected": [("User really loves sushi.", "ADD")],
        "missing": [("User really loves sushi.", "SKIP_DUPLICATE"), ("Forget everything about Bob.", "DELETE_ENTITY")]}
