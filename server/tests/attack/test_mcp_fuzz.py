"""Every MCP tool called by the real MCP client with Hypothesis-generated arguments.

Each call draws either valid arguments or valid arguments with exactly one bad one (unknown name,
wrong type, out of range, not in the enum, missing when required). A valid call succeeds; a bad one
is a tool error (``is_error``) whose message names the bad argument; nothing is ever a protocol or
transport error, and no tool reports an internal error.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from mcp import Client

from attack import budget
from attack.sessions import mcp_session
from cortadel_server.testing import ServerProcess

Drawn = tuple[dict[str, Any], str | None]  # (arguments, the bad argument or None)

text = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=300).filter(str.strip)
names = st.none() | st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=40)
tags = st.none() | st.lists(st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=30), max_size=4)
memory_type = st.none() | st.sampled_from(["episodic", "semantic", "procedural"])
instant = (st.none() | st.datetimes(datetime(1901, 1, 1), datetime(2998, 1, 1)).map(datetime.isoformat)
           | st.floats(min_value=-2_000_000_000, max_value=30_000_000_000))
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text},
                                optional={"uuid": st.none() | st.uuids().map(str)})

VALID: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "add_memories": st.fixed_dictionaries(
        {"memories": st.lists(text, min_size=1, max_size=3)},
        optional={"project": names, "tags": tags, "memory_type": memory_type}),
    "add_conversation": st.fixed_dictionaries(
        {"messages": st.lists(message, min_size=1, max_size=3)},
        optional={"is_agent_memory": st.none() | st.booleans(), "tags": tags, "project": names,
                  "session_id": names, "transcript_path": names}),
    "search_memory": st.fixed_dictionaries(
        {},
        optional={"query": st.none() | text, "topK": st.integers(1, 50), "limit": st.integers(1, 100),
                  "offset": st.integers(0, 10000), "detail": st.sampled_from(["full", "headline"]),
                  "ids": st.none() | st.lists(st.uuids().map(str) | text, max_size=5), "project": names,
                  "tag": names, "memory_type": memory_type, "token_budget": st.none() | st.integers(0, 200000),
                  "includeFaded": st.none() | st.booleans(), "as_of": instant, "known_at": instant,
                  "include_superseded": st.none() | st.booleans()}),
    "get_skill": st.fixed_dictionaries({"task": text}),
}

# Values no argument of that kind accepts. Numeric strings and whole floats are left out: pydantic
# reads "5" and 5.0 as the integer 5, which the input schema allows.
not_text = st.integers() | st.lists(st.integers(), min_size=1, max_size=2) | st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=2)
not_int = st.text(st.characters(categories=("L",)), min_size=1, max_size=10) | st.floats(
    allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()) | st.lists(st.integers(), max_size=2)
not_list = st.integers() | st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=2)
BAD: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "add_memories": {"memories": not_list | st.just([]) | st.lists(not_text, min_size=1, max_size=2)
                     | st.just([""]) | st.just(["x" * 50001]) | st.lists(text, min_size=101, max_size=101),
                     "tags": not_list | st.lists(not_text, min_size=1, max_size=2), "project": not_text,
                     "memory_type": st.text(st.characters(categories=("L",)), min_size=1).filter(
                         lambda s: s not in ("episodic", "semantic", "procedural")) | st.integers()},
    "add_conversation": {"messages": not_list | st.just([]) | st.lists(not_text, min_size=1, max_size=2)
                         | st.just([{"role": "user"}]) | st.just([{"role": "", "content": "x"}])
                         | st.just([{"role": "user", "content": "x", "extra": 1}]),
                         "is_agent_memory": st.text(st.characters(categories=("L",)), min_size=1).filter(
                             lambda s: s.lower() not in ("true", "false", "yes", "no", "on", "off", "t", "f", "y", "n")),
                         "session_id": not_text, "transcript_path": not_text},
    "search_memory": {"topK": not_int | st.integers(max_value=0) | st.integers(min_value=51),
                      "limit": not_int | st.integers(max_value=0) | st.integers(min_value=101),
                      "offset": not_int | st.integers(max_value=-1) | st.integers(min_value=10001),
                      "token_budget": not_int | st.integers(max_value=-1) | st.integers(min_value=200001),
                      "detail": st.text(max_size=10).filter(lambda s: s not in ("full", "headline")),
                      "query": not_text | st.just("") | st.just("q" * 5001),
                      "ids": not_list | st.lists(st.uuids().map(str), min_size=101, max_size=101),
                      "as_of": st.just("not a date") | st.just(1e300) | st.just("9999-01-01T00:00:00"),
                      "known_at": st.just("yesterday-ish") | st.just(-1e15),
                      "tag": not_text},
    "get_skill": {"task": not_text | st.just("") | st.just("t" * 5001)},
}
REQUIRED = {"add_memories": "memories", "add_conversation": "messages", "get_skill": "task"}


@st.composite
def calls(draw: st.DrawFn, tool: str) -> Drawn:
    arguments = draw(VALID[tool])
    fault = draw(st.sampled_from(["none", "none", "unknown", "value", "value", "missing"]))
    if fault == "unknown":
        name = draw(st.sampled_from(["bogus", "top_k", "userId", "user_id", "Memories"]))
        return {**arguments, name: draw(st.integers() | text)}, name
    if fault == "value":
        name = draw(st.sampled_from(sorted(BAD[tool])))
        return {**arguments, name: draw(BAD[tool][name])}, name
    if fault == "missing" and tool in REQUIRED:
        return {k: v for k, v in arguments.items() if k != REQUIRED[tool]}, REQUIRED[tool]
    return arguments, None


@pytest.fixture(scope="module")
def session(open_target: ServerProcess) -> Iterator[tuple[BlockingPortal, Client]]:
    """One MCP session for the module, on an event loop in a helper thread, so Hypothesis can drive it."""
    url = f"{open_target.base_url}/mcp/fuzzer/mcp-fuzz-{uuid.uuid4().hex[:8]}"
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(mcp_session(url)) as client:
        yield portal, client


@pytest.mark.parametrize("tool", sorted(VALID))
def test_tool_answers_every_argument_set(tool: str, session: tuple[BlockingPortal, Client],
                                         tally: Counter[str]) -> None:
    portal, client = session

    @settings(max_examples=budget.current().mcp_examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(drawn=calls(tool))
    def call(drawn: Drawn) -> None:
        arguments, bad = drawn
        note(f"{tool}({arguments!r}), bad argument: {bad}")
        result = portal.call(client.call_tool, tool, arguments)
        reply = result.content[0].text
        tally[f"mcp fuzz: calls {'bad' if bad else 'valid'}"] += 1
        assert "internal error" not in reply and "could not be completed" not in reply, reply
        if bad is None:
            assert not result.is_error, reply
        else:
            assert result.is_error, f"{bad} accepted: {reply}"
            assert bad in reply, reply

    call()
