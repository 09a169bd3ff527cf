"""Every call of both clients against a real Cortadel server."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sdk_support import Connect

from cortadel import (
    AddOptions,
    ChatMessage,
    ConversationOptions,
    HealthResult,
    ListOptions,
    MemoryCreated,
    SearchOptions,
    ValidationError,
)

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def assert_recent(moment: datetime, since: float) -> None:
    assert since - 2 <= moment.timestamp() <= time.time() + 2, moment


def test_add_stores_the_text_and_get_returns_it(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    since = time.time()
    created = client.add(
        "Alice prefers dark mode in every editor.",
        AddOptions(app="sdk-tests", metadata={"source": "unit", "n": 2}, infer=False, memory_type="semantic"),
    )
    assert isinstance(created, MemoryCreated)
    assert uuid.UUID(created.id)
    assert (created.event, created.content, created.state, created.app_name) == (
        "ADD", "Alice prefers dark mode in every editor.", "active", "sdk-tests"
    )
    assert json.loads(created.metadata or "null") == {"source": "unit", "n": 2}
    assert_recent(iso(created.created_at or ""), since)

    detail = client.get(created.id)
    assert detail is not None
    assert (detail.id, detail.text, detail.app_name, detail.metadata) == (
        created.id, "Alice prefers dark mode in every editor.", "sdk-tests", {"source": "unit", "n": 2}
    )
    assert (detail.state, detail.is_current, detail.invalid_at, detail.memory_type) == ("active", True, None, "semantic")
    assert detail.created_at == int(iso(created.created_at or "").timestamp())


def test_adding_the_same_text_twice_is_a_duplicate(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    first = client.add("Bob's birthday is on March 3rd.")
    again = client.add("Bob's birthday is on March 3rd.")
    assert (first.event, again.event, again.id) == ("ADD", "SKIP_DUPLICATE", first.id)


def test_get_answers_none_for_missing_memories(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    mine = client.add("Carol reads science fiction.").id
    assert client.get(UNKNOWN_ID) is None
    assert client.get("not-a-uuid") is None
    assert connect(server.base_url, user + "-other").get(mine) is None
    assert client.get(mine) is not None


def test_search_finds_a_fresh_memory_exactly_once(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    target = client.add("The staging database password rotates every Tuesday.", AddOptions(app="ops-bot")).id
    client.add("Dinner reservations are at eight.")
    results = client.search("staging database password", SearchOptions(top_k=5))
    assert results.query == "staging database password"
    assert [hit.id for hit in results.results].count(target) == 1
    best = results.results[0]
    assert (best.id, best.content, best.app_name) == (target, "The staging database password rotates every Tuesday.", "ops-bot")
    assert best.rrf_score is not None and best.rrf_score > 0
    assert results.total == len(results.results)


def test_search_respects_top_k_and_mode(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    for text in (
        "Before a deployment, rehearse the rollback on staging.",
        "The rollback script lives in the ops repository.",
        "Friday deployments need a second reviewer.",
        "Lunch is served at noon.",
    ):
        assert client.add(text).event == "ADD"
    results = client.search("deployment rollback", SearchOptions(top_k=2, mode="text"))
    assert len(results.results) == 2
    assert results.results[0].content == "Before a deployment, rehearse the rollback on staging."
    assert all(hit.vector_rank is None for hit in results.results)


def test_list_pages_newest_first(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    texts = ["Dana plays the cello.", "Dana lives near the harbour.", "Dana's cat is called Miso."]
    for text in texts:
        client.add(text)
        time.sleep(0.01)
    first = client.list(ListOptions(size=2))
    assert (first.total, first.page, first.size, first.pages) == (3, 1, 2, 2)
    assert [item.content for item in first.items] == texts[::-1][:2]
    second = client.list(ListOptions(page=2, size=2))
    assert [item.content for item in second.items] == texts[:1]
    assert client.list().size == 20
    assert all(isinstance(item.created_at, int) and item.state == "active" for item in first.items)


def test_point_in_time_reads(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    before = datetime.now(timezone.utc)
    time.sleep(0.05)
    old = client.add("Erin's team is called Atlas.").id
    time.sleep(0.05)
    between = datetime.now(timezone.utc)
    time.sleep(0.05)
    client.add("Erin's desk is on the fourth floor.")

    assert client.list(ListOptions(known_at=before)).total == 0
    assert [i.id for i in client.list(ListOptions(known_at=between)).items] == [old]
    assert [i.id for i in client.list(ListOptions(as_of=between)).items] == [old]
    assert client.list(ListOptions(as_of=between + timedelta(hours=1))).total == 2
    assert client.search("Erin", SearchOptions(known_at=before)).results == []
    assert [h.id for h in client.search("Erin", SearchOptions(as_of=between.isoformat())).results] == [old]


def test_history_lists_the_recorded_changes(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    created = client.add("Frank's favourite colour is green.", AddOptions(infer=False))
    history = client.history(created.id)
    assert history is not None
    assert history.id == created.id
    assert [e.event for e in history.events] == ["ADD"]
    assert abs(iso(history.events[0].at) - iso(created.created_at or "")) < timedelta(seconds=1)
    assert client.history(UNKNOWN_ID) is None


def test_conversation_facts_are_stored_with_their_turns(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    result = client.add_conversation(
        [ChatMessage("user", "I just adopted a beagle named Pixel.", uuid="turn-1"), ChatMessage("assistant", "Congratulations!")],
        ConversationOptions(session_id="s-42", tags=["pets"]),
    )
    assert result.no_facts_extracted is None and result.results is not None
    (fact,) = result.results
    assert (fact.event, fact.memory, fact.error) == ("ADD", "User just adopted a beagle named Pixel.", None)
    stored = client.get(fact.id or "")
    assert stored is not None
    assert (stored.text, stored.source_turn_uuids, stored.session_id, stored.tags) == (
        "User just adopted a beagle named Pixel.", ["turn-1"], "s-42", ["pets"]
    )
    assert [h.id for h in client.search("beagle", SearchOptions(session_id="s-42")).results] == [fact.id]


def test_small_talk_yields_no_facts(server: Any, connect: Connect, user: str) -> None:
    result = connect(server.base_url, user).add_conversation([ChatMessage("user", "hi"), ChatMessage("assistant", "hello!")])
    assert (result.results, result.no_facts_extracted) == (None, True)
    assert connect(server.base_url, user).list().total == 0


def test_a_newer_fact_supersedes_and_history_shows_it(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    old = client.add("Hana lives in Paris.")
    time.sleep(0.05)
    between = datetime.now(timezone.utc)
    time.sleep(0.05)
    new = client.add("Hana moved to Berlin.")
    assert (old.event, new.event) == ("ADD", "SUPERSEDE")

    replaced = client.get(old.id)
    assert replaced is not None
    assert (replaced.is_current, replaced.superseded_by) == (False, new.id)
    assert iso(replaced.invalid_at or "") > between
    history = client.history(old.id)
    assert history is not None
    assert (history.events[0].event, history.events[-1].event) == ("ADD", "SUPERSEDE")
    assert history.events[-1].detail["superseded_by"] == new.id

    assert [i.id for i in client.list().items] == [new.id]
    assert [i.id for i in client.list(ListOptions(include_superseded=True)).items] == [new.id, old.id]
    assert [i.id for i in client.list(ListOptions(as_of=between)).items] == [old.id]
    assert [h.id for h in client.search("where does Hana live", SearchOptions(as_of=between)).results] == [old.id]


def test_delete_removes_memories_everywhere(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    gone = client.add("Grace's locker code is 4471.").id
    kept = client.add("Grace bikes to work.").id
    assert client.delete([gone]) == "Deleted 1 memory"
    assert client.get(gone) is None
    assert client.history(gone) is None
    assert [i.id for i in client.list().items] == [kept]
    assert gone not in [h.id for h in client.search("Grace locker code").results]
    assert client.delete([UNKNOWN_ID]) == "Deleted 0 memories"


def test_health_reports_the_database(server: Any, connect: Connect) -> None:
    since = time.time()
    health = connect(server.base_url).health()
    assert isinstance(health, HealthResult)
    assert health.status == "ok"
    assert_recent(iso(health.checked_at or ""), since)
    assert health.checks is not None and health.checks["memgraph"]["ok"] is True
    assert health.checks["embeddings"]["dim"] > 0


def test_validation_errors_name_the_field(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    with pytest.raises(ValidationError) as empty:
        client.add("")
    assert (empty.value.status, empty.value.code) == (400, "validation_error")
    assert list(empty.value.errors) == ["text"]
    assert "text" in empty.value.message
    with pytest.raises(ValidationError) as too_many:
        client.search("anything", SearchOptions(top_k=51))
    assert list(too_many.value.errors) == ["top_k"]
