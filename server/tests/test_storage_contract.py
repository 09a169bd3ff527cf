"""The storage contract (``Storage`` in storage/base.py), held against every backend.

Each test runs once per backend on a real database: a SQLite file in a temporary folder, and a
database of its own on the PostgreSQL the test session starts (cortadel_server.testing_postgres).
``second`` opens another handle on the same database, standing for another server process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cortadel_server.metrics import JobQueue
from cortadel_server.storage.base import EntityMention, MemoryFilters, MemoryRecord, Storage
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing_postgres import scratch_database

BACKENDS = ["sqlite", "postgres"]
T0 = 1_790_000_000.0  # 2026-09-21, a plausible record time


@pytest.fixture(params=BACKENDS)
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Storage]]:
    """Opens a handle on one fresh database of the backend; every handle is closed afterwards."""
    location: Any = tmp_path / "contract.db" if request.param == "sqlite" else scratch_database("contract")
    opened: list[Storage] = []

    def open_store() -> Storage:
        store: Storage = SqliteStorage(location) if request.param == "sqlite" else PostgresStorage(location, max_connections=4)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture()
def store(opener: Callable[[], Storage]) -> Storage:
    return opener()


def vec(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def mem(memory_id: str, text: str, *, user: str = "u1", at: float = 0.0, **fields: Any) -> MemoryRecord:
    fields.setdefault("fingerprint", f"fp-{memory_id}")
    return MemoryRecord(id=memory_id, user_id=user, text=text, created_at=T0 + at, **fields)


def ids(found: Any) -> list[str]:
    return [hit.id for hit in found]


# -- memories ------------------------------------------------------------------------------------
def test_a_memory_comes_back_with_every_field(store: Storage) -> None:
    record = mem(
        "m1", "I live in Lisbon.", gist="lives in Lisbon", memory_type="episodic", categories=["personal", "travel"],
        tags=["home"], project="p1", app_name="a1", session_id="s1", metadata={"source": "chat", "n": 2},
        source_turn_uuids=["t-1"], transcript_path="/t/1.jsonl", extraction_status="pending", valid_at=T0 - 86400,
        updated_at=T0 + 1,
    )
    store.insert_memory(record, vec(1, 0, 0, 0))
    assert store.get_memory("u1", "m1") == record
    assert store.get_memory("u2", "m1") is None  # another user never sees it
    assert store.get_memories("u1", ["m1", "missing"]) == {"m1": record}
    assert store.get_memories("u2", ["m1"]) == {}
    assert store.count_memories() == 1


def test_update_sets_fields_and_refuses_unknown_ones(store: Storage) -> None:
    store.insert_memory(mem("m1", "I like tea."), vec(1, 0, 0, 0))
    store.update_memory("u1", "m1", state="superseded", expired_at=T0 + 5, superseded_by="m2", tags=["x"])
    got = store.get_memory("u1", "m1")
    assert got is not None and (got.state, got.expired_at, got.superseded_by, got.tags) == ("superseded", T0 + 5, "m2", ["x"])
    assert not got.is_current
    with pytest.raises(ValueError, match="not updatable"):
        store.update_memory("u1", "m1", created_at=T0)
    store.update_memory("u2", "m1", state="invalidated")  # another user's id changes nothing
    assert store.get_memory("u1", "m1").state == "superseded"  # type: ignore[union-attr]


def test_find_by_fingerprint_takes_the_oldest_current_fact(store: Storage) -> None:
    store.insert_memory(mem("old", "x", at=1, fingerprint="same"), vec(1, 0, 0, 0))
    store.insert_memory(mem("new", "x", at=2, fingerprint="same"), vec(1, 0, 0, 0))
    assert store.find_by_fingerprint("u1", "same").id == "old"  # type: ignore[union-attr]
    store.update_memory("u1", "old", expired_at=T0 + 3)
    assert store.find_by_fingerprint("u1", "same").id == "new"  # type: ignore[union-attr]
    assert store.find_by_fingerprint("u2", "same") is None


def test_all_current_texts_are_the_users_current_facts_up_to_a_limit(store: Storage) -> None:
    store.insert_memory(mem("live", "User lives in Porto."), vec(1, 0, 0, 0))
    store.insert_memory(mem("cat", "User owns a cat."), vec(0, 1, 0, 0))
    store.insert_memory(mem("gone", "User lives in Lisbon.", expired_at=T0 + 1, state="superseded"), vec(1, 0, 0, 0))
    store.insert_memory(mem("theirs", "User owns a dog.", user="u2"), vec(0, 1, 0, 0))
    assert store.all_current_texts("u1", 2) == {"live": "User lives in Porto.", "cat": "User owns a cat."}
    assert store.all_current_texts("u1", 1) is None
    assert store.all_current_texts("u3", 5) == {}


def test_first_by_fingerprints_answers_as_find_by_fingerprint_for_each(store: Storage) -> None:
    store.insert_memory(mem("old", "x", at=1, fingerprint="same"), vec(1, 0, 0, 0))
    store.insert_memory(mem("new", "x", at=2, fingerprint="same"), vec(1, 0, 0, 0))
    store.insert_memory(mem("ended", "y", at=1, fingerprint="gone", expired_at=T0 + 2, state="superseded"), vec(0, 1, 0, 0))
    store.insert_memory(mem("theirs", "z", user="u2", fingerprint="other"), vec(0, 0, 1, 0))
    assert store.first_by_fingerprints("u1", ["same", "gone", "other", "same", "none"]) == {"same": "old"}
    store.update_memory("u1", "old", expired_at=T0 + 3)
    assert store.first_by_fingerprints("u1", ["same"]) == {"same": "new"}
    assert store.first_by_fingerprints("u2", ["same", "other"]) == {"other": "theirs"}
    assert store.first_by_fingerprints("u1", []) == {}


def test_current_texts_name_only_the_users_current_facts(store: Storage) -> None:
    store.insert_memory(mem("live", "User lives in Porto."), vec(1, 0, 0, 0))
    store.insert_memory(mem("gone", "User lives in Lisbon.", invalid_at=T0 + 1, expired_at=T0 + 1, state="superseded"), vec(1, 0, 0, 0))
    store.insert_memory(mem("retracted", "User owns a cat.", expired_at=T0 + 2, state="invalidated"), vec(0, 1, 0, 0))
    store.insert_memory(mem("theirs", "User likes tea.", user="u2"), vec(0, 0, 1, 0))
    found = store.current_texts("u1", ["gone", "live", "retracted", "theirs", "missing"])
    assert found == {"live": "User lives in Porto."}
    assert store.current_texts("u1", []) == {}


def _corpus(store: Storage) -> None:
    rows = [
        mem("a", "alpha", at=1, session_id="s1", memory_type="episodic", app_name="app1", tags=["t1"], categories=["work"]),
        mem("b", "beta", at=2, session_id="s1", project="p1", tags=["t2"], categories=["health", "work"]),
        mem("c", "gamma", at=3, session_id="s2", app_name="app1", project="p1", valid_at=T0 - 1000),
        # superseded at T0+10: valid until then, no longer believed since then
        mem("d", "delta", at=4, invalid_at=T0 + 10, expired_at=T0 + 10, superseded_by="e", state="superseded"),
        mem("e", "epsilon", at=10, memory_type="procedural"),
        # a belief withdrawn at T0+20 without ending its valid time
        mem("f", "zeta", at=5, expired_at=T0 + 20, state="invalidated"),
        mem("other", "alpha", user="u2", at=1, session_id="s1", tags=["t1"]),
    ]
    for i, record in enumerate(rows):
        store.insert_memory(record, vec(1, i + 1, 0, 0))


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (MemoryFilters(), ["e", "c", "b", "a"]),
        (MemoryFilters(session_id="s1"), ["b", "a"]),
        (MemoryFilters(memory_type="episodic"), ["a"]),
        (MemoryFilters(app_name="app1"), ["c", "a"]),
        (MemoryFilters(project="p1"), ["c", "b"]),
        (MemoryFilters(tag="t1"), ["a"]),
        (MemoryFilters(categories=("health", "nope")), ["b"]),
        (MemoryFilters(ids=("a", "e", "other")), ["e", "a"]),
        (MemoryFilters(include_superseded=True), ["e", "f", "d", "c", "b", "a"]),
        # valid time T0+6: d was still true then (its replacement is recorded later); f was withdrawn
        (MemoryFilters(as_of=T0 + 6), ["d", "c", "b", "a"]),
        # record time T0+15: d already expired, f not yet
        (MemoryFilters(known_at=T0 + 15), ["e", "f", "c", "b", "a"]),
        (MemoryFilters(known_at=T0 + 4.5), ["d", "c", "b", "a"]),
        # valid time in [T0-2000, T0+2): c (valid from T0-1000) and a
        (MemoryFilters(valid_between=(T0 - 2000, T0 + 2)), ["c", "a"]),
        (MemoryFilters(session_id="s1", tag="t2", project="p1"), ["b"]),
        # one state, in place of the current-only rule
        (MemoryFilters(state="superseded"), ["d"]),
        (MemoryFilters(state="invalidated"), ["f"]),
        (MemoryFilters(state="active"), ["e", "c", "b", "a"]),
        (MemoryFilters(exclude_ids=("e", "b", "other")), ["c", "a"]),
    ],
)
def test_list_applies_every_filter_newest_first(store: Storage, filters: MemoryFilters, expected: list[str]) -> None:
    _corpus(store)
    found, total = store.list_memories("u1", filters, offset=0, limit=50)
    assert [r.id for r in found] == expected
    assert total == len(expected)


def test_list_pages_with_the_total(store: Storage) -> None:
    _corpus(store)
    page, total = store.list_memories("u1", MemoryFilters(), offset=1, limit=2)
    assert ([r.id for r in page], total) == (["c", "b"], 4)
    assert store.list_memories("nobody", MemoryFilters(), offset=0, limit=10) == ([], 0)


# -- retrieval arms ------------------------------------------------------------------------------
def test_text_search_ranks_by_evidence_and_context_weighs_less(store: Storage) -> None:
    store.insert_memory(mem("q", "Which city did Caroline move to?", at=1, session_id="s"), vec(1, 0, 0, 0))
    store.insert_memory(mem("r", "She went to Lisbon in spring.", at=2, session_id="s"), vec(0, 1, 0, 0))
    store.insert_memory(mem("x", "Caroline moved to Lisbon and Caroline loves Lisbon.", at=3), vec(0, 0, 1, 0))
    store.insert_memory(mem("y", "Caroline is tall.", at=4, user="u2"), vec(0, 0, 1, 0))
    hits = store.text_search("u1", "Where did Caroline move?", MemoryFilters(), 10)
    # x and q hold the words themselves; r only through its context (q's text, written before it)
    assert (set(ids(hits)[:2]), ids(hits)[2:]) == ({"x", "q"}, ["r"])
    assert hits[0].score >= hits[1].score > hits[2].score > 0
    unweighted = {h.id: h.score for h in store.text_search("u1", "Caroline", MemoryFilters(), 10, context_weight=0.0)}
    assert unweighted["x"] > 0 and unweighted["q"] > 0 and unweighted["r"] == 0
    assert ids(store.text_search("u1", "Caroline", MemoryFilters(session_id="s"), 10)) == ["q", "r"]
    assert ids(store.text_search("u1", "lisbon", MemoryFilters(), 1)) == ["x"]
    # stemming: "moving" matches "moved"/"move"; quotes and operators are words, never syntax
    assert set(ids(store.text_search("u1", "moving", MemoryFilters(), 10))) >= {"x", "q"}
    assert store.text_search("u1", "' OR 1=1 -- \" | & ! :*", MemoryFilters(), 10) == []
    assert store.text_search("u1", "...", MemoryFilters(), 10) == []


def test_text_search_sees_current_facts_unless_asked(store: Storage) -> None:
    _corpus(store)
    assert ids(store.text_search("u1", "delta", MemoryFilters(), 10)) == []
    assert ids(store.text_search("u1", "delta", MemoryFilters(include_superseded=True), 10)) == ["d"]
    assert ids(store.text_search("u2", "alpha", MemoryFilters(), 10)) == ["other"]


def test_vector_search_orders_by_cosine_within_the_filters(store: Storage) -> None:
    store.insert_memory(mem("near", "n", at=1, app_name="a"), vec(1, 0.1, 0, 0))
    store.insert_memory(mem("mid", "m", at=2), vec(1, 1, 0, 0))
    store.insert_memory(mem("far", "f", at=3, app_name="a"), vec(0, 0, 1, 0))
    store.insert_memory(mem("theirs", "t", user="u2"), vec(1, 0, 0, 0))
    hits = store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 10)
    assert ids(hits) == ["near", "mid", "far"]
    assert [round(h.score, 4) for h in hits] == [round(float(vec(1, 0.1, 0, 0)[0]), 4), round(float(vec(1, 1, 0, 0)[0]), 4), 0.0]
    assert ids(store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(app_name="a"), 10)) == ["near", "far"]
    assert ids(store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 1)) == ["near"]
    store.update_memory("u1", "near", expired_at=T0 + 9)
    assert ids(store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 10)) == ["mid", "far"]
    assert ids(store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(include_superseded=True), 1)) == ["near"]
    # another dimension (a query from another embedder) matches nothing
    assert store.vector_search("u1", vec(1, 0, 0), MemoryFilters(), 10) == []
    assert store.vector_search("nobody", vec(1, 0, 0, 0), MemoryFilters(), 10) == []


def test_sessions_keep_documents_and_contexts_through_deletes(store: Storage) -> None:
    for i, text in enumerate(["Do you like zorblax soup?", "I adore quibbly pies.", "Mostly on Sundays."]):
        store.insert_memory(mem(f"s{i}", text, at=i, session_id="chat"), vec(1, i, 0, 0))
    store.insert_memory(mem("lone", "Quibbly is a word.", at=9, session_id="other"), vec(1, 0, 0, 0))
    assert ids(store.session_search("u1", "quibbly pies", 5)) == ["chat", "other"]
    assert ids(store.session_search("u2", "quibbly", 5)) == []
    members = store.session_members("u1", ["chat", "other", "missing"], MemoryFilters())
    assert members == {"chat": ["s0", "s1", "s2"], "other": ["lone"]}
    assert store.session_members("u1", ["chat"], MemoryFilters(ids=("s2",))) == {"chat": ["s2"]}
    # s2's context is s1's text: it is found (weakly) by s1's words
    assert ids(store.text_search("u1", "pies", MemoryFilters(), 5)) == ["s1", "s2"]
    assert store.delete_memories("u1", ["s1"]) == 1
    # the deleted text leaves the session document and its neighbour's context; s2 now follows s0
    assert store.session_search("u1", "pies", 5) == []
    assert store.text_search("u1", "pies", MemoryFilters(), 5) == []
    assert ids(store.text_search("u1", "zorblax", MemoryFilters(), 5)) == ["s0", "s2"]
    assert store.delete_memories("u1", ["s0", "s2"]) == 2
    assert ids(store.session_search("u1", "zorblax quibbly", 5)) == ["other"]


def test_editing_a_text_rebuilds_its_session(store: Storage) -> None:
    store.insert_memory(mem("a", "first words", at=1, session_id="s"), vec(1, 0, 0, 0))
    store.insert_memory(mem("b", "second words", at=2, session_id="s"), vec(1, 0, 0, 0))
    store.update_memory("u1", "a", text="replaced phrasing")
    assert ids(store.session_search("u1", "first", 5)) == []
    assert ids(store.text_search("u1", "phrasing", MemoryFilters(), 5)) == ["a", "b"]


# -- history and entities ------------------------------------------------------------------------
def test_history_in_order_and_quotes_of_deleted_text_go(store: Storage) -> None:
    store.insert_memory(mem("old", "I live in Berlin.", at=1), vec(1, 0, 0, 0))
    store.insert_memory(mem("new", "I moved to Zorbtown.", at=2), vec(1, 0, 0, 0))
    store.record_event("u1", "old", "ADD", T0 + 1, {"source": "add"})
    store.record_event("u1", "old", "SUPERSEDE", T0 + 2, {"superseded_by": "new", "statement": "I moved to Zorbtown."})
    store.record_event("u1", "new", "ADD", T0 + 2, {})
    assert [(h.memory_id, h.event, h.at, h.detail) for h in store.history("u1", "old")] == [
        ("old", "ADD", T0 + 1, {"source": "add"}),
        ("old", "SUPERSEDE", T0 + 2, {"superseded_by": "new", "statement": "I moved to Zorbtown."}),
    ]
    assert store.history("u2", "old") == []
    store.delete_memories("u1", ["new"])
    assert [h.detail for h in store.history("u1", "old")] == [{"source": "add"}, {"superseded_by": "new"}]
    assert store.history("u1", "new") == []


def test_entities_link_score_and_leave_with_their_last_memory(store: Storage) -> None:
    store.insert_memory(mem("m1", "Ana and Bob met.", at=1), vec(1, 0, 0, 0))
    store.insert_memory(mem("m2", "Ana sings.", at=2), vec(1, 0, 0, 0))
    store.link_entities("u1", "m1", [EntityMention("Ana", "person", "Ana"), EntityMention("Bobby", "person", "Bob")])
    store.link_entities("u1", "m2", [EntityMention("ana", "person", "Ana")])
    store.link_entities("u2", "x", [EntityMention("Eve", "person", "Eve")])
    assert store.entity_names("u1") == {"ana": "Ana", "bob": "Bob", "bobby": "Bob"}
    hits = store.memories_for_entities("u1", ["Ana", "Bob"], MemoryFilters(), 10)
    assert [(h.id, h.score) for h in hits] == [("m1", 2.0), ("m2", 1.0)]
    assert store.memories_for_entities("u2", ["Ana"], MemoryFilters(), 10) == []
    store.delete_memories("u1", ["m1"])
    assert store.entity_names("u1") == {"ana": "Ana"}
    assert store.entity_names("u2") == {"eve": "Eve"}


def test_entity_aliases_come_by_canonical_name_then_alias_in_code_point_order(store: Storage) -> None:
    """The order picks the entity a new name joins when it could join several, so both backends
    give this one, whatever their collation: capitals before small letters, accents after both."""
    store.insert_memory(mem("m1", "Émile, alice, Bob and Zoë met.", at=1), vec(1, 0, 0, 0))
    store.link_entities("u1", "m1", [EntityMention("Émile", "person", "Émile"), EntityMention("Zoë", "person", "zoë"),
                                     EntityMention("Alice", "person", "alice"), EntityMention("Bobby", "person", "Bob"),
                                     EntityMention("Ali", "person", "Bob")])
    store.link_entities("u1", "m1", [EntityMention("Ali", "person", "alice")])  # one alias, two entities
    assert store.entity_aliases("u1") == [("ali", "Bob"), ("bob", "Bob"), ("bobby", "Bob"), ("ali", "alice"),
                                          ("alice", "alice"), ("zoë", "zoë"), ("émile", "Émile")]
    assert list(store.entity_names("u1").items()) == [("ali", "alice"), ("bob", "Bob"), ("bobby", "Bob"),
                                                      ("alice", "alice"), ("zoë", "zoë"), ("émile", "Émile")]


# -- fading and communities -----------------------------------------------------------------------
def test_recalls_move_last_seen_forward_only_for_their_user_and_leave_with_the_memory(store: Storage) -> None:
    store.insert_memory(mem("m1", "Ana sings.", at=1, updated_at=T0 + 5), vec(1, 0, 0, 0))
    store.insert_memory(mem("m2", "Bob runs.", at=2), vec(0, 1, 0, 0))
    store.insert_memory(mem("m3", "Eve reads.", user="u2", at=3), vec(0, 0, 1, 0))
    version = store.user_version("u1")
    assert store.last_seen("u1", ["m1", "m2", "m3", "nope"]) == {"m1": T0 + 5, "m2": T0 + 2}
    store.record_recalls("u1", ["m2", "m3"], T0 + 50)  # m3 is u2's: not recorded for u1
    store.record_recalls("u1", ["m2"], T0 + 40)  # an older recall never moves it back
    assert store.last_seen("u1", ["m1", "m2"]) == {"m1": T0 + 5, "m2": T0 + 50}
    assert store.last_seen("u2", ["m3"]) == {"m3": T0 + 3}
    assert store.user_version("u1") == version  # a recall changes no memory
    store.delete_memories("u1", ["m2"])
    store.insert_memory(mem("m2", "Bob runs again.", at=60), vec(0, 1, 0, 0))
    assert store.last_seen("u1", ["m2"]) == {"m2": T0 + 60}  # the old recall left with the old row
    assert store.delete_user("u1")["memory_recalls"] == 0
    store.record_recalls("u2", ["m3"], T0 + 70)
    assert store.delete_user("u2")["memory_recalls"] == 1


def test_entity_links_list_current_memories_and_their_entities(store: Storage) -> None:
    store.insert_memory(mem("m1", "Ana and Bob met.", at=1), vec(1, 0, 0, 0))
    store.insert_memory(mem("m2", "Ana sings.", at=2), vec(1, 0, 0, 0))
    store.insert_memory(mem("m3", "Bob moved.", at=3, expired_at=T0 + 4), vec(1, 0, 0, 0))
    store.link_entities("u1", "m1", [EntityMention("Ana", "person", "Ana"), EntityMention("Bobby", "person", "Bob")])
    store.link_entities("u1", "m2", [EntityMention("ana", "person", "Ana")])
    store.link_entities("u1", "m3", [EntityMention("Bob", "person", "Bob")])
    store.link_entities("u2", "x", [EntityMention("Eve", "person", "Eve")])
    assert store.entity_links("u1") == [("m1", "Ana"), ("m1", "Bob"), ("m2", "Ana")]
    assert store.entity_links("u2") == []  # x is no memory of u2


# -- jobs ----------------------------------------------------------------------------------------
def test_jobs_are_claimed_once_retried_and_taken_over_from_a_dead_claimer(opener: Callable[[], Storage]) -> None:
    store, other = opener(), opener()
    assert isinstance(store, JobQueue)
    queued_from = time.time()
    store.enqueue_job("enrich", "u1", "m1", {"n": 1})
    store.enqueue_job("enrich", "u2", None, {"n": 2})
    now = time.time() + 1
    [group] = store.job_groups()
    assert (group.kind, group.status, group.count) == ("enrich", "queued", 2)
    assert queued_from <= group.oldest_created_at <= time.time()
    first = store.claim_job(now)
    second = other.claim_job(now)  # another process takes the other one, never the same
    assert first is not None and second is not None
    assert [(j.user_id, j.memory_id, j.payload, j.attempts) for j in (first, second)] == [
        ("u1", "m1", {"n": 1}, 1), ("u2", None, {"n": 2}, 1),
    ]
    assert store.claim_job(now) is None
    store.fail_job(first.id, "boom", retry_at=now + 100)
    assert store.claim_job(now) is None  # not due yet
    again = store.claim_job(now + 100)
    assert again is not None and (again.id, again.attempts) == (first.id, 2)
    store.finish_job(first.id)
    other.close()  # the process running the second job dies
    deadline = time.monotonic() + 5
    while (requeued := store.requeue_running_jobs()) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # the database notices a closed connection a moment later
    assert requeued == 1
    retried = store.claim_job(now)
    assert retried is not None and (retried.id, retried.attempts) == (second.id, 2)
    store.fail_job(second.id, "gave up", retry_at=None)
    assert store.claim_job(now + 1000) is None
    assert [(g.kind, g.status, g.count) for g in store.job_groups()] == [("enrich", "failed", 1)]


# -- deletion ------------------------------------------------------------------------------------
def test_a_claim_takes_the_oldest_job_with_the_due_ones_of_its_kind_and_user_behind_it(opener: Callable[[], Storage]) -> None:
    store, other = opener(), opener()
    for kind, user, memory in [("enrich", "u1", "m1"), ("enrich", "u2", "m2"), ("enrich", "u1", "m3"), ("reconcile", "u1", None),
                               ("enrich", "u1", "m4"), ("enrich", "u1", "m5"), ("enrich", "u1", "m6")]:
        store.enqueue_job(kind, user, memory, {"memory": memory})
    now = time.time() + 1
    later = store.claim_jobs(now, 1)[0]  # m1, put back for later
    store.fail_job(later.id, "not yet", retry_at=now + 100)
    assert [(j.user_id, j.memory_id) for j in store.claim_jobs(now, 3)] == [("u2", "m2")]  # the oldest due, alone of its user
    claimed = other.claim_jobs(now, 3)
    assert [(j.kind, j.user_id, j.memory_id, j.payload, j.attempts) for j in claimed] == [
        ("enrich", "u1", "m3", {"memory": "m3"}, 1), ("enrich", "u1", "m4", {"memory": "m4"}, 1), ("enrich", "u1", "m5", {"memory": "m5"}, 1),
    ]  # then u1's enrichment in queue order, the reconcile job between them left, m1 not due yet, three at most
    assert [(j.kind, j.memory_id) for j in store.claim_jobs(now, 10)] == [("reconcile", None)]
    assert [j.memory_id for j in store.claim_jobs(now, 10)] == ["m6"]  # never a job claimed already
    assert store.claim_jobs(now, 10) == []
    store.finish_jobs([j.id for j in claimed])
    assert [(g.kind, g.status, g.count) for g in store.job_groups()] == [("enrich", "queued", 1), ("enrich", "running", 2), ("reconcile", "running", 1)]
    assert [(j.memory_id, j.attempts) for j in store.claim_jobs(now + 100, 10)] == [("m1", 2)]
    other.close()


def test_delete_memories_counts_only_the_users_own(store: Storage) -> None:
    _corpus(store)
    assert store.delete_memories("u1", ["a", "other", "missing"]) == 1
    assert store.get_memory("u2", "other") is not None
    assert store.delete_memories("u1", []) == 0


def test_delete_user_erases_everything_and_versions_never_repeat(store: Storage) -> None:
    _corpus(store)
    store.record_event("u1", "a", "ADD", T0, {})
    store.link_entities("u1", "a", [EntityMention("Ana", "person", "Ana")])
    store.enqueue_job("enrich", "u1", "a", {})
    before = store.user_version("u1")
    erased = store.delete_user("u1")
    assert {k: v for k, v in erased.items() if v} == {
        "memories": 6, "memory_events": 1, "entities": 1, "entity_aliases": 1, "memory_entities": 1, "jobs": 1,
        "session_docs": 2, "user_versions": 1,
    }
    assert store.list_memories("u1", MemoryFilters(include_superseded=True), offset=0, limit=10) == ([], 0)
    assert store.user_version("u1") == 0
    assert store.get_memory("u2", "other") is not None
    store.insert_memory(mem("again", "alpha"), vec(1, 0, 0, 0))
    assert store.user_version("u1") > before


# -- transactions and caches ---------------------------------------------------------------------
def test_write_rolls_back_together_and_reads_its_own_writes(store: Storage) -> None:
    with pytest.raises(RuntimeError), store.write():
        store.insert_memory(mem("m1", "kept?"), vec(1, 0, 0, 0))
        with store.write():  # nested: the same transaction
            store.record_event("u1", "m1", "ADD", T0, {})
        assert store.get_memory("u1", "m1") is not None  # read-your-own-writes
        assert ids(store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 5)) == ["m1"]
        raise RuntimeError("abort")
    assert store.get_memory("u1", "m1") is None
    assert store.history("u1", "m1") == []
    assert store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 5) == []
    assert store.user_version("u1") == 0


def test_writers_of_one_user_take_turns_across_processes(opener: Callable[[], Storage]) -> None:
    first, second = opener(), opener()
    holding = threading.Event()
    seen: list[Any] = []

    def check_then_insert() -> None:
        holding.wait(10)
        started = time.monotonic()
        with second.write():
            same = second.find_by_fingerprint("u1", "fp-a")  # waits for the first writer's commit
            seen.append((same.id if same else None, time.monotonic() - started))

    waiter = threading.Thread(target=check_then_insert)
    waiter.start()
    with first.write("u1"):
        first.insert_memory(mem("a", "only once"), vec(1, 0, 0, 0))
        holding.set()
        time.sleep(0.4)
    waiter.join(10)
    assert len(seen) == 1
    assert seen[0][0] == "a"
    assert seen[0][1] >= 0.3


def test_another_process_sees_a_write_at_once(opener: Callable[[], Storage]) -> None:
    reader, writer = opener(), opener()
    writer.insert_memory(mem("a", "apple"), vec(1, 0, 0, 0))
    assert ids(reader.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 5)) == ["a"]  # cached now
    version = reader.user_version("u1")
    writer.insert_memory(mem("b", "banana"), vec(1, 0.01, 0, 0))
    writer.update_memory("u1", "a", expired_at=T0 + 1)
    assert reader.user_version("u1") == version + 2
    assert ids(reader.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 5)) == ["b"]
    assert ids(reader.text_search("u1", "banana", MemoryFilters(), 5)) == ["b"]


# -- vector index --------------------------------------------------------------------------------
def test_index_info_and_a_reindex_to_another_dimension(store: Storage) -> None:
    assert store.index_info().dim is None
    store.ensure_vector_index(4, "test/four")
    store.ensure_vector_index(8, "test/eight")  # an index exists: unchanged
    store.insert_memory(mem("a", "one", at=1), vec(1, 0, 0, 0))
    store.insert_memory(mem("b", "two", at=2, user="u2"), vec(0, 1, 0, 0))
    info = store.index_info()
    assert (info.dim, info.model, info.missing_embeddings, info.reindex_target) == (4, "test/four", 0, None)
    assert len(info.vector_indexes) == 1 and info.vector_indexes[0].startswith("memories.embedding[4]")
    store.begin_reindex(3, "test/three")
    assert (store.index_info().reindex_target, store.index_info().reindex_remaining) == ("test/three", 2)
    assert store.stale_embeddings(1) == [("u1", "a", "one")]
    store.set_embeddings([("u1", "a", vec(1, 0, 0))])
    store.begin_reindex(3, "test/three")  # the same reindex again: progress kept
    assert store.stale_embeddings(10) == [("u2", "b", "two")]
    assert store.finish_reindex() is False
    store.set_embeddings([("u2", "b", vec(0, 1, 0))])
    assert store.finish_reindex() is True
    info = store.index_info()
    assert (info.dim, info.model, info.reindex_target, info.reindex_remaining) == (3, "test/three", None, 0)
    assert store.stale_embeddings(10) == []
    assert ids(store.vector_search("u1", vec(1, 0, 0), MemoryFilters(), 5)) == ["a"]
    assert store.vector_search("u1", vec(1, 0, 0, 0), MemoryFilters(), 5) == []



# -- curation: entities put back as records, reconciliation runs and suggestions -------------------
def test_put_entities_makes_entities_exactly_so_and_keeps_their_rows(store: Storage) -> None:
    from cortadel_server.storage.base import StoredEntity

    store.link_entities("u1", "m1", [EntityMention("Ana", "person", "ana"), EntityMention("Annie", "person", "annie")])
    store.link_entities("u2", "x", [EntityMention("Ana", "person", "ana")])
    before = store.dump_entities("u1")
    assert before == [StoredEntity("ana", "person", ("ana",), ("m1",)), StoredEntity("annie", "person", ("annie",), ("m1",))]
    store.put_entities("u1", [StoredEntity("annie", "person", (), ()), StoredEntity("ana", "person", ("ana", "annie"), ("m1", "m2"))])
    assert store.dump_entities("u1") == [StoredEntity("ana", "person", ("ana", "annie"), ("m1", "m2")),
                                         StoredEntity("annie", "person", (), ())]
    assert store.entity_names("u1") == {"ana": "ana", "annie": "ana"}
    store.put_entities("u1", list(reversed(before)))
    assert store.dump_entities("u1") == before  # the same rows, in the order first seen
    assert store.dump_entities("u2") == [StoredEntity("ana", "person", ("ana",), ("x",))]


def test_runs_and_suggestions_round_trip_per_user(store: Storage) -> None:
    from cortadel_server.storage.base import ReconcileRun, Suggestion

    run = ReconcileRun("r1", "u1", "queued", ["entities"], 50, T0)
    store.save_reconcile_run(run)
    store.save_reconcile_run(ReconcileRun("r2", "u2", "queued", ["facts"], 10, T0 + 1))
    assert store.reconcile_runs("u1", active=True) == [run]
    run.status, run.finished_at, run.suggested = "completed", T0 + 5, 2
    store.save_reconcile_run(run)
    assert store.reconcile_runs("u1", active=True) == []
    assert store.reconcile_runs("u1", run_id="r1") == [run]
    assert store.reconcile_runs("u1", run_id="r2") == []  # another user's run
    first = Suggestion("s1", "u1", "merge_entities", "k1", 0.85, {"source": "a", "target": "b"}, [{"rule": "r"}], T0)
    second = Suggestion("s2", "u1", "supersede", "k2", 0.93, {"stale": "m1", "by": "m2"}, [], T0 + 1, status="approved",
                        undo={"memory_id": "m1", "before": {"state": "active", "expired_at": None}})
    for s in (first, second, Suggestion("s3", "u2", "alias", "k1", 0.9, {}, [], T0)):
        store.save_suggestion(s)
    assert store.suggestions("u1") == ([second, first], 2)
    assert store.suggestions("u1", status="pending") == ([first], 1)
    assert store.suggestions("u1", keys=["k1"]) == ([first], 1)
    assert store.suggestions("u1", ids=["s3"]) == ([], 0)
    first.status, first.decided_by = "rejected", "hand"
    store.save_suggestion(first)
    assert store.suggestions("u1", ids=["s1"], limit=1) == ([first], 1)
    assert store.suggestions("u1", offset=1, limit=1) == ([first], 2)


def test_curation_rows_dump_and_load_per_user(opener: Callable[[], Storage]) -> None:
    from cortadel_server.storage.base import ReconcileRun, Suggestion

    source, target = opener(), opener()  # two handles on one database: load as another user, then compare
    source.insert_memory(mem("m1", "Ana is my sister."), vec(1, 0, 0))
    source.insert_memory(mem("m2", "Ana lives in Porto.", at=1), vec(0, 1, 0))
    source.insert_memory(mem("x", "Bob's memory.", user="u2"), vec(0, 0, 1))
    runs = [ReconcileRun("r2", "u1", "completed", ["facts"], 10, T0, T0 + 1, T0 + 2, None, 1, 1),
            ReconcileRun("r1", "u1", "failed", ["entities"], 50, T0, T0 + 1, T0 + 3, "boom", 0, 0)]
    applied = Suggestion("s1", "u1", "merge_entities", "k1", 0.85, {"source": "a", "target": "b"}, [{"rule": "r", "score": 0.5}],
                         T0 + 4, "approved", "r2", T0 + 5, "auto", {"target": "b", "added_aliases": ["a"], "added_links": []})
    undone = Suggestion("s0", "u1", "alias", "k0", 0.9, {}, [], T0 + 4, "rejected", None, T0 + 5, "hand", {"x": 1}, T0 + 6)
    for run in (*runs, ReconcileRun("r3", "u2", "queued", ["facts"], 10, T0)):
        source.save_reconcile_run(run)
    for suggestion in (applied, undone, Suggestion("s9", "u2", "alias", "k0", 0.9, {}, [], T0)):
        source.save_suggestion(suggestion)
    source.record_recalls("u1", ["m2", "m1"], T0 + 7)
    source.record_recalls("u2", ["x"], T0 + 8)

    assert source.dump_reconcile_runs("u1") == [runs[1], runs[0]]  # oldest first, ties by id
    assert source.dump_suggestions("u1") == [undone, applied]
    assert source.dump_recalls("u1") == [("m1", T0 + 7), ("m2", T0 + 7)]
    counts = source.user_row_counts("u1")
    assert (counts["reconcile_runs"], counts["suggestions"], counts["recalls"]) == (2, 2, 2)

    # Loaded for another user id (ids are unique per database on SQLite): u3 gets exactly u1's rows.
    moved_runs = [ReconcileRun(**{**vars(r), "id": "c" + r.id, "user_id": "u3"}) for r in runs]
    moved = [Suggestion(**{**vars(s), "id": "c" + s.id, "user_id": "u3"}) for s in (undone, applied)]
    with target.write("u3"):
        target.load_reconcile_runs("u3", moved_runs)
        target.load_suggestions("u3", moved)
        target.load_recalls("u3", source.dump_recalls("u1"))
    assert target.dump_reconcile_runs("u3") == [moved_runs[1], moved_runs[0]]
    assert target.dump_suggestions("u3") == moved
    assert target.dump_recalls("u3") == [("m1", T0 + 7), ("m2", T0 + 7)]
    assert target.suggestions("u3", status="approved") == ([moved[1]], 1)
    assert target.transfer_users() == ["u1", "u2", "u3"]
    assert source.dump_recalls("u2") == [("x", T0 + 8)]  # untouched
    with pytest.raises(ValueError, match="Suggestion s1 belongs to 'u1', not 'u4'"), target.write("u4"):
        target.load_suggestions("u4", [applied])
    assert target.dump_suggestions("u4") == []
