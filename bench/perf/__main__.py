"""python -m bench.perf [--quick] [--embedder wordllama|onnx]"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench.console import log
from bench.errors import BenchError
from bench.perf import report
from bench.perf.run import FULL, QUICK, many_users, single_user
from bench.provenance import git_commit, load_average
from bench.server import MINILM, REPO_ROOT, WORDLLAMA, exit_on_sigterm, snapshot_server, work_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf", description="Latency, throughput, RSS and disk use of live Cortadel servers.")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK.large:,} memories for one user, {QUICK.users} users × {QUICK.per_user:,}; writes perf-quick.*")
    parser.add_argument("--embedder", choices=["wordllama", "onnx"], default="wordllama", help="server embedder (default: %(default)s, the server default)")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite", help="server storage (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    parser.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "performance.md", help="doc whose results section is updated")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    config = dataclasses.replace(WORDLLAMA if args.embedder == "wordllama" else MINILM, backend=args.backend)

    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_start = load_average()
    try:
        with work_folder("perf") as tmp:
            source, server_code = snapshot_server(tmp)
            config = config.from_source(source)
            single = asyncio.run(single_user(config, sizes, tmp, log))
            many = asyncio.run(many_users(config, sizes, tmp, log))
    except BenchError as exc:
        print(f"bench.perf: {exc}", file=sys.stderr)
        return 1
    run = {
        "meta": {"started_at": started, "git_commit": git_commit(), "server_code_sha256": server_code, "embedder": config.name, "backend": args.backend, "cpus": os.cpu_count(),
                 "quick": args.quick, "command": "python -m bench.perf" + (" --quick" if args.quick else ""),
                 "load_average": [load_start, load_average()]},
        "sizes": asdict(sizes),
        "targets": report.TARGETS,
        "single_user": single,
        "many_users": many,
    }
    for path in report.write(run, args.out, args.doc):
        log(f"wrote {path}")
    for row in report.verdicts(run):
        log(" | ".join(map(str, row)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
