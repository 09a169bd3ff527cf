"""Search latency on PostgreSQL with many users against one user alone, in the same run, over HTTP.

    python -m bench.perf.scale                                   # 1,000 users × 1,000 (1M rows) against 1 × 1,000
    python -m bench.perf.scale --users 300 --per-user 1000 --searches 400 --sample-users 50

Starts a PostgreSQL (pgserver, in a folder under /tmp deleted at exit) and fills two databases
through the storage interface the way an import writes (``bench.transfer.fill``: one COPY per
user), with ``bench.perf.corpus`` sentences and their real embeddings from the server's default
embedder — random vectors would make the vector arm meaningless. The small store holds user-0000
alone, the very rows user-0000 has in the large one. One server per database; every query goes to
both, in alternating order. The large store's searches go round-robin over ``--sample-users``
users spread over all of them, so each user's first search loads their vectors into the server's
cache (storage/vector_cache.py): those are reported apart as "cold", the rest as "warm". Then
searches/s of ``--clients`` loops on the large store: one server against ``--replicas`` servers on
the same database, in alternating rounds.
Prints one JSON report and writes it to bench/reports/scale.json.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack, ExitStack
from datetime import UTC, datetime
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from bench.client import BenchClient, server_phase_seconds
from bench.perf.corpus import queries, sentences
from bench.perf.measure import search_throughput
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, start_server, work_folder
from bench.stats import latency_summary
from bench.transfer import RowSource, fill

REPORT = REPO_ROOT / "bench" / "reports" / "scale.json"
ABSENT_USER = "user-absent"  # warms each server up (HTTP, embedder) without loading a sampled user's vectors


def spread_users(users: int, sample: int) -> list[str]:
    """``sample`` user ids spread evenly over user-0000 … user-{users-1}, the first included."""
    sample = min(sample, users)
    return [f"user-{i * users // sample:04d}" for i in range(sample)]


def embedded_rows(embed: Any) -> RowSource:
    """Each user's first corpus sentences with their embeddings (``embed``: the server's embedder)."""

    def rows(user: str, count: int) -> tuple[list[str], np.ndarray]:
        texts = list(islice(sentences(user), count))
        return texts, np.asarray(embed.embed(texts), dtype=np.float32)

    return rows


class Timings:
    """Search wall-clock and server-phase seconds, split by whether the user's vectors were cached yet."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.http: dict[str, list[float]] = {"cold": [], "warm": []}
        self.phases: dict[str, list[float]] = {"cold": [], "warm": []}
        self.by_phase: dict[str, dict[str, list[float]]] = {"cold": {}, "warm": {}}  # the server's timings_ms, ms
        self.empty = 0

    def add(self, user: str, results: list[dict[str, Any]], seconds: float) -> None:
        kind = "warm" if user in self.seen else "cold"
        self.seen.add(user)
        self.http[kind].append(seconds)
        phases = server_phase_seconds(results)
        if phases is not None:
            self.phases[kind].append(phases)
            for phase, ms in results[0]["attributes"]["timings_ms"].items():
                self.by_phase[kind].setdefault(phase, []).append(ms)
        self.empty += not results

    def summary(self) -> dict[str, Any]:
        return {
            **{f"http_{kind}": latency_summary(values) for kind, values in self.http.items() if values},
            **{f"server_phases_{kind}": latency_summary(values) for kind, values in self.phases.items() if values},
            **{f"phase_p50_ms_{kind}": {phase: round(statistics.median(ms), 2) for phase, ms in phases.items()}
               for kind, phases in self.by_phase.items() if phases},
            "searches_without_results": self.empty,
        }


async def measure(large_url: str, small_url: str, sampled: list[str], n_searches: int) -> tuple[dict[str, Any], list[float]]:
    large, small = Timings(), Timings()
    loads: list[float] = []
    async with BenchClient(large_url, max_connections=1) as to_large, BenchClient(small_url, max_connections=1) as to_small:
        for api in (to_large, to_small):
            await api.search(ABSENT_USER, "warm up", top_k=10)
        for i, query in enumerate(queries(n=n_searches)):
            user = sampled[i % len(sampled)]
            sends = [(to_large, user, large), (to_small, "user-0000", small)]
            for api, who, timings in sends if i % 2 == 0 else sends[::-1]:
                results, seconds = await api.search(who, query, top_k=10)
                timings.add(who, results, seconds)
            if i % 20 == 0:
                loads.append(load_average())
    return {"large": large.summary(), "small": small.summary()}, loads


async def replica_throughput(urls: list[str], users: list[str], *, clients: int, seconds: float, rounds: int) -> dict[str, Any]:
    """Searches/s of ``clients`` loops against the first server alone, then spread over all of ``urls``
    (replicas on one database), in alternating rounds; each server first searches every user once,
    so all of them hold the users' vectors."""
    qs = queries(seed=1, n=500)
    async with AsyncExitStack() as stack:
        apis = [await stack.enter_async_context(BenchClient(url)) for url in urls]
        for api in apis:
            for user in users:
                await api.search(user, "warm up", top_k=10)
        runs: dict[int, list[dict[str, Any]]] = {1: [], len(apis): []}
        for _ in range(rounds):
            for servers, done in runs.items():
                done.append(await search_throughput(apis[:servers], users, qs, clients=clients, seconds=seconds))
                done[-1]["load_average"] = load_average()
    return {f"{servers}_servers": {"median_searches_per_second": statistics.median([r["searches_per_second"] for r in done]),
                                   "rounds": done} for servers, done in runs.items()}


def postgres_databases(*prefixes: str) -> list[str]:
    """A new database per prefix on a PostgreSQL this process starts (pgserver, in a folder under
    /tmp deleted at exit)."""
    from cortadel_server.testing_postgres import postgres_server, scratch_database

    print(f"PostgreSQL in {postgres_server().pgdata}", file=sys.stderr)
    return [scratch_database(prefix) for prefix in prefixes]


def planner_statistics(url: str) -> dict[str, Any]:
    """When PostgreSQL last analysed ``memories`` and how many rows changed since: the plans of the
    text arms depend on it, and a bulk load leaves it to autovacuum."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT n_live_tup, n_mod_since_analyze, greatest(last_analyze, last_autoanalyze) "
                           "FROM pg_stat_user_tables WHERE relname = 'memories'").fetchone()
    assert row is not None
    return {"live_rows": row[0], "changed_since_analyze": row[1], "last_analyzed": row[2].isoformat() if row[2] else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000, help="users in the large store (default: %(default)s)")
    parser.add_argument("--per-user", type=int, default=1000, help="memories per user, both stores (default: %(default)s)")
    parser.add_argument("--searches", type=int, default=200, help="searches sent to each store (default: %(default)s)")
    parser.add_argument("--sample-users", type=int, default=50, help="large-store users the searches go to (default: %(default)s)")
    parser.add_argument("--replicas", type=int, default=3, help="then searches/s on 1 server against this many (0: skip; default: %(default)s)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent search loops for searches/s (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of one searches/s round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 1 server then all, alternating (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPORT, help="report file (default: %(default)s)")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    from cortadel_server.config import Settings
    from cortadel_server.providers import build_embedder

    settings = Settings.from_env()
    embedder = build_embedder(settings)
    model = f"{embedder.provider}/{embedder.model}"
    rows = embedded_rows(embedder)
    report: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": git_commit(), "cpus": os.cpu_count(),
        "embedder": model, "dim": embedder.dim, "users": args.users, "per_user": args.per_user,
        "command": "python -m bench.perf.scale " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_average": {"start": load_average()},
    }
    small_db, large_db = postgres_databases("scale_one", "scale_many")
    fill({"CORTADEL_DATABASE_URL": small_db}, args.per_user, embedder.dim, model, rows, per_user=args.per_user)
    total = args.users * args.per_user
    started = time.perf_counter()

    def progress(done: int) -> None:
        if done % (50 * args.per_user) == 0 or done == total:
            elapsed = time.perf_counter() - started
            print(f"  {done:,} / {total:,} rows in {elapsed:.0f} s ({done / elapsed:.0f}/s), load {load_average()}", file=sys.stderr)

    fill({"CORTADEL_DATABASE_URL": large_db}, total, embedder.dim, model, rows, per_user=args.per_user, progress=progress)
    seconds = time.perf_counter() - started
    report["load"] = {"rows": total, "seconds": round(seconds, 1), "rows_per_s": round(total / seconds),
                      "what": "corpus sentences, embedded in batches of one user, COPY per user (bench.transfer.fill)"}
    report["load_average"]["after_load"] = load_average()

    with work_folder("scale") as tmp:
        source, report["server_code_sha256"] = snapshot_server(tmp)
        serve = partial(dataclasses.replace, WORDLLAMA, source=source, backend="postgres")
        with start_server(serve(name=f"{args.users}x{args.per_user}", database_url=large_db), tmp) as large, \
                start_server(serve(name=f"1x{args.per_user}", database_url=small_db), tmp) as small:
            sampled = spread_users(args.users, args.sample_users)
            report["planner_statistics"] = {"large": planner_statistics(large_db), "small": planner_statistics(small_db)}
            report["results"], loads = asyncio.run(measure(large.base_url, small.base_url, sampled, args.searches))
            report["rss_bytes"] = {"large": large.rss_bytes(), "small": small.rss_bytes()}
            small.stop()
            if args.replicas > 1:
                with ExitStack() as replicas:
                    urls = [large.base_url, *(replicas.enter_context(start_server(serve(name=f"replica-{k}", database_url=large_db), tmp)).base_url
                                              for k in range(1, args.replicas))]
                    report["replicas"] = asyncio.run(replica_throughput(urls, sampled, clients=args.clients, seconds=args.seconds,
                                                                        rounds=args.rounds))
    report["sampled_users"] = len(sampled)
    report["load_average"].update({"during_search_min": min(loads), "during_search_max": max(loads), "end": load_average()})
    warm = {name: report["results"][name]["http_warm"]["p50_ms"] for name in ("large", "small")}
    report["warm_p50_ratio_large_to_small"] = round(warm["large"] / warm["small"], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
