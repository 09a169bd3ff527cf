"""One user's conversation history loaded in batches until it is large: the rate as the user grows,
and how long after the last batch every fact is enriched, over HTTP.

    python -m bench.perf.growth                              # 40,000 messages, rates per 10,000
    python -m bench.perf.growth --baseline /tmp/old/server   # the same against older code, one after the other

A fresh server; batches of 50 conversations × 10 turns (``bench.perf.ingest``'s turns: a new city,
job or thing in each) for one user. Reported: messages/s over each quarter of the run, over the
whole, and the seconds from the last batch's answer until the server's job queue is empty
(``cortadel_jobs_pending`` in ``/metrics``): the enrichment worker links each fact's entities
while the batches arrive, and whatever is left after. With ``--baseline`` (a folder holding an
older ``cortadel_server``) the older code runs the same load first, then this code.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.console import log
from bench.errors import BenchError
from bench.markdown import replace_run_section, table
from bench.perf.ingest import BATCH, TURNS_PER_CONVERSATION, conversations
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, start_server, work_folder

USER = "growing"
PARTS = 4


async def grow(base_url: str, messages: int, log: Callable[[str], None], *, poll: float = 0.2) -> dict[str, Any]:
    """Load ``messages`` turns for USER in batches, then wait for the job queue to empty."""
    batches = conversations(messages)
    per_batch = BATCH // TURNS_PER_CONVERSATION
    part_size = max(1, messages // PARTS)
    parts: list[dict[str, Any]] = []
    async with BenchClient(base_url, max_connections=1, timeout=600.0) as api:
        started = part_started = time.perf_counter()
        sent = part_sent = 0
        for at in range(0, len(batches), per_batch):
            chunk = batches[at:at + per_batch]
            await api.add_batch(USER, conversations=chunk)
            sent += sum(len(c["messages"]) for c in chunk)
            if sent - part_sent >= part_size or sent == messages:
                now = time.perf_counter()
                parts.append({"messages": [part_sent, sent], "seconds": round(now - part_started, 2),
                              "messages_per_second": round((sent - part_sent) / (now - part_started), 1)})
                log(f"{sent:,} messages: {parts[-1]['messages_per_second']:,.0f}/s over the last {sent - part_sent:,}")
                part_started, part_sent = now, sent
        loaded = time.perf_counter()
        while await api.pending_jobs():
            await asyncio.sleep(poll)
        drained = time.perf_counter()
        facts = await api.count(USER, include_superseded=True)
    return {"messages": messages, "facts": facts, "seconds": round(loaded - started, 2),
            "messages_per_second": round(messages / (loaded - started), 1), "parts": parts,
            "enriched_seconds_after": round(drained - loaded, 2)}


def results_table(runs: dict[str, dict[str, Any]]) -> str:
    names = list(runs)
    first = runs[names[0]]
    rows = [[f"messages {p['messages'][0]:,}–{p['messages'][1]:,}", *(f"{runs[n]['parts'][i]['messages_per_second']:,.0f}/s" for n in names)]
            for i, p in enumerate(first["parts"])]
    rows.append([f"all {first['messages']:,} messages", *(f"{runs[n]['messages_per_second']:,.0f}/s ({runs[n]['seconds']:.1f} s)" for n in names)])
    rows.append(["every fact enriched, seconds after the last batch", *(f"{runs[n]['enriched_seconds_after']:.1f}" for n in names)])
    rows.append(["facts stored", *(f"{runs[n]['facts']:,}" for n in names)])
    return table(["one user's conversation batches", *names], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.growth", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=40_000, help="conversation turns loaded for the one user (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, help="a folder holding an older cortadel_server, run first under the same load")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports" / "growth.json", help="report file (default: %(default)s)")
    parser.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "performance.md", help="doc whose growth section is updated")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    started, load_start = datetime.now(UTC).isoformat(timespec="seconds"), load_average()
    runs: dict[str, dict[str, Any]] = {}
    try:
        with work_folder("growth") as tmp:
            source, server_code = snapshot_server(tmp)
            codes = {**({"baseline": args.baseline} if args.baseline else {}), "this code": source}
            for name, code in codes.items():
                log(f"{name}: {args.messages:,} messages for one user")
                with start_server(dataclasses.replace(WORDLLAMA.from_source(code), name=name.replace(" ", "-")), tmp) as server:
                    runs[name] = asyncio.run(grow(server.base_url, args.messages, log))
    except BenchError as exc:
        print(f"bench.perf.growth: {exc}", file=sys.stderr)
        return 1
    command = "python -m bench.perf.growth " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = {"started_at": started, "git_commit": git_commit(), "server_code_sha256": server_code, "embedder": WORDLLAMA.name,
            "cpus": os.cpu_count(), "command": command.strip(), "load_average": [load_start, load_average()],
            **({"baseline": str(args.baseline)} if args.baseline else {})}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": runs}, indent=2) + "\n")
    replace_run_section(
        args.doc, "growth", f"## One user growing (embedder `{meta['embedder']}`, {meta['cpus']} CPUs)",
        (f"Measured {started} at git {meta['git_commit']} with `{meta['command']}`: one fresh server for each code, "
         f"one user's conversations loaded through `POST /api/v1/memories/batch`, {BATCH // TURNS_PER_CONVERSATION} "
         f"conversations of {TURNS_PER_CONVERSATION} turns a batch; enrichment is done when `/metrics` counts no pending job."),
        meta["load_average"], results_table(runs),
    )
    log(f"wrote {args.out} and {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
