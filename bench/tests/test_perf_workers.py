"""The worker-count benchmark, end to end at a tiny size: one SQLite file served by one worker and
by two in turn, searches counted, and every search after an add through the port finds its text,
with two workers through the worker that did not take the add."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.perf.workers import abba, main

ADDS = 3


def test_rounds_go_one_many_many_one() -> None:
    assert abba(1, 2, 1) == [1, 2]
    assert abba(1, 3, 3) == [1, 3, 3, 1, 1, 3]


def test_one_and_two_workers_on_one_file_count_searches_and_find_each_add(tmp_path: Path) -> None:
    out = tmp_path / "workers.json"
    assert main(["--memories", "50", "--rounds", "1", "--warmup", "1", "--seconds", "2", "--searches", "20",
                 "--adds", str(ADDS), "--pause", "0.05", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["pause_seconds"] == 0.05  # each search after a write comes a moment later: the watcher's case

    assert (report["memories"], report["workers"], report["rounds"], report["order"]) == (50, 2, 1, ["1_workers", "2_workers"])
    assert report["fill"]["stored"] == 50
    assert [(r["round"], r["workers"]) for r in report["rounds_run"]] == [(0, 1), (1, 2)]
    for run in report["rounds_run"]:
        throughput = run["throughput"]
        assert throughput["clients"] == 8
        assert throughput["searches"] > 0
        assert 1.5 <= throughput["seconds"] <= 10  # the 2 s asked for, plus the searches still in flight
        assert sum(throughput["connections_per_worker"]) == 8
        assert run["one_client"]["n"] == 20
        assert 0 < run["one_client"]["p50_ms"] <= run["one_client"]["p95_ms"] < 10_000  # a search over HTTP, milliseconds
        after_add = run["search_after_add"]
        assert after_add["found_the_other_replicas_write"] == 2 * ADDS
        for read in after_add["reads_after_writes"]:
            assert re.fullmatch(r".+ Ticket \d+\.", read["written"])
            assert read["found"] == read["written"]
            assert 0 < read["ms"] < 10_000
    one, two = report["rounds_run"]
    assert one["throughput"]["connections_per_worker"] == [8]  # one process holds every connection
    assert one["search_after_add"]["connections_per_worker"] == [2]
    assert two["search_after_add"]["connections_per_worker"] == [1, 1]  # the add and the search on different workers
    assert two["search_after_add"]["connections_per_worker_after"] == [1, 1]

    for workers in ("1_workers", "2_workers"):
        summary = report["results"][workers]
        assert summary["rounds"] == 1
        assert summary["median_searches_per_second"] > 0
        assert summary["found_the_text_just_added"] == summary["searches_after_an_add"] == 2 * ADDS
        for kind in ("after_other_add", "no_write_between", "converse"):
            latency = summary["search_after_add"][kind]
            assert latency["n"] == ADDS
            assert 0 < latency["p50_ms"] <= latency["p95_ms"] < 10_000
    rates = [report["results"][w]["median_searches_per_second"] for w in ("1_workers", "2_workers")]
    assert report["searches_per_second_ratio"] == round(rates[1] / rates[0], 2)
    assert report["load_average"]["during_min"] <= report["load_average"]["during_max"]
    assert re.fullmatch(r"[0-9a-f]{12}", report["server_code_sha256"])
