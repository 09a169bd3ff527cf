"""The LLM's verdict on an uncertain finding, when an LLM is configured (CORTADEL_LLM_URL/MODEL).

    judge = ReconcileJudge(chat_client)
    finding = judge.judge(finding, context)   # confidence raised or lowered by the model's answer

Only findings the rules are unsure of (below the auto-approve confidence) are asked about, one
call each. A failed call keeps the rule's confidence.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from cortadel_server.curation.suggestions import SUPERSEDE, Finding
from cortadel_server.errors import ProviderError
from cortadel_server.providers.llm import ChatClient

log = logging.getLogger("cortadel.curation")

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"same": {"type": "boolean"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["same", "confidence"],
    "additionalProperties": False,
}

ENTITY_PROMPT = """You review a memory store about one user. Do these names denote the same \
real-world entity (person, place, organisation, thing)? Different people can share a first name; \
a place qualified by a region ("Paris, Texas") is not the bare place.

Name A: {a}
Facts naming A:
{facts_a}

Name B: {b}
Facts naming B:
{facts_b}

Answer JSON: {{"same": true|false, "confidence": 0..1}}."""

FACT_PROMPT = """You review a memory store about one user. Does the newer fact make the older one \
no longer true (the same thing about the user, changed), so the older should be retired?

Older: {a}
Newer: {b}

Answer JSON: {{"same": true|false, "confidence": 0..1}} ("same": true means the newer replaces the older)."""


class ReconcileJudge:
    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat

    def judge(self, finding: Finding, context: dict[str, list[str]]) -> Finding:
        """``context``: for a fact finding {"a": [older text], "b": [newer text]}; for an entity
        finding the facts naming each of the two names, keyed by name."""
        if finding.kind == SUPERSEDE:
            prompt = FACT_PROMPT.format(a=context["a"][0], b=context["b"][0])
        else:
            (a, facts_a), (b, facts_b) = list(context.items())[:2]
            prompt = ENTITY_PROMPT.format(a=a, b=b, facts_a=_lines(facts_a), facts_b=_lines(facts_b))

        def check(data: Any) -> dict[str, Any]:
            if not isinstance(data, dict) or not isinstance(data.get("same"), bool) \
                    or not isinstance(data.get("confidence"), int | float) or not 0 <= data["confidence"] <= 1:
                raise ValueError('expected {"same": true|false, "confidence": 0..1}')
            return data

        try:
            result = self.chat.complete_json([{"role": "user", "content": prompt}], VERDICT_SCHEMA, "verdict", validate=check)
        except ProviderError as exc:
            log.warning("reconcile: llm verdict failed, keeping the rule's confidence: %s", exc)
            return finding
        same, sure = bool(result.data["same"]), float(result.data["confidence"])
        confidence = max(finding.confidence, sure) if same else min(finding.confidence, 1 - sure)
        verdict = {"rule": "llm verdict", "same": same, "confidence": sure, "model": self.chat.model}
        return dataclasses.replace(finding, confidence=confidence, evidence=[*finding.evidence, verdict])


def _lines(facts: list[str]) -> str:
    return "\n".join(f"- {f}" for f in facts[:5]) or "- (none)"
