"""Stages after fusion: pure functions over the fused (id, score) list, best first.

    add_neighbours([("m2", 0.9)], {"m2": "s1"}, {"s1": ["m1", "m2", "m3"]}, NeighbourConfig(share=0.5))
    # ([("m2", 0.9), ("m1", 0.45), ("m3", 0.45)], {"m1": "m2", "m3": "m2"})
    weigh_questions([("q", 1.0), ("s", 0.9)], {"q": "Where did you go?", "s": "We went to Lisbon."}, 0.8)
    # [("s", 0.9), ("q", 0.8)]

Neighbour context: an answer often sits next to the turn that matches the question's words.
Question weighting: a memory that asks something is weaker evidence than one that states
something. Session spread: let the head of the list span more episodes. The retriever fetches
the records and sessions these need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class NeighbourConfig:
    #: how many of the best fused hits lend context to their neighbours
    depth: int = 5
    #: how many memories either side, in the session's write order
    window: int = 1
    #: the part of a hit's score a neighbour at distance 1 receives (share**d at distance d)
    share: float = 0.5


def add_neighbours(
    fused: Sequence[tuple[str, float]],
    session_of: Mapping[str, str | None],
    members: Mapping[str, Sequence[str]],
    config: NeighbourConfig,
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Give each neighbour of the top ``config.depth`` hits a share of that hit's score (added to
    its own), re-sort, and say which hit lent each neighbour its context."""
    scores = dict(fused)
    lent: dict[str, str] = {}
    for memory_id, score in fused[: config.depth]:
        session = session_of.get(memory_id)
        order = members.get(session, ()) if session is not None else ()
        if memory_id not in order:
            continue
        at = order.index(memory_id)
        for distance in range(1, config.window + 1):
            for other in (at - distance, at + distance):
                if 0 <= other < len(order):
                    neighbour = order[other]
                    scores[neighbour] = scores.get(neighbour, 0.0) + score * config.share**distance
                    lent.setdefault(neighbour, memory_id)
    return sorted(scores.items(), key=lambda item: -item[1]), lent


def spread_sessions(
    fused: Sequence[tuple[str, float]], session_of: Mapping[str, str | None], decay: float
) -> list[tuple[str, float]]:
    """Multiply each hit's score by ``decay`` for every better hit from its session, and re-sort:
    the head of the list then spans more episodes. Hits without a session are left alone."""
    seen: dict[str, int] = {}
    out = []
    for memory_id, score in fused:
        session = session_of.get(memory_id)
        if session is not None:
            out.append((memory_id, score * decay ** seen.get(session, 0)))
            seen[session] = seen.get(session, 0) + 1
        else:
            out.append((memory_id, score))
    return sorted(out, key=lambda item: -item[1])


def is_question(text: str) -> bool:
    """A memory that ends by asking something ("…, what did you paint?")."""
    return text.rstrip().rstrip("\"')»”").endswith("?")


def weigh_questions(
    fused: Sequence[tuple[str, float]], texts: Mapping[str, str], weight: float
) -> list[tuple[str, float]]:
    """Multiply the score of each memory that ends in a question by ``weight`` and re-sort.
    Ids without a text in ``texts`` are left alone."""
    out = [(mid, score * weight if mid in texts and is_question(texts[mid]) else score) for mid, score in fused]
    return sorted(out, key=lambda item: -item[1])
