"""python -m bench.locomo [--data PATH] [--quick] [--reranker-model DIR] [--mem0-path DIR] [--no-mem0]"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.console import log
from bench.errors import BenchError
from bench.locomo import report
from bench.locomo.dataset import dataset_meta, load
from bench.locomo.run import as_dicts, run_all
from bench.locomo.systems import server_plans
from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT, exit_on_sigterm, snapshot_server, work_folder

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev.json"
TURN_TEXT = (
    'Each turn is stored as "Speaker: text" — the speaker\'s name keeps "who said it" searchable, since '
    "questions name people — with \" [image: <caption>]\" appended when the turn shared a photo. "
    "Turns are added with the Cortadel extensions `session_id` (the LoCoMo session) and `timestamp` (the session date), "
    "and again with the contract's fields only (*turns · contract*: no session, no date, as the published SDKs send them). "
    "Facts ingestion sends the same text as `user` messages with `uuid` = the turn's dia_id and `timestamp` = the session "
    "date, one from-conversation call per session with `session_id` = the session. mem0 gets the same text and metadata "
    "(its OSS `add` has no timestamp or session field)."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description="LoCoMo retrieval benchmark against live Cortadel servers.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="first conversation only; writes locomo-quick.* and leaves docs alone")
    parser.add_argument("--reranker-model", help="ONNX cross-encoder directory; adds hybrid+rerank systems (CORTADEL_RERANKER=onnx)")
    parser.add_argument("--mem0-path", type=Path, default=REPO_ROOT / "bench" / ".work" / "mem0", help="pip --target folder holding mem0ai (default: %(default)s)")
    parser.add_argument("--no-mem0", action="store_true", help="skip the mem0 comparison")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite",
                        help="server storage; both: every system on each, in one run (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "reports", help="report folder (default: %(default)s)")
    parser.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "benchmarks.md", help="doc whose headline section is updated")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    try:
        conversations = load(args.data)
        if args.quick:
            conversations = conversations[:1]
        started = datetime.now(UTC).isoformat(timespec="seconds")
        load_start = load_average()
        with work_folder("locomo") as tmp:
            source, server_code = snapshot_server(tmp)
            results = asyncio.run(run_all(server_plans(args.reranker_model, source, args.backend), conversations, args.data,
                                          None if args.no_mem0 else args.mem0_path, tmp, log))
    except BenchError as exc:
        print(f"bench.locomo: {exc}", file=sys.stderr)
        return 1
    run = {
        "meta": {
            "started_at": started,
            **dataset_meta(args.data, conversations),
            "skipped_questions_without_evidence": sum(c.skipped_questions for c in conversations),
            "top_k": 10,
            "git_commit": git_commit(),
            "server_code_sha256": server_code,
            "quick": args.quick,
            "backend": args.backend,
            "command": "python -m bench.locomo" + (" --quick" if args.quick else "")
            + (f" --backend {args.backend}" if args.backend != "sqlite" else ""),
            "load_average": [load_start, load_average()],
        },
        "definitions": report.DEFINITIONS,
        "turn_text": TURN_TEXT,
        "reference": report.REFERENCE,
        "systems": as_dicts(results),
    }
    for path in report.write(run, args.out, None if args.quick else args.doc):
        log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
