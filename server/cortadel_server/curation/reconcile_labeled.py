"""Scoring reconciliation on the labeled sets (``server/tests/data/reconcile_labeled.json``, the
development set, and ``reconcile_heldout.json``, held out).

    cases = load(LABELED_PATH)
    result = score(cases, embedder.embed, auto_approve=0.9)   # -> ReconcileScore

Three kinds of case: ``entities`` (a user's entities with the facts naming them, and which pairs
are ``same``; every other pair is a distinct pair), ``roles`` (facts naming a person by a role,
and the ``aliases`` expected) and ``facts`` (dated facts, and which are ``stale`` by which). The
detectors run on them as a run would; a finding counts as right when it is labeled. Precision and
recall are over every finding a run keeps (confidence >= 0.5); ``auto_precision`` is the precision
of those at or above ``auto_approve`` (what would be applied without review). The test and the
bench share this.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortadel_server.curation.reconcile import MIN_CONFIDENCE
from cortadel_server.curation.reconcile_entities import Embed, EntityProfile, find_entity_duplicates, find_role_aliases
from cortadel_server.curation.reconcile_facts import find_stale_facts
from cortadel_server.storage.base import MemoryRecord

#: what a finding is compared by: an unordered pair of entity names, or an ordered pair of ids or names
Pair = frozenset[str] | tuple[str, str]

LABELED_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "reconcile_labeled.json"
#: written after the rules were tuned on the labeled set, and not tuned on
HELDOUT_PATH = LABELED_PATH.with_name("reconcile_heldout.json")


@dataclass
class ReconcileScore:
    found: int = 0
    right: int = 0
    expected: int = 0
    auto_found: int = 0
    auto_right: int = 0
    #: (case, what was found, confidence) of every wrong finding, and (case, what) of every missed one
    wrong: list[tuple[str, str, float]] = field(default_factory=list)
    missed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.right / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return (self.expected - len(self.missed)) / self.expected if self.expected else 1.0

    @property
    def auto_precision(self) -> float:
        return self.auto_right / self.auto_found if self.auto_found else 1.0

    def add(self, case: str, found: Sequence[tuple[Pair, float]], expected: set[Pair], auto_approve: float) -> None:
        kept = [(what, c) for what, c in found if c >= MIN_CONFIDENCE]
        hits = {what for what, _ in kept if what in expected}
        self.found += len(kept)
        self.right += sum(what in expected for what, _ in kept)
        self.auto_found += sum(c >= auto_approve for _, c in kept)
        self.auto_right += sum(c >= auto_approve and what in expected for what, c in kept)
        self.expected += len(expected)
        self.wrong += [(case, " / ".join(sorted(what)), c) for what, c in kept if what not in expected]
        self.missed += [(case, " / ".join(sorted(what))) for what in expected - hits]


def load(path: Path = LABELED_PATH) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def score(cases: Mapping[str, Any], embed: Embed, auto_approve: float) -> dict[str, ReconcileScore]:
    """Per kind ("entities", "roles", "facts"), the score of the detectors on the labeled cases."""
    scores = {kind: ReconcileScore() for kind in ("entities", "roles", "facts")}
    for case in cases["entities"]:
        findings = find_entity_duplicates(_profiles(case["entities"]), embed)
        found: list[tuple[Pair, float]] = [(frozenset((f.subject["source"], f.subject["target"])), f.confidence) for f in findings]
        scores["entities"].add(case["name"], found, {frozenset(pair) for pair in case["same"]}, auto_approve)
    for case in cases["roles"]:
        ids = {text: f"m{i}" for i, text in enumerate(case["facts"])}
        findings = find_role_aliases([(ids[t], t) for t in case["facts"]], _profiles(case["entities"], ids))
        aliases: list[tuple[Pair, float]] = [((f.subject["alias"], f.subject["target"]), f.confidence) for f in findings]
        scores["roles"].add(case["name"], aliases, {(a, b) for a, b in case["aliases"]}, auto_approve)
    for case in cases["facts"]:
        records = [MemoryRecord(id=i, user_id="labeled", text=text, created_at=_day(day), valid_at=_day(day))
                   for i, text, day in case["facts"]]
        findings = find_stale_facts(records, embed)
        stale: list[tuple[Pair, float]] = [((f.subject["stale"], f.subject["by"]), f.confidence) for f in findings]
        scores["facts"].add(case["name"], stale, {(a, b) for a, b in case["stale"]}, auto_approve)
    return scores


def _profiles(entities: Sequence[Mapping[str, Any]], ids: dict[str, str] | None = None) -> list[EntityProfile]:
    known = dict(ids or {})
    for e in entities:
        for text in e["facts"]:
            known.setdefault(text, f"m{len(known)}")
    return [EntityProfile(e["canonical"], e["kind"], tuple(e["aliases"]), tuple(known[t] for t in e["facts"]), tuple(e["facts"]))
            for e in entities]


def _day(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
