"""The dashboard's entity merge: choose two entities, confirm, merge; list the merges and undo one.

A merge here is reconciliation's own operation (curation/reconcile.py ``merge_by_hand``): it is
recorded as a suggestion approved by hand, listed with the others, and undone exactly.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from cortadel_server.api.deps import Service, authorize, key_user
from cortadel_server.curation.suggestions import APPROVED, MERGE_ENTITIES
from cortadel_server.dashboard import forms
from cortadel_server.dashboard.session import CSRF_FIELD, check_csrf
from cortadel_server.dashboard.views import DashboardRoute, page
from cortadel_server.errors import ValidationFailed

router = APIRouter(route_class=DashboardRoute, include_in_schema=False)

#: how many of the user's applied merges the page lists
MERGES_LISTED = 50
NOTICES = {"merged": "Merged. The merge is listed below and can be undone.", "undone": "Merge undone."}

Text = Annotated[str | None, Query()]
FormText = Annotated[str, Form()]
CsrfToken = Annotated[str, Form(alias=CSRF_FIELD)]


def _user(request: Request, user_id: str | None) -> str:
    user = forms.text(user_id, "user_id") or key_user(request)
    if not user:
        raise ValidationFailed({"user_id": ["Choose a user"]})
    return authorize(request, user)


def _required(value: str, field: str) -> str:
    checked = forms.text(value, field, required=True)
    assert checked is not None  # required
    return checked


def _back(user: str, done: str) -> RedirectResponse:
    return RedirectResponse(f"/ui/entities/merge?{urlencode({'user_id': user, 'done': done})}", status_code=303)


@router.get("/ui/entities/merge")
async def merge_form(request: Request, service: Service, user_id: Text = None, source: Text = None,
                     target: Text = None) -> Response:
    user = _user(request, user_id)
    known = await service.workers.read(service.entities, user)
    chosen = (forms.text(source, "source"), forms.text(target, "target"))
    if chosen[0] and chosen[0] == chosen[1]:
        raise ValidationFailed({"target": ["Choose another entity than the one merged away"]})
    for field, name in zip(("source", "target"), chosen, strict=True):
        if name and name not in known:
            raise ValidationFailed({field: [f"No entity {name!r} of {user}"]})
    moving = await service.workers.read(service.entity_facts, user, chosen[0], MERGES_LISTED) if chosen[0] else []
    merges, _ = await service.workers.read(service.reconciler.suggestions, user, APPROVED, 0, MERGES_LISTED)
    return page(request, "entity_merge.html", user_id=user, entities=known, source=chosen[0], target=chosen[1],
                moving=moving, merges=[m for m in merges if m.kind == MERGE_ENTITIES],
                notice=NOTICES.get(request.query_params.get("done", "")))


@router.post("/ui/entities/merge")
async def merge(request: Request, service: Service, user_id: FormText, source: FormText, target: FormText,
                csrf_token: CsrfToken = "", confirm: Annotated[str, Form()] = "") -> Response:
    check_csrf(request, csrf_token)
    user = _user(request, user_id)
    if confirm != "yes":
        raise ValidationFailed({"confirm": ["Tick the box to confirm the merge"]})
    names = _required(source, "source"), _required(target, "target")
    await service.workers.write(partial(service.reconciler.merge_by_hand, user, *names))
    return _back(user, "merged")


@router.post("/ui/entities/merge/undo")
async def undo(request: Request, service: Service, user_id: FormText, suggestion_id: FormText,
               csrf_token: CsrfToken = "") -> Response:
    check_csrf(request, csrf_token)
    user = _user(request, user_id)
    await service.workers.write(partial(service.reconciler.undo, user, _required(suggestion_id, "suggestion_id")))
    return _back(user, "undone")
