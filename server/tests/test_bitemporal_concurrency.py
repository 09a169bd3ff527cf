"""Issue #12 item 10: concurrent contradicting facts keep both time axes consistent.

Twenty clients say where the user lives at once. Valid time used to be stamped before the write lock
was taken, so a write that waited for the lock superseded a fact stamped after it: rows ended before
they began and an `as_of` query found several homes. Now "now" is read under the lock, and a
statement dated before the current fact is stored as a past version between its neighbours.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import httpx
from support.timeline import (
    BASE,
    CITIES,
    DAY,
    add_all_at_once,
    check_one_home_at_every_instant,
    homes_as_of,
    seconds,
    versions,
)


def test_twenty_concurrent_moves_leave_one_home_and_no_backward_interval(api: httpx.Client, user: str) -> None:
    results = add_all_at_once(api, [{"user_id": user, "text": f"I live in {city}."} for city in CITIES])
    assert sorted(r["event"] for r in results) == ["ADD"] + ["SUPERSEDE"] * 19
    rows = versions(api, user)
    check_one_home_at_every_instant(api, user, rows)
    # The serial order of the writes is the order of their valid times: each supersedes the one before.
    chain = sorted(rows, key=lambda r: seconds(r["valid_at"]))
    assert [r["invalid_at"] for r in chain[:-1]] == [r["valid_at"] for r in chain[1:]]


def test_dated_statements_arriving_out_of_order_form_one_timeline(api: httpx.Client, user: str) -> None:
    days = list(range(20))
    random.Random(12).shuffle(days)
    bodies = [{"user_id": user, "text": f"I live in {city}.", "timestamp": BASE + day * DAY} for city, day in zip(CITIES, days)]
    add_all_at_once(api, bodies)
    rows = versions(api, user)
    check_one_home_at_every_instant(api, user, rows)
    # Whatever the arrival order, the latest statement is current and each day names its own city.
    latest = next(b for b in bodies if b["timestamp"] == BASE + 19 * DAY)
    assert [r["content"] for r in rows if r["is_current"]] == [latest["text"].replace("I live", "User lives")]
    for body in bodies:
        noon = datetime.fromtimestamp(body["timestamp"] + DAY / 2, UTC).isoformat()
        assert homes_as_of(api, user, noon) == [body["text"].replace("I live", "User lives")]
