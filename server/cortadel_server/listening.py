"""The uvicorn server behind `cortadel serve`, which reports the port it bound once it listens.

With ``--port 0`` the operating system picks a free port; the caller learns it from the callback
(the CLI logs it and writes it to ``--port-file``), so a test harness never has to guess a free port.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn


class ListeningServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_listening: Callable[[int], None]) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:  # the app's startup ran and the socket accepts connections
            bound = self.servers[0].sockets[0].getsockname()
            self.on_listening(int(bound[1]))
