"""Any OpenAI-compatible ``POST {url}/chat/completions`` with structured outputs.

    client = OpenAIChatClient("http://localhost:11434/v1", model="qwen2.5:7b", timeout=30)
    client.complete_json(messages, schema, "facts").data

Each call is bounded in all by ``timeout`` (see :mod:`cortadel_server.providers._http`), and by
the ``deadline`` its caller passes. Each request asks for ``response_format: {"type": "json_schema", "json_schema": {name, schema,
strict: true}}`` at temperature 0; with ``strict`` OpenAI wants every object in the schema to list all
its properties as required and to forbid additional ones. Transport failures follow the shared retry
rules of :mod:`cortadel_server.providers._http`; a bad answer gets one repair request.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy
from cortadel_server.providers.llm.base import ChatResult

log = logging.getLogger("cortadel.llm")

REPAIR_PROMPT = (
    "Your previous answer could not be used: {error}\n"
    "Reply again with only the corrected JSON that matches the {schema_name} schema, nothing else."
)
# Reasoning models may think aloud first; some models fence JSON although asked not to.
_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_json_answer(content: str | None) -> Any:
    """Decode a model's JSON answer; raises ValueError (json.JSONDecodeError is one) when there is none."""
    if not content or not content.strip():
        raise ValueError("the answer was empty")
    text = _THINKING.sub("", content)
    fenced = _FENCE.match(text)
    return json.loads(fenced.group(1) if fenced else text)


@dataclass
class Usage:
    """Running totals over the client's lifetime."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


class OpenAIChatClient:
    def __init__(
        self,
        url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        policy: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.model = model
        self.usage = Usage()
        self._lock = threading.Lock()
        self._api = JsonApi(url, api_key=api_key, timeout=timeout, label=f"llm {model}", policy=policy)

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIChatClient:
        if not (settings.llm_url and settings.llm_model):
            raise ProviderError("llm: CORTADEL_LLM_URL and CORTADEL_LLM_MODEL are both required")
        return cls(settings.llm_url, model=settings.llm_model, api_key=settings.llm_api_key, timeout=settings.llm_timeout)

    def close(self) -> None:
        self._api.close()

    def complete_json(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        schema_name: str,
        validate: Callable[[Any], Any] | None = None,
        deadline: float | None = None,
    ) -> ChatResult:
        conversation = list(messages)
        prompt_tokens = completion_tokens = calls = 0
        while True:
            content, used_prompt, used_completion = self._complete(conversation, schema, schema_name, deadline)
            prompt_tokens += used_prompt
            completion_tokens += used_completion
            calls += 1
            try:
                data = parse_json_answer(content)
                if validate is not None:
                    data = validate(data)
            except ValueError as exc:
                if calls == 2:
                    raise ProviderError(f"llm {self.model}: no usable {schema_name} JSON after a repair request: {exc}") from exc
                log.info("llm answer rejected, asking for a repair: model=%s error=%s", self.model, exc)
                conversation += [
                    {"role": "assistant", "content": content or ""},
                    {"role": "user", "content": REPAIR_PROMPT.format(error=exc, schema_name=schema_name)},
                ]
                continue
            return ChatResult(data=data, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, calls=calls)

    def _complete(
        self, conversation: list[dict[str, Any]], schema: dict[str, Any], schema_name: str, deadline: float | None
    ) -> tuple[str | None, int, int]:
        body = {
            "model": self.model,
            "messages": conversation,
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": True}},
        }
        started = time.perf_counter()
        reply = self._api.post("/chat/completions", body, deadline=deadline)
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            content = reply["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(f"llm {self.model}: reply without choices[0].message: {str(reply)[:200]}") from exc
        usage = reply.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        with self._lock:
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
            self.usage.calls += 1
        log.info(
            "llm call model=%s prompt_tokens=%d completion_tokens=%d latency_ms=%.0f",
            self.model, prompt_tokens, completion_tokens, latency_ms,
        )
        return content, prompt_tokens, completion_tokens
