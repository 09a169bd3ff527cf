"""python -m bench.perf [--quick] [--embedder wordllama|onnx] [--backend sqlite|postgres] [--scenario single-user|many-users|both]"""

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

#: the scenarios by their name on the command line: their key in the report, and what runs them
SCENARIOS = {"single-user": ("single_user", single_user), "many-users": ("many_users", many_users)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf", description="Latency, throughput, RSS and disk use of live Cortadel servers.")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK.large:,} memories for one user, {QUICK.users} users × {QUICK.per_user:,}; writes perf-quick.*")
    parser.add_argument("--embedder", choices=["wordllama", "onnx"], default="wordllama", help="server embedder (default: %(default)s, the server default)")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite", help="server storage (default: %(default)s)")
    parser.add_argument("--scenario", choices=["both", *SCENARIOS], default="both", help="which stores to measure (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    parser.add_argument("--doc", type=Path, help="doc whose results section is updated (default: docs/performance.md for sqlite, "
                        "docs/scaling.md for postgres)")
    args = parser.parse_args(argv)
    doc = args.doc or REPO_ROOT / "docs" / report.DOC_SECTIONS[args.backend][1]
    scenarios = list(SCENARIOS) if args.scenario == "both" else [args.scenario]
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    config = dataclasses.replace(WORDLLAMA if args.embedder == "wordllama" else MINILM, backend=args.backend)

    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_start = load_average()
    try:
        with work_folder("perf") as tmp:
            source, server_code = snapshot_server(tmp)
            config = config.from_source(source)
            measured = {key: asyncio.run(scenario(config, sizes, tmp, log)) for key, scenario in (SCENARIOS[name] for name in scenarios)}
    except BenchError as exc:
        print(f"bench.perf: {exc}", file=sys.stderr)
        return 1
    run = {
        "meta": {"started_at": started, "git_commit": git_commit(), "server_code_sha256": server_code, "embedder": config.name, "backend": args.backend, "cpus": os.cpu_count(),
                 "quick": args.quick, "command": " ".join(["python -m bench.perf", *(argv if argv is not None else sys.argv[1:])]),
                 "load_average": [load_start, load_average()]},
        "sizes": asdict(sizes),
        "targets": report.TARGETS[args.backend],
        **measured,
    }
    for path in report.write(run, args.out, doc):
        log(f"wrote {path}")
    for row in report.verdicts(run):
        log(" | ".join(map(str, row)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
