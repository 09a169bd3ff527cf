"""python -m bench.starvation — health and search latency while writes are stuck on a slow model.

Fifty from-conversation requests wait on a scripted LLM that drips its answer one byte a second
(the slow-drip outage of issue #12). Meanwhile ``/api/health`` is timed 200 times and a search 100
times, against the same calls timed on the idle server just before; both are written, side by side,
to bench/reports/starvation.md. The test suite checks the same scenario with loose bounds
(server/tests/test_starvation.py); the figures come from here, on a quiet machine.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.pipeline.scripted_llm import CHAT, Reply, ScriptedOpenAI
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, ServerConfig, start_server

STUCK_WRITES = 50
REPORT = REPO_ROOT / "bench" / "reports" / "starvation.md"


def timed(call: Callable[[], httpx.Response], times: int) -> list[float]:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        response = call()
        spent.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return spent


def summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), statistics.quantiles(values, n=20)[-1]


def main() -> int:
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory() as tmp:
        config = ServerConfig("drip", {"CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "drip",
                                       "CORTADEL_LLM_TIMEOUT": "300", "CORTADEL_LLM_FALLBACK": "error"})
        with start_server(config, Path(tmp)) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
            for i in range(200):
                api.post("/api/v1/memories", json={"user_id": "reader", "text": f"Note {i}: the build server is in rack {i}.", "infer": False}).raise_for_status()
            llm.handle(CHAT, lambda request: Reply.chat({"facts": []}).dripping(1.0))

            def health() -> httpx.Response:
                return api.get("/api/health")

            def search() -> httpx.Response:
                return api.post("/api/v1/memories/search", json={"user_id": "reader", "query": "which rack is the build server in"})

            timed(search, 20)
            idle = {"health": summary(timed(health, 200)), "search": summary(timed(search, 100))}

            def stuck(i: int) -> None:
                body = {"user_id": f"writer-{i}", "messages": [{"role": "user", "content": f"I have {i} plants."}]}
                httpx.post(f"{server.base_url}/api/v1/memories/from-conversation", json=body, timeout=600)

            writers = [threading.Thread(target=stuck, args=(i,), daemon=True) for i in range(STUCK_WRITES)]
            for writer in writers:
                writer.start()
            time.sleep(3.0)  # every write has arrived: four drip, the rest wait their turn
            loaded = {"health": summary(timed(health, 200)), "search": summary(timed(search, 100))}
            load = load_average()
            llm.stop()  # the model goes away: the stuck writes fail fast and drain
            for writer in writers:
                writer.join(timeout=60)

    rows = "\n".join(
        f"| {name} | {idle[name][0]:.1f} | {idle[name][1]:.1f} | {loaded[name][0]:.1f} | {loaded[name][1]:.1f} |"
        for name in ("health", "search")
    )
    REPORT.write_text(
        f"""# Health and search while {STUCK_WRITES} writes wait on a slow-drip LLM

`python -m bench.starvation` (`make bench-starvation`) at {git_commit()}, load average {load}.
Milliseconds over HTTP on loopback; 200 health checks and 100 searches (200 memories) per column.

| call | idle p50 | idle p95 | {STUCK_WRITES} writes stuck: p50 | {STUCK_WRITES} writes stuck: p95 |
|---|---|---|---|---|
{rows}

Targets (issue #12): health p95 < 100 ms and search within 2x its idle p50 while the writes wait.
""",
        encoding="utf-8",
    )
    print(REPORT.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
