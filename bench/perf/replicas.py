"""How fast a PostgreSQL replica answers a search right after another replica wrote for the same user, over HTTP.

    python -m bench.perf.replicas                          # one user of 10,000 memories, 100 rounds
    python -m bench.perf.replicas --memories 1000 --rounds 20

Starts a PostgreSQL (pgserver, in a folder under /tmp deleted at exit), fills one database with one
user's ``--memories`` memories the way an import writes them (``bench.transfer.fill``: one COPY,
``bench.perf.corpus`` sentences with their embeddings from the server's default embedder), vacuums
and analyses it as autovacuum would after a bulk load, and runs two servers on it, A and B. Each
server's first search loads the user (not measured). Then each round: an add (``infer: false``)
through A and a search for its text through B ("after the other's add": B catches up on A's
write), the same search through B again ("no write between"), an add through B and a search for
its text through A ("the converse"), then a delete of A's memory through A and a search for its
text through B ("after the other's delete": B drops the row, told by the rowids left). Every search
after a write must find the memory just written through the other replica, with its text, and
every search after a delete must not find the memory deleted; the report lists each of those searches.
Prints one JSON report and writes it to bench/reports/replicas.json.
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
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.perf.corpus import sentences
from bench.perf.scale import embedded_rows, planner_statistics, postgres_databases
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, start_server, work_folder
from bench.stats import latency_summary
from bench.transfer import fill

REPORT = REPO_ROOT / "bench" / "reports" / "replicas.json"
USER = "user-0000"  # the one user bench.transfer.fill writes when all memories go to one user
KINDS = ("after_other_add", "no_write_between", "converse", "after_other_delete")


class CatchUpTimings:
    """Search seconds by kind, the server's phase timings, and every search that followed a write."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.phases: dict[str, dict[str, list[float]]] = {kind: {} for kind in KINDS}  # the server's timings_ms
        self.reads_after_writes: list[dict[str, Any]] = []
        self.reads_after_deletes: list[dict[str, Any]] = []

    def add(self, kind: str, results: list[dict[str, Any]], seconds: float) -> None:
        self.seconds[kind].append(seconds)
        for phase, ms in ((results[0].get("attributes") or {}).get("timings_ms") or {}).items() if results else ():
            self.phases[kind].setdefault(phase, []).append(ms)

    def read_after_write(self, round_: int, kind: str, written: dict[str, Any], results: list[dict[str, Any]], seconds: float) -> None:
        """Record a search for the memory ``written`` through the other replica: where it ranked
        (None: not found) and the text the search returned for it."""
        self.add(kind, results, seconds)
        rank = next((i for i, hit in enumerate(results, 1) if hit.get("id") == written["id"]), None)
        self.reads_after_writes.append({
            "round": round_, "kind": kind, "id": written["id"], "written": written["content"],
            "rank": rank, "found": results[rank - 1].get("content") if rank else None, "ms": round(seconds * 1000, 3),
        })

    def read_after_delete(self, round_: int, deleted: dict[str, Any], results: list[dict[str, Any]], seconds: float) -> None:
        """Record a search for the memory ``deleted`` through the other replica: where it ranked (None: gone)."""
        self.add("after_other_delete", results, seconds)
        rank = next((i for i, hit in enumerate(results, 1) if hit.get("id") == deleted["id"]), None)
        self.reads_after_deletes.append({"round": round_, "id": deleted["id"], "rank": rank, "ms": round(seconds * 1000, 3)})

    def summary(self) -> dict[str, Any]:
        reads = self.reads_after_writes
        return {
            "searches": {kind: latency_summary(values) for kind, values in self.seconds.items()},
            "phase_p50_ms": {kind: {phase: round(statistics.median(ms), 2) for phase, ms in sorted(phases.items())}
                             for kind, phases in self.phases.items()},
            "found_the_other_replicas_write": sum(r["found"] == r["written"] for r in reads),
            "top_hit_the_other_replicas_write": sum(r["rank"] == 1 for r in reads),
            "gone_after_the_other_replicas_delete": sum(r["rank"] is None for r in self.reads_after_deletes),
            "reads_after_writes": reads,
            "reads_after_deletes": self.reads_after_deletes,
        }


async def add_new(api: BenchClient, texts: Iterator[str], tickets: Iterator[int]) -> tuple[dict[str, Any], int]:
    """Add the next text (a ticket number keeps it apart from every earlier one); the memory
    created, and how many adds were skipped as duplicates first (they write nothing)."""
    skipped = 0
    while (created := await api.add(USER, f"{next(texts)} Ticket {next(tickets)}.", infer=False))["event"] != "ADD":
        skipped += 1
    return created, skipped


async def catch_up(a: BenchClient, b: BenchClient, rounds: int, timings: CatchUpTimings, texts: Iterator[str],
                   tickets: Iterator[int], *, pause: float = 0.0) -> tuple[int, list[float]]:
    """``rounds`` of an add through ``a`` and the searches through ``b`` (and the converse, and the
    delete of ``a``'s memory through ``a`` with a search through ``b``), into
    ``timings``; the adds skipped as duplicates, and the load average every 10 rounds. ``pause``:
    seconds between each write and the search after it on the other side (an agent's turn)."""
    loads: list[float] = []
    skipped = 0
    for i in range(rounds):
        written, skips = await add_new(a, texts, tickets)
        await asyncio.sleep(pause)
        results, seconds = await b.search(USER, written["content"], top_k=10)
        timings.read_after_write(i, "after_other_add", written, results, seconds)
        results, seconds = await b.search(USER, written["content"], top_k=10)
        timings.add("no_write_between", results, seconds)
        deleted = written
        written, more_skips = await add_new(b, texts, tickets)
        await asyncio.sleep(pause)
        results, seconds = await a.search(USER, written["content"], top_k=10)
        timings.read_after_write(i, "converse", written, results, seconds)
        await a.delete(USER, [deleted["id"]])
        await asyncio.sleep(pause)
        results, seconds = await b.search(USER, deleted["content"], top_k=10)
        timings.read_after_delete(i, deleted, results, seconds)
        skipped += skips + more_skips
        if i % 10 == 0:
            loads.append(load_average())
    return skipped, loads


async def measure(url_a: str, url_b: str, rounds: int) -> tuple[dict[str, Any], list[float]]:
    timings = CatchUpTimings()
    async with BenchClient(url_a, max_connections=1) as a, BenchClient(url_b, max_connections=1) as b:
        for api in (a, b):  # each replica's first search reads the user whole: not what is measured
            await api.search(USER, "warm up", top_k=10)
        skipped, loads = await catch_up(a, b, rounds, timings, iter(sentences("user-new", seed=17)), count(10_000, 7919))
    return {**timings.summary(), "duplicate_adds_skipped": skipped}, loads


def vacuum_analyze(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE memories")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.replicas", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000, help="memories of the one user (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of add through A, search through B, the converse, and A's delete "
                                                                 "(default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPORT, help="report file (default: %(default)s)")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    from cortadel_server.config import Settings
    from cortadel_server.providers import build_embedder

    embedder = build_embedder(Settings.from_env())
    model = f"{embedder.provider}/{embedder.model}"
    report: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": git_commit(), "cpus": os.cpu_count(),
        "embedder": model, "dim": embedder.dim, "memories": args.memories, "rounds": args.rounds,
        "command": "python -m bench.perf.replicas " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_average": {"start": load_average()},
    }
    started = time.perf_counter()
    [database] = postgres_databases("replicas")
    fill({"CORTADEL_DATABASE_URL": database}, args.memories, embedder.dim, model, embedded_rows(embedder), per_user=args.memories)
    vacuum_analyze(database)
    report["fill_seconds"] = round(time.perf_counter() - started, 1)
    report["load_average"]["after_fill"] = load_average()
    report["planner_statistics"] = planner_statistics(database)

    with work_folder("replicas") as tmp:
        source, report["server_code_sha256"] = snapshot_server(tmp)
        serve = dataclasses.replace(WORDLLAMA, source=source, backend="postgres", database_url=database)
        with start_server(dataclasses.replace(serve, name="replica-a"), tmp) as a, \
                start_server(dataclasses.replace(serve, name="replica-b"), tmp) as b:
            report["results"], loads = asyncio.run(measure(a.base_url, b.base_url, args.rounds))
    report["load_average"].update({"during_min": min(loads), "during_max": max(loads), "end": load_average()})
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
