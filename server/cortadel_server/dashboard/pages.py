"""The dashboard's routes: pages (GET) and the curating forms (POST, each redirecting to a page).

Who may see what is the API's rule (api/deps.py): a user's key sees only that user; the admin key
and an open server see every user; pages about every user (Users, System) need the admin
credential, as the API's operations on every user do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import FileResponse, RedirectResponse, Response

from cortadel_server.api.deps import Service, authorize, key_user, require_admin
from cortadel_server.auth import is_admin_key, verify_key
from cortadel_server.dashboard import forms
from cortadel_server.dashboard.session import CSRF_FIELD, check_csrf, forget_key, remember_key
from cortadel_server.dashboard.views import HERE, DashboardRoute, page
from cortadel_server.errors import NotFound, ValidationFailed
from cortadel_server.inputs import parse_instant, parse_memory_id
from cortadel_server.metrics import RECENT_ERRORS
from cortadel_server.retrieval.search import RECIPES, SearchRequest
from cortadel_server.service import RANKED_LISTING_DEPTH
from cortadel_server.storage.base import (
    ACTIVE,
    INVALIDATED,
    MEMORY_TYPES,
    RESOLVED,
    SUPERSEDED,
    MemoryFilters,
    MemoryRecord,
)

router = APIRouter(route_class=DashboardRoute, include_in_schema=False)

#: page sizes the memories page offers
PAGE_SIZES = (25, 50, 100)
#: the memories page's state filter and how it reads: the current facts (the default, as the API lists), one
#: stored state (at a point in time too: "only superseded" then means true then and superseded since), or all
STATE_CHOICES = {"current": "current facts", **{s: f"only {s}" for s in (ACTIVE, SUPERSEDED, INVALIDATED, RESOLVED)},
                 "all": "all, with history"}
#: the deepest page: offset paging stays fast to here (docs/dashboard.md has the measurement)
MAX_PAGE = 4_000
#: how many facts of one entity its page lists
ENTITY_FACTS = 50
#: what a finished curating form reports on the page it lands on
NOTICES = {
    "edited": "Saved as a new version; the old one is kept in the history.",
    "invalidated": "Marked as no longer true.",
    "deleted": "Deleted for good.",
}
STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}

Text = Annotated[str | None, Query()]
FormText = Annotated[str, Form()]
#: a form's CSRF token; a missing one is refused like a wrong one (403), never reported as a field
CsrfToken = Annotated[str, Form(alias=CSRF_FIELD)]


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _viewed_user(request: Request, user_id: str | None) -> str:
    """The user a page is about: the one asked for, else the key's own; refused unless the key may see them."""
    user = forms.text(user_id, "user_id") or key_user(request)
    if not user:
        raise ValidationFailed({"user_id": ["Choose a user"]})
    return authorize(request, user)


def _fact_url(user_id: str, memory_id: str, notice: str | None = None) -> str:
    query = {"user_id": user_id, "id": memory_id, **({"done": notice} if notice else {})}
    return f"/ui/memory?{_encode(query)}"


def _encode(query: dict[str, Any]) -> str:
    return urlencode({k: v for k, v in query.items() if v not in (None, "")})


# -- entry, login ---------------------------------------------------------------------------------
@router.get("/")
@router.get("/ui")
async def entry() -> RedirectResponse:
    return _redirect("/ui/")


@router.get("/ui/")
async def home(request: Request) -> RedirectResponse:
    user = key_user(request)
    return _redirect(f"/ui/memories?{_encode({'user_id': user})}" if user else "/ui/users")


@router.get("/ui/login")
async def login_form(request: Request, service: Service) -> Response:
    return page(request, "login.html", auth_on=service.settings.auth_secret is not None, failed=None)


@router.post("/ui/login")
async def login(request: Request, service: Service, key: FormText, csrf_token: CsrfToken = "") -> Response:
    check_csrf(request, csrf_token)
    settings = service.settings
    key = key.strip()
    valid = is_admin_key(settings.admin_key, key) or (settings.auth_secret is not None and verify_key(settings.auth_secret, key) is not None)
    if not valid:
        return page(request, "login.html", status=401, auth_on=settings.auth_secret is not None, failed="Invalid API key")
    response = _redirect("/ui/")
    remember_key(request, response, key)
    return response


@router.post("/ui/logout")
async def logout(request: Request, csrf_token: CsrfToken = "") -> Response:
    check_csrf(request, csrf_token)
    response = _redirect("/ui/login")
    forget_key(response)
    return response


@router.get("/ui/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:  # a fixed list: no path from the request reaches the file system
        raise NotFound(f"No asset {name}")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name], headers={"cache-control": "max-age=3600"})


# -- every user -----------------------------------------------------------------------------------
@router.get("/ui/users")
async def users(request: Request, service: Service) -> Response:
    require_admin(request)
    summaries = await service.workers.read(service.user_summaries)
    return page(request, "users.html", users=summaries, user_id=None)


@router.get("/ui/system")
async def system(request: Request, service: Service) -> Response:
    require_admin(request)
    status = await service.workers.health(service.system_status)
    return page(request, "system.html", system=status, model=service.model_label, recent_limit=RECENT_ERRORS, user_id=None)


# -- one user's memories --------------------------------------------------------------------------
@dataclass(frozen=True)
class ListingForm:
    """The memories page's filters, read from its query string."""

    state: str
    memory_type: str | None
    app: str | None
    project: str | None
    tag: str | None
    session_id: str | None
    query: str | None
    as_of: str | None
    known_at: str | None
    page: int
    size: int

    def filters(self) -> MemoryFilters:
        return MemoryFilters(
            session_id=self.session_id, memory_type=self.memory_type, app_name=self.app, project=self.project,
            tag=self.tag, include_superseded=self.state == "all",
            state=None if self.state in ("current", "all") else self.state,
            as_of=parse_instant(self.as_of, "as_of"), known_at=parse_instant(self.known_at, "known_at"),
        )

    def query_string(self, **changes: Any) -> str:
        values = {"state": self.state if self.state != "current" else None, "memory_type": self.memory_type,
                  "app": self.app, "project": self.project, "tag": self.tag, "session_id": self.session_id,
                  "q": self.query, "as_of": self.as_of, "known_at": self.known_at,
                  "size": self.size if self.size != PAGE_SIZES[0] else None, "page": self.page}
        return _encode({**values, **changes})


@router.get("/ui/memories")
async def memories(
    request: Request, service: Service, user_id: Text = None, state: Text = None, memory_type: Text = None,
    app: Text = None, project: Text = None, tag: Text = None, session_id: Text = None, q: Text = None,
    as_of: Text = None, known_at: Text = None, page_number: Annotated[str | None, Query(alias="page")] = None,
    size: Text = None,
) -> Response:
    user = _viewed_user(request, user_id)
    form = ListingForm(
        state=forms.choice(state, "state", tuple(STATE_CHOICES), default="current") or "current",
        memory_type=forms.choice(memory_type, "memory_type", MEMORY_TYPES),
        app=forms.text(app, "app"), project=forms.text(project, "project"), tag=forms.text(tag, "tag"),
        session_id=forms.text(session_id, "session_id"), query=forms.text(q, "q", max_length=forms.MAX_QUERY),
        as_of=forms.text(as_of, "as_of"), known_at=forms.text(known_at, "known_at"),
        page=forms.whole_number(page_number, "page", low=1, high=MAX_PAGE, default=1),
        size=forms.whole_number(size, "size", low=1, high=PAGE_SIZES[-1], default=PAGE_SIZES[0]),
    )
    # The API's listing (GET /api/v1/memories?search_query=): with text, the most relevant first, then the rest.
    records, total = await service.workers.read(partial(
        service.list_memories, user, form.filters(), offset=(form.page - 1) * form.size, limit=form.size,
        search_query=form.query))
    pages = min(math.ceil(total / form.size), MAX_PAGE)
    return page(request, "memories.html", user_id=user, form=form, records=records, total=total, pages=pages,
                page_sizes=PAGE_SIZES, memory_types=MEMORY_TYPES, states=STATE_CHOICES, ranked_depth=RANKED_LISTING_DEPTH,
                notice=NOTICES.get(request.query_params.get("done", "")))


@router.get("/ui/memory")
async def fact(request: Request, service: Service, id: Annotated[str, Query()], user_id: Text = None) -> Response:
    user = _viewed_user(request, user_id)
    memory_id = parse_memory_id(id)
    record = await service.workers.read(service.get, user, memory_id)
    history = await service.workers.read(service.history, user, memory_id)
    versions = await service.workers.read(service.versions, user, memory_id)
    entities = sorted({name for e in history if e.event == "ENRICH" for name in e.detail.get("entities", [])})
    return page(request, "memory.html", user_id=user, record=record, history=history, versions=versions,
                entities=entities, notice=NOTICES.get(request.query_params.get("done", "")))


@router.post("/ui/memory/edit")
async def edit(
    request: Request, service: Service, user_id: FormText, id: FormText,
    text: Annotated[str, Form()], csrf_token: CsrfToken = "",
) -> Response:
    check_csrf(request, csrf_token)
    user = _viewed_user(request, user_id)
    new_text = forms.statement(text)
    revised: MemoryRecord = await service.workers.write(partial(service.revise, user, parse_memory_id(id), new_text))
    return _redirect(_fact_url(user, revised.id, "edited"))


@router.post("/ui/memory/invalidate")
async def invalidate(
    request: Request, service: Service, user_id: FormText, id: FormText,
    csrf_token: CsrfToken = "", invalid_since: Annotated[str, Form()] = "",
) -> Response:
    check_csrf(request, csrf_token)
    user = _viewed_user(request, user_id)
    since = parse_instant(invalid_since, "invalid_since")
    await service.workers.write(partial(service.invalidate, user, parse_memory_id(id), since=since))
    return _redirect(_fact_url(user, id, "invalidated"))


@router.get("/ui/memory/delete")
async def delete_form(request: Request, service: Service, id: Annotated[str, Query()], user_id: Text = None) -> Response:
    user = _viewed_user(request, user_id)
    record = await service.workers.read(service.get, user, parse_memory_id(id))
    return page(request, "delete.html", user_id=user, record=record)


@router.post("/ui/memory/delete")
async def delete(
    request: Request, service: Service, user_id: FormText, id: FormText,
    csrf_token: CsrfToken = "", confirm: Annotated[str, Form()] = "",
) -> Response:
    check_csrf(request, csrf_token)
    user = _viewed_user(request, user_id)
    memory_id = parse_memory_id(id)
    if confirm != "yes":
        raise ValidationFailed({"confirm": ["Tick the box to confirm the deletion"]})
    count = await service.workers.write(partial(service.delete, user, [memory_id]))
    if count == 0:
        raise NotFound(f"Memory {memory_id} not found")
    return _redirect(f"/ui/memories?{_encode({'user_id': user, 'done': 'deleted'})}")


# -- search lab, entities -------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchLab:
    """The search lab's request, read from its query string."""

    q: str | None
    mode: str
    top_k: int
    token_budget: int
    session_id: str | None
    as_of: str | None
    known_at: str | None
    rerank: bool

    def request(self, user_id: str, query: str) -> SearchRequest:
        filters = MemoryFilters(session_id=self.session_id, as_of=parse_instant(self.as_of, "as_of"),
                                known_at=parse_instant(self.known_at, "known_at"))
        return SearchRequest(user_id=user_id, query=query, top_k=self.top_k, mode=self.mode, filters=filters,
                             rerank=self.rerank, token_budget=self.token_budget or None)


@router.get("/ui/search")
async def search(
    request: Request, service: Service, user_id: Text = None, q: Text = None, mode: Text = None,
    top_k: Text = None, token_budget: Text = None, session_id: Text = None, as_of: Text = None,
    known_at: Text = None, rerank: Text = None,
) -> Response:
    user = _viewed_user(request, user_id)
    lab = SearchLab(
        q=forms.text(q, "q", max_length=forms.MAX_QUERY),
        mode=forms.choice(mode, "mode", tuple(RECIPES), default="hybrid") or "hybrid",
        top_k=forms.whole_number(top_k, "top_k", low=1, high=50, default=10),
        token_budget=forms.whole_number(token_budget, "token_budget", low=0, high=200_000, default=0),
        session_id=forms.text(session_id, "session_id"),
        as_of=forms.text(as_of, "as_of"), known_at=forms.text(known_at, "known_at"),
        rerank=rerank == "on",
    )
    hits = await service.workers.read(service.search, lab.request(user, lab.q)) if lab.q else None
    return page(request, "search.html", user_id=user, lab=lab, hits=hits, recipe=RECIPES[lab.mode], modes=tuple(RECIPES),
                reranker=service.reranker is not None)


@router.get("/ui/entities")
async def entities(request: Request, service: Service, user_id: Text = None, entity: Text = None) -> Response:
    user = _viewed_user(request, user_id)
    known = await service.workers.read(service.entities, user)
    chosen = forms.text(entity, "entity")
    facts = await service.workers.read(service.entity_facts, user, chosen, ENTITY_FACTS) if chosen else None
    return page(request, "entities.html", user_id=user, entities=known, chosen=chosen, facts=facts)

