"""Stages after fusion: pure functions over the fused (id, score) list, best first.

    add_neighbours([("m2", 0.9)], {"m2": "s1"}, {"s1": ["m1", "m2", "m3"]}, NeighbourConfig(share=0.5))
    # ([("m2", 0.9), ("m1", 0.45), ("m3", 0.45)], {"m1": "m2", "m3": "m2"})
    weigh_questions([("q", 1.0), ("s", 0.9)], {"q": "Where did you go?", "s": "We went to Lisbon."}, 0.8)
    # [("s", 0.9), ("q", 0.8)]
    weigh_speaker([("m", 1.0), ("c", 0.9)], {"m": "Mel: Hi Caroline", "c": "Caroline: Hi"}, "Caroline", 1.2)
    # [("c", 1.08), ("m", 1.0)]

Neighbour context: an answer often sits next to the turn that matches the question's words; with
``replies_only`` a hit that asks a question lends only to what was written after it, its reply.
Question weighting: a memory that asks something is weaker evidence than one that states
something. Speaker weighting: a question about a person is answered by what that person said.
Session spread: let the head of the list span more episodes. The retriever fetches the records and
sessions these need.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cortadel_server.language.speakers import said_by


@dataclass(frozen=True)
class NeighbourConfig:
    #: how many of the best fused hits lend context to their neighbours
    depth: int = 5
    #: how many memories either side, in the session's write order
    window: int = 1
    #: the part of a hit's score a neighbour at distance 1 receives (share**d at distance d)
    share: float = 0.5
    #: only hits that end in a question lend, and only to the memories written after them (the reply)
    replies_only: bool = False


def add_neighbours(
    fused: Sequence[tuple[str, float]],
    session_of: Mapping[str, str | None],
    members: Mapping[str, Sequence[str]],
    config: NeighbourConfig,
    texts: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Give each neighbour of the top ``config.depth`` hits a share of that hit's score (added to
    its own), re-sort, and say which hit lent each neighbour its context. With
    ``config.replies_only`` only the hits whose text (in ``texts``) asks a question lend, forward."""
    scores = dict(fused)
    lent: dict[str, str] = {}
    for memory_id, score in fused[: config.depth]:
        if config.replies_only and not is_question((texts or {}).get(memory_id, "")):
            continue
        session = session_of.get(memory_id)
        order = members.get(session, ()) if session is not None else ()
        if memory_id not in order:
            continue
        at = order.index(memory_id)
        for distance in range(1, config.window + 1):
            for other in (at + distance,) if config.replies_only else (at - distance, at + distance):
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
    return _weigh(fused, texts, is_question, weight)


def weigh_speaker(
    fused: Sequence[tuple[str, float]], texts: Mapping[str, str], person: str | None, weight: float
) -> list[tuple[str, float]]:
    """Multiply the score of each memory ``person`` said ("Caroline: …") by ``weight`` and re-sort;
    ``person`` None (the query names no one) leaves the list as it is."""
    if person is None:
        return list(fused)
    return _weigh(fused, texts, lambda text: said_by(text, person), weight)


def _weigh(
    fused: Sequence[tuple[str, float]], texts: Mapping[str, str], chosen: Callable[[str], bool], weight: float
) -> list[tuple[str, float]]:
    out = [(mid, score * weight if mid in texts and chosen(texts[mid]) else score) for mid, score in fused]
    return sorted(out, key=lambda item: -item[1])
