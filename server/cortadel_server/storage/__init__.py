"""Storage backends behind one interface; ``open_storage`` picks one from the settings."""

from __future__ import annotations

from cortadel_server.config import Settings
from cortadel_server.storage.base import Storage


def open_storage(settings: Settings) -> Storage:
    from cortadel_server.storage.sqlite import SqliteStorage

    return SqliteStorage(settings.database_path, query_timeout=settings.query_timeout)


__all__ = ["Storage", "open_storage"]
