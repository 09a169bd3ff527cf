"""The growth benchmark end to end at a tiny size: one user's conversation batches through a real
server, rates per quarter, and the wait until the enrichment worker has linked every fact."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.perf.growth import main
from bench.server import SERVER_SRC


def test_one_user_grows_in_quarters_and_every_fact_is_enriched_after(tmp_path: Path) -> None:
    out, doc = tmp_path / "growth.json", tmp_path / "performance.md"
    # this code as its own baseline: the report holds one run of each under its name
    assert main(["--messages", "1000", "--baseline", str(SERVER_SRC), "--out", str(out), "--doc", str(doc)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert list(report["results"]) == ["baseline", "this code"]
    for run in report["results"].values():
        assert run["messages"] == 1_000
        assert run["facts"] == 1_000  # each turn states one fact in the first person
        assert [p["messages"] for p in run["parts"]] == [[0, 500], [500, 1000]]  # a batch is 500 turns: a quarter rounds up to one
        assert all(0 < p["messages_per_second"] < 100_000 for p in run["parts"])
        assert 0 < run["seconds"] < 120
        assert 0 <= run["enriched_seconds_after"] < 60
    text = doc.read_text(encoding="utf-8")
    assert "<!-- bench:growth:start -->" in text and "| all 1,000 messages |" in text
    assert re.search(r"\| facts stored \| 1,000 \| 1,000 \|", text)
