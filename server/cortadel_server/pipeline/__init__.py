"""The write pipeline: conversations and texts in, deduplicated, versioned facts out.

    writer = Writer.from_settings(settings, storage, embedder)
    writer.add_conversation(user_id, turns, is_agent_memory=False, ...)   # list[WriteOutcome]

The parts, each usable alone:

    extract    Extractor, build_extractor; RulesExtractor (rules), LlmExtractor (llm)
    decide     decide(candidate, neighbours) -> Decision   (the pure write decision)
    timeexpr   find_time / find_times (also for query-time understanding in retrieval)
    classify   Taxonomy, memory_type, gist
    entities   find_entities, same_entity
    enrich     Enricher (the durable job runner for entities and categories)
"""

from cortadel_server.pipeline.classify import Taxonomy, gist, memory_type
from cortadel_server.pipeline.decide import decide
from cortadel_server.pipeline.enrich import Enricher
from cortadel_server.pipeline.entities import find_entities, same_entity
from cortadel_server.pipeline.extract import Extractor, build_extractor
from cortadel_server.pipeline.llm import ExtractionFailed, LlmExtractor, LlmJudge
from cortadel_server.pipeline.model import (
    Candidate,
    Decision,
    EntityKind,
    EntityMention,
    Event,
    Intent,
    MemoryType,
    Neighbour,
    Turn,
)
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.pipeline.timeexpr import TimeSpan, find_time, find_times
from cortadel_server.pipeline.writer import ConversationTurn, WriteOutcome, Writer

__all__ = [
    "Candidate",
    "ConversationTurn",
    "Decision",
    "Enricher",
    "EntityKind",
    "EntityMention",
    "Event",
    "ExtractionFailed",
    "Extractor",
    "Intent",
    "LlmExtractor",
    "LlmJudge",
    "MemoryType",
    "Neighbour",
    "RulesExtractor",
    "Taxonomy",
    "TimeSpan",
    "Turn",
    "WriteOutcome",
    "Writer",
    "build_extractor",
    "decide",
    "find_entities",
    "find_time",
    "find_times",
    "gist",
    "memory_type",
    "same_entity",
]
