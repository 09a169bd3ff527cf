"""Shared fixtures: real servers on loopback, started once per session and storage backend.

Every test that uses ``server``, ``auth_server`` or ``api``, or asks for ``backend`` itself, runs
once per storage backend: on a SQLite file, and on a database of the PostgreSQL the session starts
(cortadel_server.testing_postgres). ``--backend`` (default: ``$CORTADEL_TEST_BACKEND``, else
``both``) picks one. On PostgreSQL, the database logs every statement it is sent, for the SQL
audit (test_postgres_sql_audit.py) that runs last.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from cortadel_server import testing_postgres
from cortadel_server.testing import BACKENDS, ServerProcess, database_for, running_server

AUTH_SECRET = "test-secret-please-change"
#: the test that reads the statements every other test sent to PostgreSQL: it runs last
AUDIT_MODULE = "test_postgres_sql_audit.py"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend", choices=[*BACKENDS, "both"], default=os.environ.get("CORTADEL_TEST_BACKEND", "both"),
        help="the storage backend(s) the server tests run on (default: $CORTADEL_TEST_BACKEND, else both)",
    )


def chosen_backends(config: pytest.Config) -> list[str]:
    chosen = str(config.getoption("--backend"))
    return list(BACKENDS) if chosen == "both" else [chosen]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        # Session scope: pytest groups the tests by backend, so each backend's servers start once.
        metafunc.parametrize("backend", chosen_backends(metafunc.config), indirect=True, scope="session")


@pytest.hookimpl(trylast=True)  # after pytest has grouped the tests by backend
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name == AUDIT_MODULE)  # stable: every other test keeps its place
    # Run in parallel (`-n 2 --dist loadgroup`, as `make test` does), every test that talks to the
    # process's PostgreSQL goes to one worker, in this order, so the audit there reads them all.
    for item in items:
        if _on_postgres(item):
            item.add_marker(pytest.mark.xdist_group("postgres"))


def _on_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("backend") if callspec is not None else None
    if backend is not None:
        return bool(backend == "postgres")
    module = getattr(item, "module", None)  # a module that makes databases of its own there
    return module is not None and any(
        getattr(value, "__module__", None) == testing_postgres.__name__ for value in vars(module).values()
    )


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend of this test's servers: "sqlite" or "postgres"."""
    name: str = request.param
    if name == "postgres":
        testing_postgres.record_statements()
    return name


@pytest.fixture(scope="session")
def server(backend: str) -> Iterator[ServerProcess]:
    """An open server (no auth secret) with the default embedded configuration."""
    with running_server(database_url=database_for(backend)) as srv:
        yield srv


@pytest.fixture(scope="session")
def auth_server(backend: str) -> Iterator[ServerProcess]:
    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET}, database_url=database_for(backend)) as srv:
        yield srv


@pytest.fixture()
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


@pytest.fixture()
def user(request: pytest.FixtureRequest) -> str:
    """A user id unique to the test, so tests sharing a server never see each other's memories.
    The same on every backend (each has a database of its own): the backend's id leaves the name."""
    name = request.node.name
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "backend" in callspec.params:
        backend = callspec.params["backend"]
        name = name.replace(f"[{backend}]", "").replace(f"[{backend}-", "[")  # pytest puts it first
    return f"user-{name}"
