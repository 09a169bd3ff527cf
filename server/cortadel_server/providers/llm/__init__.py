"""Chat models for the LLM extractor."""

from __future__ import annotations

from cortadel_server.providers.llm.base import ChatClient, ChatResult
from cortadel_server.providers.llm.openai import OpenAIChatClient, Usage

__all__ = ["ChatClient", "ChatResult", "OpenAIChatClient", "Usage"]
