"""The extractor seam: conversation turns in, candidate facts out.

    candidates = extractor.extract(turns, is_agent_memory=False)   # any Extractor

Every extractor finishes its candidates with `make_candidate`, so time resolution, classification
and entity mentions are the same whichever one produced the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from cortadel_server.pipeline.classify import Taxonomy, first_time, gist, memory_type
from cortadel_server.pipeline.model import Candidate, Intent, Turn
from cortadel_server.storage.base import MemoryType

if TYPE_CHECKING:
    from cortadel_server.pipeline.budget import WriteBudget

__all__ = ["Extractor", "make_candidate"]


class Extractor(Protocol):
    """Turns a conversation into candidate facts. Must not touch storage.

    `is_agent_memory` makes the assistant the speaker whose facts are kept; `explicit` says the
    speaker asked for the text to be remembered, so every statement in it counts. `budget` is the
    request's: the extractor checks it as it goes (RequestCancelled, BudgetExceeded) and ends its
    LLM calls by its deadline.
    """

    def extract(
        self, turns: Sequence[Turn], *, is_agent_memory: bool = False, explicit: bool = False, budget: WriteBudget | None = None
    ) -> list[Candidate]: ...


def make_candidate(
    text: str,
    turn: Turn,
    taxonomy: Taxonomy,
    *,
    intent: Intent = Intent.REMEMBER,
    target: str | None = None,
    reconfirm: bool = False,
    kind: MemoryType | None = None,
    categories: Sequence[str] | None = None,
    source_turn_uuids: Sequence[str] | None = None,
    labels: bool = True,
) -> Candidate:
    """A candidate for `text` said in `turn`, with its valid time, labels and entities.

    A time expression that points into the past moves `valid_at` there ("last month"); one in
    the future, or none, leaves it at the moment the statement was made. Without `labels` it has
    no categories and no entities: a verbatim memory (`infer: false`) stores neither.
    """
    span = first_time(text, turn.at)
    valid_at = span.point if span is not None and span.point < turn.at else turn.at
    uuids = tuple(source_turn_uuids) if source_turn_uuids is not None else ((turn.uuid,) if turn.uuid else ())
    return Candidate(
        text=text,
        intent=intent,
        said_at=turn.at,
        valid_at=valid_at,
        source_turn_uuids=uuids,
        memory_type=kind or memory_type(text, turn.at),
        categories=(taxonomy.keep(list(categories)) if categories else taxonomy.categorize(text)) if labels else (),
        gist=gist(text),
        labels=labels,
        target=target,
        reconfirm=reconfirm,
        at_now=turn.at_now,
    )
