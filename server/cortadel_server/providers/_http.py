"""One JSON-over-HTTP client for the remote providers, with the retry rules they all share.

    api = JsonApi("http://localhost:11434/v1", api_key=None, timeout=30.0, label="openai embedder")
    reply = api.post("/embeddings", {"model": "nomic-embed-text", "input": ["hello"]})

Rules: HTTP 429, 5xx and connection failures are tried again, up to ``RetryPolicy.tries`` in all,
after an exponential delay (or the server's ``Retry-After``, capped). A timeout is not retried: the
caller's time budget is spent. Any other 4xx, an undecodable body, or the last failure raises
:class:`ProviderError` naming the provider and the URL. httpx errors never leak.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx

from cortadel_server.errors import ProviderError

log = logging.getLogger("cortadel.providers")


@dataclass(frozen=True)
class RetryPolicy:
    tries: int = 3
    base_delay: float = 0.25  # seconds before the 2nd try; doubled for each try after that
    max_delay: float = 10.0  # also caps a Retry-After header

    def delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_delay)
            except ValueError:
                pass  # an HTTP date: fall back to our own schedule
        return min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)


DEFAULT_RETRY = RetryPolicy()


def _snippet(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:300] + ("…" if len(text) > 300 else "")


class JsonApi:
    """POSTs JSON to ``base_url + path`` and returns the decoded JSON reply."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        label: str,
        policy: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = label
        self.policy = policy
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        url = self.base_url + path
        failure = ""
        for attempt in range(1, self.policy.tries + 1):
            retry_after = None
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException as exc:
                seconds = self._client.timeout.read
                raise ProviderError(f"{self.label}: no answer from {url} within {seconds}s ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                failure = f"cannot reach {url}: {exc or type(exc).__name__}"
            else:
                if response.status_code < 300:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise ProviderError(f"{self.label}: {url} answered with a body that is not JSON: {_snippet(response)}") from exc
                failure = f"{url} answered HTTP {response.status_code}: {_snippet(response)}"
                if response.status_code != 429 and response.status_code < 500:
                    raise ProviderError(f"{self.label}: {failure}")
                retry_after = response.headers.get("retry-after")
            if attempt < self.policy.tries:
                pause = self.policy.delay(attempt, retry_after)
                log.warning("%s: %s; try %d of %d in %.2fs", self.label, failure, attempt + 1, self.policy.tries, pause)
                time.sleep(pause)
        raise ProviderError(f"{self.label}: {failure} (gave up after {self.policy.tries} tries)")
