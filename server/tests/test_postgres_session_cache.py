"""PostgreSQL's session arm ranked in process (storage/pg_lexemes.py over the session documents)
gives what ranked_sql gives in SQL: the same sessions, in the same order, with the same scores bit
for bit. The cached documents catch up by the documents changed since (``changed_version``), after
writes of this process or of another one on the same database."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from cortadel_server.storage.base import MemoryRecord, ScoredId
from cortadel_server.storage.postgres import PostgresStorage, ranked_statement
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
NAMES = ["Ana", "Bob", "Caroline", "Dmitri", "Elena", "Farid", "Grace", "Hiro"]
PLACES = ["Lisbon", "Berlin", "Paris", "Tokyo", "Porto", "Oslo"]
THINGS = ["coffee", "tea", "pottery", "hiking", "chess", "guitar", "painting", "yoga"]
TEMPLATES = [
    "{n} loves {t} in {p}.", "{n} moved to {p} last year and enjoys {t}.", "I met {n} in {p}; we talked about {t}.",
    "{n}'s friend {n2} loves {t}.", "I saw {n}'s {t} in {p}; {n2}'s {t2} too.",  # words of two lexemes
]
QUERIES = [
    "coffee", "Where does Ana live?", "tea in Lisbon", "Who likes chess and guitar?", "Grace Hiro Porto",
    "Elena moved to Berlin last year and enjoys yoga.", "Caroline's guitar", "Who is Grace's friend in Oslo?",
    "Zanzibar", "nothing matches this",
]
#: ts_rank_cd's weights for the session documents (one unlabelled column)
UNWEIGHTED = [1.0, 0.0, 0.0, 0.0]
MAX_VERSION = 2**63 - 1


def sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(n=rng.choice(NAMES), n2=rng.choice(NAMES), t=rng.choice(THINGS),
                                        t2=rng.choice(THINGS), p=rng.choice(PLACES))


@pytest.fixture()
def url() -> str:
    return scratch_database("sessioncache")


@pytest.fixture()
def store(url: str) -> Iterator[PostgresStorage]:
    opened = PostgresStorage(url, max_connections=2, text_in_process_from=0)  # these users hold a few hundred rows
    yield opened
    opened.close()


def add(store: PostgresStorage, user: str, memory_id: str, session: str, text: str) -> None:
    record = MemoryRecord(id=memory_id, user_id=user, text=text, created_at=T0 + len(memory_id), fingerprint=f"fp-{memory_id}",
                          session_id=session)
    store.insert_memory(record, np.ones(4, dtype=np.float32) / 2)


def in_sql(url: str, user: str, query: str, limit: int) -> list[ScoredId]:
    """What ranked_sql gives over the session documents, run directly."""
    statement = ranked_statement("session_docs", "session_id", user, query, "d.user_id = %s", [user], limit, UNWEIGHTED)
    if statement is None:
        return []
    with psycopg.connect(url) as conn:
        return [ScoredId(found, float(score)) for found, score in conn.execute(*statement).fetchall()]


def assert_same_as_sql(store: PostgresStorage, url: str, user: str) -> int:
    """Every query's sessions as SQL ranks them; how many hits were compared."""
    checked = 0
    for query in QUERIES:
        for limit in (3, 1000):
            got = store.session_search(user, query, limit)
            assert got == in_sql(url, user, query, limit), (query, limit)
            checked += len(got)
    return checked


def unstamped(url: str) -> int:
    """Session documents no write of the backend stamped: every catch-up would read them again."""
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM session_docs WHERE changed_version = %s", [MAX_VERSION]).fetchone()[0])  # type: ignore[index]


def test_session_ranking_in_process_equals_sql_through_writes(store: PostgresStorage, url: str) -> None:
    rng = random.Random(3)
    for i in range(150):
        for user in ("u1", "u2"):
            add(store, user, f"m{i}", f"s{i % 6}", sentence(rng))
    reads = store.cache_reads["sessions"]
    assert assert_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 6, 0)  # the six documents, read once

    # appended to (two documents), a new session, a text rewritten (its document rebuilt),
    # a session emptied (its document deleted): each caught up by the documents it changed
    add(store, "u1", "m150", "s1", "Ana sails to Zanzibar for coffee.")
    add(store, "u1", "m151", "s2", "Hiro's chess club meets in Tokyo.")
    assert store.session_search("u1", "Zanzibar", 10) == in_sql(url, "u1", "Zanzibar", 10)
    assert store.session_search("u1", "Zanzibar", 10)[0].id == "s1"
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 8, 1)
    add(store, "u1", "m152", "s-new", "Grace teaches pottery in Zanzibar.")
    store.update_memory("u1", "m3", text="Dmitri paints Zanzibar at dawn.")
    assert assert_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 10, 2)  # s-new and s3
    store.delete_memories("u1", [f"m{i}" for i in range(150) if i % 6 == 5])
    zanzibar = store.session_search("u1", "Zanzibar", 10)
    assert zanzibar == in_sql(url, "u1", "Zanzibar", 10) and {hit.id for hit in zanzibar} == {"s-new", "s3", "s1"}
    assert "s5" not in {hit.id for hit in store.session_search("u1", "coffee tea chess guitar", 1000)}
    assert assert_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.catch_ups) == (1, 3)
    assert reads.rowids > 0  # a document went away: the rowids of those left told which
    assert assert_same_as_sql(store, url, "u2") > 50  # the other user's documents, untouched
    assert unstamped(url) == 0


def test_a_search_inside_a_write_sees_its_appends_and_a_rollback_leaves_nothing(store: PostgresStorage, url: str) -> None:
    rng = random.Random(5)
    for i in range(60):
        add(store, "u1", f"m{i}", f"s{i % 3}", sentence(rng))
    assert store.session_search("u1", "Zanzibar", 10) == []
    with pytest.raises(RuntimeError), store.write("u1"):
        add(store, "u1", "rolled-back", "s1", "Zanzibar, always Zanzibar.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s1"]
        raise RuntimeError("roll back")
    assert store.session_search("u1", "Zanzibar", 10) == []
    with store.write("u1"):
        add(store, "u1", "kept", "s2", "Zanzibar in June.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s2"]
        add(store, "u1", "kept-too", "s2", "Zanzibar again in July.")  # the same document, the same version
    assert store.session_search("u1", "Zanzibar July", 10) == in_sql(url, "u1", "Zanzibar July", 10)
    assert store.session_search("u1", "July", 10)[0].id == "s2"
    assert assert_same_as_sql(store, url, "u1") > 20


def test_a_write_from_another_process_is_seen_at_once(store: PostgresStorage, url: str) -> None:
    rng = random.Random(7)
    for i in range(60):
        add(store, "u1", f"m{i}", f"s{i % 3}", sentence(rng))
    assert assert_same_as_sql(store, url, "u1") > 20
    other = PostgresStorage(url, max_connections=1, text_in_process_from=0)
    try:
        add(other, "u1", "z1", "s0", "Ana sails to Zanzibar for coffee.")
        add(other, "u1", "z2", "s-other", "Zanzibar's harbour at night.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s-other", "s0"]
        other.delete_memories("u1", [f"m{i}" for i in range(60) if i % 3 == 1])  # s1 emptied: its document goes
        other.load_sessions("u1", [("s-loaded", "Imported: Caroline's guitar in Zanzibar.")])
    finally:
        other.close()
    zanzibar = store.session_search("u1", "Zanzibar", 10)
    assert zanzibar == in_sql(url, "u1", "Zanzibar", 10) and {hit.id for hit in zanzibar} == {"s-loaded", "s-other", "s0"}
    assert "s1" not in {hit.id for hit in store.session_search("u1", "coffee tea chess guitar yoga", 1000)}
    assert assert_same_as_sql(store, url, "u1") > 20
    assert store.cache_reads["sessions"].reloads == 1
    assert unstamped(url) == 0


def test_a_user_of_few_memories_has_sessions_ranked_in_sql(url: str) -> None:
    """Below TEXT_IN_PROCESS_FROM memories the session arm is SQL's: nothing is loaded, and a
    change made behind the backend's back is seen at once."""
    store = PostgresStorage(url, max_connections=1)
    try:
        rng = random.Random(9)
        for i in range(30):
            add(store, "u1", f"m{i}", "s1", sentence(rng))
        add(store, "u1", "quiet", "s2", "Nothing about Zanzibar here.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s2"]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE session_docs SET text = 'islands' WHERE user_id = 'u1' AND session_id = 's2'")
        assert store.session_search("u1", "Zanzibar", 10) == []
        assert store.cache_reads["sessions"].reloads == 0
    finally:
        store.close()
