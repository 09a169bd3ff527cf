"""Export, import and migration rates, and the import of raw messages through the write pipeline.

    .venv/bin/python -m bench.transfer                      # 100,000 memories, 100,000 messages
    .venv/bin/python -m bench.transfer --memories 10000 --messages 5000 --backend postgres

Each figure times the `cortadel` command a user runs (process start included) on fresh files under
bench/.work/transfer/. The memories store is filled through the storage interface (the fastest
honest path: rows as an import writes them) with unit vectors of the default embedder's dimension;
the messages are user statements from a few templates, 100 per user, in sessions of 10.
Prints one JSON report and merges it into bench/reports/transfer.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / ".work" / "transfer"
REPORT = ROOT / "bench" / "reports" / "transfer.json"
PER_USER = 1000
CITIES = ["Berlin", "Paris", "Lisbon", "Porto", "Oslo", "Rome", "Vienna", "Prague", "Madrid", "Dublin"]
THINGS = ["tea", "coffee", "jazz", "chess", "sushi", "hiking", "cycling", "poetry", "tennis", "baking"]


def cortadel(*args: str, env: dict[str, str]) -> float:
    """Run one command; the seconds it took."""
    clean = {k: v for k, v in os.environ.items() if k not in ("CORTADEL_DATA", "CORTADEL_DATABASE_URL")}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "cortadel_server", *args], env={**clean, **env},
                            cwd=ROOT / "server", capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"cortadel {' '.join(args)} failed: {result.stderr}")
    return time.perf_counter() - started


def store_env(backend: str, name: str, work: Path) -> dict[str, str]:
    if backend == "postgres":
        from cortadel_server.testing_postgres import scratch_database

        return {"CORTADEL_DATABASE_URL": scratch_database(f"bench_{name}")}
    return {"CORTADEL_DATA": str(work / f"{name}.db")}


#: a user's rows: (user, count) -> (texts, unit vectors), both in load order
RowSource = Callable[[str, int], tuple[list[str], np.ndarray]]


def templated_rows(dim: int) -> RowSource:
    """Texts from one template and random unit vectors: enough to time copying rows, not to search them."""
    rng = np.random.default_rng(1)

    def rows(user: str, count: int) -> tuple[list[str], np.ndarray]:
        vectors = rng.standard_normal((count, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = [f"User {user} likes {THINGS[i % 10]} and lives in {CITIES[(i // 10) % 10]} (note {i})." for i in range(count)]
        return texts, vectors

    return rows


def fill(env: dict[str, str], memories: int, dim: int, model: str, rows: RowSource, *, per_user: int = PER_USER,
         progress: Callable[[int], None] | None = None) -> None:
    """Write ``memories`` rows, ``per_user`` to a user (user-0000, user-0001, …), one COPY per user."""
    from cortadel_server.storage.base import HistoryEntry, MemoryRecord, StoredMemory
    from cortadel_server.transfer.migrate import open_location

    store = open_location(env.get("CORTADEL_DATABASE_URL") or env["CORTADEL_DATA"])
    try:
        store.ensure_vector_index(dim, model)
        for first in range(0, memories, per_user):
            user = f"user-{first // per_user:04d}"
            texts, vectors = rows(user, min(per_user, memories - first))
            stored = [
                StoredMemory(MemoryRecord(
                    id=f"{user}-{i:05d}", user_id=user, created_at=1_790_000_000.0 + i, text=text,
                    fingerprint=f"{user}-{i}", session_id=f"s{i // 10}", metadata={"n": i},
                ), "", vector.tobytes())
                for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
            ]
            with store.write(user):
                store.load_memories(user, stored)
                store.load_history(user, [HistoryEntry(r.record.id, "ADD", r.record.created_at, {"source": "add"}) for r in stored])
            if progress:
                progress(first + len(stored))
    finally:
        store.close()


def messages_file(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            user, i = divmod(n, 100)
            statement = [
                f"I live in {CITIES[(i + user) % 10]}.", f"I really like {THINGS[i % 10]}.",
                f"My sister Anna works in {CITIES[(i * 3) % 10]}.", f"I have a meeting about {THINGS[(i + 3) % 10]} on Friday.",
                f"I don't like {THINGS[(i + 5) % 10]} anymore.",
            ][i % 5]
            out.write(json.dumps({"user_id": f"user-{user:04d}", "role": "user", "content": statement,
                                  "session_id": f"s{i // 10}", "uuid": f"m{n}"}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--work", type=Path, default=WORK, help="folder for the stores and files (emptied first)")
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    from cortadel_server.config import Settings
    from cortadel_server.providers import build_embedder

    embedder = build_embedder(Settings.from_env())
    model, dim = f"{embedder.provider}/{embedder.model}", embedder.dim
    report: dict[str, Any] = {"backend": args.backend, "embedder": model, "dim": dim, "cpus": os.cpu_count()}
    report["load_average_at_start"] = round(os.getloadavg()[0], 1)  # the machine may be shared: figures are floors

    if args.memories:
        source = store_env(args.backend, "source", work)
        started = time.perf_counter()
        fill(source, args.memories, dim, model, templated_rows(dim))
        report["fill_seconds"] = round(time.perf_counter() - started, 1)

        exported = work / "export.jsonl"
        seconds = cortadel("export", "-o", str(exported), env=source)
        report["export"] = {"memories": args.memories, "seconds": round(seconds, 1), "memories_per_s": round(args.memories / seconds),
                            "bytes": exported.stat().st_size}
        target = store_env(args.backend, "target", work)
        seconds = cortadel("import", str(exported), env=target)
        report["import"] = {"memories": args.memories, "seconds": round(seconds, 1), "memories_per_s": round(args.memories / seconds)}
        other = "sqlite" if args.backend == "postgres" else "postgres"
        moved = store_env(other, "moved", work)
        seconds = cortadel("migrate", "--from", source.get("CORTADEL_DATABASE_URL") or source["CORTADEL_DATA"],
                           "--to", moved.get("CORTADEL_DATABASE_URL") or moved["CORTADEL_DATA"], env={})
        report[f"migrate_to_{other}"] = {"memories": args.memories, "seconds": round(seconds, 1), "memories_per_s": round(args.memories / seconds)}

    if args.messages:
        raw = work / "messages.jsonl"
        messages_file(raw, args.messages)
        pipeline = store_env(args.backend, "pipeline", work)
        clean = {k: v for k, v in os.environ.items() if k not in ("CORTADEL_DATA", "CORTADEL_DATABASE_URL")}
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "cortadel_server", "import", "--format", "messages", str(raw)],
                                env={**clean, **pipeline}, cwd=ROOT / "server", capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"cortadel import --format messages failed: {result.stderr}")
        seconds = time.perf_counter() - started
        outcome = json.loads(result.stdout)
        written = sum(n for event, n in outcome["events"].items() if event in ("ADD", "SUPERSEDE"))
        report["messages_through_pipeline"] = {
            "messages": args.messages, "seconds": round(seconds, 1), "messages_per_s": round(args.messages / seconds),
            "memories_written": written, "memories_per_s": round(written / seconds), "events": outcome["events"],
        }
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    # A run of one part (--memories 0 or --messages 0) updates that part of the last report.
    merged = json.loads(REPORT.read_text(encoding="utf-8")) if REPORT.exists() else {}
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({**merged, **report}, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
