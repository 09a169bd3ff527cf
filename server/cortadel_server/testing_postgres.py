"""A throwaway PostgreSQL for test suites: the ``pgserver`` wheel (PostgreSQL 16 + pgvector),
started once per process in a temporary folder and deleted at exit; each caller gets a database
of its own.

    url = scratch_database()   # postgresql://postgres:@/cortadel_3f2a…?host=/tmp/cortadel-pg-…
"""

from __future__ import annotations

import tempfile
import threading
import uuid
import warnings
from typing import Any

_lock = threading.Lock()
_server: Any = None


def postgres_server() -> Any:
    """The process's PostgreSQL server (a ``pgserver.PostgresServer``), started on first use."""
    global _server
    with _lock:
        if _server is None:
            with warnings.catch_warnings():
                # pgserver asks platformdirs for a runtime folder it does not need here.
                warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
                from pgserver.postgres_server import get_server

                # A short folder: the server's Unix socket lives in it (paths are capped at 107 bytes).
                folder = tempfile.mkdtemp(prefix="cortadel-pg-", dir="/tmp")
                _server = get_server(folder, cleanup_mode="delete")
        return _server


def scratch_database(prefix: str = "cortadel") -> str:
    """The URL of a new, empty database on the process's server."""
    server = postgres_server()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    server.psql(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))
