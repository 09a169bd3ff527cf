"""Shared fixtures: real servers on loopback, started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from cortadel_server.testing import ServerProcess, running_server

AUTH_SECRET = "test-secret-please-change"


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """An open server (no auth secret) with the default embedded configuration."""
    with running_server() as srv:
        yield srv


@pytest.fixture(scope="session")
def auth_server() -> Iterator[ServerProcess]:
    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET}) as srv:
        yield srv


@pytest.fixture()
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


@pytest.fixture()
def user(request: pytest.FixtureRequest) -> str:
    """A user id unique to the test, so tests sharing a server never see each other's memories."""
    return f"user-{request.node.name}"
