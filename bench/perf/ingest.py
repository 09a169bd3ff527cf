"""Batch ingest against single adds, in one run on one fresh server.

    python -m bench.perf.ingest                 # a store of 100,000 memories (100 users × 1,000)
    python -m bench.perf.ingest --store 10000   # 10 users × 1,000
    python -m bench.perf.ingest --backend postgres --store 10000 --sample 2500   # on a PostgreSQL it starts

The store is filled through ``POST /api/v1/memories/batch`` (``infer: false``, 500 a batch), then,
into that store, each way of writing gets a fresh user: batches of 500 with ``infer: false``
(memories/s), batches of 500 with ``infer: true`` (the rules extractor; facts/s), and the same
sentences as single adds, one request at a time and 8 in flight. Every rate is over wall-clock time
on the client, HTTP and JSON included. Facts are counted as the user's memories after the run,
superseded ones too (the user is fresh): with ``infer: true`` the rules split some texts into
several facts, and a text's answer names only its first; the answers' events are counted as well.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.console import log
from bench.errors import BenchError
from bench.markdown import replace_run_section, table
from bench.perf.corpus import sentences
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, start_server, work_folder

BATCH = 500
PER_USER = 1_000
#: a conversation turn as a user would say it: first person, so the rules extractor finds the fact
TURNS = ["I moved to {city} last year.", "My sister works as a {job}.", "I am allergic to {thing}.", "I like {thing} a lot."]
TURNS_PER_CONVERSATION = 10
#: the fact an infer run writes is the first of each item's results; an ADD or SUPERSEDE stored one
STORED = ("ADD", "SUPERSEDE", "RESOLVE")
#: per backend: the report's name (its JSON file and doc section), the doc under docs/, its heading
SECTIONS = {
    "sqlite": ("ingest", "performance.md", "## Batch ingest"),
    "postgres": ("ingest-postgres", "scaling.md", "### Batch ingest on PostgreSQL"),
}


def conversations(messages: int) -> list[dict[str, Any]]:
    """``messages`` first-person turns (each names a new city, job or thing), ``TURNS_PER_CONVERSATION`` a conversation."""
    turns = [{"role": "user", "content": TURNS[i % len(TURNS)].format(city=f"City{i}", job=f"job{i}", thing=f"thing{i}")}
             for i in range(messages)]
    return [{"messages": turns[at:at + TURNS_PER_CONVERSATION]} for at in range(0, messages, TURNS_PER_CONVERSATION)]


async def _batches(api: BenchClient, user: str, texts: Sequence[str], *, infer: bool) -> dict[str, Any]:
    """``texts`` in batches of ``BATCH``, one request at a time; the server's events counted."""
    events: Counter[str] = Counter()
    started = time.perf_counter()
    for at in range(0, len(texts), BATCH):
        answer = await api.add_batch(user, [{"text": t, "infer": infer} for t in texts[at:at + BATCH]])
        events.update(m["event"] for m in answer["memories"])
    return _rate(events, time.perf_counter() - started, len(texts), await api.count(user, include_superseded=True))


async def _singles(api: BenchClient, user: str, texts: Sequence[str], *, infer: bool, in_flight: int) -> dict[str, Any]:
    events: Counter[str] = Counter()
    queue = iter(texts)

    async def worker() -> None:
        for text in queue:
            events[(await api.add(user, text, infer=infer)).get("event") or "?"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return _rate(events, time.perf_counter() - started, len(texts), await api.count(user, include_superseded=True))


def _rate(events: Counter[str], seconds: float, sent: int, facts: int | None = None) -> dict[str, Any]:
    """A run's rates: ``per_second`` the texts answered with a stored fact, ``sent_per_second`` the
    texts sent and, given the ``facts`` the run stored, ``facts_per_second``."""
    stored = sum(events[e] for e in STORED)
    rates = {"sent": sent, "stored": stored, "events": dict(events), "seconds": round(seconds, 2),
             "per_second": round(stored / seconds, 1), "sent_per_second": round(sent / seconds, 1)}
    if facts is not None:
        rates.update(facts=facts, facts_per_second=round(facts / seconds, 1))
    return rates


def _take(stream: Iterator[str], n: int) -> list[str]:
    return [next(stream) for _ in range(n)]


async def measure(base_url: str, store: int, sample: int, log: Callable[[str], None]) -> dict[str, Any]:
    async with BenchClient(base_url, max_connections=8, timeout=600.0) as api:
        users = [f"user-{i:03d}" for i in range(store // PER_USER)]
        log(f"filling the store: {len(users)} users × {PER_USER:,} in batches of {BATCH}")
        events: Counter[str] = Counter()
        started = time.perf_counter()
        for user in users:
            answer = await _batches(api, user, _take(sentences(user), PER_USER), infer=False)
            events.update(answer["events"])
        fill = _rate(events, time.perf_counter() - started, len(users) * PER_USER)
        log(f"filled {fill['stored']:,} in {fill['seconds']} s ({fill['per_second']:,.0f}/s); measuring")
        runs: dict[str, Any] = {}
        for name, infer in (("batch_raw", False), ("batch_infer", True)):
            runs[name] = await _batches(api, name, _take(sentences(name), sample), infer=infer)
            log(f"{name}: {runs[name]['per_second']:,.0f}/s, {runs[name]['facts_per_second']:,.0f} facts/s")
        for name, infer, in_flight in (("single_raw", False, 1), ("single_raw_8", False, 8), ("single_infer", True, 1)):
            runs[name] = await _singles(api, name, _take(sentences(name), sample // 5), infer=infer, in_flight=in_flight)
            log(f"{name}: {runs[name]['per_second']:,.0f}/s")
        batch = conversations(sample)
        per_batch = BATCH // TURNS_PER_CONVERSATION
        started = time.perf_counter()
        for at in range(0, len(batch), per_batch):
            await api.add_batch("conversations", conversations=batch[at:at + per_batch])
        seconds = time.perf_counter() - started
        facts = await api.count("conversations", include_superseded=True)
        runs["batch_conversations"] = {"messages": sample, "seconds": round(seconds, 2), "messages_per_second": round(sample / seconds, 1),
                                       "facts": facts, "facts_per_second": round(facts / seconds, 1)}
        log(f"batch_conversations: {runs['batch_conversations']['messages_per_second']:,.0f} messages/s")
    return {"fill": fill, **runs}


def results_table(run: dict[str, Any]) -> str:
    r = run["results"]
    store = r["fill"]["stored"]

    def facts(m: dict[str, Any]) -> str:
        return f"{m['facts_per_second']:,.0f} ({m['facts']:,})" if "facts" in m else ""

    def row(what: str, m: dict[str, Any], unit: str) -> list[object]:
        return [what, f"{m['sent']:,}", f"{m['per_second']:,.0f} {unit}", facts(m), f"{m['seconds']:.1f}",
                ", ".join(f"{k} {v:,}" for k, v in sorted(m["events"].items()))]

    conv = r["batch_conversations"]
    rows = [
        row(f"filling the store to {store:,} (batches of {BATCH}, `infer: false`)", r["fill"], "memories/s"),
        row(f"batches of {BATCH}, `infer: false`, into the {store:,} store", r["batch_raw"], "memories/s"),
        row(f"batches of {BATCH}, `infer: true` (rules)", r["batch_infer"], "texts/s"),
        row("single adds, `infer: false`, one at a time", r["single_raw"], "memories/s"),
        row("single adds, `infer: false`, 8 in flight", r["single_raw_8"], "memories/s"),
        row("single adds, `infer: true` (rules), one at a time", r["single_infer"], "texts/s"),
        [f"batches of {BATCH // TURNS_PER_CONVERSATION} conversations × {TURNS_PER_CONVERSATION} turns", f"{conv['messages']:,} turns", f"{conv['messages_per_second']:,.0f} messages/s", facts(conv), f"{conv['seconds']:.1f}", ""],
    ]
    speedup = r["batch_raw"]["per_second"] / r["single_raw"]["per_second"]
    return (table(["how", "sent", "rate", "facts stored/s (facts)", "seconds", "events"], rows)
            + f"\n\nThe rate counts texts answered with a stored fact (`ADD`, `SUPERSEDE`, `RESOLVE`; a text's answer"
            " names its first fact only); facts stored are the user's memories after the run, superseded ones"
            f" too. Batches store {speedup:.0f}× the memories a second that single adds one at a time do.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.ingest", description="Batch ingest against single adds over HTTP.")
    parser.add_argument("--store", type=int, default=100_000, help="memories in the store before measuring (default: %(default)s)")
    parser.add_argument("--sample", type=int, default=5_000, help="memories per batch run; single adds get a fifth (default: %(default)s)")
    parser.add_argument("--backend", choices=sorted(SECTIONS), default="sqlite", help="server storage (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    parser.add_argument("--doc", type=Path, help="doc whose ingest section is updated (default: docs/performance.md, docs/scaling.md for postgres)")
    args = parser.parse_args(argv)
    section, doc, heading = SECTIONS[args.backend]
    exit_on_sigterm()

    started, load_start = datetime.now(UTC).isoformat(timespec="seconds"), load_average()
    try:
        with work_folder("ingest") as tmp:
            source, server_code = snapshot_server(tmp)
            with start_server(dataclasses.replace(WORDLLAMA.from_source(source), backend=args.backend), tmp) as server:
                results = asyncio.run(measure(server.base_url, args.store, args.sample, log))
    except BenchError as exc:
        print(f"bench.perf.ingest: {exc}", file=sys.stderr)
        return 1
    backend = "" if args.backend == "sqlite" else f" --backend {args.backend}"
    command = f"python -m bench.perf.ingest{backend} --store {args.store} --sample {args.sample}"
    meta = {"started_at": started, "git_commit": git_commit(), "server_code_sha256": server_code, "embedder": WORDLLAMA.name,
            "backend": args.backend, "cpus": os.cpu_count(), "command": command, "load_average": [load_start, load_average()]}
    run = {"meta": meta, "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{section}.json").write_text(json.dumps(run, indent=2) + "\n")
    doc = args.doc or REPO_ROOT / "docs" / doc
    replace_run_section(
        doc, section, f"{heading} (embedder `{meta['embedder']}`, {meta['cpus']} CPUs)",
        (f"Measured {started} at git {meta['git_commit']} with `{command}`, one fresh server: the store is filled through "
         "`POST /api/v1/memories/batch`, then each way of writing gets a fresh user in that store."),
        meta["load_average"], results_table(run),
    )
    log(f"wrote {args.out / f'{section}.json'} and {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
