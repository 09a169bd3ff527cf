"""Storage backends behind one interface; ``open_storage`` picks one from the settings: PostgreSQL
when ``CORTADEL_DATABASE_URL`` is a ``postgresql://`` URL, else the SQLite file (the default)."""

from __future__ import annotations

from cortadel_server.config import Settings
from cortadel_server.storage.base import Storage


def open_storage(settings: Settings) -> Storage:
    url = settings.postgres_url
    if url is not None:
        from cortadel_server.storage.postgres import PostgresStorage

        # A connection for every request thread that may hold one, and one for the job worker.
        connections = settings.read_workers + settings.write_workers + 1
        return PostgresStorage(url, query_timeout=settings.query_timeout, max_connections=connections)
    from cortadel_server.storage.sqlite import WATCH_SECONDS, SqliteStorage

    # Worker processes on one file: each keeps its cached indexes caught up with the others' writes.
    watch = WATCH_SECONDS if settings.workers > 1 else 0.0
    return SqliteStorage(settings.database_path, query_timeout=settings.query_timeout, watch_seconds=watch)


__all__ = ["Storage", "open_storage"]
