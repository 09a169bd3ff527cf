"""Worker pools per kind of work, so that slow writes never starve health checks or searches.

    workers = WorkerPools(writes=4, reads=16)
    outcome = await workers.write(lambda: service.add(..., budget=budget), budget, request.receive)
    hits = await workers.read(service.search, search_request)
    health = await workers.health(service.health)

Sync routes all run in anyio's one default thread limiter (40 threads): 40 writes stuck on a slow LLM
held every thread, and a health check queued behind them. Here each kind of work has its own
thread pool. A write beyond `writes` waits in the pool's queue holding no thread; while it waits
or runs, its client is watched, and a disconnect cancels the request's WriteBudget so the pipeline
stops at its next safe point.

The pools are ``concurrent.futures`` executors handed work by the event loop directly: anyio's
``to_thread.run_sync`` with a capacity limiter cost up to twice the CPU and wall clock of a
hand-off and back (docs/performance.md), and every search pays one. The caller's context variables
go with the call (as anyio copied them), and a request cancelled while its call runs ends only once
the call has (one not yet started is dropped), so no call outlives the request that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.types import Receive

from cortadel_server.pipeline.budget import WriteBudget

__all__ = ["WorkerPools"]

T = TypeVar("T")
#: Health checks run at once; their own pool, so no queue of writes or searches delays them.
HEALTH_WORKERS = 4


class WorkerPools:
    def __init__(self, *, writes: int, reads: int) -> None:
        self._writes = ThreadPoolExecutor(writes, thread_name_prefix="cortadel-write")
        self._reads = ThreadPoolExecutor(reads, thread_name_prefix="cortadel-read")
        self._health = ThreadPoolExecutor(HEALTH_WORKERS, thread_name_prefix="cortadel-health")

    async def write(self, call: Callable[[], T], budget: WriteBudget | None = None, receive: Receive | None = None) -> T:
        """Run `call` on a write worker; `receive` (the ASGI channel, its body already read) tells
        when the client goes away, which cancels `budget`."""
        if receive is None or budget is None:
            return await _run(self._writes, call)
        # A plain task, not an anyio task group: the group's setup and teardown cost more than the
        # hand-off itself on every add.
        watcher = asyncio.create_task(_cancel_on_disconnect(receive, budget))
        try:
            return await _run(self._writes, call)
        finally:
            watcher.cancel()

    async def read(self, call: Callable[..., T], *args: Any) -> T:
        return await _run(self._reads, call, *args)

    async def health(self, call: Callable[[], T]) -> T:
        return await _run(self._health, call)


async def _run(pool: ThreadPoolExecutor, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` on a thread of ``pool``, in a copy of the caller's context."""
    submitted = pool.submit(contextvars.copy_context().run, call, *args)
    done = asyncio.wrap_future(submitted)
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        if not submitted.cancel():  # already running: the request ends once its call has
            while not done.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([done])
        raise


async def _cancel_on_disconnect(receive: Receive, budget: WriteBudget) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    budget.cancel()
