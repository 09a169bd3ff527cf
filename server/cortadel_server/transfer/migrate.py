"""Moving a store: the export of one store streamed into another (`cortadel migrate --from --to`).

The same lines as `cortadel export` and `cortadel import`, without the file. Resumable: each user is
marked in the target as its transaction commits, so a run started again after an interruption skips
the users already copied. At the end every user's rows are counted on both sides. Run it with the
servers stopped (or the source not written): a write during the copy would show as a mismatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cortadel_server.errors import TransferError
from cortadel_server.storage.base import Storage
from cortadel_server.transfer.dump import export_lines
from cortadel_server.transfer.load import ImportReport, import_lines

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_location(location: str) -> Storage:
    """A store from a ``postgresql://`` URL, a ``sqlite:///path`` URL or a plain SQLite file path."""
    if location.startswith(POSTGRES_SCHEMES):
        from cortadel_server.storage.postgres import PostgresStorage

        return PostgresStorage(location, max_connections=2)
    from cortadel_server.storage.sqlite import SqliteStorage

    return SqliteStorage(Path(location.removeprefix("sqlite://")))


@dataclass(frozen=True)
class Migration:
    imported: ImportReport
    #: users on both sides after the copy (all verified)
    users: int
    #: memories the target holds for them
    memories: int


def migrate_store(source: Storage, target: Storage, progress: Callable[[int], object] | None = None) -> Migration:
    """Copy every user of ``source`` that ``target`` has not taken yet, then verify all of them."""
    label = f"migrate:{source.backend}:{source.location}"
    done = target.transfer_checkpoints(label)
    users = source.transfer_users()
    pending = [user for user in users if user not in done]
    if progress is not None and len(pending) < len(users):
        progress(sum(source.user_row_counts(user)["memories"] for user in users if user in done))
    lines = enumerate(export_lines(source, pending, progress), start=1)
    report = import_lines(target, lines, source=label)
    report.resumed.extend(sorted(done & set(users)))
    mismatched = []
    memories = 0
    for user in users:
        have, want = target.user_row_counts(user), source.user_row_counts(user)
        memories += have["memories"]
        if have != want:
            mismatched.append(f"{user!r}: source {want}, target {have}")
    if mismatched:
        raise TransferError("migrate: counts differ after the copy (was the source written meanwhile?): " + "; ".join(mismatched))
    return Migration(report, len(users), memories)
