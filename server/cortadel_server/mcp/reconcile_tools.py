"""The reconciliation tools (reference names): start a run, ask its state, list its suggestions.

Handlers in the shape of ``cortadel_server.mcp.tools``: (service, caller, validated arguments).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from cortadel_server.curation.reconcile import IDLE, MAX_LIMIT
from cortadel_server.mcp.arguments import Arguments
from cortadel_server.mcp.caller import Caller
from cortadel_server.mcp.views import ToolResult
from cortadel_server.service import MemoryService

#: suggestions list_merge_suggestions returns at most
SUGGESTIONS_PER_CALL = 50

RECONCILE_MEMORIES = """Start cleaning up the user's long-term memory in the background: find \
entities stored under several names ("Dana" and "Dana Lee", "NYC" and "New York City", a role \
like "my manager" that a fact names) and facts a later fact made stale. Sure findings are \
applied at once (reversibly); the rest wait as suggestions for review.

Call it after a long session, or when search returns duplicates or outdated facts. Returns the \
run id at once; follow it with reconcile_status. Only one run per user at a time: calling again \
while one runs returns that run."""

RECONCILE_STATUS = """The state of the user's latest memory reconciliation run (or of the run \
named): idle (never run), queued, running, completed, failed or cancelled, with how many \
suggestions it made and how many it applied."""

LIST_MERGE_SUGGESTIONS = """List reconciliation suggestions for the user's memory: entity merges, \
role aliases and stale facts, each with its confidence and evidence. status: pending (waiting for \
review), approved (applied, by the run or by hand) or rejected. Each line is \
<status> <id>: <kind> <what> (confidence)."""


class ReconcileMemoriesArgs(Arguments):
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="Facts and entities to look at (the most recent / most mentioned); default 500.")
    types: list[Literal["entities", "facts"]] | None = Field(None, description="What to look for: entities (duplicates, aliases), facts (stale); default both.")


class ReconcileStatusArgs(Arguments):
    run_id: str | None = Field(None, description="A run id from reconcile_memories; default the latest run.")


class ListMergeSuggestionsArgs(Arguments):
    status: Literal["pending", "approved", "rejected"] = Field("pending", description="Which suggestions to list.")


def reconcile_memories(service: MemoryService, caller: Caller, args: ReconcileMemoriesArgs) -> ToolResult:
    run = service.reconciler.start(caller.user_id, limit=args.limit, types=args.types)
    return ToolResult(f"Reconciliation run {run.id} is {run.status}.", {"run_id": run.id, "status": run.status})


def reconcile_status(service: MemoryService, caller: Caller, args: ReconcileStatusArgs) -> ToolResult:
    run = service.reconciler.status(caller.user_id, args.run_id)
    if run is None:
        return ToolResult("No reconciliation run yet: idle.", {"status": IDLE, "run_id": None})
    text = f"Run {run.id}: {run.status}; {run.suggested} suggestions, {run.auto_approved} applied at once."
    if run.error:
        text += f" Error: {run.error}"
    data = {"status": run.status, "run_id": run.id, "suggested": run.suggested, "auto_approved": run.auto_approved,
            "created_at": run.created_at, "finished_at": run.finished_at, "error": run.error}
    return ToolResult(text, data)


def list_merge_suggestions(service: MemoryService, caller: Caller, args: ListMergeSuggestionsArgs) -> ToolResult:
    items, total = service.reconciler.suggestions(caller.user_id, args.status, 0, SUGGESTIONS_PER_CALL)
    if not items:
        return ToolResult(f"No {args.status} suggestions.", {"suggestions": [], "total": 0})
    lines = [f"{s.status} {s.id}: {s.kind} {json.dumps(s.subject, ensure_ascii=False)} ({s.confidence:.2f})" for s in items]
    data = [{"id": s.id, "kind": s.kind, "status": s.status, "confidence": s.confidence, "subject": s.subject,
             "evidence": s.evidence, "decided_by": s.decided_by} for s in items]
    return ToolResult("\n".join(lines), {"suggestions": data, "total": total})
