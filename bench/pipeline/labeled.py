"""The labeled conversation sets of the pipeline tests, scored in process and over HTTP.

    labeled = LabeledSet.load()                       # server/tests/data/pipeline_labeled.json (development part)
    heldout = LabeledSet.load(HELDOUT_PATH)           # pipeline_heldout.json: frozen, never tuned on
    in_process(labeled, embedder)                     # rules extractor + decide() on an in-memory store
    await over_http(api, labeled, user_prefix="lab")  # each conversation into a fresh user

Both score with :func:`cortadel_server.pipeline.labeled.score`, the function the pipeline test
uses. Over HTTP a conversation's ``known`` facts are first stored verbatim (``infer: false``, said
a day before), then its messages go through ``from-conversation`` (each with the set's
``said_at`` as its ``timestamp``); the ``results`` it answers are the produced facts.

A result that acts on a stored fact (a duplicate, a touch, a retraction, an entity deletion) names
that stored fact, where a label names the new statement and lists the stored fact among its
``targets``: :func:`as_labeled` maps such a result to the label that targets it (one entity
deletion answers once per deleted fact and counts once). The unmapped score is kept as
``text_only``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cortadel_server.pipeline.labeled import LabeledScore, replay, score
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.providers.embedding.base import Embedder

from bench.client import BenchClient
from bench.errors import DatasetError
from bench.server import REPO_ROOT

LABELED_PATH = REPO_ROOT / "server" / "tests" / "data" / "pipeline_labeled.json"
HELDOUT_PATH = REPO_ROOT / "server" / "tests" / "data" / "pipeline_heldout.json"
ACTS_ON_STORED = frozenset({"SKIP_DUPLICATE", "TOUCH", "INVALIDATE", "DELETE_ENTITY"})


@dataclass(frozen=True)
class LabeledSet:
    said_at: datetime
    cases: list[dict[str, Any]]

    @classmethod
    def load(cls, path: Path = LABELED_PATH) -> LabeledSet:
        try:
            data = json.loads(path.read_text())
            return cls(datetime.fromisoformat(data["said_at"]), list(data["conversations"]))
        except (OSError, ValueError, KeyError) as exc:
            raise DatasetError(f"{path}: {exc}") from exc


def summary(result: LabeledScore, misses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The score as a report row, with the conversations whose output differs from the labels."""
    return {
        "conversations": result.conversations, "expected_facts": result.expected, "produced_facts": result.produced,
        "matched": result.matched, "events_right": result.events_right,
        "precision": round(result.precision, 4), "recall": round(result.recall, 4), "event_accuracy": round(result.event_accuracy, 4),
        "differences": list(misses),
    }


def differences(name: str, produced: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """(memory, event) pairs that came out but were not labeled, and labeled ones that did not come out."""
    got = [(p["memory"], p["event"]) for p in produced]
    want = [(e["memory"], e["event"]) for e in expected]
    if got == want:
        return None
    return {"conversation": name, "unexpected": [g for g in got if g not in want], "missing": [w for w in want if w not in got]}


def as_labeled(produced: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """HTTP results in the labels' terms: a result acting on a stored fact that a label targets
    takes that label's text; consecutive results of one entity deletion become one."""
    out: list[dict[str, Any]] = []
    last: int | None = None
    for fact in produced:
        hit = next((i for i, e in enumerate(expected) if fact["event"] in ACTS_ON_STORED and fact["memory"] in e.get("targets", ())), None)
        if hit is None:
            out.append(dict(fact))
        elif not (hit == last and fact["event"] == "DELETE_ENTITY" and out[-1]["event"] == "DELETE_ENTITY"):
            out.append({**fact, "memory": expected[hit]["memory"]})
        last = hit
    return out


def in_process(labeled: LabeledSet, embedder: Embedder | None) -> dict[str, Any]:
    """``replay`` with the rules extractor; with an embedder, neighbours carry their similarity as in the writer."""
    extractor = RulesExtractor()
    runs = [(case["name"], replay(case, extractor, labeled.said_at, embedder), case["expect"]) for case in labeled.cases]
    misses = [d for name, got, want in runs if (d := differences(name, got, want))]
    return summary(score((got, want) for _, got, want in runs), misses)


async def over_http(api: BenchClient, labeled: LabeledSet, *, user_prefix: str) -> dict[str, Any]:
    said = labeled.said_at.isoformat()
    known_at = (labeled.said_at - timedelta(days=1)).isoformat()
    runs = []
    for i, case in enumerate(labeled.cases):
        user = f"{user_prefix}-{i:03d}"
        for text in case.get("known", []):
            await api.add(user, text, infer=False, timestamp=known_at)
        messages = [{**m, "timestamp": said} for m in case["messages"]]
        body = await api.add_conversation(user, messages, is_agent_memory=case.get("is_agent_memory") or None)
        produced = [{"memory": r["memory"], "event": r["event"]} for r in body.get("results") or []]
        runs.append((case["name"], produced, case["expect"]))
    mapped = [(name, as_labeled(got, want), want) for name, got, want in runs]
    misses = [d for name, got, want in mapped if (d := differences(name, got, want))]
    text_only = score((got, want) for _, got, want in runs)
    return {**summary(score((got, want) for _, got, want in mapped), misses),
            "text_only": {"precision": round(text_only.precision, 4), "recall": round(text_only.recall, 4),
                          "event_accuracy": round(text_only.event_accuracy, 4)}}
