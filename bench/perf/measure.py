"""The measurements of the performance bench, each against one running server.

    loaded = await load(api, ["user-000", "user-001"], per_user=1000, seed=0)
    search = await search_latency(api, users, queries)          # one request at a time
    rate = await search_throughput(api, users, queries, clients=8, seconds=15)
    adds = await add_latency(api, "user-000", n=200)            # one request at a time

Loading adds ``infer: false`` memories through ``POST /api/v1/memories`` with bounded concurrency
until every user holds ``per_user`` stored memories: deduplication may answer SKIP_DUPLICATE for a
sentence too close to one already stored, so loading draws further sentences until the count of
``ADD`` events reaches the target.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.client import BenchClient, Searcher, server_phase_seconds
from bench.errors import BenchError
from bench.perf.corpus import sentences
from bench.stats import latency_summary


@dataclass
class LoadResult:
    stored: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        requests = sum(self.events.values())
        return {
            "memories": sum(self.stored.values()),
            "requests": requests,
            "events": dict(self.events),
            "seconds": round(self.seconds, 1),
            "adds_per_second": round(requests / self.seconds, 1) if self.seconds else None,
            "add_latency_under_load": latency_summary(self.latencies),
        }


class Loader:
    """Keeps each user's sentence stream across calls, so loading can grow a user in steps."""

    def __init__(self, api: BenchClient, *, seed: int = 0, concurrency: int = 8, progress: Callable[[str], None] | None = None) -> None:
        self._api = api
        self._progress = progress
        self._seed = seed
        self._concurrency = concurrency
        self._streams: dict[str, Iterator[str]] = {}
        self.result = LoadResult()

    def next_sentence(self, user: str) -> str:
        if user not in self._streams:
            self._streams[user] = sentences(user, self._seed)
        return next(self._streams[user])

    async def fill(self, users: Sequence[str], per_user: int, *, max_rounds: int = 10) -> None:
        """Add memories, users interleaved, until each of ``users`` has ``per_user`` of them stored."""
        started = time.perf_counter()
        for _ in range(max_rounds):
            missing = {u: per_user - self.result.stored[u] for u in users if self.result.stored[u] < per_user}
            if not missing:
                break
            jobs = iter([(u, self.next_sentence(u)) for i in range(max(missing.values())) for u in users if i < missing.get(u, 0)])
            await asyncio.gather(*(self._worker(jobs) for _ in range(self._concurrency)))
        self.result.seconds += time.perf_counter() - started

    async def _worker(self, jobs: Iterator[tuple[str, str]]) -> None:
        for user, text in jobs:
            t0 = time.perf_counter()
            created = await self._api.add(user, text, infer=False)
            self.result.latencies.append(time.perf_counter() - t0)
            event = created.get("event") or "?"
            self.result.events[event] += 1
            if event == "ADD":
                self.result.stored[user] += 1
            requests = sum(self.result.events.values())
            if self._progress and requests % 10_000 == 0:
                self._progress(f"  {requests:,} adds sent, {sum(self.result.stored.values()):,} stored")


async def search_latency(api: BenchClient, users: Sequence[str], queries: Sequence[str], *, warmup: int = 20) -> dict[str, Any]:
    """Hybrid searches one at a time, users taken in turn; p50/p95 of the wall-clock time.

    ``server_phases`` summarises the server's own timing of its retrieval phases for the same
    requests; the gap to the wall-clock figures is HTTP, JSON, record loading and scheduling.
    """
    seconds: list[float] = []
    phases: list[float] = []
    hits = 0
    for i, query in enumerate([*queries[:warmup], *queries]):
        results, elapsed = await api.search(users[i % len(users)], query, top_k=10, mode="hybrid")
        if i >= warmup:
            seconds.append(elapsed)
            hits += len(results)
            if (phase := server_phase_seconds(results)) is not None:
                phases.append(phase)
    return {**latency_summary(seconds), "mean_results": round(hits / len(queries), 2), "server_phases": latency_summary(phases)}


async def search_throughput(api: Searcher | Sequence[Searcher], users: Sequence[str], queries: Sequence[str], *, clients: int = 8,
                            seconds: float = 15.0, hits: int | None = None) -> dict[str, Any]:
    """``clients`` concurrent loops of hybrid searches (top 10) for ``seconds``; completed searches per
    second. Given several senders (clients of replicas of one store, or a connection per loop), loop
    c sends through sender c mod their count. With ``hits``, a search that finds another number of
    them ends the run (``BenchError``): a server answering wrong must not look fast."""
    apis = list(api) if isinstance(api, Sequence) else [api]
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []

    async def client(offset: int) -> None:
        i = offset
        while time.perf_counter() < deadline:
            query = queries[i % len(queries)]
            results, elapsed = await apis[offset % len(apis)].search(users[i % len(users)], query, top_k=10, mode="hybrid")
            if hits is not None and len(results) != hits:
                raise BenchError(f"a search for {query!r} found {len(results)} memories, not {hits}")
            latencies.append(elapsed)
            i += clients

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    return {"clients": clients, "senders": len(apis), "seconds": round(elapsed, 1), "searches": len(latencies),
            "searches_per_second": round(len(latencies) / elapsed, 1), "latency": latency_summary(latencies)}


async def add_latency(loader: Loader, api: BenchClient, user: str, n: int) -> dict[str, Any]:
    """``n`` adds of fresh sentences for ``user``, one at a time."""
    seconds: list[float] = []
    events: Counter[str] = Counter()
    for _ in range(n):
        t0 = time.perf_counter()
        created = await api.add(user, loader.next_sentence(user), infer=False)
        seconds.append(time.perf_counter() - t0)
        events[created.get("event") or "?"] += 1
    return {**latency_summary(seconds), "events": dict(events)}
