"""A replica whose cached vectors and full-text rows fell behind another replica's writes catches
up by reading only the rows those writes changed (``changed_version``), and then answers exactly
what a process that loads the user afresh answers: the same hits, in the same order, with the same
scores, after inserts, supersedes and expiries, edits, re-embedding, imports, a rolled-back write,
deletions (told by the rowids of the rows left: no full read), an erasure and a vector of another
dimension (these two, and a vector given to a row in the middle, cannot be told from the changed
rows: a full read); and while searches of other threads read the entries it changes.

Two storage objects on one PostgreSQL stand for two replicas (A writes, B searches), as in
test_postgres_text_cache.py; each check compares B with a third opened for the check alone."""

from __future__ import annotations

import random
from collections.abc import Iterator

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

from cortadel_server.errors import StaleSnapshot
from cortadel_server.storage.base import MemoryFilters, ScoredId, StoredMemory
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import scratch_database


@pytest.fixture()
def url() -> str:
    return scratch_database("catchup")


@pytest.fixture()
def replicas(url: str) -> Iterator[tuple[PostgresStorage, PostgresStorage]]:
    # text_in_process_from=0: these users' full-text arm is ranked from the cached rows too
    a = PostgresStorage(url, max_connections=2, text_in_process_from=0)
    b = PostgresStorage(url, max_connections=2, text_in_process_from=0)
    yield a, b
    a.close()
    b.close()


def changed_rows_read(b: PostgresStorage, url: str, probes: list[np.ndarray]) -> tuple[int, int, int]:
    """B's answers equal a fresh process's; returns the rows B read to give them (vectors, text)
    and how many whole reads of the user it made (both caches together). B reads no rowids."""
    vectors, text, reloads, *rowids = reads_to_answer(b, url, probes)
    assert rowids == [0, 0]
    return vectors, text, reloads


def reads_to_answer(b: PostgresStorage, url: str, probes: list[np.ndarray]) -> tuple[int, int, int, int, int]:
    """``changed_rows_read``, and the rowids B read to tell which rows went away (vectors, text)."""
    before = {name: (reads.rows, reads.reloads, reads.rowids) for name, reads in b.cache_reads.items()}
    got = answers(b, probes)
    fresh = PostgresStorage(url, max_connections=1, text_in_process_from=0)
    try:
        assert got == answers(fresh, probes)
    finally:
        fresh.close()
    assert sum(map(len, got)) > 100  # the searches found rows: the comparison compared something
    vectors, text = b.cache_reads["vectors"], b.cache_reads["text"]
    return (vectors.rows - before["vectors"][0], text.rows - before["text"][0],
            vectors.reloads - before["vectors"][1] + text.reloads - before["text"][1],
            vectors.rowids - before["vectors"][2], text.rowids - before["text"][2])


def test_a_replica_behind_reads_only_the_changed_rows_and_answers_as_a_fresh_one(
    replicas: tuple[PostgresStorage, PostgresStorage], url: str
) -> None:
    a, b = replicas
    rng = random.Random(11)
    probes = [unit(rng) for _ in range(4)]
    write_the_first_rows(a, rng)
    assert changed_rows_read(b, url, probes) == (151, 151, 2)  # B's first search: every row, once per cache

    # inserts through A
    for i in range(150, 155):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1", T0 + i), unit(rng))
    a.insert_memory(record("zanzibar", "Farid goes sailing to Zanzibar.", "s1", T0 + 200), probes[0])
    assert changed_rows_read(b, url, probes) == (6, 6, 0)

    # a supersede (the old fact expired, the new one added, one write) and an expiry
    with a.write(USER):
        a.update_memory(USER, "m3", expired_at=T0 + 300, superseded_by="m-new")
        a.insert_memory(record("m-new", "Caroline likes tea in Oslo now.", None, T0 + 300), unit(rng))
    a.update_memory(USER, "m8", invalid_at=T0 + 301)
    assert changed_rows_read(b, url, probes) == (3, 3, 0)

    # an edit of a session member: its text, and the context of the member written after it
    a.update_memory(USER, "m1", text="Grace took up pottery in Porto.")
    assert changed_rows_read(b, url, probes) == (2, 2, 0)
    a.update_memory(USER, "m2", text="Hiro plays chess in Tokyo.")  # no session: one row
    assert changed_rows_read(b, url, probes) == (1, 1, 0)

    # new embeddings (a reindex's batch), and B's own write in between: B follows its write, then catches up
    b.insert_memory(record("by-b", "Elena moved to Berlin for the yoga.", "s1", T0 + 400), probes[1])
    a.set_embeddings([(USER, "m10", probes[2]), (USER, "m11", probes[3])])
    assert changed_rows_read(b, url, probes) == (2, 2, 0)

    # an import (COPY) of rows with and without vectors
    a.load_memories(USER, [
        StoredMemory(record("imported-1", "Bob likes sushi in Tokyo.", None, T0 + 500), "", unit(rng).tobytes(), 0),
        StoredMemory(record("imported-2", "Dmitri likes hiking in Oslo.", "s1", T0 + 501), "", None, 0),
    ])
    assert changed_rows_read(b, url, probes) == (2, 2, 0)
    a.set_embeddings([(USER, "imported-2", unit(rng))])  # embedded later, in the middle of the rows: read whole
    vectors, text, reloads = changed_rows_read(b, url, probes)
    assert (vectors, text, reloads) == (1 + 161, 1, 1)  # the changed row, then all 161

    # a write that rolls back moves nothing: B reads no row
    with pytest.raises(RuntimeError), a.write(USER):
        a.insert_memory(record("rolled-back", "Zanzibar, always Zanzibar.", "s1", T0 + 600), probes[0])
        a.update_memory(USER, "m5", expired_at=T0 + 600)
        raise RuntimeError("roll back")
    assert changed_rows_read(b, url, probes) == (0, 0, 0)

    # deletions leave no trace in the rows: B notices by the count, and the rowids of the rows
    # left (all 159, one column) tell which went; no row changed, no whole read
    a.delete_memories(USER, ["m4", "m20"])
    assert reads_to_answer(b, url, probes) == (0, 0, 0, 159, 159)
    # a row without an embedding and a session member deleted (the next member's context changes)
    # and a row added, between two searches of B: the rows changed and the rowids left
    a.load_memories(USER, [StoredMemory(record("no-vector", "Ana likes tea in Lisbon.", None, T0 + 650), "", None, 0)])
    assert changed_rows_read(b, url, probes) == (1, 1, 0)
    a.delete_memories(USER, ["m7", "no-vector"])
    a.insert_memory(record("after-delete", "Caroline likes chess in Paris.", "s2", T0 + 660), probes[3])
    # the new row, and the s1 members whose context the rebuilt session set: m13 (m7 was before
    # it) and imported-2 (imported without one)
    assert reads_to_answer(b, url, probes) == (3, 3, 0, 159, 159)
    # the newest row deleted
    a.delete_memories(USER, ["after-delete"])
    assert reads_to_answer(b, url, probes) == (0, 0, 0, 158, 158)
    # inside a search's snapshot both caches take the rowids from one read
    a.delete_memories(USER, ["m30"])
    with b.search_snapshot(USER):
        assert reads_to_answer(b, url, probes) == (0, 0, 0, 157, 0)
    # most rows deleted (the holes they leave in B's full-text postings outnumber the rows: rewritten
    # without them); the sessions' other members get new contexts
    a.delete_memories(USER, [f"m{i}" for i in range(40, 150)])
    vectors, text, reloads, *rowids = reads_to_answer(b, url, probes)
    assert (vectors, reloads, rowids) == (text, 0, [47, 47]) and 0 < vectors < 47

    # an erased user: B finds nothing, and keeps nothing (so written again, the user is read whole, once)
    a.delete_user(USER)
    assert answers(b, probes) == [[]] * (len(probes) + len(QUERIES)) * len(FILTERS)
    for i in range(30):
        a.insert_memory(record(f"again-{i}", sentence(rng), "s1", T0 + 700 + i), unit(rng))
    assert changed_rows_read(b, url, probes) == (30, 30, 2)
    assert {hit.id for hits in answers(b, probes) for hit in hits} == {f"again-{i}" for i in range(30)}

    # and afterwards catches up again by the changed rows
    a.update_memory(USER, "again-3", expired_at=T0 + 800)
    assert changed_rows_read(b, url, probes) == (1, 1, 0)
    # but not by a vector of another dimension (a reindex to another embedder under way): read whole
    a.set_embeddings([(USER, "again-5", np.ones(2 * DIM, dtype=np.float32) / 4)])
    assert changed_rows_read(b, url, probes) == (1 + 30, 1, 1)


def test_searches_running_while_the_replica_catches_up_see_whole_entries(
    replicas: tuple[PostgresStorage, PostgresStorage], url: str
) -> None:
    """Searches of one user in several threads of B while A keeps writing: each search that finds
    B behind catches up, in place, while the others read the same entries. None fails, and B ends
    where a fresh process is."""
    a, b = replicas
    rng = random.Random(13)
    probes = [unit(rng) for _ in range(4)]
    for i in range(300):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1" if i % 2 else None, T0 + i), unit(rng))
    answers(b, probes)
    failures = search_while_writing(a, b, rng, probes)
    assert failures == []
    assert b.cache_reads["vectors"].catch_ups > 10
    assert changed_rows_read(b, url, probes)[2] == 0


def test_a_replicas_own_deletions_keep_its_entries_current(
    replicas: tuple[PostgresStorage, PostgresStorage], url: str
) -> None:
    """Deleting through A applies the deletion to A's own entries (write-through): no read, unless
    a session lost a member, whose rebuilt contexts A's full-text rows then read back, before the
    deletion returns (its rows' lexemes leave the process with it)."""
    a, _ = replicas
    rng = random.Random(17)
    probes = [unit(rng) for _ in range(4)]
    for i in range(120):
        a.insert_memory(record(f"m{i}", sentence(rng), "s1" if i % 4 == 0 else None, T0 + i), unit(rng))
    assert changed_rows_read(a, url, probes) == (120, 120, 2)
    a.delete_memories(USER, ["m1", "m2", "m3"])  # in no session
    assert changed_rows_read(a, url, probes) == (0, 0, 0)
    text = a.cache_reads["text"]
    before = (text.rows, text.rowids)
    a.delete_memories(USER, ["m4", "m5"])  # m4 in s1: m8's context changes
    assert (text.rows - before[0], text.rowids - before[1]) == (1, 115)
    assert reads_to_answer(a, url, probes) == (0, 0, 0, 0, 0)


def test_a_write_behind_another_replica_reads_the_user_once_and_not_at_every_lookup(
    replicas: tuple[PostgresStorage, PostgresStorage], url: str
) -> None:
    """A batch on B after A wrote, or on a B that never read the user: the first lookup inside the
    write brings the entries up (one whole read each when nothing is cached), the write's later
    rows amend them, and B then answers as a fresh process does. Each lookup of a 500-memory batch
    read the user whole before: minutes of CPU at 2,000 memories. A rollback leaves nothing behind."""
    a, b = replicas
    rng = random.Random(19)
    probes = [unit(rng) for _ in range(4)]
    write_the_first_rows(a, rng)

    def batch(first: int) -> None:
        with b.write(USER):
            for i in range(first, first + 20):
                b.insert_memory(record(f"b{i}", sentence(rng), "s1" if i % 2 else None, T0 + 1000 + i), unit(rng))
                b.text_search(USER, sentence(rng), MemoryFilters(), 10)
                b.vector_search(USER, unit(rng), MemoryFilters(), 10)

    batch(0)  # nothing cached on B: one whole read per cache, then the batch's rows follow
    assert (b.cache_reads["vectors"].reloads, b.cache_reads["text"].reloads) == (1, 1)
    assert (b.cache_reads["vectors"].rows, b.cache_reads["text"].rows) == (152, 152)
    assert changed_rows_read(b, url, probes) == (0, 0, 0)

    a.insert_memory(record("by-a", "Farid goes sailing to Zanzibar.", None, T0 + 2000), probes[0])
    batch(100)  # behind by A's row: caught up by it (and B's own first row), no whole read
    assert (b.cache_reads["vectors"].reloads, b.cache_reads["text"].reloads) == (1, 1)
    assert (b.cache_reads["vectors"].rows, b.cache_reads["text"].rows) == (154, 154)
    assert changed_rows_read(b, url, probes) == (0, 0, 0)

    with pytest.raises(RuntimeError), b.write(USER):
        b.insert_memory(record("rolled-back", "Zanzibar, always Zanzibar.", "s1", T0 + 3000), probes[0])
        # the write's own row, tied with A's (one vector): equal scores in row order
        assert [hit.id for hit in b.vector_search(USER, probes[0], MemoryFilters(), 2)] == ["by-a", "rolled-back"]
        raise RuntimeError("roll back")
    assert "rolled-back" not in {hit.id for hits in answers(b, probes) for hit in hits}
    changed_rows_read(b, url, probes)  # and B answers as a fresh process


@pytest.mark.parametrize("renewable", [False, True], ids=["kept", "renewable"])
def test_a_search_whose_snapshot_is_older_than_the_entries_answers_as_of_it_or_runs_again(
    replicas: tuple[PostgresStorage, PostgresStorage], renewable: bool,
) -> None:
    """A search that took its snapshot before A's last write, and finds B's entries caught up past
    it by another thread of B: in a snapshot it may not renew, each arm reads the user whole, as of
    the snapshot (what the entries hold is a later version); in a renewable one (the retriever's)
    the first arm raises StaleSnapshot, and the search runs again in a new snapshot. Either way the
    entries stay where the other thread brought them."""
    a, b = replicas
    rng = random.Random(23)
    write_the_first_rows(a, rng)
    probe = unit(rng)
    a.insert_memory(record("z1", "Farid goes sailing to Zanzibar.", "s9", T0 + 200), probe)

    def search() -> tuple[list[ScoredId], list[ScoredId]]:
        return b.text_search(USER, "Zanzibar sailing", MemoryFilters(), 5), b.vector_search(USER, probe, MemoryFilters(), 3)

    as_of_z1 = search()
    assert [[hit.id for hit in hits][:1] for hits in as_of_z1] == [["z1"], ["z1"]]
    arms = ("text", "vectors")

    def counted() -> list[tuple[int, int]]:
        return [(b.cache_reads[arm].reloads, b.cache_reads[arm].catch_ups) for arm in arms]

    seen = search_from_an_older_snapshot(a, b, search, probe, renewable=renewable, counted=counted)
    # the other thread caught both entries up past the older snapshot
    assert [{hit.id for hit in hits[:2]} for hits in seen.caught_up] == [{"z1", "z2"}] * 2
    version = a.user_version(USER)
    assert seen.version == version - 1
    reads = seen.counted
    if renewable:
        assert isinstance(seen.answers, StaleSnapshot)
    else:
        assert seen.answers == as_of_z1
        reads = [(reloads + 1, catch_ups) for reloads, catch_ups in reads]  # each read whole, as of the snapshot
    assert counted() == reads
    assert (b._lexemes.version_of(USER), b._vectors.version_of(USER)) == (version, version)
