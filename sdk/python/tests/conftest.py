from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Union

import pytest

from cortadel import CortadelClient, SyncCortadelClient

REPO = Path(__file__).resolve().parents[3]
PUBLISHED_DIR = Path(os.environ.get("CORTADEL_PUBLISHED_DIR", REPO / ".cache" / "cortadel-published"))
PUBLISHED_VERSION = "1.2.0"
AUTH_SECRET = "sdk-python-test-secret"


class AsyncDriver:
    """Runs a ``CortadelClient`` on a private event loop so one test body can drive both
    clients; every method call blocks until the coroutine finishes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self.client = CortadelClient(*args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)
        return lambda *a, **k: self._loop.run_until_complete(method(*a, **k))

    def close(self) -> None:
        self._loop.run_until_complete(self.client.aclose())
        self._loop.close()


Client = Union[AsyncDriver, SyncCortadelClient]
Connect = Callable[..., Client]


@pytest.fixture(params=["async", "sync"])
def connect(request: pytest.FixtureRequest) -> Iterator[Connect]:
    """``connect(base_url, user_id, **options)`` opens the async or the sync client."""
    opened: list[Client] = []

    def open_client(*args: Any, **kwargs: Any) -> Client:
        client: Client = AsyncDriver(*args, **kwargs) if request.param == "async" else SyncCortadelClient(*args, **kwargs)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()


@pytest.fixture
def user() -> str:
    return f"sdk-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def server() -> Iterator[Any]:
    from cortadel_server.testing import running_server

    with running_server() as running:
        yield running


@pytest.fixture(scope="session")
def auth_server() -> Iterator[Any]:
    from cortadel_server.testing import running_server

    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET}) as running:
        yield running


@pytest.fixture(scope="session")
def published_cortadel() -> Path:
    """The published ``cortadel`` package, installed into its own folder (it shares our import
    name). Installed from PyPI the first time, then reused."""
    if not (PUBLISHED_DIR / "cortadel" / "client.py").is_file():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--target", str(PUBLISHED_DIR), f"cortadel=={PUBLISHED_VERSION}"],
            check=True,
        )
    return PUBLISHED_DIR
