"""The two write-pipeline scenarios, each on a fresh server.

rules: the labeled sets (development and held-out parts) over HTTP, then ingest throughput, from-conversation latency and add
latency, all against one server with the rules extractor.
llm: the same server settings but ``CORTADEL_EXTRACTOR=llm`` pointed at a scripted endpoint;
synthetic conversations, the labeled set and a few single adds, counting the model calls each made.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.pipeline.conversations import conversations, statements, user_turn_kinds
from bench.pipeline.labeled import LabeledSet, over_http
from bench.pipeline.measure import add_latency, conversation_latency, ingest_throughput
from bench.pipeline.scripted_llm import (
    CHAT,
    ScriptedOpenAI,
    answer,
    reported_usage,
    usage_of,
)
from bench.server import WORDLLAMA, ServerConfig, start_server
from bench.stats import percentile

RULES = ServerConfig("rules", {**WORDLLAMA.env, "CORTADEL_EXTRACTOR": "rules"})


@dataclass(frozen=True)
class Sizes:
    load_conversations: int  # ingested for throughput
    load_users: int  # they are spread over
    concurrency: int  # requests in flight while loading
    latency_conversations: int  # sequential from-conversation requests (5 more as warm-up)
    adds: int  # sequential adds per infer setting (5 more as warm-up)
    llm_conversations: int  # synthetic conversations through the llm extractor
    llm_adds: int  # adds with infer true through the llm extractor
    turns: int = 10


FULL = Sizes(load_conversations=300, load_users=25, concurrency=8, latency_conversations=100, adds=200, llm_conversations=100, llm_adds=20)
QUICK = Sizes(load_conversations=60, load_users=10, concurrency=8, latency_conversations=30, adds=50, llm_conversations=20, llm_adds=10)


def corpus_summary(sizes: Sizes) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    for messages in conversations(sizes.load_conversations, turns=sizes.turns):
        kinds.update(user_turn_kinds(messages))
    return {"user_turns": dict(kinds), "turns_per_conversation": sizes.turns}


async def rules_scenario(sizes: Sizes, labeled: LabeledSet, heldout: LabeledSet, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    with start_server(RULES, workdir) as server:
        async with BenchClient(server.base_url, max_connections=sizes.concurrency) as api:
            log(f"[rules] labeled sets over HTTP ({len(labeled.cases)} + {len(heldout.cases)} conversations)")
            http = await over_http(api, labeled, user_prefix="labeled")
            heldout_http = await over_http(api, heldout, user_prefix="heldout")
            log(f"[rules] ingest {sizes.load_conversations} conversations, {sizes.concurrency} in flight")
            load = await ingest_throughput(api, conversations(sizes.load_conversations, turns=sizes.turns),
                                           users=sizes.load_users, concurrency=sizes.concurrency)
            log(f"[rules] {load['turns_per_second']} turns/s; from-conversation latency")
            users = [f"load-{u:03d}" for u in range(sizes.load_users)]
            latency = await conversation_latency(api, conversations(sizes.latency_conversations + 5, seed=1, turns=sizes.turns), users)
            log(f"[rules] from-conversation p50 {latency['p50_ms']} ms; add latency")
            adds = await add_latency(api, statements(sizes.adds + 5, seed=2), user_prefix="add")
    return {"labeled_http": http, "heldout_http": heldout_http, "ingest": load, "conversation_latency": latency, "add_latency": adds}


def _per_conversation(calls: list[int]) -> dict[str, Any]:
    return {"n": len(calls), "mean": round(sum(calls) / len(calls), 3) if calls else None,
            "p50": percentile(calls, 50), "max": max(calls, default=None), "distribution": dict(sorted(Counter(calls).items()))}


async def llm_scenario(sizes: Sizes, labeled: LabeledSet, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    with ScriptedOpenAI() as endpoint:
        endpoint.handle(CHAT, answer)
        config = ServerConfig("llm-scripted", {
            **RULES.env, "CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": endpoint.v1_url, "CORTADEL_LLM_MODEL": "scripted",
            "CORTADEL_LLM_FALLBACK": "error", "CORTADEL_LOG_LEVEL": "info",
        })
        with start_server(config, workdir) as server:
            async with BenchClient(server.base_url) as api:
                phases: dict[str, Any] = {}

                async def phase(name: str, units: int, run: Callable[[], Any]) -> None:
                    first, log_start = len(endpoint.requests), len(server.log_path.read_text(errors="replace"))
                    calls = await run()
                    requests = endpoint.requests[first:]
                    reported = reported_usage(server.log_path.read_text(errors="replace")[log_start:])
                    usage = usage_of(requests)
                    phases[name] = {"units": units, **usage, "reported": reported,
                                    "per_unit": {k: round(usage[k] / units, 2) for k in ("calls", "message_tokens", "request_body_tokens")}
                                    | {f"reported_{k}": round(reported[k] / units, 2) for k in ("prompt_tokens", "completion_tokens")},
                                    "calls_per_unit": _per_conversation(calls) if calls else None}

                async def synthetic() -> list[int]:
                    calls, events = [], Counter[str]()
                    for i, messages in enumerate(conversations(sizes.llm_conversations, seed=3, turns=sizes.turns)):
                        before = len(endpoint.requests)
                        body = await api.add_conversation(f"llm-{i % sizes.load_users:03d}", messages)
                        calls.append(len(endpoint.requests) - before)
                        events.update(r.get("event") or "?" for r in body.get("results") or [])
                    phases_events["synthetic"] = dict(events)
                    return calls

                async def labeled_run() -> list[int]:
                    phases_events["labeled"] = await over_http(api, labeled, user_prefix="llm-labeled")
                    return []

                async def adds() -> list[int]:
                    calls = []
                    for i, text in enumerate(statements(sizes.llm_adds, seed=4)):
                        before = len(endpoint.requests)
                        await api.add(f"llm-add-{i % 3}", text, infer=True)
                        calls.append(len(endpoint.requests) - before)
                    return calls

                phases_events: dict[str, Any] = {}
                log(f"[llm] {sizes.llm_conversations} synthetic conversations")
                await phase("synthetic_conversations", sizes.llm_conversations, synthetic)
                log(f"[llm] labeled set ({len(labeled.cases)} conversations)")
                await phase("labeled_conversations", len(labeled.cases), labeled_run)
                log(f"[llm] {sizes.llm_adds} adds with infer true")
                await phase("adds_infer_true", sizes.llm_adds, adds)
                before = len(endpoint.requests)
                await api.add("llm-add-verbatim", "I keep my passport in the top drawer.", infer=False)
                phases["add_infer_false_calls"] = len(endpoint.requests) - before
    return {"phases": phases, "events": phases_events}
