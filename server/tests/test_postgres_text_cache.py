"""The PostgreSQL full-text and session arms ranked in process (storage/pg_lexemes.py) give what
ranked_sql gives in SQL: the same memories (sessions), in the same order, with the same scores bit
for bit, before and after every kind of write, from this process or from another one on the same
database."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from cortadel_server.storage.base import MemoryFilters, MemoryRecord, ScoredId
from cortadel_server.storage.pg_lexemes import postings
from cortadel_server.storage.postgres import PostgresStorage, ranked_statement
from cortadel_server.storage.search_terms import CONTEXT_WEIGHT
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
NAMES = ["Ana", "Bob", "Caroline", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
PLACES = ["Lisbon", "Berlin", "Paris", "Tokyo", "Porto", "Madrid", "Oslo", "Vienna"]
THINGS = ["coffee", "tea", "pottery", "hiking", "chess", "guitar", "painting", "cycling", "yoga", "sushi"]
TEMPLATES = [
    "{n} loves {t} in {p}.", "{n} moved to {p} last year and enjoys {t}.", "I met {n} in {p}; we talked about {t} for hours.",
    "My friend {n} tried {t} and {t2}, {t} again.", "{n} visited {p} with {n2} to go {t}.", "{n} said {t} is the best thing about {p}.",
    # words of two lexemes, phrases to to_tsquery: matched by PostgreSQL even when ranked in process
    "{n}'s friend {n2} loves {t}.", "I saw {n}'s {t} in {p}; {n2}'s {t2} too, and {n}'s again.", "{n} s {t} is not {n}'s.",
]
QUERIES = [
    "coffee", "Where does Ana live?", "tea in Lisbon", "Who likes chess and guitar?", "Grace Hiro Porto", "pottery",
    "Elena moved to Berlin last year and enjoys yoga.",  # a sentence, as the dedup lookup asks
    "What did we talk about for hours?", "sushi sushi Tokyo",
    "Caroline's guitar", "Ana's", "Who is Grace's friend in Oslo?", "Bob's Bob's coffee",  # words of two lexemes
    "nothing matches this",
]
USERS = ("u1", "u2")


def sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(n=rng.choice(NAMES), n2=rng.choice(NAMES), t=rng.choice(THINGS),
                                        t2=rng.choice(THINGS), p=rng.choice(PLACES))


@pytest.fixture()
def url() -> str:
    return scratch_database("textcache")


@pytest.fixture()
def store(url: str) -> Iterator[PostgresStorage]:
    opened = PostgresStorage(url, max_connections=2, text_in_process_from=0)  # these users hold a few hundred rows
    yield opened
    opened.close()


def add(store: PostgresStorage, rng: random.Random, user: str, memory_id: str, session: str | None, text: str | None = None) -> None:
    record = MemoryRecord(id=memory_id, user_id=user, text=text or sentence(rng), created_at=T0 + rng.random() * 1e6,
                          fingerprint=f"fp-{memory_id}", session_id=session)
    store.insert_memory(record, np.ones(4, dtype=np.float32) / 2)


def ranked_in_sql(url: str, table: str, key: str, user: str, query: str, where: str, params: list[object], limit: int,
                  weights: list[float]) -> list[ScoredId]:
    """What ranked_sql gives, run directly."""
    statement = ranked_statement(table, key, user, query, where, params, limit, weights)
    if statement is None:
        return []
    with psycopg.connect(url) as conn:
        return [ScoredId(found, float(score)) for found, score in conn.execute(*statement).fetchall()]


def in_sql(url: str, user: str, query: str, filters_sql: str, params: list[object], limit: int, context_weight: float) -> list[ScoredId]:
    """The memories ranked_sql gives."""
    return ranked_in_sql(url, "memories", "id", user, query, filters_sql, params, limit, [0.0, 0.0, context_weight, 1.0])


CURRENT = "d.user_id = %s AND d.expired_at IS NULL AND d.invalid_at IS NULL"


def assert_same_as_sql(store: PostgresStorage, url: str, user: str) -> None:
    checked = 0
    for query in QUERIES:
        for context_weight in (0.3, 0.0, 1.0):
            for limit in (5, 1000):
                got = store.text_search(user, query, MemoryFilters(), limit, context_weight=context_weight)
                assert got == in_sql(url, user, query, CURRENT, [user], limit, context_weight), (query, context_weight, limit)
                checked += len(got)
        narrowed = store.text_search(user, query, MemoryFilters(session_id="s1"), 10)
        assert narrowed == in_sql(url, user, query, CURRENT + " AND d.session_id = %s", [user, "s1"], 10, 0.3), query
        everything = store.text_search(user, query, MemoryFilters(include_superseded=True), 10)
        assert everything == in_sql(url, user, query, "d.user_id = %s", [user], 10, 0.3), query
    assert checked > 100  # the queries found rows: the comparison compared something


def test_in_process_ranking_equals_sql_through_writes(store: PostgresStorage, url: str) -> None:
    rng = random.Random(3)
    for i in range(120):
        for user in USERS:
            add(store, rng, user, f"m{i}", f"s{i % 4}" if i % 3 else None)
    assert_same_as_sql(store, url, "u1")
    # cached now; rows added, expired, rewritten, deleted through this store
    for i in range(120, 140):
        add(store, rng, "u1", f"m{i}", "s1")
    store.update_memory("u1", "m5", expired_at=T0 + 2e6)
    store.update_memory("u1", "m7", invalid_at=T0 + 2e6)
    assert_same_as_sql(store, url, "u1")
    store.update_memory("u1", "m8", text="Farid loves coffee and coffee in Oslo.")
    store.delete_memories("u1", ["m9", "m10", "m130"])
    assert_same_as_sql(store, url, "u1")
    # a write that rolls back leaves nothing behind in the cache, though searched inside it
    with pytest.raises(RuntimeError), store.write("u1"):
        add(store, rng, "u1", "m-rolled-back", "s1", text="Zanzibar, always Zanzibar.")
        assert store.text_search("u1", "Zanzibar", MemoryFilters(), 10)[0].id == "m-rolled-back"
        raise RuntimeError("roll back")
    assert store.text_search("u1", "Zanzibar", MemoryFilters(), 10) == []
    assert_same_as_sql(store, url, "u1")


def test_a_write_from_another_process_is_seen_at_once(store: PostgresStorage, url: str) -> None:
    rng = random.Random(5)
    for i in range(60):
        add(store, rng, "u1", f"m{i}", "s1")
    before = store.text_search("u1", "Zanzibar coffee", MemoryFilters(), 100)
    other = PostgresStorage(url, max_connections=1, text_in_process_from=0)
    try:
        other.insert_memory(MemoryRecord(id="z1", user_id="u1", text="Ana sails to Zanzibar for coffee.", created_at=T0 + 5e6,
                                         fingerprint="fp-z1"), np.ones(4, dtype=np.float32) / 2)
        other.update_memory("u1", "m3", expired_at=T0 + 5e6)
    finally:
        other.close()
    after = store.text_search("u1", "Zanzibar coffee", MemoryFilters(), 100)
    assert after[0].id == "z1" and "z1" not in {hit.id for hit in before}
    assert "m3" not in {hit.id for hit in after}
    assert after == in_sql(url, "u1", "Zanzibar coffee", CURRENT, ["u1"], 100, 0.3)
    assert_same_as_sql(store, url, "u1")


def test_the_arm_answers_from_the_cache_at_the_users_version(store: PostgresStorage, url: str) -> None:
    rng = random.Random(7)
    for i in range(40):
        add(store, rng, "u1", f"m{i}", None)
    add(store, rng, "u1", "quiet", None, text="Nothing about Zanzibar here.")
    assert [hit.id for hit in store.text_search("u1", "Zanzibar", MemoryFilters(), 10)] == ["quiet"]
    with psycopg.connect(url, autocommit=True) as conn:  # behind the backend's back: the version stays
        conn.execute("UPDATE memories SET text = 'Nothing about islands here.', changed_version = "
                     "(SELECT version + 1 FROM user_versions WHERE user_id = 'u1') WHERE user_id = 'u1' AND id = 'quiet'")
        assert [hit.id for hit in store.text_search("u1", "Zanzibar", MemoryFilters(), 10)] == ["quiet"]  # the cached rows
        conn.execute("UPDATE user_versions SET version = version + 1 WHERE user_id = 'u1'")  # as every write does
    assert store.text_search("u1", "Zanzibar", MemoryFilters(), 10) == []
    assert [hit.id for hit in store.text_search("u1", "islands", MemoryFilters(), 10)] == ["quiet"]
    # a word of two lexemes is matched by PostgreSQL, which reads the rows themselves
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET text = 'Zoe''s guitar is here.' WHERE user_id = 'u1' AND id = 'quiet'")
    assert [hit.id for hit in store.text_search("u1", "Zoe's", MemoryFilters(), 10)] == ["quiet"]


def test_search_vectors_are_read_from_their_text_form_as_postgresql_reads_them(url: str) -> None:
    """postings() parses a tsvector's text form: quoted lexemes (' and \\ doubled), positions with
    their weight labels (none for D), lexemes without positions."""
    literal = "'it''s':1A,3B 'back\\\\slash':2,7C 'bare' 'plain':4"
    with psycopg.connect(url) as conn:
        text, rows = conn.execute(
            "SELECT v::text, (SELECT array_agg(array[u.lexeme, coalesce(array_to_string(u.weights, ''), '')]) FROM unnest(v) u) "
            "FROM (SELECT %s::tsvector AS v) x", [literal]).fetchone()  # type: ignore[misc]
    assert [lexeme for lexeme, _ in rows] == ["back\\slash", "bare", "it's", "plain"]
    assert postings(text) == [("back\\slash", "DC"), ("bare", "D"), ("it's", "AB"), ("plain", "D")]
    assert [lexeme for lexeme, _ in postings(text)] == [lexeme for lexeme, _ in rows]


def test_a_user_of_few_memories_is_ranked_in_sql(url: str) -> None:
    """Below TEXT_IN_PROCESS_FROM memories a search's lookups are SQL's: nothing is loaded, so the
    rows themselves are read (the change made behind the backend's back is seen)."""
    store = PostgresStorage(url, max_connections=1)
    try:
        rng = random.Random(9)
        for i in range(30):
            add(store, rng, "u1", f"m{i}", None)
        add(store, rng, "u1", "quiet", None, text="Nothing about Zanzibar here.")
        assert [hit.id for hit in store.text_search("u1", "Zanzibar", MemoryFilters(), 10)] == ["quiet"]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE memories SET text = 'Nothing about islands here.' WHERE user_id = 'u1' AND id = 'quiet'")
        assert store.text_search("u1", "Zanzibar", MemoryFilters(), 10) == []
    finally:
        store.close()


def test_a_write_ranks_the_lookups_of_a_user_of_few_memories_in_process(url: str) -> None:
    """A write looks up each of its facts: it loads the user's rows once, whatever their number,
    and keeps them current; a search then ranks from them too, with SQL's answers."""
    store = PostgresStorage(url, max_connections=1)
    try:
        rng = random.Random(11)
        for i in range(40):
            add(store, rng, "u1", f"m{i}", "s1")
        reads = store.cache_reads["text"]
        expected = [in_sql(url, "u1", query, CURRENT, ["u1"], 10, CONTEXT_WEIGHT) for query in QUERIES]
        assert [store.text_search("u1", query, MemoryFilters(), 10) for query in QUERIES] == expected
        assert reads.reloads == 0  # a search: SQL's
        with store.write("u1"):
            in_write = [store.text_search("u1", query, MemoryFilters(), 10) for query in QUERIES]
            add(store, rng, "u1", "m40", "s1", text="Caroline's guitar lessons in Oslo.")
            added = store.text_search("u1", "Caroline's guitar", MemoryFilters(), 10)
        assert reads.reloads == 1  # loaded once, then kept current by the write
        assert in_write == expected
        assert added == in_sql(url, "u1", "Caroline's guitar", CURRENT, ["u1"], 10, CONTEXT_WEIGHT)
        assert added[0].id == "m40"
        assert store.text_search("u1", "guitar Oslo", MemoryFilters(), 10) == in_sql(
            url, "u1", "guitar Oslo", CURRENT, ["u1"], 10, CONTEXT_WEIGHT
        )
        assert reads.reloads == 1
    finally:
        store.close()


# -- the session arm: the documents catch up by those changed since (changed_version) ---------------
MAX_VERSION = 2**63 - 1


def sessions_in_sql(url: str, user: str, query: str, limit: int) -> list[ScoredId]:
    """The session documents ranked_sql gives (one unlabelled column)."""
    return ranked_in_sql(url, "session_docs", "session_id", user, query, "d.user_id = %s", [user], limit, [1.0, 0.0, 0.0, 0.0])


def assert_sessions_same_as_sql(store: PostgresStorage, url: str, user: str) -> int:
    """Every query's sessions as SQL ranks them; how many hits were compared."""
    checked = 0
    for query in QUERIES:
        for limit in (3, 1000):
            got = store.session_search(user, query, limit)
            assert got == sessions_in_sql(url, user, query, limit), (query, limit)
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
            add(store, rng, user, f"m{i}", f"s{i % 6}")
    reads = store.cache_reads["sessions"]
    assert assert_sessions_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 6, 0)  # the six documents, read once

    # appended to (two documents), a new session, a text rewritten (its document rebuilt),
    # a session emptied (its document deleted): each caught up by the documents it changed
    add(store, rng, "u1", "m150", "s1", text="Ana sails to Zanzibar for coffee.")
    add(store, rng, "u1", "m151", "s2", text="Hiro's chess club meets in Tokyo.")
    assert store.session_search("u1", "Zanzibar", 10) == sessions_in_sql(url, "u1", "Zanzibar", 10)
    assert store.session_search("u1", "Zanzibar", 10)[0].id == "s1"
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 8, 1)
    add(store, rng, "u1", "m152", "s-new", text="Grace teaches pottery in Zanzibar.")
    store.update_memory("u1", "m3", text="Dmitri paints Zanzibar at dawn.")
    assert assert_sessions_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.rows, reads.catch_ups) == (1, 10, 2)  # s-new and s3
    store.delete_memories("u1", [f"m{i}" for i in range(150) if i % 6 == 5])
    # caught up before the delete returned, by the documents it changed: s5's went
    entry = store._session_lexemes.current("u1", store.user_version("u1"))
    assert entry is not None and "s5" not in entry.index and (reads.reloads, reads.catch_ups) == (1, 3)
    zanzibar = store.session_search("u1", "Zanzibar", 10)
    assert zanzibar == sessions_in_sql(url, "u1", "Zanzibar", 10) and {hit.id for hit in zanzibar} == {"s-new", "s3", "s1"}
    assert "s5" not in {hit.id for hit in store.session_search("u1", "coffee tea chess guitar", 1000)}
    assert assert_sessions_same_as_sql(store, url, "u1") > 50
    assert (reads.reloads, reads.catch_ups) == (1, 3)  # nothing read since
    assert assert_sessions_same_as_sql(store, url, "u2") > 50  # the other user's documents, untouched
    assert unstamped(url) == 0


def test_a_session_search_inside_a_write_sees_its_appends_and_a_rollback_leaves_nothing(store: PostgresStorage, url: str) -> None:
    rng = random.Random(5)
    for i in range(60):
        add(store, rng, "u1", f"m{i}", f"s{i % 3}")
    assert store.session_search("u1", "Zanzibar", 10) == []
    with pytest.raises(RuntimeError), store.write("u1"):
        add(store, rng, "u1", "rolled-back", "s1", text="Zanzibar, always Zanzibar.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s1"]
        raise RuntimeError("roll back")
    assert store.session_search("u1", "Zanzibar", 10) == []
    with store.write("u1"):
        add(store, rng, "u1", "kept", "s2", text="Zanzibar in June.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s2"]
        add(store, rng, "u1", "kept-too", "s2", text="Zanzibar again in July.")  # the same document, the same version
    assert store.session_search("u1", "Zanzibar July", 10) == sessions_in_sql(url, "u1", "Zanzibar July", 10)
    assert store.session_search("u1", "July", 10)[0].id == "s2"
    assert assert_sessions_same_as_sql(store, url, "u1") > 20


def test_a_session_written_by_another_process_is_seen_at_once(store: PostgresStorage, url: str) -> None:
    rng = random.Random(7)
    for i in range(60):
        add(store, rng, "u1", f"m{i}", f"s{i % 3}")
    assert assert_sessions_same_as_sql(store, url, "u1") > 20
    other = PostgresStorage(url, max_connections=1, text_in_process_from=0)
    try:
        add(other, rng, "u1", "z1", "s0", text="Ana sails to Zanzibar for coffee.")
        add(other, rng, "u1", "z2", "s-other", text="Zanzibar's harbour at night.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s-other", "s0"]
        other.delete_memories("u1", [f"m{i}" for i in range(60) if i % 3 == 1])  # s1 emptied: its document goes
        other.load_sessions("u1", [("s-loaded", "Imported: Caroline's guitar in Zanzibar.")])
    finally:
        other.close()
    zanzibar = store.session_search("u1", "Zanzibar", 10)
    assert zanzibar == sessions_in_sql(url, "u1", "Zanzibar", 10) and {hit.id for hit in zanzibar} == {"s-loaded", "s-other", "s0"}
    assert "s1" not in {hit.id for hit in store.session_search("u1", "coffee tea chess guitar yoga", 1000)}
    assert assert_sessions_same_as_sql(store, url, "u1") > 20
    assert store.cache_reads["sessions"].reloads == 1
    assert store.cache_reads["sessions"].rowids > 0  # a document went away: the rowids of those left told which
    assert unstamped(url) == 0


def test_a_user_of_few_memories_has_sessions_ranked_in_sql(url: str) -> None:
    """Below TEXT_IN_PROCESS_FROM memories the session arm is SQL's: nothing is loaded, and a
    change made behind the backend's back is seen at once."""
    store = PostgresStorage(url, max_connections=1)
    try:
        rng = random.Random(9)
        for i in range(30):
            add(store, rng, "u1", f"m{i}", "s1")
        add(store, rng, "u1", "quiet", "s2", text="Nothing about Zanzibar here.")
        assert [hit.id for hit in store.session_search("u1", "Zanzibar", 10)] == ["s2"]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE session_docs SET text = 'islands' WHERE user_id = 'u1' AND session_id = 's2'")
        assert store.session_search("u1", "Zanzibar", 10) == []
        assert store.cache_reads["sessions"].reloads == 0
    finally:
        store.close()
