"""Worker pools per kind of work, so that slow writes never starve health checks or searches.

    workers = WorkerPools(writes=4, reads=16)
    outcome = await workers.write(lambda: service.add(..., budget=budget), budget, request.receive)
    hits = await workers.read(service.search, search_request)
    health = await workers.health(service.health)

Sync routes all run in anyio's one default thread limiter (40 threads): 40 writes stuck on a slow LLM
held every thread, and a health check queued behind them. Here each kind of work has its own
CapacityLimiter. A write beyond `writes` waits in the event loop holding no thread; while it waits
or runs, its client is watched, and a disconnect cancels the request's WriteBudget so the pipeline
stops at its next safe point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.types import Receive

from cortadel_server.pipeline.budget import WriteBudget

__all__ = ["WorkerPools"]

T = TypeVar("T")
#: Health checks run at once; their own pool, so no queue of writes or searches delays them.
HEALTH_WORKERS = 4


class WorkerPools:
    def __init__(self, *, writes: int, reads: int) -> None:
        self._writes = anyio.CapacityLimiter(writes)
        self._reads = anyio.CapacityLimiter(reads)
        self._health = anyio.CapacityLimiter(HEALTH_WORKERS)

    async def write(self, call: Callable[[], T], budget: WriteBudget | None = None, receive: Receive | None = None) -> T:
        """Run `call` on a write worker; `receive` (the ASGI channel, its body already read) tells
        when the client goes away, which cancels `budget`."""
        failure: Exception | None = None
        async with anyio.create_task_group() as watch:
            if receive is not None and budget is not None:
                watch.start_soon(_cancel_on_disconnect, receive, budget)
            try:
                result = await anyio.to_thread.run_sync(call, limiter=self._writes)
            except Exception as exc:  # noqa: BLE001 - raised below, outside the task group that would wrap it
                failure = exc
            watch.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result

    async def read(self, call: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(call, *args, limiter=self._reads)

    async def health(self, call: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(call, limiter=self._health)


async def _cancel_on_disconnect(receive: Receive, budget: WriteBudget) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    budget.cancel()
