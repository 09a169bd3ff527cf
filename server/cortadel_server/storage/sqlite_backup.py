"""Online backups of the SQLite database, and restoring one, through SQLite's backup API.

    copy = backup_database(Path("data/cortadel.db"), Path("cortadel-2026-11-30.db"))  # server running
    copy.memories, copy.bytes
    restore_database(Path("cortadel-2026-11-30.db"), Path("data/cortadel.db"))          # server stopped

A backup opens its own connection and copies every page in one step, that is inside one read
transaction: in WAL mode the server's writes go on meanwhile, and the copy is the database as of
the instant the step began — every write acknowledged before then, none half-done. (A copy in
chunks starts over whenever another connection writes, so under steady writes it might never end.)
The copy is written next to its destination and renamed into place, so a file at that path is
always a whole backup.

A restore replaces the database file, so it refuses while any process has that database open:
a running server keeps a connection on it, which holds a lock a probe for an exclusive lock meets.
"""

from __future__ import annotations

import os
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import apsw

from cortadel_server.errors import StorageError

#: how long the copy waits for the database when a checkpoint briefly holds it
BUSY_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class BackupCopy:
    path: Path
    bytes: int
    memories: int
    seconds: float


def backup_database(database: Path, target: Path) -> BackupCopy:
    """Copy ``database`` to ``target`` (replacing it) while the server may be writing."""
    if not database.is_file():
        raise StorageError(f"no database at {database} to back up")
    if target.resolve() == database.resolve():
        raise StorageError(f"the backup would overwrite the database itself ({database}): name another file")
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = _copy(database, target)
    partial.replace(target)
    return BackupCopy(target, target.stat().st_size, _memories_in(target), round(time.monotonic() - started, 3))


def restore_database(backup: Path, database: Path) -> BackupCopy:
    """Put ``backup`` in place of ``database`` (which no process may have open)."""
    if not backup.is_file():
        raise StorageError(f"no backup at {backup}")
    _memories_in(backup)  # a Cortadel database, readable, before anything is replaced
    database.parent.mkdir(parents=True, exist_ok=True)
    if database.exists() and _in_use(database):
        raise StorageError(
            f"{database} is open in another process (a running `cortadel serve`?): stop it first, "
            f"or restore into a new file (--data NEW.db) and start the server on that"
        )
    started = time.monotonic()
    partial = _copy(backup, database)
    # The old database's WAL and shared-memory files belong to the file being replaced.
    for leftover in (Path(f"{database}-wal"), Path(f"{database}-shm")):
        leftover.unlink(missing_ok=True)
    partial.replace(database)
    return BackupCopy(database, database.stat().st_size, _memories_in(database), round(time.monotonic() - started, 3))


def _copy(source: Path, target: Path) -> Path:
    """Copy ``source`` into a new file beside ``target``, in one backup step; returns that file."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        # closing(): an apsw connection used as a context manager is a transaction, not its lifetime
        with closing(_open(source)) as reading, closing(apsw.Connection(str(partial))) as writing:
            with writing.backup("main", reading, "main") as copy:
                while not copy.done:
                    copy.step(-1)  # every page at once: one consistent snapshot
            # One self-contained file: no WAL beside the copy.
            writing.execute("PRAGMA journal_mode=DELETE")
            check = next(writing.execute("PRAGMA quick_check"))[0]
            if check != "ok":
                raise StorageError(f"the copy of {source} fails SQLite's check: {check}")
        with partial.open("rb") as written:
            os.fsync(written.fileno())
    except apsw.Error as exc:
        partial.unlink(missing_ok=True)
        raise StorageError(f"copying {source} failed: {exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return partial


def _open(path: Path) -> apsw.Connection:
    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)  # never creates a file
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    return connection


def _memories_in(path: Path) -> int:
    try:
        with closing(_open(path)) as connection:
            return int(next(connection.execute("SELECT count(*) FROM memories"))[0])
    except apsw.Error as exc:
        raise StorageError(f"{path} is not a readable Cortadel database: {exc}") from exc


def _in_use(database: Path) -> bool:
    """Whether another connection has ``database`` open: in WAL mode each one holds a shared lock
    for as long as it is open, so an exclusive lock is refused at once."""
    with closing(_open(database)) as probe:
        probe.set_busy_timeout(0)
        try:
            probe.execute("PRAGMA locking_mode=EXCLUSIVE")
            probe.execute("BEGIN EXCLUSIVE")
            probe.execute("COMMIT")
        except apsw.BusyError:
            return True
    return False
