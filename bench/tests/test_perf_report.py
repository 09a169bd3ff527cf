"""bench.perf's report judges each backend by its own issue's targets, for the scenarios the run
measured, and writes each backend's results where that backend's figures live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.perf import report


def latency(p50: float, p95: float) -> dict[str, Any]:
    return {"n": 200, "p50_ms": p50, "p95_ms": p95, "p99_ms": p95, "mean_ms": p50}


def scenario(memories: int, search: tuple[float, float], add_p50: float, per_second: float, disk: float = 2500.0) -> dict[str, Any]:
    return {
        "baseline_search": {**latency(11.8, 15.6), "server_phases": latency(9.0, 12.1)},
        "search": {**latency(*search), "server_phases": latency(search[0] - 3, search[1] - 3)},
        "throughput": {"clients": 8, "searches_per_second": per_second, "latency": latency(54.8, 94.5)},
        "add": latency(add_p50, 23.2),
        "load": {"adds_per_second": 67.7, "add_latency_under_load": latency(98.9, 215.3)},
        "footprint": {"memories": memories, "rss_mib": 400.0, "peak_rss_mib": 420.0, "disk_bytes_per_memory": disk},
    }


def run(backend: str, **scenarios: dict[str, Any]) -> dict[str, Any]:
    meta = {"started_at": "2026-12-02T03:49:00+00:00", "git_commit": "abc1234", "server_code_sha256": "15f98d4c8536", "embedder": "wordllama",
            "backend": backend, "cpus": 2, "quick": False, "command": f"python -m bench.perf --backend {backend}", "load_average": [0.2, 3.0]}
    return {"meta": meta, "sizes": {"large": 10_000, "users": 100, "per_user": 1_000, "clients": 8}, **scenarios}


def test_postgres_single_user_is_judged_by_issue_14s_targets_alone() -> None:
    postgres = run("postgres", single_user=scenario(10_000, (15.2, 19.8), 15.3, 137.2, disk=0.0))
    assert report.verdicts(postgres) == [
        ["search p50 at 10,000 memories / user", "≤ 15 ms", "15.20 ms", "**missed**"],
        ["search p95 at 10,000 memories / user", "≤ 40 ms", "19.80 ms", "met"],
        ["add p50 (single user store)", "≤ 20 ms", "15.30 ms", "met"],
    ]
    table = report.results_table(postgres)
    assert "100 users" not in table  # the many-users store was not measured
    assert "| 15.30 / 23.20 | 68 | 98.9 / 215.3 | n/a | 400 (peak 420) |" in table  # no data-folder bytes: the rows are in PostgreSQL


def test_sqlite_keeps_issue_16s_targets_and_the_many_users_ratio() -> None:
    sqlite = run("sqlite", single_user=scenario(10_000, (4.58, 8.0), 8.9, 447.1), many_users=scenario(100_000, (5.9, 9.0), 8.35, 300.0))
    rows = report.verdicts(sqlite)
    assert [row[0] for row in rows] == [
        "search p50 at 10,000 memories / user", "search p95 at 10,000 memories / user", "searches/s, 8 clients, at 10,000 memories / user",
        "add p50 (single user store)", "add p50 (many users store)", "search p50, 100 users × 1,000 vs 1 user × 1,000 alone",
    ]
    assert rows[2][1:] == ["≥ 400", "447", "met"]
    assert rows[5][2:] == ["0.50× (p95 0.58×)", "met"]  # 5.9 / 11.8 and 9.0 / 15.6


def test_each_backend_writes_its_own_report_and_doc_section(tmp_path: Path) -> None:
    doc = tmp_path / "scaling.md"
    doc.write_text("# Scaling\n\nBefore.\n\n<!-- bench:perf-postgres:start -->\nold figures\n<!-- bench:perf-postgres:end -->\n\nAfter.\n")
    written = report.write(run("postgres", single_user=scenario(10_000, (9.4, 13.8), 16.0, 137.2)), tmp_path / "reports", doc)
    assert written == [tmp_path / "reports" / "perf-postgres.json", tmp_path / "reports" / "perf-postgres.md", doc]
    assert json.loads(written[0].read_text())["meta"]["backend"] == "postgres"
    text = doc.read_text()
    assert "old figures" not in text and text.startswith("# Scaling\n\nBefore.\n") and text.endswith("\n\nAfter.\n")
    assert "### `bench.perf` on PostgreSQL (embedder `wordllama`, 2 CPUs)" in text
    assert "with `python -m bench.perf --backend postgres`; details in [bench/reports/perf-postgres.md]" in text
    assert "| search p50 at 10,000 memories / user | ≤ 15 ms | 9.40 ms | met |" in text
    assert report.report_name({"backend": "sqlite", "quick": True}) == "perf-quick"
