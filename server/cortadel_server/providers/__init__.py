"""Model providers: embedders, rerankers and the chat model, each built from :class:`Settings`.

    embedder = build_embedder(settings)     # always one; raises ProviderError/MissingDependency when it cannot load
    reranker = build_reranker(settings)     # None when CORTADEL_RERANKER=none
    chat = build_chat_client(settings)      # None without CORTADEL_LLM_URL and CORTADEL_LLM_MODEL

Each kind is a one-method Protocol (``Embedder.embed``, ``Reranker.score``, ``ChatClient.complete_json``);
the built-ins are listed in ``EMBEDDERS`` and ``RERANKERS``. Libraries behind local models are imported
only when such a provider is built.
"""

from __future__ import annotations

from cortadel_server.config import Settings
from cortadel_server.errors import ConfigError
from cortadel_server.providers.embedding import EMBEDDERS, Embedder
from cortadel_server.providers.llm import ChatClient, ChatResult, OpenAIChatClient
from cortadel_server.providers.reranking import RERANKERS, Reranker


def build_embedder(settings: Settings) -> Embedder:
    try:
        factory = EMBEDDERS[settings.embedder]
    except KeyError:
        raise ConfigError(f"CORTADEL_EMBEDDER={settings.embedder!r}: must be one of {', '.join(EMBEDDERS)}") from None
    return factory(settings)


def build_reranker(settings: Settings) -> Reranker | None:
    if settings.reranker == "none":
        return None
    try:
        factory = RERANKERS[settings.reranker]
    except KeyError:
        raise ConfigError(f"CORTADEL_RERANKER={settings.reranker!r}: must be none or one of {', '.join(RERANKERS)}") from None
    return factory(settings)


def build_chat_client(settings: Settings) -> ChatClient | None:
    if not (settings.llm_url and settings.llm_model):
        return None
    return OpenAIChatClient.from_settings(settings)


__all__ = [
    "EMBEDDERS",
    "RERANKERS",
    "ChatClient",
    "ChatResult",
    "Embedder",
    "Reranker",
    "build_chat_client",
    "build_embedder",
    "build_reranker",
]
