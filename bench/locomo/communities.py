"""Do communities help retrieval? ``python -m bench.locomo.communities [--conversations N] [--data PATH]``

Issue #20 asks to use communities in retrieval only if they pay on LoCoMo; this is that measurement.
One server with the default settings (wordllama embedder, SQLite) on a snapshot of server/, every
conversation ingested as *facts* the way ``python -m bench.locomo`` does it (one from-conversation
call per session), then a wait until enrichment has linked every fact's entities, since communities
are built from those links. For every question, the default hybrid search's top ``CANDIDATES``
results are reordered by

    1 / (RANK_OFFSET + rank) + bonus × (level-0 communities holding both the result and an entity the question names)

(rank from 0; a question's entities are ``find_entities`` keys, folded as the server stores them),
and the first ``TOP_K`` are scored at turn and session level exactly as ``bench.locomo`` scores them.
Bonus 0 is the search's own order. Writes ``bench/reports/communities.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortadel_server.language.entities import find_entities

from bench.client import BenchClient
from bench.console import log
from bench.errors import BenchError, DatasetError
from bench.locomo.__main__ import DEFAULT_DATA
from bench.locomo.dataset import Conversation, dataset_meta, load
from bench.locomo.evaluate import TOP_K, Answers, ranked_turns, score
from bench.locomo.ingest import ingest_facts
from bench.markdown import table
from bench.provenance import busy_note, git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, start_server, work_folder
from bench.stats import latency_summary

CANDIDATES = 30  # results reordered per question; the scored TOP_K come from these
RANK_OFFSET = 60  # the reciprocal-rank constant of RRF, so a bonus reads against the usual fusion scale
BONUSES = (0.0, 0.002, 0.005, 0.01, 0.02)
ENRICHMENT_TIMEOUT_S = 1800.0
COMMAND = "python -m bench.locomo.communities"

Log = Callable[[str], None]


def shared_communities(question: str, communities: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """Memory id -> how many of ``communities`` hold both it and an entity the question names."""
    keys = {mention.key for mention in find_entities(question)}
    counts: Counter[str] = Counter()
    for community in communities:
        if keys.intersection(community["entities"]):
            counts.update(set(community["memory_ids"]))
    return counts


def reorder(results: Sequence[Mapping[str, Any]], shared: Mapping[str, int], bonus: float) -> list[Mapping[str, Any]]:
    """``results`` by 1 / (RANK_OFFSET + rank) + bonus × shared[id], highest first; ties keep the search's order."""
    scored = sorted(enumerate(results), key=lambda pair: (-(1.0 / (RANK_OFFSET + pair[0]) + bonus * shared.get(pair[1]["id"], 0)), pair[0]))
    return [result for _, result in scored]


async def wait_for_enrichment(api: BenchClient, user_id: str, timeout: float) -> Counter[str]:
    """Poll until no fact of the user is ``pending``; returns the count of each ``extraction_status``."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = Counter([str(item.get("extraction_status")) async for item in api.list_all(user_id)])
        if not statuses["pending"]:
            return statuses
        if time.monotonic() > deadline:
            raise BenchError(f"{user_id}: {statuses['pending']} facts still pending enrichment after {timeout:.0f} s")
        await asyncio.sleep(2.0)


async def measure(api: BenchClient, conversations: Sequence[Conversation], log: Log) -> tuple[dict[float, Answers], list[dict[str, Any]]]:
    """Ingest, enrich and ask every conversation; the ranked turns per bonus, and one row per conversation."""
    answers = {bonus: Answers() for bonus in BONUSES}
    rows = []
    for conv in conversations:
        user_id = f"{conv.sample_id}-facts"
        log(f"ingest {conv.sample_id}: {len(conv.turns)} turns, {len(conv.sessions)} sessions")
        ingested = await ingest_facts(api, user_id, conv)
        started = time.perf_counter()
        statuses = await wait_for_enrichment(api, user_id, ENRICHMENT_TIMEOUT_S)
        enriched = time.perf_counter() - started
        communities, grouping_seconds = await api.communities(user_id, level=0)
        log(f"{conv.sample_id}: {ingested.memories} facts, {len(communities)} level-0 communities; asking {len(conv.questions)} questions")
        for question in conv.questions:
            results, seconds = await api.search(user_id, question.question, top_k=CANDIDATES)
            shared = shared_communities(question.question, communities)
            for bonus, kept in answers.items():
                kept.ranked.append((question, ranked_turns(reorder(results, shared, bonus)[:TOP_K], ingested.units)))
                kept.seconds.append(seconds)
        rows.append({
            "sample_id": conv.sample_id,
            "questions": len(conv.questions),
            "facts": ingested.memories,
            "extraction_status": dict(statuses),
            "ingest_seconds": round(ingested.seconds, 2),
            "enrichment_wait_seconds": round(enriched, 2),
            "level0_communities": len(communities),
            "first_communities_request_ms": round(grouping_seconds * 1000.0, 1),
        })
    return answers, rows


def markdown(run: Mapping[str, Any]) -> str:
    meta = run["meta"]
    by_bonus = [(b["bonus"], b["turn"]["overall"], b["session"]["overall"]) for b in run["bonuses"]]
    lines = [
        "# Communities as a retrieval signal (LoCoMo, facts ingestion)", "",
        (f"`{meta['command']}` on {meta['data']} (conversations: {meta['conversations']}, questions: {meta['questions']}), "
        f"started {meta['started_at']}, commit {meta['git_commit']}, server code {meta['server_code_sha256']}; "
        f"{busy_note(*meta['load_average'])}."), "",
        (f"The default hybrid search's top {CANDIDATES}, reordered by 1 / ({RANK_OFFSET} + rank) + bonus × (level-0 communities "
        f"holding both the memory and an entity the question names); metrics over the first {TOP_K}, as `bench.locomo` scores "
        "them (docs/benchmarks.md). Bonus 0 is the search's own order."), "",
        table(["bonus per shared community", "turn R@5", "turn hit@5", "turn R@10", "turn MRR", "session hit@5", "session MRR"],
              [[b, t["recall@5"], t["hit@5"], t["recall@10"], t["mrr"], s["hit@5"], s["mrr"]] for b, t, s in by_bonus]), "",
        table(["conversation", "questions", "facts", "level-0 communities", "first communities request (ms)", "enrichment wait (s)"],
              [[c["sample_id"], c["questions"], c["facts"], c["level0_communities"], round(c["first_communities_request_ms"]),
                c["enrichment_wait_seconds"]] for c in run["conversations"]]), "",
        (f"Search latency (hybrid, top {CANDIDATES}): p50 {run['search_latency']['p50_ms']:.1f} ms, "
        f"p95 {run['search_latency']['p95_ms']:.1f} ms."),
    ]
    return "\n".join(lines) + "\n"


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Would a level-0 community bonus improve LoCoMo retrieval?")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file (default: %(default)s)")
    parser.add_argument("--conversations", type=_positive, metavar="N", help="the first N conversations only (default: all)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    try:
        if not args.data.is_file():
            raise DatasetError(f"no LoCoMo file at {args.data} (pass --data PATH; see bench/README.md)")
        conversations = load(args.data)[: args.conversations]
        started = datetime.now(UTC).isoformat(timespec="seconds")
        load_start = load_average()
        with work_folder("communities") as tmp:
            source, server_code = snapshot_server(tmp)
            with start_server(WORDLLAMA.from_source(source), tmp) as server:
                answers, rows = asyncio.run(_measure_on(server.base_url, conversations, log))
    except BenchError as exc:
        print(f"{COMMAND}: {exc}", file=sys.stderr)
        return 1
    run = {
        "meta": {
            "started_at": started,
            **dataset_meta(args.data, conversations),
            "candidates": CANDIDATES,
            "top_k": TOP_K,
            "rank_offset": RANK_OFFSET,
            "git_commit": git_commit(),
            "server_code_sha256": server_code,
            "command": COMMAND + (f" --conversations {args.conversations}" if args.conversations else ""),
            "load_average": [load_start, load_average()],
        },
        "conversations": rows,
        "search_latency": latency_summary(answers[0.0].seconds),
        "bonuses": [_bonus_row(bonus, kept) for bonus, kept in answers.items()],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "communities.json").write_text(json.dumps(run, indent=2) + "\n")
    (args.out / "communities.md").write_text(markdown(run))
    log(f"wrote {args.out / 'communities.json'} and {args.out / 'communities.md'}")
    return 0


def _bonus_row(bonus: float, answers: Answers) -> dict[str, Any]:
    scored = score(answers)
    return {"bonus": bonus, "turn": scored["turn"], "session": scored["session"]}


async def _measure_on(base_url: str, conversations: Sequence[Conversation], log: Log) -> tuple[dict[float, Answers], list[dict[str, Any]]]:
    async with BenchClient(base_url) as api:
        return await measure(api, conversations, log)


if __name__ == "__main__":
    sys.exit(main())
