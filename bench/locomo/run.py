"""One LoCoMo run: every system, every ingest mode, every question; results as one JSON-ready dict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.errors import ApiError, BenchError
from bench.locomo.dataset import Conversation
from bench.locomo.evaluate import Answers, ask, score
from bench.locomo.ingest import Ingested, ingest_facts, ingest_turns
from bench.locomo.systems import CONTRACT, FACTS, INGEST_MODES, TURNS, ServerPlan
from bench.server import REPO_ROOT, ServerConfig, python_path, start_server


@dataclass
class SystemResult:
    label: str
    engine: str
    embedder: str
    mode: str
    ingest: str
    status: str = "ok"
    reason: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    ingestion: dict[str, Any] = field(default_factory=dict)
    transport_retries: int = 0  # searches re-sent after the server dropped a keep-alive connection


def _ingest_summary(parts: list[Ingested]) -> dict[str, Any]:
    events: dict[str, int] = {}
    notes: dict[str, int] = {}
    for part in parts:
        for k, v in part.events.items():
            events[k] = events.get(k, 0) + v
        for k, v in part.notes.items():
            notes[k] = notes.get(k, 0) + v
    return {
        "memories": sum(p.memories for p in parts),
        "memories_with_turns": sum(1 for p in parts for units in p.units.values() if units),
        "seconds": round(sum(p.seconds for p in parts), 2),
        "events": events,
        "notes": notes,
    }


async def run_server_plan(plan: ServerPlan, conversations: list[Conversation], workdir: Path, log: Any) -> list[SystemResult]:
    """Start one server, ingest every conversation both ways, and ask every variant of the plan."""
    results: list[SystemResult] = []

    def result(variant_label: str, mode: str, ingest: str) -> SystemResult:
        return SystemResult(variant_label, "cortadel", plan.config.name, mode, ingest)

    try:
        with start_server(plan.config, workdir) as server:
            async with BenchClient(server.base_url) as api:
                ingested: dict[str, list[Ingested]] = {TURNS: [], CONTRACT: [], FACTS: []}
                failures: dict[str, str] = {}
                for conv in conversations:
                    log(f"[{plan.config.name}] ingest {conv.sample_id}: {len(conv.turns)} turns, {len(conv.sessions)} sessions")
                    ingested[TURNS].append(await ingest_turns(api, f"{conv.sample_id}-turns", conv))
                    ingested[CONTRACT].append(await ingest_turns(api, f"{conv.sample_id}-contract", conv, extensions=False))
                    if FACTS not in failures:
                        try:
                            ingested[FACTS].append(await ingest_facts(api, f"{conv.sample_id}-{FACTS}", conv))
                        except ApiError as exc:
                            failures[FACTS] = str(exc)
                for variant in plan.variants:
                    for ingest in INGEST_MODES:
                        item = result(plan.label(variant), variant.mode + (f"+{variant.rerank}" if variant.rerank else ""), ingest)
                        results.append(item)
                        if ingest in failures:
                            item.status, item.reason = "failed", f"ingest failed: {failures[ingest]}"
                            continue
                        item.ingestion = _ingest_summary(ingested[ingest])
                        log(f"[{plan.config.name}] ask {item.label} / {ingest}")
                        answers = Answers()
                        retries_before = api.transport_retries
                        try:
                            for conv, part in zip(conversations, ingested[ingest]):
                                answers.extend(await ask(api, part, conv.questions, variant))
                        except ApiError as exc:
                            item.status, item.reason = "failed", str(exc)
                            continue
                        item.metrics = score(answers)
                        item.transport_retries = api.transport_retries - retries_before
    except BenchError as exc:
        for variant in plan.variants:
            for ingest in INGEST_MODES:
                if not any(r.label == plan.label(variant) and r.ingest == ingest for r in results):
                    results.append(SystemResult(plan.label(variant), "cortadel", plan.config.name, variant.mode, ingest, "failed", str(exc)))
    return results


def run_mem0(config: ServerConfig, conversations: list[Conversation], data: Path, mem0_path: Path, log: Any) -> SystemResult:
    """mem0 OSS on raw turns (infer=False) with the embedder of ``config``, in a subprocess."""
    item = SystemResult(f"mem0 · {config.name}", "mem0", config.name, "mem0 search", TURNS)
    if not (mem0_path / "mem0").is_dir():
        item.status, item.reason = "skipped", f"mem0ai is not installed in {mem0_path} (.venv/bin/pip install --target bench/.work/mem0 -r bench/requirements-mem0.txt)"
        return item
    log(f"[mem0] {config.name}: ingest and ask")
    with tempfile.TemporaryDirectory(prefix="bench-mem0-out-") as tmp:
        out = Path(tmp) / "answers.json"
        cmd = [sys.executable, "-m", "bench.locomo.mem0_runner", "--data", str(data), "--samples", *[c.sample_id for c in conversations],
               "--embedder", config.env["CORTADEL_EMBEDDER"], "--out", str(out)]
        if config.env.get("CORTADEL_EMBEDDER_MODEL"):
            cmd += ["--embedder-model", config.env["CORTADEL_EMBEDDER_MODEL"]]
        env = {**os.environ, "PYTHONPATH": python_path(mem0_path, REPO_ROOT, config.source), "MEM0_TELEMETRY": "False"}
        done = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            item.status, item.reason = "failed", done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            return item
        payload = json.loads(out.read_text())
    by_sample = {c.sample_id: c for c in conversations}
    answers = Answers(
        ranked=[(by_sample[q["sample_id"]].questions[q["index"]], [set(r) for r in q["ranked"]]) for q in payload["questions"]],
        seconds=payload["seconds"],
    )
    item.metrics = score(answers)
    item.ingestion = {"memories": payload["memories"], "seconds": round(payload["ingest_seconds"], 2),
                      "notes": {"warnings": _mem0_warnings(done.stderr)}}
    return item


def _mem0_warnings(stderr: str) -> list[str]:
    """The distinct lines mem0 logged about disabled features (BM25 arm, spaCy), for the report."""
    keep = ("spaCy", "fastembed", "BM25", "disabled")
    return sorted({line.strip() for line in stderr.splitlines() if any(k in line for k in keep)})


async def run_all(plans: list[ServerPlan], conversations: list[Conversation], data: Path, mem0_path: Path | None, workdir: Path, log: Any) -> list[SystemResult]:
    results: list[SystemResult] = []
    for plan in plans:
        results += await run_server_plan(plan, conversations, workdir, log)
    if mem0_path is not None:
        for plan in plans:
            results.append(run_mem0(plan.config, conversations, data, mem0_path, log))
    return results


def as_dicts(results: list[SystemResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in results]

