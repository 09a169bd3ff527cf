"""Searches/s of one port served by one worker process and by several (`cortadel serve --workers`), on one SQLite file, over HTTP.

    python -m bench.perf.workers                                  # one user of 10,000 memories, 1 against 2 workers, 4 rounds each
    python -m bench.perf.workers --memories 1000 --workers 3 --rounds 2

Fills one SQLite file with one user's ``--memories`` memories through ``POST /api/v1/memories/batch``
(``infer: false``, 500 a batch, ``bench.perf.corpus`` sentences; more are drawn while deduplication
skips some), then serves that same file in turn with one worker and with ``--workers``, a fresh
server each round, in ABBA order (1, N, N, 1, 1, N, …; ``--rounds`` of each). Each round: a warm-up
(``--warmup`` seconds of searches at ``--clients`` clients, so every worker has loaded the user),
searches/s of ``--clients`` concurrent loops for ``--seconds`` (and how the kernel spread their
connections over the workers; each loop sends through a ``bench.client.SearchConnection`` of its
own, a lean client, since the client's CPU is taken from the cores the server runs on, and every
search must find its top 10), ``--searches`` searches at one client (p50/p95), then ``--adds``
rounds of the replica catch-up protocol (``bench.perf.replicas.catch_up``) through the port over two
connections, which with several workers are held by two different workers: an add through one and
a search for its text through the other (that worker reloads the user first), the same search again,
and the converse (``--pause`` seconds after each write: an agent's turn; default at once). Every
search after an add must find the text just added. Reported: each round,
and per worker count the medians of the rounds, the searches after an add pooled over the rounds,
and the ratio of searches/s. Prints one JSON report and writes it to bench/reports/workers.json.

    python -m bench.perf.workers --baseline /tmp/old/server         # this code against older code, both at --workers

With ``--baseline`` (a folder holding an older ``cortadel_server``) the rounds alternate the code
instead of the worker count, ABBA, both at ``--workers``: each code serves a copy of the filled file
of its own (older code writes rows a newer schema would read otherwise), and the report adds the
ratio of the searches after another worker's add (baseline over this code).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any, TypeVar

from cortadel_server.testing import connection_owners

from bench.client import BenchClient, SearchConnection
from bench.errors import BenchError
from bench.perf.corpus import queries, sentences
from bench.perf.measure import search_latency, search_throughput
from bench.perf.replicas import KINDS, USER, CatchUpTimings, catch_up
from bench.provenance import git_commit, load_average
from bench.server import (
    REPO_ROOT,
    WORDLLAMA,
    RunningServer,
    exit_on_sigterm,
    snapshot_server,
    start_server,
    work_folder,
)
from bench.stats import latency_summary

REPORT = REPO_ROOT / "bench" / "reports" / "workers.json"
Variant = TypeVar("Variant")
BATCH = 500
#: the hits of every search of the searches/s runs (fewer if the user holds fewer memories)
TOP_K = 10
THROUGHPUT_CLIENT = "bench.client.SearchConnection: one kept-alive HTTP/1.1 connection a client, on asyncio streams"
#: new connections per attempt to find one held by another worker than the adds' (the kernel hashes each to a worker)
RECONNECTS = 20


def abba(first: Variant, second: Variant, rounds: int) -> list[Variant]:
    """The variant of each server in turn: A, B, B, A, A, B, … with ``rounds`` of each."""
    pairs = [(first, second) if r % 2 == 0 else (second, first) for r in range(rounds)]
    return [variant for pair in pairs for variant in pair]


def connection_workers(server: RunningServer) -> dict[int, int]:
    """Client port → pid of the worker holding the server side of each established connection to
    the server's port (a connection stays with the worker that accepted it)."""
    return connection_owners(int(server.base_url.rpartition(":")[2]), server.worker_pids() or [server.pid])


def split(owners: dict[int, int]) -> list[int]:
    """Connections per worker, most first."""
    return sorted(Counter(owners.values()).values(), reverse=True)


async def fill(url: str, memories: int) -> dict[str, Any]:
    """``memories`` stored memories for USER, in batches; the server's events counted."""
    events: Counter[str] = Counter()
    texts = sentences(USER)
    started = time.perf_counter()
    async with BenchClient(url, max_connections=1, timeout=600.0) as api:
        while (stored := events["ADD"]) < memories:
            answer = await api.add_batch(USER, [{"text": next(texts), "infer": False} for _ in range(min(BATCH, memories - stored))])
            events.update(m["event"] for m in answer["memories"])
    seconds = time.perf_counter() - started
    return {"stored": events["ADD"], "events": dict(events), "seconds": round(seconds, 1), "per_second": round(events["ADD"] / seconds, 1)}


async def pair_on_two_workers(server: RunningServer, stack: AsyncExitStack) -> tuple[BenchClient, BenchClient, list[int]]:
    """Two clients of one connection each (closed with ``stack``), held by two different workers
    when the server has several; the connections per worker. Each has searched once."""
    async def connected() -> BenchClient:
        api = BenchClient(server.base_url, max_connections=1)
        await api.search(USER, "warm up", top_k=10)
        return api

    stack.push_async_exit(a := await connected())
    for _ in range(RECONNECTS):
        b = await connected()
        await asyncio.sleep(0.05)  # the server side of a connection closed just before leaves "established"
        owners = connection_workers(server)
        if len(owners) == 2 and (server.config.workers == 1 or len(set(owners.values())) == 2):
            stack.push_async_exit(b)
            return a, b, split(owners)
        await b.__aexit__(None, None, None)
    raise BenchError(f"{RECONNECTS} new connections all went to the worker holding the first: {owners}")


async def measure_round(server: RunningServer, qs: list[str], args: argparse.Namespace, texts: Iterator[str],
                        tickets: Iterator[int]) -> tuple[dict[str, Any], CatchUpTimings]:
    async with AsyncExitStack() as stack:
        # A connection of its own for each client, on asyncio's streams: the client's CPU comes out of
        # the two cores the server is measured on, and aiohttp took twice as much a search (bench/client.py).
        connections = [await stack.enter_async_context(await SearchConnection.open(server.base_url)) for _ in range(args.clients)]
        hits = min(TOP_K, args.memories)
        await search_throughput(connections, [USER], qs, clients=args.clients, seconds=args.warmup, hits=hits)
        running = asyncio.create_task(search_throughput(connections, [USER], qs, clients=args.clients, seconds=args.seconds, hits=hits))
        await asyncio.sleep(args.seconds / 3)  # every client's connection busy
        spread = split(connection_workers(server))
        throughput = await running
    async with BenchClient(server.base_url, max_connections=1) as api:
        one_client = await search_latency(api, [USER], qs[:args.searches])
    timings = CatchUpTimings()
    async with AsyncExitStack() as stack:
        a, b, pair = await pair_on_two_workers(server, stack)
        skipped, _ = await catch_up(a, b, args.adds, timings, texts, tickets, pause=args.pause)
        pair_after = split(connection_workers(server))  # still two workers: no connection was dropped and reopened
    return {"throughput": {**throughput, "connections_per_worker": spread}, "one_client": one_client,
            "search_after_add": {**timings.summary(), "connections_per_worker": pair, "connections_per_worker_after": pair_after,
                                 "duplicate_adds_skipped": skipped}}, timings


def median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def by_workers(rounds: list[dict[str, Any]], timings: list[CatchUpTimings]) -> dict[str, Any]:
    """One worker count's figures: medians of its rounds, and the searches after an add pooled over them."""
    reads = [read for t in timings for read in t.reads_after_writes]
    return {
        "rounds": len(rounds),
        "searches_per_second": (rates := [r["throughput"]["searches_per_second"] for r in rounds]),
        "median_searches_per_second": median(rates),
        "median_p50_ms_at_clients": median([r["throughput"]["latency"]["p50_ms"] for r in rounds]),
        "median_one_client_p50_ms": median([r["one_client"]["p50_ms"] for r in rounds]),
        "median_one_client_p95_ms": median([r["one_client"]["p95_ms"] for r in rounds]),
        "search_after_add": {kind: latency_summary([s for t in timings for s in t.seconds[kind]]) for kind in KINDS},
        "found_the_text_just_added": sum(r["found"] == r["written"] for r in reads),
        "searches_after_an_add": len(reads),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.workers", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000, help="memories of the one user (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes measured against one (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each worker count, ABBA order (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent search loops for searches/s (default: %(default)s)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of searches before each searches/s (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=12.0, help="length of one searches/s run (default: %(default)s)")
    parser.add_argument("--searches", type=int, default=200, help="searches at one client, each round (default: %(default)s)")
    parser.add_argument("--adds", type=int, default=30, help="adds through each connection and searches after them, each round "
                                                             "(default: %(default)s)")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between each write and the search after it on the "
                                                                  "other worker (default: %(default)s: at once)")
    parser.add_argument("--baseline", type=Path, help="a folder holding older server code (cortadel_server) to measure "
                                                       "this code against, both at --workers, instead of 1 worker against N")
    parser.add_argument("--out", type=Path, default=REPORT, help="report file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.workers < 2:
        parser.error("--workers: at least 2, measured against 1")
    if args.baseline is not None and not (args.baseline / "cortadel_server").is_dir():
        parser.error(f"--baseline: no cortadel_server package in {args.baseline}")
    exit_on_sigterm()
    # each variant's label in the report: its worker count, and "_baseline" for the older code
    many = f"{args.workers}_workers"
    variants = [many, f"{many}_baseline"] if args.baseline is not None else ["1_workers", many]

    report: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": git_commit(), "cpus": os.cpu_count(),
        "embedder": WORDLLAMA.env["CORTADEL_EMBEDDER"], "memories": args.memories, "workers": args.workers, "rounds": args.rounds,
        "baseline": None if args.baseline is None else str(args.baseline),
        "order": abba(*variants, args.rounds), "clients": args.clients, "throughput_client": THROUGHPUT_CLIENT,
        "warmup_seconds": args.warmup, "seconds_per_run": args.seconds,
        "searches": args.searches, "adds": args.adds, "pause_seconds": args.pause,
        "command": "python -m bench.perf.workers " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_average": {"start": load_average()},
    }
    started = time.perf_counter()
    qs = queries(n=500)
    texts, tickets = iter(sentences("user-new", seed=17)), count(10_000, 7919)
    with work_folder("workers") as tmp:
        source, report["server_code_sha256"] = snapshot_server(tmp)
        serve = dataclasses.replace(WORDLLAMA, source=source, database_url=f"sqlite:///{tmp / 'cortadel.db'}")
        configs = {"1_workers": serve, many: dataclasses.replace(serve, workers=args.workers)}
        if args.baseline is not None:
            configs[f"{many}_baseline"] = dataclasses.replace(
                configs[many], source=args.baseline, database_url=f"sqlite:///{tmp / 'baseline.db'}")
        # filled by the older code, if any: this code migrates its copy when it opens it
        filler = dataclasses.replace(serve, name="fill", source=source if args.baseline is None else args.baseline)
        with start_server(filler, tmp) as server:
            report["fill"] = asyncio.run(fill(server.base_url, args.memories))
        report["load_average"]["after_fill"] = load_average()
        if args.baseline is not None:
            for suffix in ("", "-wal"):  # the stopped server checkpointed: a WAL, if any, is empty
                if (tmp / f"cortadel.db{suffix}").exists():
                    shutil.copyfile(tmp / f"cortadel.db{suffix}", tmp / f"baseline.db{suffix}")
        rounds: dict[str, list[dict[str, Any]]] = {variant: [] for variant in variants}
        timings: dict[str, list[CatchUpTimings]] = {variant: [] for variant in variants}
        runs = []
        for i, variant in enumerate(report["order"]):
            with start_server(dataclasses.replace(configs[variant], name=variant), tmp) as server:
                measured, caught_up = asyncio.run(measure_round(server, qs, args, texts, tickets))
            run = {"round": i, "variant": variant, "workers": configs[variant].workers, **measured, "load_average": load_average()}
            rounds[variant].append(run)
            timings[variant].append(caught_up)
            runs.append(run)
            print(f"round {i}: {variant}, {run['throughput']['searches_per_second']} searches/s, load {run['load_average']}",
                  file=sys.stderr)
    report["results"] = {variant: by_workers(done, timings[variant]) for variant, done in rounds.items()}
    first, second = (report["results"][variant] for variant in variants)
    report["searches_per_second_ratio"] = round(second["median_searches_per_second"] / first["median_searches_per_second"], 2)
    if args.baseline is not None:
        report["after_other_add_p50_ratio"] = round(
            second["search_after_add"]["after_other_add"]["p50_ms"] / first["search_after_add"]["after_other_add"]["p50_ms"], 2)
    report["rounds_run"] = runs
    loads = [run["load_average"] for run in runs]
    report["load_average"].update({"during_min": min(loads), "during_max": max(loads), "end": load_average()})
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "rounds_run"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
