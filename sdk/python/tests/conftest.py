from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sdk_support import AUTH_SECRET, PUBLISHED_VERSION, AsyncDriver, Client, Connect

from cortadel import SyncCortadelClient


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
    name). Installed from PyPI the first time, then reused from the user's cache, one folder per
    version (CORTADEL_PUBLISHED_DIR overrides the folder)."""
    from cortadel_server.testing import cache_root, cached_folder

    default = cache_root() / "published-sdk" / f"cortadel-{PUBLISHED_VERSION}"

    def install(folder: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--target", str(folder), f"cortadel=={PUBLISHED_VERSION}"],
            check=True,
        )

    return cached_folder(Path(os.environ.get("CORTADEL_PUBLISHED_DIR", default)), install)
