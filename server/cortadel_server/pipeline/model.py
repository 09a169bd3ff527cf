"""The values that flow through the write pipeline: turns in, candidates, decisions and events out.

    turn = Turn("user", "I live in Berlin.", uuid="t1", at=now)
    [candidate] = RulesExtractor().extract([turn], is_agent_memory=False)
    candidate.text      # "User lives in Berlin."
    decide(candidate, neighbours).event   # Event.ADD, Event.SUPERSEDE, ...
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from datetime import datetime

from cortadel_server.language.entities import EntityMention, find_entities
from cortadel_server.storage.base import MemoryType
from cortadel_server.text import fingerprint


class Intent(enum.Enum):
    """What the speaker wants done with a statement."""

    REMEMBER = "remember"  # a fact to store (possibly replacing an older value)
    RETRACT = "retract"  # "forget my old address", "that's no longer true"
    RESOLVE = "resolve"  # "the login bug is resolved"
    FORGET_ENTITY = "forget_entity"  # "forget everything about Bob"


class Event(str, enum.Enum):
    """What the pipeline did with one candidate; the wire value of `event`."""

    ADD = "ADD"
    SKIP_DUPLICATE = "SKIP_DUPLICATE"
    TOUCH = "TOUCH"
    SUPERSEDE = "SUPERSEDE"
    INVALIDATE = "INVALIDATE"
    RESOLVE = "RESOLVE"
    DELETE_ENTITY = "DELETE_ENTITY"
    ERROR = "ERROR"
    NOOP = "NOOP"  # a retraction that matched nothing: reported to nobody, stored nowhere


@dataclass(frozen=True)
class Turn:
    """One conversation message. `at` is when it was said (the request time when unknown).

    `at_now` marks a message sent without a time: the writer moves its facts' times to the instant
    it takes the write lock, so the order of writes and their times agree.
    """

    role: str
    content: str
    uuid: str | None
    at: datetime
    at_now: bool = False


@dataclass(frozen=True)
class Candidate:
    """One atomic statement distilled from a conversation, before it meets the store.

    `target` names what a retraction, resolution or entity deletion is about ("address",
    "login bug", "Bob"), or for a statement what it replaces ("Lisbon" in "I live in Porto, not
    Lisbon", "VS Code" in "I switched from VS Code to Neovim"); `reconfirm` marks "yes, I still ..." statements; `said_at` is the time
    of the turn it came from and `valid_at` when the fact became true (a resolved time
    expression, else `said_at`).
    """

    text: str
    intent: Intent
    said_at: datetime
    valid_at: datetime
    source_turn_uuids: tuple[str, ...] = ()
    memory_type: MemoryType = MemoryType.SEMANTIC
    categories: tuple[str, ...] = ()
    gist: str = ""
    labels: bool = True  # carries categories and entities; a verbatim text (`infer: false`) stores none
    target: str | None = None
    reconfirm: bool = False
    at_now: bool = False  # from a Turn with `at_now`: said_at/valid_at are re-stamped under the write lock

    @functools.cached_property
    def fingerprint(self) -> str:
        """The text's exact-duplicate key, made once: a write looks it up, then stores it."""
        return fingerprint(self.text)

    @functools.cached_property
    def entities(self) -> tuple[EntityMention, ...]:
        """The names it mentions, found when asked: a write never asks (the enrichment worker
        finds them in what was stored), and finding them cost 2 to 3 % of an `infer: true` batch."""
        return tuple(find_entities(self.text)) if self.labels else ()


@dataclass(frozen=True)
class Neighbour:
    """An existing current fact of the same user that might be the same as a candidate.

    `score` is the retrieval similarity in [0, 1] when known (1 = identical); the decision
    does its own text comparison and uses the score only to order ties.
    """

    id: str
    text: str
    score: float = 0.0


@dataclass(frozen=True)
class Decision:
    """The event for one candidate and the existing facts it acts on (none for ADD)."""

    event: Event
    targets: tuple[str, ...] = ()
    reason: str = ""
    ambiguous: bool = field(default=False, compare=False)
    uncertain: str = field(default="", compare=False)  # why an ADD might be a repeat: recorded with the fact
