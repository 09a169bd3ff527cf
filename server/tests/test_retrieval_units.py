"""Retrieval pieces tested alone: fusion, token budgets, the FTS query builder, the SQLite arms."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import apsw
import numpy as np
import pytest

from cortadel_server.errors import StorageError
from cortadel_server.retrieval.fusion import reciprocal_rank_fusion, trim_to_token_budget
from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage, user_key
from cortadel_server.storage.sqlite_terms import UserTerms
from cortadel_server.text import fingerprint


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion({"text": ["a", "b"], "vector": ["b", "c"]}, k=60)
    scores = dict(fused)
    assert [mid for mid, _ in fused] == ["b", "a", "c"]
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    weighted = dict(reciprocal_rank_fusion({"text": ["a"], "vector": ["c"]}, {"text": 2.0, "vector": 0.5}, k=60))
    assert weighted["a"] == pytest.approx(2 / 61) and weighted["c"] == pytest.approx(0.5 / 61)
    assert reciprocal_rank_fusion({"text": ["a"]}, {"text": 0.0}) == []


def test_token_budget_keeps_the_head() -> None:
    texts = ["x" * 40, "y" * 40, "z" * 40]  # 10 tokens each
    assert trim_to_token_budget(texts, 25) == 2
    assert trim_to_token_budget(texts, 30) == 3
    assert trim_to_token_budget(texts, 5) == 0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Can we cut a release this Friday?", '"uKcut" OR "uKreleas" OR "uKfridai"'),
        ('NEAR("x" AND y) OR -z*', '"uKnear" OR "uKx" OR "uKy" OR "uKz"'),
        ("the a of", '"uKthe" OR "uKa" OR "uKof"'),
        ("Sam's café, running runs", '"uKsam uKs" OR "uKcafe" OR "uKrun" OR "uKrun"'),
        ("???", None),
    ],
)
def test_fts_query_quotes_the_users_stems_and_drops_stopwords(query: str, expected: str | None) -> None:
    assert UserTerms(apsw.Connection(":memory:")).match("uK", query) == expected


def _record(user: str, text: str, created: float, **fields: object) -> MemoryRecord:
    return MemoryRecord(id=str(uuid.uuid4()), user_id=user, text=text, created_at=created,
                        fingerprint=fingerprint(text), **fields)  # type: ignore[arg-type]


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStorage:
    storage = SqliteStorage(tmp_path / "unit.db")
    yield storage
    storage.close()


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_arms_are_user_scoped_and_current_only(store: SqliteStorage) -> None:
    now = time.time()
    mine = _record("alice", "Alice rides a red bicycle", now)
    old = _record("alice", "Alice rode a blue bicycle", now - 10, invalid_at=now - 1, expired_at=now - 1, state="superseded")
    theirs = _record("bob", "Bob rides a red bicycle", now)
    for rec, vec in ((mine, [1, 0, 0]), (old, [0.9, 0.1, 0]), (theirs, [1, 0, 0])):
        store.insert_memory(rec, unit(vec))
    assert [h.id for h in store.text_search("alice", "red bicycle", MemoryFilters(), 10)] == [mine.id]
    assert [h.id for h in store.vector_search("alice", unit([1, 0, 0]), MemoryFilters(), 10)] == [mine.id]
    history = MemoryFilters(include_superseded=True)
    assert {h.id for h in store.text_search("alice", "bicycle", history, 10)} == {mine.id, old.id}
    assert {h.id for h in store.vector_search("alice", unit([1, 0, 0]), history, 10)} == {mine.id, old.id}


def test_point_in_time_filters_on_both_axes(store: SqliteStorage) -> None:
    t1, t2 = 1_000_000.0, 2_000_000.0
    berlin = _record("u", "User lives in Berlin.", t1, valid_at=t1, invalid_at=t2 - 500, expired_at=t2, state="superseded")
    paris = _record("u", "User lives in Paris.", t2, valid_at=t2 - 500)
    for rec in (berlin, paris):
        store.insert_memory(rec, unit([1, 1, 0]))

    def listed(**kw: float) -> list[str]:
        return [m.text for m in store.list_memories("u", MemoryFilters(**kw), offset=0, limit=10)[0]]

    assert listed() == ["User lives in Paris."]
    assert listed(as_of=t1 + 10) == ["User lives in Berlin."]          # true then
    assert listed(as_of=t2 - 100) == ["User lives in Paris."]          # Paris valid from a bit before t2
    assert listed(known_at=t2 - 100) == ["User lives in Berlin."]      # what we believed before t2
    assert listed(known_at=t1 - 1) == []
    assert listed(include_superseded=True) == ["User lives in Paris.", "User lives in Berlin."]


def test_delete_purges_text_vector_history_and_entities(store: SqliteStorage) -> None:
    from cortadel_server.storage.base import EntityMention

    rec = _record("u", "Carol works at Initech.", time.time())
    store.insert_memory(rec, unit([0, 1, 0]))
    store.record_event("u", rec.id, "ADD", time.time(), {})
    store.link_entities("u", rec.id, [EntityMention("Initech", "org", "Initech")])
    assert store.entity_names("u") == {"initech": "Initech"}
    assert store.delete_memories("u", [rec.id, "missing"]) == 1
    assert store.get_memory("u", rec.id) is None
    assert store.text_search("u", "Initech", MemoryFilters(include_superseded=True), 10) == []
    assert store.vector_search("u", unit([0, 1, 0]), MemoryFilters(include_superseded=True), 10) == []
    assert store.history("u", rec.id) == []
    assert store.entity_names("u") == {}
    rows = store._rows("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (store._conn().terms.match(user_key("u"), "Initech"),))
    assert rows == [(0,)]


def test_write_transaction_rolls_back_as_a_whole(store: SqliteStorage) -> None:
    rec = _record("u", "Never stored.", time.time())
    with pytest.raises(RuntimeError), store.write():
        store.insert_memory(rec, unit([1, 0, 0]))
        raise RuntimeError("boom")
    assert store.get_memory("u", rec.id) is None


def test_a_write_interrupted_past_its_timeout_says_so_and_leaves_nothing_in_the_caches(tmp_path: Path) -> None:
    """SQLite rolls the transaction back itself when it interrupts a statement that changes rows; the
    write's own ROLLBACK then failed ("cannot rollback - no transaction is active"), hid the timeout
    and skipped dropping the write's rows from the caches: searches kept finding a memory never stored."""
    store = SqliteStorage(tmp_path / "interrupted.db", query_timeout=0.2)
    now = time.time()
    kept, lost = _record("u", "alpha", now), _record("u", "gamma", now)
    store.insert_memory(kept, unit([1, 0, 0]))
    probe = unit([1, 0.2, 0])
    with pytest.raises(StorageError, match=r"^query interrupted after 0.2 s$"), store.write():
        store.insert_memory(lost, unit([1, 0.1, 0]))
        store._exec("CREATE TEMP TABLE scratch(x)")
        store._exec("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s) INSERT INTO scratch SELECT i FROM s")
    assert store.get_memory("u", lost.id) is None
    assert [h.id for h in store.vector_search("u", probe, MemoryFilters(), 10)] == [kept.id]
    later = _record("u", "epsilon", now)
    store.insert_memory(later, unit([0, 1, 0]))  # the next write takes the version the lost one had
    assert [h.id for h in store.vector_search("u", probe, MemoryFilters(), 10)] == [kept.id, later.id]
    assert [h.id for h in store.text_search("u", "gamma", MemoryFilters(), 10)] == []
    store.close()


def test_jobs_survive_a_crash_between_claim_and_finish(tmp_path: Path) -> None:
    first = SqliteStorage(tmp_path / "jobs.db")
    first.enqueue_job("enrich", "u", None, {"n": 1})
    job = first.claim_job(time.time() + 1)
    assert job is not None and job.payload == {"n": 1} and job.attempts == 1
    assert first.claim_job(time.time() + 1) is None
    first.close()
    second = SqliteStorage(tmp_path / "jobs.db")
    assert second.requeue_running_jobs() == 1
    again = second.claim_job(time.time() + 1)
    assert again is not None and again.id == job.id and again.attempts == 2
    second.fail_job(again.id, "flaky", retry_at=time.time() + 3600)
    assert second.claim_job(time.time() + 1) is None
    assert second.claim_job(time.time() + 7200) is not None
    second.close()


def test_vector_cache_follows_writes_rollbacks_and_other_writers(tmp_path: Path) -> None:
    ours = SqliteStorage(tmp_path / "cache.db")
    theirs = SqliteStorage(tmp_path / "cache.db")  # another process on the same file, as `cortadel mcp` is
    now = time.time()
    a, b = _record("u", "alpha", now), _record("u", "beta", now)
    ours.insert_memory(a, unit([1, 0, 0]))
    probe = unit([1, 0.2, 0])

    def found(store: SqliteStorage) -> list[str]:
        return [h.id for h in store.vector_search("u", probe, MemoryFilters(), 10)]

    assert found(ours) == [a.id]                       # loads and caches
    ours.insert_memory(b, unit([0, 1, 0]))             # write-through append
    assert found(ours) == [a.id, b.id]
    ours.update_memory("u", a.id, expired_at=now, invalid_at=now, state="superseded")
    assert found(ours) == [b.id]                       # write-through: no longer current
    assert [h.id for h in ours.vector_search("u", probe, MemoryFilters(include_superseded=True), 10)] == [a.id, b.id]
    c = _record("u", "gamma", now)
    with pytest.raises(RuntimeError), ours.write():
        ours.insert_memory(c, unit([1, 0.1, 0]))
        assert found(ours)[0] == c.id                  # the writer sees its own uncommitted row
        raise RuntimeError("roll back")
    assert found(ours) == [b.id]                       # the rolled-back row left the cache too
    d = _record("u", "delta", now)
    theirs.insert_memory(d, unit([1, 0.2, 0]))         # a write our cache never saw
    assert found(ours) == [d.id, b.id]
    ours.delete_memories("u", [d.id])
    assert found(ours) == [b.id]
    assert found(theirs) == [b.id]
    ours.close()
    theirs.close()
