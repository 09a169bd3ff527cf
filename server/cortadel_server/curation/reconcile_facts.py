"""Facts a later fact made stale that the write path missed.

The write path compares a new fact only with the few current facts retrieval hands it, and not at
all when a memory is stored verbatim (``infer: false``) or imported; facts stated out of order
are compared the wrong way round. Here every pair of a user's current facts that the embedder
finds close, or that fill the same slot of the same person (where someone lives, works …), is put
to the write path's own rules (``pipeline.decide``), the older one as the
existing fact: when the rules say the newer supersedes it, that is a finding.

    findings = find_stale_facts(records, embed)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from cortadel_server.curation.reconcile_entities import Embed
from cortadel_server.curation.suggestions import SUPERSEDE, Finding
from cortadel_server.pipeline.decide import decide, shape
from cortadel_server.pipeline.model import Candidate, Event, Intent, Neighbour
from cortadel_server.storage.base import MemoryRecord

#: pairs less alike than this are not compared (the rules need shared words anyway)
CLOSE_ENOUGH = 0.3
#: confidence per reason the rules give (pipeline/decide.py ``_replaces``)
CONFIDENCE = {"new": 0.93, "negated": 0.9, "stopped": 0.86, "changed": 0.85, "value": 0.8}
DEFAULT_CONFIDENCE = 0.75


def find_stale_facts(records: Sequence[MemoryRecord], embed: Embed) -> list[Finding]:
    """Current facts superseded by a later current fact of the same user."""
    facts = sorted((r for r in records if r.is_current), key=_valid_from)
    if len(facts) < 2:
        return []
    vectors = np.asarray(embed([r.text for r in facts]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    similarity = vectors @ vectors.T
    slots = [(f.subject, f.slot) if f.slot is not None else None for f in (shape(r.text) for r in facts)]
    findings: list[Finding] = []
    stale: set[str] = set()
    for j in range(len(facts) - 1, 0, -1):  # newest first: each stale fact is reported once, against its latest replacement
        newer = facts[j]
        when = datetime.fromtimestamp(_valid_from(newer), UTC)
        for i in range(j):
            older = facts[i]
            same_slot = slots[i] is not None and slots[i] == slots[j]
            if older.id in stale or (similarity[i, j] < CLOSE_ENOUGH and not same_slot) or _valid_from(older) >= _valid_from(newer):
                continue
            decision = decide(Candidate(newer.text, Intent.REMEMBER, when, when), [Neighbour(older.id, older.text, float(similarity[i, j]))])
            if decision.event is not Event.SUPERSEDE:
                continue
            stale.add(older.id)
            findings.append(Finding(
                SUPERSEDE, {"stale": older.id, "by": newer.id}, _confidence(decision.reason),
                [{"rule": decision.reason, "similarity": round(float(similarity[i, j]), 3), "memory_ids": [older.id, newer.id]}],
            ))
    return findings


def _valid_from(record: MemoryRecord) -> float:
    return record.valid_at if record.valid_at is not None else record.created_at


def _confidence(reason: str) -> float:
    for word, confidence in CONFIDENCE.items():
        if word in reason:
            return confidence
    return DEFAULT_CONFIDENCE
