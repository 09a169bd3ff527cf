"""The worker pools hand calls to threads and keep what the requests rely on: the caller's context
variables go with the call, a request cancelled while its call runs ends only once the call has,
a call not yet started is dropped, and a client that goes away cancels its write's budget."""

from __future__ import annotations

import asyncio
import threading
import time
from contextvars import ContextVar

from starlette.types import Message

from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.workers import WorkerPools

request_name: ContextVar[str | None] = ContextVar("request_name", default=None)


def test_a_call_runs_on_a_pool_thread_in_the_callers_context() -> None:
    async def run() -> tuple[str | None, str, str]:
        pools = WorkerPools(writes=1, reads=2)
        request_name.set("req-1")
        seen = await pools.read(lambda: (request_name.get(), threading.current_thread().name))
        written = await pools.write(lambda: threading.current_thread().name)
        return seen[0], seen[1], written

    name, read_thread, write_thread = asyncio.run(run())
    assert name == "req-1"
    assert read_thread.startswith("cortadel-read")
    assert write_thread.startswith("cortadel-write")


def test_a_cancelled_request_waits_for_its_running_call_and_drops_one_not_started() -> None:
    events: list[str] = []
    release = threading.Event()

    def slow() -> str:
        events.append("slow started")
        release.wait(5)
        time.sleep(0.05)
        events.append("slow ended")
        return "slow"

    def queued() -> str:
        events.append("queued ran")
        return "queued"

    async def run() -> None:
        pools = WorkerPools(writes=1, reads=1)
        running = asyncio.create_task(pools.write(slow))
        waiting = asyncio.create_task(pools.write(queued))  # behind `slow` in a pool of one
        while "slow started" not in events:
            await asyncio.sleep(0.01)
        running.cancel()
        waiting.cancel()
        await asyncio.sleep(0.05)
        assert not running.done()  # still waiting for `slow`, which is still running
        release.set()
        for task in (running, waiting):
            try:
                await task
            except asyncio.CancelledError:
                events.append("cancelled")
        await asyncio.sleep(0.1)  # time for the pool to start `queued`, were it still there

    asyncio.run(run())
    assert events == ["slow started", "slow ended", "cancelled", "cancelled"]


def test_a_client_that_goes_away_cancels_its_writes_budget() -> None:
    budget = WriteBudget()
    gone = asyncio.Event()

    async def receive() -> Message:
        await gone.wait()
        return {"type": "http.disconnect"}

    def write() -> bool:
        deadline = time.monotonic() + 5
        while not budget.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        return budget.cancelled

    async def run() -> bool:
        pools = WorkerPools(writes=1, reads=1)
        call = asyncio.create_task(pools.write(write, budget, receive))
        await asyncio.sleep(0.05)
        gone.set()
        return await call

    assert asyncio.run(run()) is True
