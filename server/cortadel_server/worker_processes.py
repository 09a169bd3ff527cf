"""``cortadel serve --workers N``: one port served by N worker processes.

One process runs Python on one core at a time; worker processes put the other cores to work. The
``cortadel serve`` process opens the store once (migrations, the dimension guard: a bad start
fails there with its one line, before any worker runs), binds one listening socket a worker on the
port (``SO_REUSEPORT``: the kernel spreads new connections over them evenly, where a single shared
socket let whichever worker woke first accept a whole burst of them — all eight of a client's
pool, in three runs of four), then supervises the workers. Each worker is a spawned interpreter
(uvicorn's ``Process``: a health ping over a pipe) that builds the app from the same ``Settings``
and serves its socket. A worker that dies or stops answering is replaced on the same socket, whose
queue holds the connections meanwhile; SIGTERM and SIGINT stop every worker (each shuts down
gracefully), then the parent. Workers share the database: on SQLite the file's write lock and
user versions keep them one server (storage/sqlite.py), and the job queue knows which process
claimed what (storage/sqlite_claims.py). They also share a directory of the supervisor's, made
at start and removed at exit, where each keeps its metrics and recent errors, so that a scrape
on any of them answers for the server (worker_metrics.py).
"""

from __future__ import annotations

import functools
import logging
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Process

from cortadel_server.config import Settings
from cortadel_server.errors import ConfigError
from cortadel_server.listening import uvicorn_config
from cortadel_server.logs import configure_logging

__all__ = ["WorkerSupervisor", "listening_sockets", "serve_workers", "worker_app"]

log = logging.getLogger("cortadel")

#: seconds a worker may take to build its app (load the embedder, open the store) and listen
WORKER_START_SECONDS = 120.0
#: how often the supervisor checks on the workers, and how long a worker may take to answer
CHECK_SECONDS = 0.5
PING_SECONDS = 5.0


def worker_app(settings: Settings, metrics: Path) -> FastAPI:
    """The app of one worker process (called there, by uvicorn, as the app factory), keeping its
    metrics in the workers' shared directory ``metrics``."""
    from cortadel_server.server import build_app
    from cortadel_server.worker_metrics import share_across_processes

    configure_logging(settings)  # the parent's handlers are not inherited by a spawned process
    share_across_processes(metrics)
    return build_app(settings)


def listening_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` sockets bound to one port (the first picks it when ``port`` is 0), each to be
    listened on by one worker. Their protocol is set: asyncio switches Nagle's algorithm off
    (TCP_NODELAY) only on connections of a socket that names TCP, and uvicorn's own bind leaves it
    0, which cost every response about 40 ms waiting for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sockets: list[socket.socket] = []
    try:
        if port:
            # SO_REUSEPORT would also let these join another server's sockets on the port (its own
            # workers): a plain bind first fails on any port in use, as one process's would.
            with socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            port = sock.getsockname()[1]
            sock.set_inheritable(True)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ConfigError(f"CORTADEL_HOST/CORTADEL_PORT: cannot listen on {host}:{port}: {exc.strerror}") from None
    return sockets


class WorkerSupervisor:
    """Keeps one worker process serving each socket until SIGTERM or SIGINT."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], on_listening: Callable[[int], None]) -> None:
        self.config = config
        self.sockets = sockets
        self.on_listening = on_listening
        self.should_exit = threading.Event()
        self.processes: list[Process] = []
        #: a worker exited before it served: the app cannot start, and would not on a retry either
        self.failed_to_start = False

    def _start(self, index: int) -> Process:
        process = Process(self.config, [self.sockets[index]])
        process.start()
        return process

    def run(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.should_exit.set())
        self.processes = [self._start(i) for i in range(len(self.sockets))]
        if all(p.wait_until_ready(WORKER_START_SECONDS, self.should_exit) for p in self.processes):
            self.on_listening(int(self.sockets[0].getsockname()[1]))
        while not self.should_exit.wait(CHECK_SECONDS):
            self._replace_dead()
        log.info("stopping %d worker processes", len(self.processes))
        for process in self.processes:
            process.terminate()  # SIGTERM: each finishes its requests in flight and closes the store
        for process in self.processes:
            process.join()

    def _replace_dead(self) -> None:
        for index, process in enumerate(self.processes):
            if process.is_alive(timeout=PING_SECONDS):
                continue
            process.kill()  # gone, or hung: it did not answer the ping
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                log.error("worker %s failed to start: stopping", process.pid)
                self.failed_to_start = True
                self.should_exit.set()
                return
            log.warning("worker %s ended (exit code %s): starting another", process.pid, process.exitcode)
            self.processes[index] = self._start(index)


def serve_workers(settings: Settings, on_listening: Callable[[int], None]) -> int:
    """Serve with ``settings.workers`` processes; the exit code of ``cortadel serve``."""
    sockets = listening_sockets(settings.host, settings.port, settings.workers)
    metrics = Path(tempfile.mkdtemp(prefix="cortadel-metrics-"))  # new, so no earlier run's counts
    try:
        app = functools.partial(worker_app, settings, metrics)  # pickled into each spawned worker
        supervisor = WorkerSupervisor(uvicorn_config(app, settings, factory=True), sockets, on_listening)
        supervisor.run()
    finally:
        shutil.rmtree(metrics, ignore_errors=True)
    return STARTUP_FAILURE if supervisor.failed_to_start else 0
