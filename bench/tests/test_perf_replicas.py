"""The replica catch-up benchmark, end to end at a tiny size: a PostgreSQL of its own, two servers
on one database, and every search after a write finds the memory the other replica just wrote, and
none after a delete finds the memory the other replica just deleted."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.perf.replicas import main

ROUNDS = 3


def test_each_search_through_one_replica_finds_the_other_replicas_add(tmp_path: Path) -> None:
    out = tmp_path / "replicas.json"
    assert main(["--memories", "50", "--rounds", str(ROUNDS), "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))

    assert (report["memories"], report["rounds"]) == (50, ROUNDS)
    assert report["planner_statistics"]["live_rows"] == 50
    results = report["results"]
    for kind in ("after_other_add", "no_write_between", "converse", "after_other_delete"):
        summary = results["searches"][kind]
        assert summary["n"] == ROUNDS
        assert 0 < summary["p50_ms"] <= summary["p95_ms"] < 10_000  # a search over HTTP, milliseconds
    reads = results["reads_after_writes"]
    assert [(r["round"], r["kind"]) for r in reads] == [(i, kind) for i in range(ROUNDS) for kind in ("after_other_add", "converse")]
    for read in reads:
        assert re.fullmatch(r".+ Ticket \d+\.", read["written"])
        assert read["found"] == read["written"]
        assert read["rank"] == 1
        assert 0 < read["ms"] < 10_000
    assert len({r["written"] for r in reads}) == 2 * ROUNDS
    assert results["found_the_other_replicas_write"] == 2 * ROUNDS
    assert results["top_hit_the_other_replicas_write"] == 2 * ROUNDS
    # each round deletes the memory written through A: its search through B no longer finds it
    deleted = [r for r in reads if r["kind"] == "after_other_add"]
    assert [(r["round"], r["id"], r["rank"]) for r in results["reads_after_deletes"]] == [(r["round"], r["id"], None) for r in deleted]
    assert results["gone_after_the_other_replicas_delete"] == ROUNDS
    assert report["load_average"]["during_min"] <= report["load_average"]["during_max"]
    assert re.fullmatch(r"[0-9a-f]{12}", report["server_code_sha256"])
