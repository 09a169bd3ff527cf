"""The same scenario (``compat_scenario.py``, written against the published facade) run through
the published ``cortadel`` 1.2.0 and through ours, against one real server, compared field by
field. Allowed differences, all deliberate:

- ids and timestamps differ between the two runs (each run is its own user);
- search timings and health latencies are measurements;
- ours fills ``metadata`` on list items and details, which the published package always leaves
  ``None``;
- ours adds fields the published classes lack (the server's extras).
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from compat_scenario import FIRST, SECOND
from environments import run_script

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMES = {"created_at", "valid_at", "invalid_at", "checked_at", "at"}
MEASURED = {"timings_ms", "latency_ms"}
EXTRAS = {"error", "gist", "memory_type", "tags", "project", "session_id", "source_turn_uuids",
          "transcript_path", "extraction_status", "superseded_by", "expired_at"}


@pytest.fixture(scope="module")
def runs(server: Any, published_cortadel: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    tag = uuid.uuid4().hex[:8]
    published = run_script("compat_scenario.py", server.base_url, f"compat-pub-{tag}", published=published_cortadel)
    ours = run_script("compat_scenario.py", server.base_url, f"compat-ours-{tag}")
    return published, ours


class Comparison:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.ids: dict[str, str] = {}
        self.filled_metadata: list[Any] = []

    def same(self, theirs: Any, mine: Any, path: str) -> None:
        key = path.rsplit(".", 1)[-1]
        if key in MEASURED:
            self.check(type(theirs) is type(mine), path, theirs, mine)
        elif key in TIMES and theirs is not None:
            theirs_at, mine_at = _moment(theirs), _moment(mine)
            self.check(theirs_at is not None and mine_at is not None and abs(theirs_at - mine_at) < 300, path, theirs, mine)
        elif key == "metadata" and theirs is None and isinstance(mine, dict):
            self.filled_metadata.append(mine)
        elif isinstance(theirs, dict) and isinstance(mine, dict):
            extra = set(mine) - set(theirs)
            self.check(set(theirs) <= set(mine) and extra <= EXTRAS, path, sorted(theirs), sorted(mine))
            for name in theirs:
                self.same(theirs[name], mine.get(name), f"{path}.{name}")
        elif isinstance(theirs, list) and isinstance(mine, list):
            self.check(len(theirs) == len(mine), path, len(theirs), len(mine))
            for i, (a, b) in enumerate(zip(theirs, mine)):
                self.same(a, b, f"{path}[{i}]")
        elif isinstance(theirs, str) and UUID.match(theirs):
            self.check(self.ids.setdefault(theirs, mine) == mine and bool(UUID.match(mine or "")), path, theirs, mine)
        else:
            self.check(theirs == mine and type(theirs) is type(mine), path, theirs, mine)

    def check(self, ok: bool, path: str, theirs: Any, mine: Any) -> None:
        if not ok:
            self.problems.append(f"{path}: published {theirs!r} vs ours {mine!r}")


def _moment(value: Any) -> float | None:
    if isinstance(value, int):
        return float(value)
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


def test_both_packages_give_the_same_results(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = runs
    assert list(ours) == list(published)
    comparison = Comparison()
    for step in published:
        comparison.same(published[step], ours[step], step)
    assert comparison.problems == []
    assert len(set(comparison.ids.values())) == len(comparison.ids) >= 3
    assert {"seat": "window"} in comparison.filled_metadata


def test_the_scenario_exercised_real_answers(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, ours = runs
    first = ours["add_first"]["ok"]
    assert (first["event"], first["content"], first["app_name"]) == ("ADD", FIRST, "compat-app")
    assert ours["add_duplicate"]["ok"]["event"] == "SKIP_DUPLICATE"
    assert ours["add_duplicate"]["ok"]["id"] == first["id"]
    assert ours["get"]["ok"]["text"] == FIRST
    assert ours["get_unknown"] == ours["get_not_uuid"] == ours["sync_get_deleted"] == {"ok": None}
    assert [i["content"] for i in ours["list"]["ok"]["items"]] == [SECOND, FIRST]
    assert ours["search"]["ok"]["results"][0]["content"] == FIRST
    assert ours["add_empty"]["error"]["status"] == 400
    assert ours["add_empty"]["error"]["code"] == "validation_error"
    assert ours["sync_delete"]["ok"] == "Deleted 1 memory"
    assert ours["health"]["ok"]["status"] == "ok"
