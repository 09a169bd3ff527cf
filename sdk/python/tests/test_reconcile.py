"""*Extra.* Reconciliation with both clients against a real server: a run, its suggestions, approve and undo."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sdk_support import Connect

from cortadel import (
    AddOptions,
    CortadelError,
    MergeSuggestion,
    NotFoundError,
    ReconcileRun,
    ReconcileStatus,
    ValidationError,
)

FACTS = ["User's manager is Dana Lee.", "User's manager wants the report on Friday.",
         "Jonathan Reyes is User's dentist.", "Jonathon Reyes moved the appointment to Monday."]


def test_a_run_its_suggestions_approve_and_undo(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    assert client.reconcile_status() == ReconcileStatus(status="idle", run=None)
    ids = [client.add(text, AddOptions(infer=True)).id for text in FACTS]
    deadline = time.monotonic() + 30
    while any((client.get(i) or pytest.fail("gone")).extraction_status != "done" for i in ids):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)

    run = client.reconcile(limit=100, types=["entities"])
    assert isinstance(run, ReconcileRun)
    assert (run.status, run.types, run.limit, run.suggested) == ("queued", ["entities"], 100, 0)
    while (status := client.reconcile_status(run.id)).status != "completed":
        assert time.monotonic() < deadline + 60, status
        time.sleep(0.1)
    assert status.run is not None and (status.run.id, status.run.suggested, status.run.auto_approved) == (run.id, 3, 2)

    pending = client.list_merge_suggestions("pending")
    assert pending.total == 1
    [merge] = pending.items
    assert isinstance(merge, MergeSuggestion)
    assert (merge.kind, merge.subject, merge.confidence, merge.run_id) == (
        "merge_entities", {"source": "jonathon reyes", "target": "jonathan reyes"}, 0.85, run.id)
    approved = client.approve_suggestion(merge.id)
    assert (approved.status, approved.decided_by, approved.undone_at) == ("approved", "hand", None)
    undone = client.undo_suggestion(merge.id)
    assert undone.status == "rejected" and undone.undone_at is not None and approved.decided_at is not None
    assert undone.undone_at >= approved.decided_at
    assert client.list_merge_suggestions("approved").total == 2

    by_hand = client.merge_entities("jonathon reyes", "jonathan reyes")
    assert (by_hand.id, by_hand.status, by_hand.confidence) == (merge.id, "approved", 1.0)

    with pytest.raises(ValidationError) as caught:
        client.reconcile(types=["people"])
    assert (caught.value.status, caught.value.code) == (400, "validation_error")



def scripted_openai() -> ModuleType:
    """The scripted OpenAI-compatible server of the server's tests, loaded from its file (the one allowed fake: the LLM)."""
    path = Path(__file__).resolve().parents[3] / "server" / "tests" / "support" / "scripted_openai.py"
    spec = importlib.util.spec_from_file_location("scripted_openai", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_cancel_a_running_run(connect: Connect, user: str) -> None:
    from cortadel_server.testing import running_server

    llm = scripted_openai()
    with llm.ScriptedOpenAI() as judge:
        judge.enqueue("/v1/chat/completions", llm.Reply.hung())  # the run waits on the judge for its uncertain merge
        env = {"CORTADEL_LLM_URL": judge.v1_url, "CORTADEL_LLM_MODEL": "judge", "CORTADEL_LLM_TIMEOUT": "2"}
        with running_server(env=env) as server:
            client = connect(server.base_url, user)
            ids = [client.add(text).id for text in FACTS]
            deadline = time.monotonic() + 30
            while any((client.get(i) or pytest.fail("gone")).extraction_status != "done" for i in ids):
                assert time.monotonic() < deadline, "enrichment did not finish"
                time.sleep(0.1)
            run = client.reconcile(types=["entities"])
            while not judge.requests:
                assert time.monotonic() < deadline + 30, "the judge was never asked"
                time.sleep(0.05)

            cancelled = client.cancel_reconcile_run(run.id)
            assert isinstance(cancelled, ReconcileRun)
            assert (cancelled.id, cancelled.status, cancelled.error) == (run.id, "cancelled", None)
            assert cancelled.finished_at is not None and cancelled.created_at is not None
            assert cancelled.created_at <= cancelled.finished_at <= time.time() + 1
            while (status := client.reconcile_status(run.id)).run is None or status.run.suggested != 2:
                assert time.monotonic() < deadline + 60, status
                time.sleep(0.1)
            assert (status.status, status.run.suggested, status.run.auto_approved) == ("cancelled", 2, 2)
            assert client.list_merge_suggestions("pending").total == 0  # the judged merge was never stored

            # once cancelled, a run cannot be cancelled again: the server's 409, through the SDK's error
            with pytest.raises(CortadelError) as again:
                client.cancel_reconcile_run(run.id)
            assert (again.value.status, again.value.code, again.value.message) == (
                409, "conflict", f"Run {run.id} is cancelled: only a queued or running run can be cancelled")
            with pytest.raises(NotFoundError) as unknown:
                client.cancel_reconcile_run("no-such-run")
            assert (unknown.value.status, unknown.value.code) == (404, "not_found")
            with pytest.raises(NotFoundError):  # another user's run is unknown to this one
                connect(server.base_url, f"{user}-other").cancel_reconcile_run(run.id)
