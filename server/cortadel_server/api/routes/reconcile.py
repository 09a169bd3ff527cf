"""Reconciliation (an extension of the contract): runs, and the suggestions they make.

A run finds duplicate entities and stale facts of one user in the background (curation/); its
findings wait as suggestions to approve or reject, or were applied at once when sure enough, and
any applied one can be undone. The same auth as every route: a user key acts only for its user.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import Field

from cortadel_server.api.deps import Authorized, QueryUserOrKey, Service
from cortadel_server.api.errors import error_responses
from cortadel_server.api.schemas import QueryInt, Request, Response, UserId
from cortadel_server.curation.reconcile import IDLE, MAX_LIMIT, TYPES
from cortadel_server.curation.suggestions import KINDS, STATUSES
from cortadel_server.storage.base import ReconcileRun, Suggestion

router = APIRouter(prefix="/api/v1/reconcile", tags=["Reconciliation"])

ERRORS = error_responses(400, 401, 403, 404, 409, 500)


class StartRunRequest(Request):
    user_id: UserId
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, strict=True, description="Facts and entities to look at (the most recent / most mentioned); default 500.")
    types: list[str] | None = Field(None, description=f"What to look for: any of {', '.join(TYPES)} (default both).")


class UserRequest(Request):
    user_id: UserId


class MergeRequest(Request):
    user_id: UserId
    source: str = Field(min_length=1, max_length=500, description="Canonical name of the entity merged away.")
    target: str = Field(min_length=1, max_length=500, description="Canonical name of the entity it becomes part of.")


class RunView(Response):
    id: str
    user_id: str
    status: str = Field(description="queued, running, completed, failed or cancelled.")
    types: list[str]
    limit: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    error: str | None
    suggested: int = Field(description="Findings stored as suggestions by this run.")
    auto_approved: int = Field(description="Of those, applied at once (confidence at or above CORTADEL_RECONCILE_AUTO_APPROVE).")


class StatusView(Response):
    status: str = Field(description="idle (no run yet), queued, running, completed, failed or cancelled.")
    run: RunView | None


class SuggestionView(Response):
    id: str
    user_id: str
    kind: str = Field(description=f"One of {', '.join(KINDS)}.")
    status: str = Field(description=f"One of {', '.join(STATUSES)}.")
    confidence: float
    subject: dict[str, Any]
    evidence: list[dict[str, Any]]
    run_id: str | None
    created_at: float
    decided_at: float | None
    decided_by: str | None = Field(description="auto (applied by the run) or hand.")
    undone_at: float | None


class SuggestionPage(Response):
    items: list[SuggestionView]
    total: int
    offset: int
    limit: int


def run_view(run: ReconcileRun) -> RunView:
    return RunView(**{k: getattr(run, k) for k in RunView.model_fields})


def suggestion_view(suggestion: Suggestion) -> SuggestionView:
    return SuggestionView(**{k: getattr(suggestion, k) for k in SuggestionView.model_fields})


RunIdPath = Annotated[str, Path(alias="runId", description="Run identifier.")]
SuggestionIdPath = Annotated[str, Path(alias="suggestionId", description="Suggestion identifier.")]


@router.post("/runs", operation_id="Reconcile_Start", status_code=202, response_model=RunView, responses=ERRORS,
             summary="Start a reconciliation run for a user (or get the one already queued or running).")
async def start_run(body: Authorized[StartRunRequest], service: Service) -> RunView:
    run = await service.workers.write(lambda: service.reconciler.start(body.user_id, limit=body.limit, types=body.types))
    return run_view(run)


@router.get("/status", operation_id="Reconcile_Status", response_model=StatusView, responses=ERRORS,
            summary="The state of a user's latest reconciliation run (idle when there is none), or of the run named.")
async def run_status(user_id: QueryUserOrKey, service: Service,
                     run_id: Annotated[str | None, Query(description="A run of the user; default the latest.")] = None) -> StatusView:
    run = await service.workers.read(service.reconciler.status, user_id, run_id)
    return StatusView(status=IDLE if run is None else run.status, run=None if run is None else run_view(run))


@router.post("/runs/{runId}/cancel", operation_id="Reconcile_Cancel", response_model=RunView, responses=ERRORS,
             summary="Cancel a queued or running run; what it already applied stays (undo it suggestion by suggestion).")
async def cancel_run(run_id: RunIdPath, body: Authorized[UserRequest], service: Service) -> RunView:
    return run_view(await service.workers.write(lambda: service.reconciler.cancel(body.user_id, run_id)))


@router.get("/suggestions", operation_id="Reconcile_Suggestions", response_model=SuggestionPage, responses=ERRORS,
            summary="A user's reconciliation suggestions, newest first.")
async def list_suggestions(
    user_id: QueryUserOrKey, service: Service,
    status: Annotated[str | None, Query(description=f"One of {', '.join(STATUSES)}; default all.")] = None,
    offset: Annotated[QueryInt, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[QueryInt, Query(ge=1, le=500)] = 50,
) -> SuggestionPage:
    items, total = await service.workers.read(service.reconciler.suggestions, user_id, status, offset, limit)
    return SuggestionPage(items=[suggestion_view(s) for s in items], total=total, offset=offset, limit=limit)


@router.post("/suggestions/{suggestionId}/approve", operation_id="Reconcile_Approve", response_model=SuggestionView,
             responses=ERRORS, summary="Apply a pending suggestion (reversibly: see undo).")
async def approve(suggestion_id: SuggestionIdPath, body: Authorized[UserRequest], service: Service) -> SuggestionView:
    return suggestion_view(await service.workers.write(lambda: service.reconciler.approve(body.user_id, suggestion_id)))


@router.post("/suggestions/{suggestionId}/reject", operation_id="Reconcile_Reject", response_model=SuggestionView,
             responses=ERRORS, summary="Reject a pending suggestion; no later run suggests it again.")
async def reject(suggestion_id: SuggestionIdPath, body: Authorized[UserRequest], service: Service) -> SuggestionView:
    return suggestion_view(await service.workers.write(lambda: service.reconciler.reject(body.user_id, suggestion_id)))


@router.post("/suggestions/{suggestionId}/undo", operation_id="Reconcile_Undo", response_model=SuggestionView,
             responses=ERRORS, summary="Undo an applied suggestion: the entities and facts are as they were before it, on both time axes.")
async def undo(suggestion_id: SuggestionIdPath, body: Authorized[UserRequest], service: Service) -> SuggestionView:
    return suggestion_view(await service.workers.write(lambda: service.reconciler.undo(body.user_id, suggestion_id)))


@router.post("/merges", operation_id="Reconcile_Merge", response_model=SuggestionView, responses=ERRORS,
             summary="Merge two entities by hand: recorded as a suggestion approved by hand, undone like any other.")
async def merge(body: Authorized[MergeRequest], service: Service) -> SuggestionView:
    return suggestion_view(await service.workers.write(lambda: service.reconciler.merge_by_hand(body.user_id, body.source, body.target)))
