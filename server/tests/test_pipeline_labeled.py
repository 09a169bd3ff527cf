"""The labeled conversation set, run through the rules extractor and decide().

Each conversation starts from its own `known` facts; an in-memory list of current facts stands in
for storage and receives each decision in order, the way the writer applies them. Every expected
fact, event, target, memory type, valid time and turn uuid must come out exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cortadel_server.pipeline.decide import decide
from cortadel_server.pipeline.model import Event, Neighbour, Turn
from cortadel_server.pipeline.rules import RulesExtractor

DATA = json.loads((Path(__file__).parent / "data" / "pipeline_labeled.json").read_text())
SAID_AT = datetime.fromisoformat(DATA["said_at"])
EXTRACTOR = RulesExtractor()
CASES = DATA["conversations"]


@dataclass
class Fact:
    id: str
    text: str
    current: bool = True


def run(case: dict[str, Any]) -> list[dict[str, Any]]:
    facts = [Fact(f"known-{i}", text) for i, text in enumerate(case.get("known", []))]
    turns = [Turn(m["role"], m["content"], m.get("uuid"), SAID_AT) for m in case["messages"]]
    produced = []
    for candidate in EXTRACTOR.extract(turns, is_agent_memory=case.get("is_agent_memory", False)):
        decision = decide(candidate, [Neighbour(f.id, f.text) for f in facts if f.current])
        if decision.event is Event.NOOP:
            continue
        by_id = {f.id: f for f in facts}
        targets = [by_id[t] for t in decision.targets]
        if decision.event in (Event.SUPERSEDE, Event.RESOLVE, Event.INVALIDATE, Event.DELETE_ENTITY):
            for fact in targets:
                fact.current = False
        if decision.event in (Event.ADD, Event.SUPERSEDE, Event.RESOLVE):
            facts.append(Fact(f"new-{len(facts)}", candidate.text))
        produced.append({
            "event": decision.event.value,
            "memory": candidate.text,
            "targets": [f.text for f in targets],
            "memory_type": candidate.memory_type.value,
            "valid_days_before": (SAID_AT - candidate.valid_at).days,
            "uuids": list(candidate.source_turn_uuids),
            "entities": [e.name for e in candidate.entities],
        })
    return produced


def comparable(produced: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """The produced fact reduced to the keys the label states (targets default to none)."""
    keys = {"event", "memory", "targets", *expected}
    return {k: produced[k] for k in keys}


def expected_of(label: dict[str, Any]) -> dict[str, Any]:
    return {"targets": [], **label}


def test_the_set_is_large_and_covers_every_verb() -> None:
    assert len(CASES) >= 40
    events = {e["event"] for case in CASES for e in case["expect"]}
    assert events == {"ADD", "SKIP_DUPLICATE", "TOUCH", "SUPERSEDE", "INVALIDATE", "RESOLVE", "DELETE_ENTITY"}
    assert sum(1 for case in CASES if not case["expect"]) >= 8  # conversations that must yield nothing


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_conversation(case: dict[str, Any]) -> None:
    produced = run(case)
    labels = [expected_of(e) for e in case["expect"]]
    assert [comparable(p, e) for p, e in zip(produced, labels, strict=False)] == labels[: len(produced)]
    assert len(produced) == len(labels), [p["memory"] for p in produced]


def test_precision_recall_and_event_accuracy_are_perfect(capsys: pytest.CaptureFixture[str]) -> None:
    produced_total = expected_total = matched = events_right = 0
    for case in CASES:
        produced = run(case)
        expected = case["expect"]
        produced_total += len(produced)
        expected_total += len(expected)
        by_text = {e["memory"]: e for e in expected}
        for fact in produced:
            label = by_text.get(fact["memory"])
            if label is not None:
                matched += 1
                events_right += fact["event"] == label["event"]
    precision, recall = matched / produced_total, matched / expected_total
    accuracy = events_right / matched
    with capsys.disabled():
        print(f"\nlabeled set: {len(CASES)} conversations, {expected_total} facts; "
              f"precision {precision:.2f} recall {recall:.2f} event accuracy {accuracy:.2f}")
    assert (precision, recall, accuracy) == (1.0, 1.0, 1.0)


def test_valid_time_follows_the_message_time_when_no_expression_is_given() -> None:
    later = SAID_AT + timedelta(days=3)
    [candidate] = EXTRACTOR.extract([Turn("user", "I live in Lisbon.", None, later)])
    assert candidate.valid_at == later and candidate.said_at == later
