"""Cortadel and mem0 OSS side by side, in one run, on the same corpus: single adds and searches.

    python -m bench.perf.side_by_side                       # 2,000 memories, 200 searches
    python -m bench.perf.side_by_side --memories 10000 --mem0-path /tmp/mem0

Each system loads the same sentences for one user one add at a time (``infer=False``), then
answers the same questions (top 10), with the same wordllama embedder. Three runs in turn: mem0 as
a Python library over its local Qdrant store, Cortadel as a library (``MemoryService``) — both in
a subprocess timed by the same loop (``bench.perf.in_process``), the like-for-like ratio — and
Cortadel as a fresh server over HTTP (client wall clock, JSON included), which mem0's library is
spared. mem0ai lives in its own folder:
``.venv/bin/pip install --target bench/.work/mem0 -r bench/requirements-mem0.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.client import BenchClient
from bench.errors import BenchError
from bench.markdown import replace_section, table
from bench.perf.corpus import queries, sentences
from bench.provenance import busy_note, git_commit, load_average
from bench.server import REPO_ROOT, WORDLLAMA, exit_on_sigterm, python_path, snapshot_server, start_server, work_folder

USER = "side-by-side"


def _ms(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"p50": round(statistics.median(ordered) * 1000, 2), "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


async def cortadel(base_url: str, memories: int, n_queries: int) -> dict[str, Any]:
    stream = sentences(USER)
    adds: list[float] = []
    searches: list[float] = []
    async with BenchClient(base_url, max_connections=1) as api:
        for _ in range(memories):
            started = time.perf_counter()
            await api.add(USER, next(stream), infer=False)
            adds.append(time.perf_counter() - started)
        for query in queries(n=n_queries):
            searches.append((await api.search(USER, query, top_k=10))[1])
    return {"add_ms": _ms(adds), "search_ms": _ms(searches)}


def in_process(system: str, source: Path, memories: int, n_queries: int, *, mem0_path: Path) -> dict[str, Any]:
    """``system`` driven as a library in a subprocess (``bench.perf.in_process``), no HTTP."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{system}-out-") as tmp:
        out = Path(tmp) / "times.json"
        cmd = [sys.executable, "-m", "bench.perf.in_process", "--system", system, "--user", USER, "--memories", str(memories),
               "--queries", str(n_queries), "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": python_path(mem0_path, REPO_ROOT, source), "MEM0_TELEMETRY": "False"}
        done = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BenchError(f"{system} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        answer = json.loads(out.read_text())
    return {"add_ms": _ms(answer["add_seconds"]), "search_ms": _ms(answer["search_seconds"])}


def results_table(results: dict[str, Any]) -> str:
    http, ours, theirs = results["cortadel"], results["cortadel_in_process"], results["mem0"]

    def pair(m: dict[str, Any], key: str) -> str:
        return f"{m[key]['p50']:.2f} / {m[key]['p95']:.2f}"

    rows = [
        [what, pair(ours, key), pair(theirs, key), f"{theirs[key]['p50'] / ours[key]['p50']:.1f}×", pair(http, key),
         f"{theirs[key]['p50'] / http[key]['p50']:.1f}×", target]
        for what, key, target in (("single add, `infer: false`", "add_ms", "≥ 3×"), ("search, top 10", "search_ms", "≥ 10×"))
    ]
    return table(["operation", "Cortadel p50 / p95 ms (in process)", "mem0 p50 / p95 ms (in process)", "Cortadel faster by (p50, both in process)",
                  "Cortadel p50 / p95 ms (over HTTP)", "Cortadel over HTTP faster by (p50)", "target"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.side_by_side", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2_000, help="memories each system loads (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="searches each system answers (default: %(default)s)")
    parser.add_argument("--mem0-path", type=Path, default=REPO_ROOT / "bench" / ".work" / "mem0", help="pip --target folder holding mem0ai (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    parser.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "performance.md", help="doc whose mem0 section is updated")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if not (args.mem0_path / "mem0").is_dir():
        print(f"bench.perf.side_by_side: mem0ai is not in {args.mem0_path}; see this module's docstring", file=sys.stderr)
        return 1
    started, load_start = datetime.now(UTC).isoformat(timespec="seconds"), load_average()
    try:
        with work_folder("side") as tmp:
            source, server_code = snapshot_server(tmp)
            with start_server(WORDLLAMA.from_source(source), tmp) as server:
                ours = asyncio.run(cortadel(server.base_url, args.memories, args.queries))
            ours_in_process = in_process("cortadel", source, args.memories, args.queries, mem0_path=args.mem0_path)
            theirs = in_process("mem0", source, args.memories, args.queries, mem0_path=args.mem0_path)
    except BenchError as exc:
        print(f"bench.perf.side_by_side: {exc}", file=sys.stderr)
        return 1
    command = f"python -m bench.perf.side_by_side --memories {args.memories} --queries {args.queries}"
    meta = {"started_at": started, "git_commit": git_commit(), "server_code_sha256": server_code, "embedder": WORDLLAMA.name,
            "cpus": os.cpu_count(), "command": command, "load_average": [load_start, load_average()]}
    run = {"meta": meta, "results": {"cortadel": ours, "cortadel_in_process": ours_in_process, "mem0": theirs}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mem0-side-by-side.json").write_text(json.dumps(run, indent=2) + "\n")
    body = "\n\n".join([
        f"## Side by side with mem0 OSS (embedder `{meta['embedder']}`, {meta['cpus']} CPUs)",
        (f"Measured {started} at git {meta['git_commit']} with `{command}`: {args.memories:,} memories of one user "
         f"added one at a time, then {args.queries:,} searches, by each system in turn. The ratios are mem0's p50 over "
         "Cortadel's: both as libraries in process, and Cortadel's server over HTTP against mem0's library."),
        busy_note(*meta["load_average"]),
        results_table(run["results"]),
    ])
    replace_section(args.doc, "mem0", body, new_doc_intro="# Performance\n")
    print(f"wrote {args.out / 'mem0-side-by-side.json'} and {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
