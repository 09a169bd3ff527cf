"""What the catch-up tests of both backends write and ask (test_sqlite_catch_up.py,
test_postgres_replica_catch_up.py): one user's rows of a few words each, unit vectors of a few
dimensions, and every cached arm's answers to compare with a store loaded afresh."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from cortadel_server.errors import StaleSnapshot
from cortadel_server.storage.base import MemoryFilters, MemoryRecord, ScoredId, Storage

T0 = 1_790_000_000.0
DIM = 8
USER = "u1"
NAMES = ["Ana", "Bob", "Caroline", "Dmitri", "Elena", "Farid", "Grace", "Hiro"]
PLACES = ["Lisbon", "Berlin", "Paris", "Tokyo", "Porto", "Oslo"]
THINGS = ["coffee", "tea", "pottery", "hiking", "chess", "guitar", "sushi", "yoga"]
QUERIES = ["coffee", "tea in Lisbon", "Who likes chess and guitar?", "Grace Hiro Porto", "Zanzibar sailing", "Elena moved to Berlin"]
FILTERS = [MemoryFilters(), MemoryFilters(session_id="s1"), MemoryFilters(include_superseded=True)]


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(NAMES)} likes {rng.choice(THINGS)} and {rng.choice(THINGS)} in {rng.choice(PLACES)}."


def unit(rng: random.Random) -> np.ndarray:
    vector = np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
    return vector / np.linalg.norm(vector)


def record(memory_id: str, text: str, session: str | None, at: float) -> MemoryRecord:
    return MemoryRecord(id=memory_id, user_id=USER, text=text, created_at=at, fingerprint=f"fp-{memory_id}", session_id=session)


def answers(store: Storage, probes: list[np.ndarray]) -> list[list[ScoredId]]:
    """Every arm that reads the caches, for every probe, query and filter."""
    found = []
    for filters in FILTERS:
        found += [store.vector_search(USER, probe, filters, 25) for probe in probes]
        found += [store.text_search(USER, query, filters, 25) for query in QUERIES]
    return found


def write_the_first_rows(a: Storage, rng: random.Random) -> None:
    """151 rows of the user through ``a``: 150 in turn, every other one in one of three sessions,
    and one more without a session."""
    for i in range(150):
        a.insert_memory(record(f"m{i}", sentence(rng), f"s{i % 3}" if i % 2 else None, T0 + i), unit(rng))
    a.insert_memory(record("other", "Ana likes coffee.", None, T0), unit(rng))


def search_while_writing(
    a: Storage, b: Storage, rng: random.Random, probes: list[np.ndarray], ask: Callable[[Storage], object] | None = None,
) -> list[BaseException]:
    """Four threads of ``b`` ask every cached arm (or what ``ask`` asks of it), again and again,
    while ``a`` writes 100 rows of one session and, for every ten, ends a row written 150 before,
    deletes one written 140 before and gives one written 130 before a new text; what the searches
    raised."""
    failures: list[BaseException] = []
    writing = threading.Event()
    writing.set()

    def search() -> None:
        while writing.is_set():
            try:
                (ask or (lambda store: answers(store, probes)))(b)
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                failures.append(exc)
                return

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for i in range(300, 400):
            a.insert_memory(record(f"m{i}", sentence(rng), "s1", T0 + i), unit(rng))
            if i % 10 == 0:
                a.update_memory(USER, f"m{i - 150}", expired_at=T0 + 1000 + i)
            elif i % 10 == 3:
                a.delete_memories(USER, [f"m{i - 140}"])
            elif i % 10 == 6:
                a.update_memory(USER, f"m{i - 130}", text=sentence(rng))
    finally:
        writing.clear()
        for thread in threads:
            thread.join()
    return failures


Answers = TypeVar("Answers")
Counted = TypeVar("Counted")


@dataclass
class OlderSnapshot(Generic[Answers, Counted]):
    """What ``search_from_an_older_snapshot`` saw."""

    #: the user's version in B's older snapshot
    version: int
    #: B's answers in that snapshot, or the StaleSnapshot it raised
    answers: Answers | StaleSnapshot
    #: B's answers in another thread, which caught its entries up past that snapshot
    caught_up: Answers
    #: what ``counted`` gave right after that catch-up, before the older snapshot's search
    counted: Counted


def search_from_an_older_snapshot(
    a: Storage, b: Storage, search: Callable[[], Answers], probe: np.ndarray, *, renewable: bool,
    counted: Callable[[], Counted],
) -> OlderSnapshot[Answers, Counted]:
    """B opens a search snapshot (``renewable`` or not) and reads the user's version in it; A then
    writes "z2" (a sentence about Zanzibar, in session s8); another thread of B runs ``search``,
    catching B's entries up past the snapshot; then B runs ``search`` in the older snapshot."""
    in_snapshot, searched = threading.Event(), threading.Event()
    version: list[int] = []
    found: list[Answers | StaleSnapshot] = []

    def older_search() -> None:
        with b.search_snapshot(USER, renewable=renewable):
            version.append(b.user_version(USER))  # the snapshot's: before A's next write
            in_snapshot.set()
            searched.wait(10)
            try:
                found.append(search())
            except StaleSnapshot as exc:
                found.append(exc)

    thread = threading.Thread(target=older_search)
    thread.start()
    assert in_snapshot.wait(10)
    try:
        a.insert_memory(record("z2", "Hiro sails to Zanzibar.", "s8", T0 + 201), probe)
        caught_up, after = search(), counted()
    finally:
        searched.set()
        thread.join()
    return OlderSnapshot(version[0], found[0], caught_up, after)
