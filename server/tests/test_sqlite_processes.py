"""Several processes on one SQLite file: opening a new file at once (its migrations, and one that
fails), and handing the write lock on.

Each process is a real Python process running ``SqliteStorage`` on the same file (what worker
processes, replicas and a CLI command beside the server do).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import pytest

from cortadel_server.errors import StorageError
from cortadel_server.storage.migrations import MIGRATIONS
from cortadel_server.storage.sqlite import SqliteStorage

#: a process that opens the store once the file ``go`` exists, so every one opens at the same moment
OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from cortadel_server.storage.sqlite import SqliteStorage
data, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
SqliteStorage(data).close()
print("opened")
"""


def test_processes_opening_a_new_file_at_once_all_open_it_and_each_migration_runs_once(tmp_path: Path) -> None:
    """Each migration was read as pending outside the write lock: two processes opening a new file
    together both ran it, and the second failed on a table the first had made. Switching the new
    file to WAL while another process read it failed at once (no busy handler is asked there)."""
    for attempt in range(3):
        data, go = tmp_path / f"store-{attempt}.db", tmp_path / f"go-{attempt}"
        processes = [
            subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(data), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        time.sleep(1.5)  # every process has imported the package and waits for the file
        go.touch()
        ended = [(process.communicate(timeout=60), process.returncode) for process in processes]
        for (out, err), returncode in ended:
            assert (returncode, out.strip()) == (0, "opened"), err[-2000:]
        conn = apsw.Connection(str(data))
        names = [name for (name,) in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
        conn.close()
        assert names == sorted(step.name for step in MIGRATIONS)


def test_a_waiting_writer_takes_the_lock_within_milliseconds_of_its_release(tmp_path: Path) -> None:
    """Two stores on one file (two writer connections, as two processes have): the second waits
    while the first holds a write, and writes a few milliseconds after the first commits. SQLite's
    own wait sleeps 100 ms at a time by then: after a write of 0.24 s it slept on to 0.33 s."""
    first = SqliteStorage(tmp_path / "store.db")
    second = SqliteStorage(tmp_path / "store.db")
    try:
        late = []
        for _ in range(3):
            took: list[float] = []
            waiting = threading.Thread(target=_write_and_note, args=(second, took))
            with first.write("u1"):
                waiting.start()
                time.sleep(0.24)
            released = time.monotonic()
            waiting.join(10)
            late.append(took[0] - released)
        assert sorted(late)[1] < 0.03, late
        assert min(late) >= 0.0
    finally:
        first.close()
        second.close()


def _write_and_note(storage: SqliteStorage, took: list[float]) -> None:
    with storage.write("u2"):
        took.append(time.monotonic())


def test_a_writer_waits_up_to_its_timeout_then_fails_as_locked(tmp_path: Path) -> None:
    first = SqliteStorage(tmp_path / "store.db")
    second = SqliteStorage(tmp_path / "store.db", query_timeout=0.3)
    try:
        with first.write("u1"):
            started = time.monotonic()
            with pytest.raises(StorageError, match="database is locked"), second.write("u2"):
                pass
            waited = time.monotonic() - started
        assert 0.3 <= waited < 1.0
        with second.write("u2"):  # the lock came free: the next write goes through
            pass
    finally:
        first.close()
        second.close()


def test_a_migration_that_fails_leaves_nothing_of_itself_and_says_why(tmp_path: Path) -> None:
    """A step that fails is rolled back whole, is not recorded as done, and its error is the one raised."""
    conn = apsw.Connection(str(tmp_path / "store.db"))
    conn.execute("CREATE TABLE memories (id TEXT)")  # what the first step makes, made otherwise
    conn.close()
    with pytest.raises(StorageError, match="table memories already exists"):
        SqliteStorage(tmp_path / "store.db")
    conn = apsw.Connection(str(tmp_path / "store.db"))
    assert list(conn.execute("SELECT name FROM schema_migrations")) == []
    assert [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")] == [
        "memories", "schema_migrations",
    ]
    conn.close()
