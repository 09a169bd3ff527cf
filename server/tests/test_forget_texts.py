"""Deletion really deletes, in memory too: once a delete is acknowledged, nothing the process can
reach holds the deleted text (test_purge.py checks the files). That covers the caches of every
user's text mixed (a fact's comparison shape, its time expression, a word's stems, an alias's
evidence, the job worker's aliases) and each user's own (full-text postings, session documents,
the communities' words),
on both backends, and another process serving the same store once it learns of the deletion.

The texts are made at run time from a reversed name, so this module holds no copy of them: what
the walk finds, the service holds.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cortadel_server.config import Settings
from cortadel_server.pipeline.writer import ConversationTurn, TextInput
from cortadel_server.providers import build_embedder
from cortadel_server.retrieval.request import SearchRequest
from cortadel_server.service import MemoryService
from cortadel_server.storage.base import MemoryFilters, Storage
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.storage.sqlite import WATCH_SECONDS, SqliteStorage
from cortadel_server.testing import ServerProcess, database_for

NAME, PET = "roivlahtneuQ", "ulaforbmeZ"  # reversed: "Quenthalvior", "Zembrofalu"
#: the services open in this test (``reachable`` walks from them)
SERVICES: list[MemoryService] = []


def stem(reversed_name: str) -> str:
    """What every form of the name held begins with, lower-cased: its stems too."""
    return named(reversed_name)[:7].lower()


def named(reversed_name: str) -> str:
    return reversed_name[::-1]  # a new string at each call


def reachable(marker: str) -> list[str]:
    """Where each string (or bytes) the server's code can reach that holds ``marker`` (case-folded)
    is held: a path from a ``cortadel_server`` module's globals, the service under test, or a
    frame of a thread other than the test's (the service's own threads), innermost first. Other
    test modules and pytest's reports hold texts of their own."""
    gc.collect()
    parent: dict[int, int | None] = {}
    objects: dict[int, object] = {}
    labels: dict[int, str] = {}
    todo: list[object] = []

    def root(obj: object, label: str) -> None:
        if id(obj) not in parent:
            parent[id(obj)], objects[id(obj)], labels[id(obj)] = None, obj, label
            todo.append(obj)

    for name, module in list(sys.modules.items()):
        if name.startswith("cortadel_server") and isinstance(getattr(module, "__dict__", None), dict):
            root(module.__dict__, f"module {name}")
    for service in SERVICES:
        root(service, "the service")
    for thread, frame in sys._current_frames().items():
        while thread != threading.main_thread().ident and frame is not None:
            root(frame, f"frame {frame.f_code.co_name}")
            frame = frame.f_back
    found = []
    while todo:
        obj = todo.pop()
        if isinstance(obj, (str, bytes, bytearray)):
            text = obj if isinstance(obj, str) else bytes(obj).decode("utf-8", "replace")
            if obj is not marker and marker in text.lower():
                found.append(id(obj))
            continue
        if isinstance(obj, (type, types.ModuleType, int, float)) or type(obj).__module__.startswith(("_pytest", "pluggy")):
            continue  # pytest's own objects hold the reports of earlier tests
        referents = gc.get_referents(obj)
        if isinstance(obj, dict):  # a dict of string keys shows the collector its values alone
            try:
                referents = [*referents, *list(obj)]
            except RuntimeError:  # changed by another thread meanwhile: its values still count
                pass
        for referent in referents:
            if id(referent) not in parent and not isinstance(referent, (type, types.ModuleType)):
                parent[id(referent)], objects[id(referent)] = id(obj), referent
                todo.append(referent)
    paths = []
    for held in found:
        steps, at = [], held
        while at is not None:
            obj = objects[at]
            steps.append(labels.get(at) or getattr(obj, "__qualname__", type(obj).__name__))
            at = parent[at]
        paths.append(f"{objects[held]!r:.60} <- " + " <- ".join(steps[1:10]))
    return paths


def holders(marker: str) -> set[str]:
    """The caches ``reachable`` finds holding ``marker``, by name (of the few this module asserts)."""
    return {name for path in reachable(marker)
            for name in ("shape", "_alias_evidence", "AliasIndex", "VersionedCache", "Community", "KeptShapes") if name in path}


def open_service(backend: str, tmp_path: Path, url: str | None, *, workers: int = 1) -> MemoryService:
    settings = Settings.from_env({}, data=str(tmp_path / "cortadel.db"), database_url=url, workers=workers)
    storage: Storage
    if url is not None:
        storage = PostgresStorage(url, max_connections=4, text_in_process_from=0)  # rank in process from the first row
    else:
        storage = SqliteStorage(settings.database_path, watch_seconds=WATCH_SECONDS if workers > 1 else 0.0)
    service = MemoryService(settings, storage, build_embedder(settings), None)
    service.guard_dimension()
    service.start_background()
    SERVICES.append(service)
    return service


@pytest.fixture()
def url(backend: str) -> str | None:
    return database_for(backend)


@pytest.fixture()
def service(backend: str, tmp_path: Path, url: str | None) -> Iterator[MemoryService]:
    opened = open_service(backend, tmp_path, url)
    yield opened
    opened.close()
    SERVICES.clear()


def remember(service: MemoryService, user: str, reversed_name: str) -> list[str]:
    """Write texts naming the person through every path (a statement, raw text, a batch, a
    conversation), search for them until the user's indexes are loaded, let enrichment link the
    names; the ids of the memories that name them. Nothing of the text is left in this frame."""
    name = named(reversed_name)
    service.add(user, f"I met {name} in Lisbon.", session_id="trip")
    service.add(user, f"{name} lent me a bicycle.", infer=False, session_id="trip")
    service.add(user, "I like green tea.", session_id="trip")
    service.add_batch(user, [TextInput(f"{name} plays chess on Sundays.", infer=False, session_id="trip"),
                             TextInput("I drink black coffee.", infer=False)])
    service.add_conversation(user, [ConversationTurn("user", f"My neighbour {name} is a pilot.")], session_id="talk")
    for _ in range(25):  # past the searches after which SQLite loads a user's indexes in process
        service.search(SearchRequest(user_id=user, query=f"Who is {name}?"))
    deadline = time.monotonic() + 30
    while service.storage.pending_jobs():
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)
    time.sleep(0.5)  # the loader thread's index loads
    assert service.communities.of(user)  # their titles and summaries are written from the facts
    records, _ = service.list_memories(user, MemoryFilters(), offset=0, limit=100)
    return [r.id for r in records if stem(reversed_name) in r.text.lower()]


def test_a_deletion_leaves_no_copy_of_its_text_in_the_process(service: MemoryService) -> None:
    ids = remember(service, "alice", NAME)
    assert len(ids) == 4  # the statement, the raw text, the batch's, the conversation's
    # Held before (else the check below proves nothing): the shapes, the names, the user's indexes,
    # the batch's stems of the current facts kept for the next batch.
    assert holders(stem(NAME)) == {"shape", "_alias_evidence", "AliasIndex", "VersionedCache", "Community", "KeptShapes"}

    assert service.delete("alice", ids) == 4
    assert reachable(stem(NAME)) == []  # at once: acknowledged means gone

    kept, _ = service.list_memories("alice", MemoryFilters(), offset=0, limit=100)
    assert sorted(r.text for r in kept) == ["I drink black coffee.", "User likes green tea."]
    hits = service.search(SearchRequest(user_id="alice", query="green tea"))
    assert [h.memory.text for h in hits][:1] == ["User likes green tea."]


def test_erasing_a_user_leaves_no_copy_of_their_text_in_the_process(service: MemoryService) -> None:
    remember(service, "bob", PET)
    remember(service, "carol", NAME)  # another user's text stays until it is deleted
    assert reachable(stem(PET))

    erased = service.delete_user("bob")
    assert erased["memories"] == 6
    assert reachable(stem(PET)) == []
    assert service.search(SearchRequest(user_id="carol", query="chess on Sundays"))[0].memory.text.endswith(
        "plays chess on Sundays."
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_another_process_deletion_empties_this_ones_caches(backend: str, tmp_path: Path, url: str | None, workers: int) -> None:
    """A server process deletes what this one wrote and searched: this one's caches let go of it
    by its job worker's next claim (about a second apart), its next search or write, or (SQLite,
    worker processes that watch each other) its watch. Its communities, built before, keep their
    words until its next build of them (only the process that deletes knows which)."""
    here = open_service(backend, tmp_path, url, workers=workers)
    try:
        ids = remember(here, "dana", NAME)
        assert reachable(stem(NAME))
        other = ServerProcess(Path(here.settings.database_path), database_url=url)
        other.start()
        try:
            response = httpx.request(
                "DELETE", f"{other.base_url}/api/v1/memories", json={"user_id": "dana", "memory_ids": ids}, timeout=30
            )
            assert (response.status_code, response.json()) == (200, {"message": "Deleted 4 memories"})
        finally:
            other.stop()
        # No search or write here meanwhile: the job worker's claims (or the watcher) notice.
        deadline = time.monotonic() + 5
        while left := [path for path in reachable(stem(NAME)) if "Community" not in path]:
            assert time.monotonic() < deadline, left
            time.sleep(0.1)
        assert holders(stem(NAME)) == {"Community"}
        assert here.communities.of("dana") == []  # built again: no fact left names anyone
        assert reachable(stem(NAME)) == []
        hits = here.search(SearchRequest(user_id="dana", query="green tea"))
        assert [h.memory.text for h in hits][:1] == ["User likes green tea."]
    finally:
        here.close()
        SERVICES.clear()

