"""python -m bench.pipeline [--quick]"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from cortadel_server.config import Settings
from cortadel_server.providers import build_embedder

from bench.console import log
from bench.errors import BenchError
from bench.pipeline import report
from bench.pipeline.labeled import HELDOUT_PATH, LabeledSet, in_process
from bench.pipeline.run import FULL, QUICK, corpus_summary, llm_scenario, rules_scenario
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, work_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline",
                                     description="Write pipeline: labeled-set accuracy, ingest throughput, latencies, LLM calls and tokens.")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK.load_conversations} conversations ingested, {QUICK.latency_conversations} timed; writes pipeline-quick.*")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL

    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_start = load_average()
    try:
        labeled, heldout = LabeledSet.load(), LabeledSet.load(HELDOUT_PATH)
        embedder = build_embedder(Settings.from_env({}))  # the server's default, as the writer's vector search scores
        local = {"development": in_process(labeled, embedder), "heldout": in_process(heldout, embedder)}
        for part, scored in local.items():
            log(f"[in process] {part}: precision {scored['precision']} recall {scored['recall']} event accuracy {scored['event_accuracy']}")
        with work_folder("pipeline") as tmp:
            rules = asyncio.run(rules_scenario(sizes, labeled, heldout, tmp, log))
            llm = asyncio.run(llm_scenario(sizes, labeled, tmp, log))
    except BenchError as exc:
        print(f"bench.pipeline: {exc}", file=sys.stderr)
        return 1
    run = {
        "meta": {"started_at": started, "git_commit": git_commit(), "cpus": os.cpu_count(), "quick": args.quick,
                 "command": "python -m bench.pipeline" + (" --quick" if args.quick else ""),
                 "load_average": [load_start, load_average()]},
        "sizes": asdict(sizes),
        "targets": report.TARGETS,
        "corpus": corpus_summary(sizes),
        "labeled_in_process": local,
        "rules": rules,
        "llm": llm,
    }
    for path in report.write(run, args.out):
        log(f"wrote {path}")
    for row in report.headline(run):
        log(" | ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
