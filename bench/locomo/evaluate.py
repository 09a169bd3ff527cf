"""Ask every question, turn results into ranked turn sets, and score them at turn and session level.

Turn level: each result stands for the LoCoMo turns it maps to (see bench.scoring for the
metrics); gold = the question's evidence turns. Session level: the same list with every turn
replaced by its session ("D3:7" -> "S3"); gold = the sessions of the evidence turns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.client import BenchClient, server_phase_seconds
from bench.locomo.dataset import CATEGORIES, Question, session_of
from bench.locomo.ingest import Ingested, source_turns
from bench.locomo.systems import Variant
from bench.scoring import mean_metrics, question_metrics
from bench.stats import latency_summary

TOP_K = 10


@dataclass
class Answers:
    """Ranked turn sets per question, and the wall-clock seconds of each search."""

    ranked: list[tuple[Question, list[set[str]]]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    server_seconds: list[float] = field(default_factory=list)

    def extend(self, other: Answers) -> None:
        self.ranked.extend(other.ranked)
        self.seconds.extend(other.seconds)
        self.server_seconds.extend(other.server_seconds)


def ranked_turns(results: Iterable[Mapping[str, Any]], units: Mapping[str, set[str]]) -> list[set[str]]:
    """Map search results to the turns they stand for; unknown memories use their own source_turn_uuids."""
    ranked = []
    for result in results:
        turns = units.get(result["id"])
        if turns is None:
            turns = set(source_turns(dict(result)) or ())
        ranked.append(turns)
    return ranked


async def ask(api: BenchClient, ingested: Ingested, questions: Sequence[Question], variant: Variant) -> Answers:
    answers = Answers()
    for question in questions:
        results, seconds = await api.search(ingested.user_id, question.question, top_k=TOP_K, mode=variant.mode, rerank=variant.rerank)
        answers.ranked.append((question, ranked_turns(results, ingested.units)))
        answers.seconds.append(seconds)
        if (phases := server_phase_seconds(results)) is not None:
            answers.server_seconds.append(phases)
    return answers


def _by_category(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    groups: dict[int, list[dict[str, float]]] = defaultdict(list)
    for category, row in rows:
        groups[category].append(row)
    return {
        "overall": mean_metrics([row for _, row in rows]),
        "by_category": {f"{c} {CATEGORIES.get(c, '?')}": mean_metrics(groups[c]) for c in sorted(groups)},
    }


def score(answers: Answers) -> dict[str, Any]:
    """Turn- and session-level metrics, overall and by category, search latency, and the server's phase timings."""
    turn_rows = []
    session_rows = []
    for question, ranked in answers.ranked:
        turn_rows.append((question.category, question_metrics(ranked, question.gold)))
        sessions = [{session_of(t) for t in turns} for turns in ranked]
        session_rows.append((question.category, question_metrics(sessions, question.gold_sessions)))
    return {
        "turn": _by_category(turn_rows),
        "session": _by_category(session_rows),
        "latency": latency_summary(answers.seconds),
        "server_phases": latency_summary(answers.server_seconds),
    }
