"""The uvicorn server behind `cortadel serve`, which reports the port it bound once it listens, and
the uvicorn configuration it runs with.

With ``--port 0`` the operating system picks a free port; the caller learns it from the callback
(the CLI logs it and writes it to ``--port-file``), so a test harness never has to guess a free port.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from cortadel_server.config import Settings


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """How `cortadel serve` runs uvicorn, in one process or in each worker (worker_processes.py)."""
    # httptools, not uvicorn's pure-Python h11: about 0.3 ms less CPU a request (docs/performance.md).
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level,
                          access_log=False, log_config=None, http="httptools", **options)


class ListeningServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_listening: Callable[[int], None]) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:  # the app's startup ran and the socket accepts connections
            bound = self.servers[0].sockets[0].getsockname()
            self.on_listening(int(bound[1]))
