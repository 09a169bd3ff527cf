"""The extractor a server's settings name.

    extractor = build_extractor(settings, chat_client)   # RulesExtractor or LlmExtractor

Kept apart from `extract`, the seam every extractor imports, so that the seam never imports them.
"""

from __future__ import annotations

from cortadel_server.config import Settings
from cortadel_server.errors import ConfigError
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.pipeline.extract import Extractor
from cortadel_server.pipeline.llm import LlmExtractor
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.providers import build_chat_client
from cortadel_server.providers.llm import ChatClient

__all__ = ["build_extractor"]


def build_extractor(settings: Settings, chat_client: ChatClient | None = None) -> Extractor:
    """The extractor `settings.extractor` names; the `llm` one falls back to rules when
    `settings.llm_fallback` is "rules"."""
    taxonomy = Taxonomy.from_setting(settings.categories)
    rules = RulesExtractor(taxonomy)
    if settings.extractor == "rules":
        return rules
    if chat_client is None:
        chat_client = build_chat_client(settings)
        if chat_client is None:
            raise ConfigError("CORTADEL_EXTRACTOR=llm needs CORTADEL_LLM_URL and CORTADEL_LLM_MODEL")
    fallback = rules if settings.llm_fallback == "rules" else None
    return LlmExtractor(chat_client, taxonomy, fallback=fallback)
