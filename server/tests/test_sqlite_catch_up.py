"""A process whose cached vectors and term index fell behind another process's writes on the same
SQLite file catches up by reading only the rows those writes changed (``changed_version``), and
then answers exactly what a process that loads the user afresh answers: the same hits, in the same
order, with the same scores, after inserts, supersedes and expiries, edits, new embeddings,
imports, a rolled-back write, deletions, an erasure and a vector of another dimension. Deletions
leave no trace in the rows: both read the rowids left and drop the rows gone; an edit's new terms
replace the row's old ones in place. What the changed rows cannot tell is read whole: a vector
given to a row in the middle, a vector of another dimension, a deleted rowid given to a new row.

Two storage objects on one file stand for two processes (A writes, B searches); each check
compares B with a third opened for the check alone and loaded whole. The last test runs
`cortadel serve --workers 2`: a search on the worker that did not take an add or a deletion
catches up, as /metrics counts."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from support.catch_up import (
    DIM,
    FILTERS,
    QUERIES,
    T0,
    USER,
    answers,
    record,
    search_from_an_older_snapshot,
    search_while_writing,
    sentence,
    unit,
    write_the_first_rows,
)
from test_metrics import scrape
from test_metrics_workers import cache_counts

from cortadel_server.errors import StaleSnapshot
from cortadel_server.storage.base import MemoryFilters, ScoredId, StoredMemory
from cortadel_server.storage.sqlite import CATCH_UP_INLINE_ROWS, SqliteStorage
from cortadel_server.testing import ServerProcess, connection_owners, database_for, worker_pids


@pytest.fixture()
def path(tmp_path: Path) -> Path:
    return tmp_path / "catch-up.db"


@pytest.fixture()
def processes(path: Path) -> Iterator[tuple[SqliteStorage, SqliteStorage]]:
    # index_after_searches=1: B's first text search asks for its term index
    a = SqliteStorage(path)
    b = SqliteStorage(path, index_after_searches=1)
    yield a, b
    a.close()
    b.close()


def fresh_answers(path: Path, probes: list[np.ndarray]) -> list[list[ScoredId]]:
    """What a process that loads the user whole answers (both indexes loaded before it searches)."""
    fresh = SqliteStorage(path)
    try:
        fresh._user_vectors(USER)
        fresh._term_index(USER)
        return answers(fresh, probes)
    finally:
        fresh.close()


def term_index_current(b: SqliteStorage) -> bool:
    return b._terms.current(USER, b.user_version(USER)) is not None


def changed_rows_read(b: SqliteStorage, path: Path, probes: list[np.ndarray]) -> tuple[int, int, int]:
    """B's answers equal a fresh process's, from its term index too; returns the rows B read to
    give them (vectors, text) and how many whole reads of the user it made (both caches together).

    A term index that only a whole read brings up to date is read by the loader thread while FTS5
    answers (the same answers); if the loader waits (it spaces its loads out), it is read here."""
    before = {name: (reads.rows, reads.reloads) for name, reads in b.cache_reads.items()}
    expected = fresh_answers(path, probes)
    assert answers(b, probes) == expected
    b._term_loader.submit(lambda: None).result()
    if not term_index_current(b):
        b._term_index(USER)
    assert term_index_current(b)
    read = {name: (reads.rows, reads.reloads) for name, reads in b.cache_reads.items()}
    assert answers(b, probes) == expected  # from the indexes as they are: nothing more read
    assert {name: (reads.rows, reads.reloads) for name, reads in b.cache_reads.items()} == read
    assert sum(map(len, expected)) > 100  # the searches found rows: the comparison compared something
    vectors, text = b.cache_reads["vectors"], b.cache_reads["text"]
    return (vectors.rows - before["vectors"][0], text.rows - before["text"][0],
            vectors.reloads - before["vectors"][1] + text.reloads - before["text"][1])


def test_a_process_behind_reads_only_the_changed_rows_and_answers_as_a_fresh_one(
    processes: tuple[SqliteStorage, SqliteStorage], path: Path
) -> None:
    a, b = processes
    rng = random.Random(11)
    probes = [unit(rng) for _ in range(4)]
    write_the_first_rows(a, rng)
    assert changed_rows_read(b, path, probes) == (151, 151, 2)  # B's first search: every row, once per cache

    # inserts through A
    for i in range(150, 155):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1", T0 + i), unit(rng))
    a.insert_memory(record("zanzibar", "Farid goes sailing to Zanzibar.", "s1", T0 + 200), probes[0])
    assert changed_rows_read(b, path, probes) == (6, 6, 0)

    # a supersede (the old fact expired, the new one added, one write) and an expiry
    with a.write(USER):
        a.update_memory(USER, "m3", expired_at=T0 + 300, superseded_by="m-new")
        a.insert_memory(record("m-new", "Caroline likes tea in Oslo now.", None, T0 + 300), unit(rng))
    a.update_memory(USER, "m8", invalid_at=T0 + 301)
    assert changed_rows_read(b, path, probes) == (3, 3, 0)

    # an edit of a session member: its text, and the context of the member written after it; both
    # catch up, the term index replacing the two rows' terms in place
    a.update_memory(USER, "m1", text="Grace took up pottery in Porto.")
    assert changed_rows_read(b, path, probes) == (2, 2, 0)
    a.update_memory(USER, "m2", text="Hiro plays chess in Tokyo.")  # no session: one row
    assert changed_rows_read(b, path, probes) == (1, 1, 0)

    # new embeddings (a reindex's batch), and B's own write in between: B follows its write, then catches up
    b.insert_memory(record("by-b", "Elena moved to Berlin for the yoga.", "s1", T0 + 400), probes[1])
    a.set_embeddings([(USER, "m10", probes[2]), (USER, "m11", probes[3])])
    assert changed_rows_read(b, path, probes) == (2, 2, 0)

    # an import of rows with and without vectors
    a.load_memories(USER, [
        StoredMemory(record("imported-1", "Bob likes sushi in Tokyo.", None, T0 + 500), "", unit(rng).tobytes(), 0),
        StoredMemory(record("imported-2", "Dmitri likes hiking in Oslo.", "s1", T0 + 501), "", None, 0),
    ])
    assert changed_rows_read(b, path, probes) == (2, 2, 0)
    a.set_embeddings([(USER, "imported-2", unit(rng))])  # embedded later, in the middle of the rows: vectors read whole
    assert changed_rows_read(b, path, probes) == (1 + 161, 1, 1)

    # a write that rolls back moves nothing: B reads no row
    with pytest.raises(RuntimeError), a.write(USER):
        a.insert_memory(record("rolled-back", "Zanzibar, always Zanzibar.", "s1", T0 + 600), probes[0])
        a.update_memory(USER, "m5", expired_at=T0 + 600)
        raise RuntimeError("roll back")
    assert changed_rows_read(b, path, probes) == (0, 0, 0)

    # deletions leave no trace in the rows: B notices by the count; both caches drop the rows whose
    # rowids are gone (the 159 rowids read by each)
    rowids = b.cache_reads["vectors"].rowids, b.cache_reads["text"].rowids
    removed = b._terms.get(USER).removed  # type: ignore[union-attr]
    a.delete_memories(USER, ["m4", "m20"])
    assert changed_rows_read(b, path, probes) == (0, 0, 0)
    assert (b.cache_reads["vectors"].rowids - rowids[0], b.cache_reads["text"].rowids - rowids[1]) == (159, 159)
    assert b._terms.get(USER).removed == removed + 2  # type: ignore[union-attr]

    # the file's last row deleted and its rowid given to a new row: the count is the same, the
    # rowid is not new: read whole
    (last,) = a._rows("SELECT max(rowid) FROM memories")[0]
    a.delete_memories(USER, ["imported-2"])
    a.insert_memory(record("reused", "Grace likes chess in Oslo.", None, T0 + 650), unit(rng))
    assert a._rows("SELECT rowid FROM memories WHERE id = 'reused'")[0][0] == last
    assert changed_rows_read(b, path, probes) == (1 + 159, 1 + 159, 2)

    # an erased user: B finds nothing, and keeps nothing (so written again, the user is read whole, once)
    a.delete_user(USER)
    assert answers(b, probes) == [[]] * (len(probes) + len(QUERIES)) * len(FILTERS)
    for i in range(30):
        a.insert_memory(record(f"again-{i}", sentence(rng), "s1", T0 + 700 + i), unit(rng))
    assert changed_rows_read(b, path, probes) == (30, 30, 2)
    assert {hit.id for hits in answers(b, probes) for hit in hits} == {f"again-{i}" for i in range(30)}

    # and afterwards catches up again by the changed rows
    a.update_memory(USER, "again-3", expired_at=T0 + 800)
    assert changed_rows_read(b, path, probes) == (1, 1, 0)
    # but not by a vector of another dimension (a reindex to another embedder under way): read whole
    a.set_embeddings([(USER, "again-5", np.ones(2 * DIM, dtype=np.float32) / 4)])
    assert changed_rows_read(b, path, probes) == (1 + 30, 1, 1)


def test_an_insert_that_does_not_stamp_its_row_is_read_at_every_catch_up(
    processes: tuple[SqliteStorage, SqliteStorage], path: Path
) -> None:
    """A row inserted by anything but the backend (no ``changed_version``) gets the largest
    version: never missed, read again by every catch-up. Its trigger gives it its full-text row."""
    a, b = processes
    rng = random.Random(5)
    probes = [unit(rng) for _ in range(4)]
    for i in range(120):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1" if i % 2 else None, T0 + i), unit(rng))
    changed_rows_read(b, path, probes)
    with a.write(USER):
        a._exec(
            "INSERT INTO memories(id, user_id, user_key, text, fingerprint, created_at, embedding) "
            "SELECT 'by-hand', user_id, user_key, 'Farid goes sailing to Zanzibar.', 'fp', created_at, embedding "
            "FROM memories WHERE id = 'm0'"
        )
        a._bump(USER)
    assert a._rows("SELECT changed_version FROM memories WHERE id = 'by-hand'") == [(2**63 - 1,)]
    # Full-text indexed all the same, by its insert trigger (the backend indexes its own rows itself).
    found = a._fts5_text_search(USER, "Zanzibar sailing", MemoryFilters(include_superseded=True), 5, context_weight=0.3)
    assert [s.id for s in found] == ["by-hand"]
    assert changed_rows_read(b, path, probes) == (1, 1, 0)
    a.update_memory(USER, "m7", expired_at=T0 + 300)
    assert changed_rows_read(b, path, probes) == (2, 2, 0)


def test_a_watching_process_catches_up_another_ones_writes_before_it_searches(path: Path) -> None:
    """With ``watch_seconds`` (worker processes on one file), B's loader thread brings B's cached
    vectors, term index and session index to the version of A's writes (adds, an edit, a deletion)
    without a search of B's asking: B's searches then read nothing and answer as a fresh process.
    A process that does not watch (C) stays behind until it searches."""
    a = SqliteStorage(path)
    b = SqliteStorage(path, watch_seconds=0.02)
    c = SqliteStorage(path)
    caches = ("_vectors", "_terms", "_sessions")
    try:
        rng = random.Random(23)
        probes = [unit(rng) for _ in range(4)]
        write_the_first_rows(a, rng)
        for store in (b, c):
            store._user_vectors(USER), store._term_index(USER), store._session_index(USER)
        loaded = a.user_version(USER)
        assert [getattr(b, cache).version_of(USER) for cache in caches] == [loaded] * 3

        for i in range(150, 153):
            a.insert_memory(record(f"m{i}", sentence(rng), "s1", T0 + i), unit(rng))
        a.update_memory(USER, "m1", text="Grace took up pottery in Porto.")
        a.delete_memories(USER, ["m4"])
        written = a.user_version(USER)
        assert written == loaded + 5
        deadline = time.monotonic() + 10
        while [getattr(b, cache).version_of(USER) for cache in caches] != [written] * 3:
            assert time.monotonic() < deadline, [getattr(b, cache).version_of(USER) for cache in caches]
            time.sleep(0.01)
        b._term_loader.submit(lambda: None).result()  # the catch-ups' counts are in
        read = {name: (reads.rows, reads.catch_ups, reads.reloads) for name, reads in b.cache_reads.items()}
        # caught up by the changed rows, none read whole: per cache one catch-up or more (a turn of
        # the watcher may come between two of A's writes), never more than one a write
        assert all(1 <= catch_ups <= 5 and reloads == 1 for _, catch_ups, reloads in read.values()), read

        assert [getattr(c, cache).version_of(USER) for cache in caches] == [loaded] * 3  # no watcher: behind
        expected = fresh_answers(path, probes)
        assert answers(b, probes) == expected
        assert session_answers(b) == session_answers(c)
        assert {name: (reads.rows, reads.catch_ups, reads.reloads) for name, reads in b.cache_reads.items()} == read
        assert answers(c, probes) == expected
    finally:
        for store in (a, b, c):
            store.close()


@pytest.mark.parametrize("written", [CATCH_UP_INLINE_ROWS, CATCH_UP_INLINE_ROWS + 1])
def test_a_search_catches_up_by_a_bounded_number_of_rows_and_leaves_more_to_the_loader(
    processes: tuple[SqliteStorage, SqliteStorage], path: Path, written: int
) -> None:
    """Up to ``CATCH_UP_INLINE_ROWS`` rows another process changed, B's search catches its term
    index up by them; past it, FTS5 answers that search (the same hits) without reading them, and
    the loader thread catches up by them, not by a whole read."""
    a, b = processes
    rng = random.Random(17)
    for i in range(50):
        a.insert_memory(record(f"m{i}", sentence(rng), None, T0 + i), unit(rng))
    b._term_index(USER)
    with a.write(USER):
        for i in range(written):
            a.insert_memory(record(f"n{i}", sentence(rng), None, T0 + 100 + i), unit(rng))
    fresh = SqliteStorage(path)
    try:
        fresh._term_index(USER)
        expected = fresh.text_search(USER, "Grace likes chess in Porto", MemoryFilters(), 25)
    finally:
        fresh.close()
    text = b.cache_reads["text"]
    before = (text.rows, text.catch_ups, text.reloads)
    gate = threading.Event()
    b._term_loader.submit(gate.wait)  # the loader waits until the search's own reads are counted
    try:
        assert b.text_search(USER, "Grace likes chess in Porto", MemoryFilters(), 25) == expected
        inline = written <= CATCH_UP_INLINE_ROWS
        read_by_search = (written, 1) if inline else (0, 0)
        assert (text.rows - before[0], text.catch_ups - before[1]) == read_by_search
        assert term_index_current(b) is inline
    finally:
        gate.set()
    b._term_loader.submit(lambda: None).result()
    assert term_index_current(b)
    assert (text.rows - before[0], text.catch_ups - before[1], text.reloads - before[2]) == (written, 1, 0)
    assert len(expected) == 25


@pytest.mark.parametrize("watch", [0.0, 0.005], ids=["searches-catch-up", "watcher-too"])
def test_searches_running_while_the_process_catches_up_see_whole_entries(path: Path, watch: float) -> None:
    """Searches of one user in several threads of B while A keeps writing: each search that finds
    B behind catches up, in place, while the others read the same entries (and, watching, while
    B's loader catches the same entries up). None fails, and B ends where a fresh process is."""
    a, b = SqliteStorage(path), SqliteStorage(path, index_after_searches=1, watch_seconds=watch)
    try:
        rng = random.Random(13)
        probes = [unit(rng) for _ in range(4)]
        for i in range(300):
            a.insert_memory(record(f"m{i}", sentence(rng), "s1" if i % 2 else None, T0 + i), unit(rng))
        changed_rows_read(b, path, probes)
        failures = search_while_writing(a, b, rng, probes)
        assert failures == []
        assert b.cache_reads["vectors"].catch_ups > 10
        assert b.cache_reads["text"].catch_ups > 10
        assert changed_rows_read(b, path, probes)[2] == 0
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("renewable", [False, True], ids=["kept", "renewable"])
def test_a_search_whose_snapshot_is_older_than_the_entries_answers_as_of_it_or_runs_again(
    processes: tuple[SqliteStorage, SqliteStorage], renewable: bool,
) -> None:
    """A search that took its snapshot before A's last write, and finds B's entries caught up past
    it by another thread: the text and session arms answer from FTS5 as of its snapshot and leave
    the entries be (a whole read would bring them back to where they already are; it did, and the
    reload of the session index failed the four-thread session test now and then). The vector arm
    has no FTS5: in a snapshot it may not renew it reads the user's vectors whole, as of the
    snapshot; in a renewable one (the retriever's) it raises StaleSnapshot, and the search runs
    again in a new snapshot."""
    a, b = processes
    rng = random.Random(23)
    write_the_first_rows(a, rng)
    probe = unit(rng)
    a.insert_memory(record("z1", "Farid goes sailing to Zanzibar.", "s9", T0 + 200), probe)
    b._term_index(USER)
    b._session_index(USER)
    b._user_vectors(USER)

    def search() -> tuple[list[ScoredId], ...]:
        return (b.text_search(USER, "Zanzibar sailing", MemoryFilters(), 5), b.session_search(USER, "Zanzibar sailing", 5),
                b.vector_search(USER, probe, MemoryFilters(), 3))

    as_of_z1 = search()
    assert [[hit.id for hit in hits][:1] for hits in as_of_z1] == [["z1"], ["s9"], ["z1"]]
    arms = ("text", "sessions", "vectors")

    def counted() -> list[tuple[int, int]]:
        return [(b.cache_reads[arm].reloads, b.cache_reads[arm].catch_ups) for arm in arms]

    seen = search_from_an_older_snapshot(a, b, search, probe, renewable=renewable, counted=counted)
    b._term_loader.submit(lambda: None).result()
    # the other thread caught every entry up past the older snapshot
    assert [{hit.id for hit in hits[:2]} for hits in seen.caught_up] == [{"z1", "z2"}, {"s9", "s8"}, {"z1", "z2"}]
    version = a.user_version(USER)
    assert seen.version == version - 1
    reads = seen.counted
    if renewable:
        assert isinstance(seen.answers, StaleSnapshot)
    else:
        assert seen.answers == as_of_z1
        reads[2] = (reads[2][0] + 1, reads[2][1])  # the vectors as of the snapshot, read whole
    assert counted() == reads
    # the entries stay where the other thread brought them, and no load was asked for
    assert (b._terms.version_of(USER), b._sessions.version_of(USER), b._vectors.version_of(USER)) == (version,) * 3
    assert b._term_loads_after == {}


def test_a_search_on_the_other_worker_after_an_add_or_a_deletion_catches_up_by_its_rows(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "cortadel.db", env={"CORTADEL_WORKERS": "2"}, database_url=database_for("sqlite"))
    server.start()
    clients: list[httpx.Client] = []
    try:
        def connected() -> httpx.Client:
            client = httpx.Client(base_url=server.base_url, timeout=30)
            clients.append(client)
            assert client.post("/api/v1/memories/search", json={"user_id": USER, "query": "warm up"}).status_code == 200
            return client

        writer = connected()
        rng = random.Random(3)
        filled = writer.post("/api/v1/memories/batch", json={
            "user_id": USER, "memories": [{"text": f"{sentence(rng)} Ticket {i}.", "infer": False} for i in range(200)]})
        assert filled.status_code == 200 and {m["event"] for m in filled.json()["memories"]} == {"ADD"}
        # the writer's first single add loads its session index (a batch for a new user had none to load)
        first = writer.post("/api/v1/memories", json={"user_id": USER, "text": "Farid keeps a boat in Zanzibar.", "infer": False})
        assert first.status_code == 200 and first.json()["event"] == "ADD"
        owners: dict[int, int] = {}
        for _ in range(20):  # the kernel hashes each new connection to a worker
            searcher = connected()
            owners = connection_owners(server.port, worker_pids(server.pid))
            if len(set(owners.values())) == 2:
                break
        assert len(set(owners.values())) == 2, owners
        search = {"user_id": USER, "query": "Ticket 7", "top_k": 5}
        for _ in range(25):  # enough searches for the searcher's worker to load its term index
            assert searcher.post("/api/v1/memories/search", json=search).status_code == 200
        # the counts are the server's: the writer read the user whole for the batch's dedup lookups
        # (vectors, terms) and its first add (sessions), the searcher for its first search (vectors)
        # and in its loader thread (terms, sessions)
        loaded = {"vectors": 2, "text": 2, "sessions": 2}
        for _ in range(50):
            counts = cache_counts(scrape(searcher))
            if all(counts[("cortadel_cache_reads_total", cache, "reloads")] >= n for cache, n in loaded.items()):
                break
            time.sleep(0.1)
        before = cache_counts(scrape(searcher))
        assert {cache: before[("cortadel_cache_reads_total", cache, "reloads")] for cache in loaded} == loaded

        added_ids = []
        for i in range(5):
            text = f"Farid sails to Zanzibar on boat {1000 + i}."
            added = writer.post("/api/v1/memories", json={"user_id": USER, "text": text, "infer": False})
            assert added.status_code == 200 and added.json()["event"] == "ADD"
            added_ids.append(added.json()["id"])
            found = searcher.post("/api/v1/memories/search", json={"user_id": USER, "query": text, "top_k": 3})
            assert found.status_code == 200 and found.json()["results"][0]["content"] == text
        after = cache_counts(scrape(searcher))
        moved = {key: value - before[key] for key, value in after.items() if value != before[key]}
        # each add read by the other worker as one changed row, once per cache (the session index:
        # the memory and the session's document it was appended to); nothing read whole
        assert moved == {
            ("cortadel_cache_reads_total", "vectors", "catch_ups"): 5, ("cortadel_cache_rows_read_total", "vectors", "rows"): 5,
            ("cortadel_cache_reads_total", "text", "catch_ups"): 5, ("cortadel_cache_rows_read_total", "text", "rows"): 5,
            ("cortadel_cache_reads_total", "sessions", "catch_ups"): 5,
            ("cortadel_cache_rows_read_total", "sessions", "rows"): 10,
        }

        # a deletion on the writer: the searcher's indexes drop the row in place, none is read whole
        deleted = writer.request("DELETE", "/api/v1/memories", json={"user_id": USER, "memory_ids": added_ids[:1]})
        assert deleted.status_code == 200 and deleted.json()["message"] == "Deleted 1 memory"
        found = searcher.post("/api/v1/memories/search", json={"user_id": USER, "query": "boat 1000", "top_k": 10})
        assert found.status_code == 200
        contents = [hit["content"] for hit in found.json()["results"]]
        boats = [f"Farid sails to Zanzibar on boat {1000 + i}." for i in range(5)]
        assert boats[0] not in contents and set(boats[1:]) <= set(contents), contents
        # the writer's own term and session indexes are caught up by its loader thread after the
        # deletion commits (its vectors drop the row in the write): wait for both catch-ups, a
        # request to the writer's worker each time (a worker writes its counts after a request)
        for _ in range(50):
            assert writer.get("/api/health").status_code == 200
            moved = {key: value - after[key] for key, value in cache_counts(scrape(searcher)).items() if value != after[key]}
            if all(moved.get(("cortadel_cache_reads_total", cache, "catch_ups")) == 2 for cache in ("text", "sessions")):
                break
            time.sleep(0.1)
        rows = 200 + 1 + 5 - 1  # the batch, the first add, the five, less the one deleted
        # one changed row for each catch-up: the next member of the deleted one's inferred episode, its context rebuilt
        assert {key: value for key, value in moved.items() if key[1] != "sessions"} == {
            ("cortadel_cache_reads_total", "vectors", "catch_ups"): 1, ("cortadel_cache_rows_read_total", "vectors", "rows"): 1,
            ("cortadel_cache_rows_read_total", "vectors", "rowids"): rows,
            ("cortadel_cache_reads_total", "text", "catch_ups"): 2, ("cortadel_cache_rows_read_total", "text", "rows"): 2,
            ("cortadel_cache_rows_read_total", "text", "rowids"): 2 * rows,
        }
        assert moved[("cortadel_cache_reads_total", "sessions", "catch_ups")] == 2
        assert ("cortadel_cache_reads_total", "sessions", "reloads") not in moved
    finally:
        for client in clients:
            client.close()
        server.stop()


SESSION_QUERIES = [*QUERIES, "Zanzibar", "likes"]


def session_answers(store: SqliteStorage) -> list[Any]:
    """The session arm's two reads: documents ranked for every query, and the current members of
    every session of the user, in order."""
    sessions = [row[0] for row in store._rows("SELECT session_id FROM session_docs WHERE user_id = ? ORDER BY session_id", (USER,))]
    ranked = [[(hit.id, hit.score) for hit in store.session_search(USER, query, 5)] for query in SESSION_QUERIES]
    return [*ranked, store.session_members(USER, sessions, MemoryFilters())]


def session_index_current(b: SqliteStorage) -> bool:
    return b._sessions.current(USER, b.user_version(USER)) is not None


def session_rows_read(b: SqliteStorage, path: Path) -> tuple[int, int]:
    """B's session answers equal a fresh process's, from its session index too; returns the rows
    (memories and documents) B's session index read to give them, and its whole reads."""
    reads = b.cache_reads["sessions"]
    rows, reloads = reads.rows, reads.reloads
    fresh = SqliteStorage(path)
    try:
        fresh._session_index(USER)
        expected = session_answers(fresh)
        assert expected[:-1] == [[(hit.id, hit.score) for hit in fresh._fts5_session_search(USER, query, 5)]
                                 for query in SESSION_QUERIES]
    finally:
        fresh.close()
    assert session_answers(b) == expected
    b._term_loader.submit(lambda: None).result()
    if not session_index_current(b):
        b._session_index(USER)
    assert session_index_current(b)
    held = b._sessions.get(USER)
    assert held is not None and held.revision % 2 == 0  # no change under way: the searches below rank in process
    read = (reads.rows, reads.reloads, reads.catch_ups)
    assert session_answers(b) == expected  # from the index as it is: nothing more read
    assert (reads.rows, reads.reloads, reads.catch_ups) == read
    assert sum(map(len, expected)) > 20  # the searches found sessions: the comparison compared something
    return reads.rows - rows, reads.reloads - reloads


def whole_sessions_read(a: SqliteStorage) -> int:
    """The rows a whole read of the user's session index reads: every document and every memory in a session."""
    return int(a._rows(
        "SELECT (SELECT count(*) FROM session_docs WHERE user_id = ?) "
        "+ (SELECT count(*) FROM memories WHERE user_id = ? AND session_id IS NOT NULL)", (USER, USER),
    )[0][0])


def members_of(a: SqliteStorage, session_id: str) -> int:
    """The memories of a session, current or not: what a catch-up reads again of a rebuilt one."""
    return int(a._rows("SELECT count(*) FROM memories WHERE user_id = ? AND session_id = ?", (USER, session_id))[0][0])


def test_a_process_behind_catches_its_session_index_up_by_the_changed_memories_and_documents(
    processes: tuple[SqliteStorage, SqliteStorage], path: Path
) -> None:
    """B's session index follows A's writes by the memories and session documents they changed: a
    member joins its session and its text extends the document, a member that ends leaves, a
    document replaced rather than appended to (an edit or a deletion rebuilds it) has its terms
    replaced and its session's members read again, a document deleted goes, imported documents
    join. A member dated before its session's last is read whole."""
    a, b = processes
    rng = random.Random(17)
    write_the_first_rows(a, rng)  # 75 memories in sessions s0, s1, s2
    assert session_rows_read(b, path) == (whole_sessions_read(a), 1) == (78, 1)  # B's first search: every row

    # inserts into a session (five writes: five memories, one document changed)
    for i in range(150, 155):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1", T0 + i), unit(rng))
    assert session_rows_read(b, path) == (5 + 1, 0)
    # a new session, and a memory in none
    a.insert_memory(record("zanzibar", "Farid goes sailing to Zanzibar.", "s9", T0 + 200), unit(rng))
    a.insert_memory(record("loose", "Elena likes tea.", None, T0 + 201), unit(rng))
    assert session_rows_read(b, path) == (2 + 1, 0)
    # a supersede in one write (the old member leaves its session, the new one joins another) and an expiry
    with a.write(USER):
        a.update_memory(USER, "m3", expired_at=T0 + 300, superseded_by="m-new")
        a.insert_memory(record("m-new", "Caroline likes chess in Oslo now.", "s1", T0 + 300), unit(rng))
    a.update_memory(USER, "m9", invalid_at=T0 + 301)
    assert session_rows_read(b, path) == (3 + 1, 0)

    # B's own write in between: B follows it, then catches up by A's
    b.insert_memory(record("by-b", "Elena moved to Berlin for the yoga.", "s9", T0 + 400), unit(rng))
    assert session_index_current(b)
    a.insert_memory(record("by-a", "Hiro sails to Zanzibar.", "s9", T0 + 401), unit(rng))
    assert session_rows_read(b, path) == (1 + 1, 0)

    # a write that rolls back moves nothing
    with pytest.raises(RuntimeError), a.write(USER):
        a.insert_memory(record("rolled-back", "Zanzibar, always Zanzibar.", "s1", T0 + 500), unit(rng))
        raise RuntimeError("roll back")
    assert session_rows_read(b, path) == (0, 0)

    # an edit rebuilds its session's document: its terms replaced, its members read again
    a.update_memory(USER, "m1", text="Grace took up pottery in Porto.")
    assert session_rows_read(b, path) == (2 + 1 + members_of(a, "s1"), 0) == (34, 0)
    # a member dated before its session's last: write order cannot place it
    a.insert_memory(record("dated", "Bob likes sushi in Tokyo.", "s2", T0 + 2), unit(rng))
    assert session_rows_read(b, path) == (1 + 1 + whole_sessions_read(a), 1)
    # a deletion: the member after it gets a new context, and so does "dated" (the rebuild puts it
    # in time order, first), in the changed rows; m5 leaves its session's members
    a.delete_memories(USER, ["m5"])
    assert session_rows_read(b, path) == (2 + 1 + members_of(a, "s2"), 0) == (28, 0)
    assert "m5" not in b._sessions.get(USER).session_of  # type: ignore[union-attr]
    # imported documents
    a.load_sessions(USER, [("s-imported", "Dmitri likes hiking in Oslo.")])
    assert session_rows_read(b, path) == (1, 0)
    # and afterwards catches up again by the changed rows
    a.insert_memory(record("later", "Grace likes guitar in Lisbon.", "s-imported", T0 + 900), unit(rng))
    assert session_rows_read(b, path) == (1 + 1, 0)

    # an edit that leaves a document longer, with the separator where its old text ended: only the
    # version of the write that replaced it tells it from an append
    first, second = "Ana likes tea.", "Bob likes jazz."
    with a.write(USER):
        a.insert_memory(record("e1", first, "s-edit", T0 + 950), unit(rng))
        a.insert_memory(record("e2", second, "s-edit", T0 + 951), unit(rng))
    assert session_rows_read(b, path) == (2 + 1, 0)
    longer = "Zed sails to Zanzibar by boat."
    assert len(longer) == len(first + "\n" + second)
    a.update_memory(USER, "e1", text=longer)
    assert a._rows("SELECT text FROM session_docs WHERE session_id = 's-edit'") == [(longer + "\n" + second,)]
    assert session_rows_read(b, path) == (2 + 1 + 2, 0)  # e1's text, e2's context, the document, its two members

    # a document written by anything but the backend is read again by every catch-up, which replaces its terms again
    with a.write(USER):
        a._exec("INSERT INTO session_docs(user_id, session_id, user_key, text) "
                "SELECT user_id, 's-by-hand', user_key, 'Ana likes coffee in Zanzibar.' FROM session_docs LIMIT 1")
        a._bump(USER)
    assert a._rows("SELECT changed_version, rebuilt_version FROM session_docs WHERE session_id = 's-by-hand'") == [(2**63 - 1,) * 2]
    assert session_rows_read(b, path) == (1, 0)
    a.update_memory(USER, "m7", expired_at=T0 + 901)
    assert session_rows_read(b, path) == (1 + 1, 0)


def test_session_searches_running_while_the_process_catches_up_see_whole_entries(
    processes: tuple[SqliteStorage, SqliteStorage], path: Path
) -> None:
    """The session arm's reads in several threads of B while A keeps writing to one session and
    ending its members: each read that finds B's session index behind catches it up, in place,
    while the others read it (and ask FTS5 while a change is under way). None fails, and B ends
    where a fresh process is."""
    a, b = processes
    rng = random.Random(19)
    for i in range(300):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1" if i % 2 else f"s{i % 7}", T0 + i), unit(rng))
    session_rows_read(b, path)
    failures = search_while_writing(a, b, rng, [], ask=session_answers)
    assert failures == []
    assert b.cache_reads["sessions"].catch_ups > 10
    assert session_rows_read(b, path)[1] == 0
