"""A throwaway PostgreSQL for test suites: the ``pgserver`` wheel (PostgreSQL 16 + pgvector),
started once per process in a temporary folder and deleted at exit; each caller gets a database
of its own.

    url = scratch_database()   # postgresql://postgres:@/cortadel_3f2a…?host=/tmp/cortadel-pg-…

:func:`record_statements` has the server log every statement it runs, for the SQL audit
(server/tests/test_postgres_sql_audit.py).
"""

from __future__ import annotations

import tempfile
import threading
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_server: Any = None


def postgres_server() -> Any:
    """The process's PostgreSQL server (a ``pgserver.PostgresServer``), started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = _start()
        return _server


def _start() -> Any:
    with warnings.catch_warnings():
        # pgserver asks platformdirs for a runtime folder it does not need here.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from pgserver.postgres_server import get_server

        # A short folder: the server's Unix socket lives in it (paths are capped at 107 bytes).
        folder = tempfile.mkdtemp(prefix="cortadel-pg-", dir="/tmp")
        return get_server(folder, cleanup_mode="delete")


@contextmanager
def own_postgres_server() -> Iterator[Any]:
    """A PostgreSQL server of the caller's alone, one it may stop and start (:func:`restart`,
    :func:`stopped`);
    deleted afterwards."""
    server = _start()
    try:
        yield server
    finally:
        server.cleanup()


@contextmanager
def stopped(server: Any) -> Iterator[None]:
    """``server`` stopped as a crash would (``pg_ctl stop -m immediate``: no checkpoint, recovery
    from the WAL at the next start) while the block runs, and started again when it ends, however
    it ends.

        with stopped(pg):
            ...   # the database is down: wait here for what should happen meanwhile
    """
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, by name

    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user)
    try:
        yield
    finally:
        server.ensure_postgres_running()


def scratch_database(prefix: str = "cortadel", server: Any = None) -> str:
    """The URL of a new, empty database on ``server`` (default: the process's server)."""
    server = server or postgres_server()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    server.psql(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))


#: the start of every line of the server's log that begins a record: ``<<database|application>> ``
LOG_LINE_PREFIX = "<<%d|%a>> "


def record_statements() -> Path:
    """Have the process's server log every statement it is sent, each record prefixed by
    :data:`LOG_LINE_PREFIX`, and return its log file. The database's own log, not a hook in the
    backend: it holds every statement of every server process, whatever path in the code sent it."""
    server = postgres_server()
    server.psql("ALTER SYSTEM SET log_statement = 'all'")
    server.psql(f"ALTER SYSTEM SET log_line_prefix = '{LOG_LINE_PREFIX}'")
    server.psql("SELECT pg_reload_conf()")
    return Path(server.log)
