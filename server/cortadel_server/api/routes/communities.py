"""Communities (an extension of the contract): a user's entities grouped by the facts that tie
them together, in two levels, each with a title and a summary (curation/communities.py)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from cortadel_server.api.deps import QueryUserOrKey, Service
from cortadel_server.api.errors import error_responses
from cortadel_server.api.schemas import QueryInt, Response
from cortadel_server.curation.communities import Community

router = APIRouter(prefix="/api/v1/communities", tags=["Communities"])


class CommunityResponse(Response):
    id: str = Field(description="Stable while its entities and facts stay the same.")
    level: int = Field(description="0: the finest grouping; 1: groups of level-0 communities.")
    title: str
    summary: str
    summarized_by: str = Field(description='"extractive", or the LLM that wrote title and summary.')
    entities: list[str]
    memory_ids: list[str] = Field(description="The current facts that mention its entities, oldest first.")
    parent_id: str | None
    child_ids: list[str]


class CommunitiesResponse(Response):
    communities: list[CommunityResponse]
    total: int


@router.get(
    "",
    operation_id="Communities_List",
    summary="The user's communities of entities and facts, level 0 then level 1, largest first (extension).",
    response_model=CommunitiesResponse,
    responses=error_responses(400, 401, 403, 500),
)
async def list_communities(
    user_id: QueryUserOrKey,
    service: Service,
    level: Annotated[QueryInt | None, Query(ge=0, le=1, description="Only this level.")] = None,
) -> CommunitiesResponse:
    found = await service.workers.read(partial(service.communities.of, user_id))
    chosen = [c for c in found if level is None or c.level == level]
    return CommunitiesResponse(communities=[_community(c) for c in chosen], total=len(chosen))


def _community(c: Community) -> CommunityResponse:
    return CommunityResponse(id=c.id, level=c.level, title=c.title, summary=c.summary, summarized_by=c.summarized_by,
                             entities=c.entities, memory_ids=c.memory_ids, parent_id=c.parent_id, child_ids=c.child_ids)
