"""A reconciliation run held mid-way on its LLM judge, for the tests that fail the database under
it (test_postgres_job_requeue.py, test_reconcile_outage.py).

The facts are test_reconcile.py's: two roles the rules name at once (0.95, applied), a misspelt
name they are unsure of (0.85, below the 0.9 of CORTADEL_RECONCILE_AUTO_APPROVE): that one goes to
the judge, whose verdict the test holds until the database is failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from support.scripted_openai import RecordedRequest, Reply

USER = "kim"
FACTS = [
    "User's manager is Dana Lee.",
    "User's manager wants the report on Friday.",
    "User met Dan Lee at the conference.",
    "Jonathan Reyes is User's dentist.",
    "Jonathon Reyes moved the appointment to Monday.",
]
VERDICT = {"same": True, "confidence": 0.97}
#: what the worker records on a job it requeues (pipeline/enrich.py, _requeue_unsettled)
REQUEUED = "requeued: the database failed before the job's end was recorded"
#: what the worker logs when a run of it failed whole (pipeline/enrich.py, _loop)
WORKER_ERROR = "enrichment: worker error"

T = TypeVar("T")


class HeldJudge:
    """The judge's handler: every verdict is VERDICT, but the first two wait until the test lets
    them go (``asked[i]`` is set when request ``i`` arrives, ``let_go[i]`` answers it)."""

    def __init__(self) -> None:
        self.asked = [threading.Event(), threading.Event()]
        self.let_go = [threading.Event(), threading.Event()]
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            n, self._count = self._count, self._count + 1
        if n < len(self.asked):
            self.asked[n].set()
            self.let_go[n].wait(60)
        return Reply.chat(VERDICT)

    def release_all(self) -> None:
        for event in self.let_go:
            event.set()


def wait_until(condition: Callable[[], T | None], what: str, timeout: float = 15) -> T:
    """``condition()`` once it is truthy, asked every 0.05 s; fails naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        if value := condition():
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def add(api: httpx.Client, text: str) -> str:
    response = api.post("/api/v1/memories", json={"user_id": USER, "text": text})
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


def all_done(api: httpx.Client, count: int) -> bool:
    items = api.get("/api/v1/memories", params={"user_id": USER}).json()["items"]
    return len(items) == count and all(m["extraction_status"] == "done" for m in items)


def held_run(api: httpx.Client, judge: HeldJudge) -> tuple[list[str], dict[str, Any]]:
    """FACTS stored and enriched, then a reconciliation run started and held on its first verdict:
    the facts' ids and the run."""
    ids = [add(api, text) for text in FACTS]
    wait_until(lambda: all_done(api, len(FACTS)), "the facts' enrichment")
    started = api.post("/api/v1/reconcile/runs", json={"user_id": USER})
    assert started.status_code == 202, started.text
    assert judge.asked[0].wait(15), "the judge was never asked"
    return ids, started.json()
