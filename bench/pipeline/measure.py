"""Timed write-pipeline requests against one running server.

    await ingest_throughput(api, convs, users=25, concurrency=8)   # from-conversation under load
    await conversation_latency(api, convs, users)                   # one request at a time
    await add_latency(api, texts, user_prefix="add")                # infer true and false, alternating
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from bench.client import BenchClient
from bench.stats import latency_summary


def _events(body: dict[str, Any]) -> list[str]:
    return [r.get("event") or "?" for r in body.get("results") or []]


async def ingest_throughput(api: BenchClient, convs: Sequence[list[dict[str, str]]], *, users: int, concurrency: int) -> dict[str, Any]:
    """Every conversation through from-conversation, ``concurrency`` in flight, spread over ``users`` users."""
    events: Counter[str] = Counter()
    latencies: list[float] = []
    empty = 0
    jobs: Iterator[tuple[int, list[dict[str, str]]]] = iter(enumerate(convs))

    async def worker() -> None:
        nonlocal empty
        for i, messages in jobs:
            t0 = time.perf_counter()
            body = await api.add_conversation(f"load-{i % users:03d}", messages)
            latencies.append(time.perf_counter() - t0)
            events.update(_events(body))
            empty += bool(body.get("no_facts_extracted"))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    turns = sum(len(c) for c in convs)
    return {
        "conversations": len(convs), "turns": turns, "users": users, "concurrency": concurrency, "seconds": round(seconds, 2),
        "turns_per_second": round(turns / seconds, 1), "conversations_per_second": round(len(convs) / seconds, 1),
        "events": dict(events), "no_facts_extracted": empty, "latency_under_load": latency_summary(latencies),
    }


async def conversation_latency(api: BenchClient, convs: Sequence[list[dict[str, str]]], users: Sequence[str], *, warmup: int = 5) -> dict[str, Any]:
    """from-conversation one request at a time, users taken in turn; the first ``warmup`` are not counted."""
    seconds: list[float] = []
    events: Counter[str] = Counter()
    for i, messages in enumerate(convs):
        t0 = time.perf_counter()
        body = await api.add_conversation(users[i % len(users)], messages)
        if i >= warmup:
            seconds.append(time.perf_counter() - t0)
            events.update(_events(body))
    return {**latency_summary(seconds), "turns": len(convs[0]) if convs else 0, "events": dict(events)}


async def add_latency(api: BenchClient, texts: Sequence[str], *, user_prefix: str, warmup: int = 5) -> dict[str, Any]:
    """Each text added with infer false and with infer true (each into its own user), alternating,
    one request at a time, so both see the same moments of a busy machine."""
    seconds: dict[bool, list[float]] = {False: [], True: []}
    events: dict[bool, Counter[str]] = {False: Counter(), True: Counter()}
    for i, text in enumerate(texts):
        for infer in (False, True) if i % 2 else (True, False):
            t0 = time.perf_counter()
            created = await api.add(f"{user_prefix}-{'infer' if infer else 'verbatim'}", text, infer=infer)
            if i >= warmup:
                seconds[infer].append(time.perf_counter() - t0)
                events[infer][created.get("event") or "?"] += 1
    return {f"infer_{str(infer).lower()}": {**latency_summary(seconds[infer]), "events": dict(events[infer])} for infer in (False, True)}
