"""Helpers shared by the SDK tests: where things are, and one way to drive both clients."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cortadel import CortadelClient, SyncCortadelClient

REPO = Path(__file__).resolve().parents[3]
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


Client = AsyncDriver | SyncCortadelClient
Connect = Callable[..., Client]
