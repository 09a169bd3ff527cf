"""The write pipeline: conversations and texts in, deduplicated, versioned facts out.

    writer = Writer.from_settings(settings, storage, embedder)
    writer.add_conversation(user_id, turns, is_agent_memory=False, ...)   # list[WriteOutcome]

The parts, each usable alone:

    extract    the Extractor seam; RulesExtractor (rules), LlmExtractor (llm); build_extractor (extractors)
    decide     decide(candidate, neighbours) -> Decision   (the pure write decision)
    classify   Taxonomy, memory_type, gist
    enrich     Enricher (the durable job runner for entities and categories)

Entity names and time expressions live in ``cortadel_server.language``, shared with retrieval.
"""

from cortadel_server.pipeline.classify import Taxonomy, gist, memory_type
from cortadel_server.pipeline.decide import decide
from cortadel_server.pipeline.enrich import Enricher
from cortadel_server.pipeline.extract import Extractor
from cortadel_server.pipeline.extractors import build_extractor
from cortadel_server.pipeline.llm import LlmExtractor, LlmJudge
from cortadel_server.pipeline.model import (
    Candidate,
    Decision,
    Event,
    Intent,
    Neighbour,
    Turn,
)
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.pipeline.writer import ConversationTurn, WriteOutcome, Writer
from cortadel_server.storage.base import MemoryType

__all__ = [
    "Candidate",
    "ConversationTurn",
    "Decision",
    "Enricher",
    "Event",
    "Extractor",
    "Intent",
    "LlmExtractor",
    "LlmJudge",
    "MemoryType",
    "Neighbour",
    "RulesExtractor",
    "Taxonomy",
    "Turn",
    "WriteOutcome",
    "Writer",
    "build_extractor",
    "decide",
    "gist",
    "memory_type",
]
