"""The two performance scenarios, each on a fresh server.

single-user: one user grows to ``per_user`` memories (search measured there: the "one user's 1k
alone" baseline), then to ``large`` memories (search, throughput, add latency, RSS, disk).
many-users: ``users`` users with ``per_user`` memories each (the same measurements).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.perf.corpus import queries
from bench.perf.measure import Loader, add_latency, search_latency, search_throughput
from bench.server import RunningServer, ServerConfig, start_server


@dataclass(frozen=True)
class Sizes:
    large: int  # memories of the single user
    users: int  # users in the many-users store
    per_user: int  # memories per user there, and the single-user baseline size
    queries: int  # sequential searches per latency measurement
    throughput_seconds: float
    adds: int  # sequential adds per latency measurement
    load_concurrency: int = 8
    clients: int = 8


FULL = Sizes(large=10_000, users=100, per_user=1_000, queries=500, throughput_seconds=15.0, adds=200)
QUICK = Sizes(large=1_000, users=10, per_user=500, queries=100, throughput_seconds=3.0, adds=50)


def _footprint(server: RunningServer, memories: int) -> dict[str, Any]:
    status = server.proc_status()
    disk = server.disk_bytes()
    return {"memories": memories, "rss_mib": round(status["VmRSS"] / 2**20, 1), "peak_rss_mib": round(status["VmHWM"] / 2**20, 1),
            "disk_bytes_live": disk, "disk_bytes_per_memory_live": round(disk / memories, 1)}


def _after_stop(server: RunningServer, footprint: dict[str, Any]) -> None:
    server.stop()
    disk = server.disk_bytes()
    footprint.update(disk_bytes_stopped=disk, disk_bytes_per_memory=round(disk / footprint["memories"], 1))


async def single_user(config: ServerConfig, sizes: Sizes, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    qs = queries(n=sizes.queries)
    user = ["solo"]
    with start_server(config, workdir) as server:
        async with BenchClient(server.base_url, max_connections=max(sizes.load_concurrency, sizes.clients)) as api:
            loader = Loader(api, concurrency=sizes.load_concurrency, progress=log)
            log(f"[single-user] load {sizes.per_user}")
            await loader.fill(user, sizes.per_user)
            baseline = await search_latency(api, user, qs)
            log(f"[single-user] 1 x {sizes.per_user}: search p50 {baseline['p50_ms']} ms; load to {sizes.large}")
            await loader.fill(user, sizes.large)
            load = loader.result.summary()
            log(f"[single-user] loaded {load['memories']} in {load['seconds']} s; measuring")
            search = await search_latency(api, user, qs)
            throughput = await search_throughput(api, user, qs, clients=sizes.clients, seconds=sizes.throughput_seconds)
            footprint = _footprint(server, loader.result.stored["solo"])
            adds = await add_latency(loader, api, "solo", sizes.adds)
        _after_stop(server, footprint)
    return {"baseline_search": baseline, "load": load, "search": search, "throughput": throughput, "add": adds, "footprint": footprint}


async def many_users(config: ServerConfig, sizes: Sizes, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    qs = queries(n=sizes.queries)
    users = [f"user-{i:03d}" for i in range(sizes.users)]
    with start_server(config, workdir) as server:
        async with BenchClient(server.base_url, max_connections=max(sizes.load_concurrency, sizes.clients)) as api:
            loader = Loader(api, concurrency=sizes.load_concurrency, progress=log)
            log(f"[many-users] load {sizes.users} x {sizes.per_user}")
            await loader.fill(users, sizes.per_user)
            load = loader.result.summary()
            log(f"[many-users] loaded {load['memories']} in {load['seconds']} s; measuring")
            search = await search_latency(api, users, qs)
            throughput = await search_throughput(api, users, qs, clients=sizes.clients, seconds=sizes.throughput_seconds)
            footprint = _footprint(server, sum(loader.result.stored.values()))
            adds = await add_latency(loader, api, users[0], sizes.adds)
        _after_stop(server, footprint)
    return {"load": load, "search": search, "throughput": throughput, "add": adds, "footprint": footprint}
