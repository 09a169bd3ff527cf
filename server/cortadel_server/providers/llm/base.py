"""The chat interface the LLM extractor uses: messages in, schema-checked JSON out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ChatResult:
    """The parsed (and validated) JSON answer and what it cost, a repair included.

    ``calls`` counts answered chat completions: 1, or 2 when a repair was asked for (transport retries
    are not counted).
    """

    data: Any
    prompt_tokens: int
    completion_tokens: int
    calls: int


@runtime_checkable
class ChatClient(Protocol):
    """Asks a chat model for JSON that fits a JSON Schema.

        result = client.complete_json(
            [{"role": "system", "content": "Extract facts."}, {"role": "user", "content": text}],
            schema=FACTS_SCHEMA, schema_name="facts", validate=Facts.from_json,
        )
        result.data  # what validate returned (the decoded JSON when validate is None)

    ``validate`` raises ValueError for an answer it cannot use; the client then asks the model once
    to correct it. Any failure left after that, or of the service itself, raises ProviderError.
    ``deadline`` (a ``time.monotonic()`` instant) ends the call, repair included, even sooner than
    the client's own timeout.
    """

    model: str

    def complete_json(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        schema_name: str,
        validate: Callable[[Any], Any] | None = None,
        deadline: float | None = None,
    ) -> ChatResult: ...
