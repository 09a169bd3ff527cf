"""Replaying and scoring the write pipeline on a labeled conversation set.

    produced = replay(case, RulesExtractor(), said_at, embedder)   # extractor + decide(), in memory
    score([(produced, case["expect"]) for case in cases])     # -> LabeledScore

A case is one conversation of ``server/tests/data/pipeline_labeled.json``: ``known`` facts,
``messages`` and the ``expect``-ed facts in order, each with its ``memory`` text and ``event``.
``replay`` keeps an in-memory list of current facts that receives each decision the way the writer
applies them; with an embedder, each fact offered to decide() carries its cosine similarity to the
candidate, as the writer's vector search gives it. ``score`` matches produced facts to expected ones by exact text: precision is the
share of produced facts that were expected, recall the share of expected facts that came out, and
event accuracy the share of matched facts whose event is the labeled one. The pipeline tests and
the pipeline benchmark share these two functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from cortadel_server.pipeline.decide import decide
from cortadel_server.pipeline.extract import Extractor
from cortadel_server.pipeline.model import Event, Intent, Neighbour, Turn
from cortadel_server.providers.embedding.base import Embedder

__all__ = ["LabeledScore", "replay", "score"]


@dataclass
class _Fact:
    id: str
    text: str
    current: bool = True


def replay(case: Mapping[str, Any], extractor: Extractor, said_at: datetime, embedder: Embedder | None = None) -> list[dict[str, Any]]:
    """Every non-NOOP decision for the case's messages (all said at ``said_at``), in order."""
    facts = [_Fact(f"known-{i}", text) for i, text in enumerate(case.get("known", []))]
    turns = [Turn(m["role"], m["content"], m.get("uuid"), said_at) for m in case["messages"]]
    candidates = extractor.extract(turns, is_agent_memory=case.get("is_agent_memory", False))
    texts = list(dict.fromkeys([f.text for f in facts] + [c.text for c in candidates]))
    unit = _unit(embedder.embed(texts)) if embedder is not None and texts else None
    vectors = dict(zip(texts, unit, strict=True)) if unit is not None else {}
    produced = []
    for candidate in candidates:
        current = [f for f in facts if f.current]
        if vectors and candidate.intent is not Intent.FORGET_ENTITY:  # the writer offers those unscored, oldest first
            scores = [max(float(np.dot(vectors[candidate.text], vectors[f.text])), 0.0) for f in current]
        else:
            scores = [0.0] * len(current)
        neighbours = [Neighbour(f.id, f.text, score) for f, score in zip(current, scores, strict=True)]
        decision = decide(candidate, sorted(neighbours, key=lambda n: -n.score))
        if decision.event is Event.NOOP:
            continue
        by_id = {f.id: f for f in facts}
        targets = [by_id[t] for t in decision.targets]
        if decision.event in (Event.SUPERSEDE, Event.RESOLVE, Event.INVALIDATE, Event.DELETE_ENTITY):
            for fact in targets:
                fact.current = False
        if decision.event in (Event.ADD, Event.SUPERSEDE, Event.RESOLVE):
            facts.append(_Fact(f"new-{len(facts)}", candidate.text))
        produced.append({
            "event": decision.event.value,
            "memory": candidate.text,
            "targets": [f.text for f in targets],
            "memory_type": candidate.memory_type.value,
            "valid_days_before": (said_at - candidate.valid_at).days,
            "uuids": list(candidate.source_turn_uuids),
            "entities": [e.name for e in candidate.entities],
        })
    return produced


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms))


@dataclass(frozen=True)
class LabeledScore:
    conversations: int
    produced: int
    expected: int
    matched: int  # produced facts whose text an expected fact of the same conversation has
    events_right: int  # matched facts with the labeled event

    @property
    def precision(self) -> float:
        """matched / produced; 1.0 when nothing was produced."""
        return self.matched / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        """matched / expected; 1.0 when nothing was expected."""
        return self.matched / self.expected if self.expected else 1.0

    @property
    def event_accuracy(self) -> float:
        """events_right / matched; 1.0 when nothing matched."""
        return self.events_right / self.matched if self.matched else 1.0


def score(pairs: Iterable[tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]]) -> LabeledScore:
    """Score (produced, expected) fact lists, one pair per conversation; facts need ``memory`` and ``event``."""
    conversations = produced_total = expected_total = matched = events_right = 0
    for produced, expected in pairs:
        conversations += 1
        produced_total += len(produced)
        expected_total += len(expected)
        by_text = {e["memory"]: e for e in expected}
        for fact in produced:
            label = by_text.get(fact["memory"])
            if label is not None:
                matched += 1
                events_right += fact["event"] == label["event"]
    return LabeledScore(conversations, produced_total, expected_total, matched, events_right)
