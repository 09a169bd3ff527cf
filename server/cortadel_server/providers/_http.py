"""One JSON-over-HTTP client for the remote providers, with the retry rules they all share.

    api = JsonApi("http://localhost:11434/v1", api_key=None, timeout=30.0, label="openai embedder")
    reply = api.post("/embeddings", {"model": "nomic-embed-text", "input": ["hello"]})

Rules: HTTP 429, 5xx and connection failures are tried again, up to ``RetryPolicy.tries`` in all,
after an exponential delay (or the server's ``Retry-After``, capped). A timeout is not retried: the
caller's time budget is spent. Any other 4xx, an undecodable body, or the last failure raises
:class:`ProviderError` naming the provider and the URL. httpx errors never leak.

``timeout`` bounds one ``post`` in all — connecting, waiting, reading the whole body and the retries —
and ``post(..., deadline=...)`` (a ``time.monotonic()`` instant) can end it sooner. httpx's own
timeout applies per read, so a reply trickling in one byte a second would never trip it: the body is
streamed and the clock checked between chunks, each read waiting at most for the time left.
"""

from __future__ import annotations

import json
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


def _snippet(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip().replace("\n", " ")
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
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def post(self, path: str, body: dict[str, Any], *, deadline: float | None = None) -> Any:
        url = self.base_url + path
        started = time.monotonic()
        ends = started + self.timeout if deadline is None else min(started + self.timeout, deadline)
        failure = ""
        for attempt in range(1, self.policy.tries + 1):
            retry_after = None
            try:
                status, headers, content = self._send(url, body, ends)
            except httpx.TimeoutException as exc:
                raise ProviderError(
                    f"{self.label}: no answer from {url} within {round(ends - started, 2):g}s ({exc or type(exc).__name__})"
                ) from exc
            except httpx.TransportError as exc:
                failure = f"cannot reach {url}: {exc or type(exc).__name__}"
            else:
                if status < 300:
                    try:
                        return json.loads(content)
                    except ValueError as exc:
                        raise ProviderError(f"{self.label}: {url} answered with a body that is not JSON: {_snippet(content)}") from exc
                failure = f"{url} answered HTTP {status}: {_snippet(content)}"
                if status != 429 and status < 500:
                    raise ProviderError(f"{self.label}: {failure}")
                retry_after = headers.get("retry-after")
            if attempt < self.policy.tries:
                pause = self.policy.delay(attempt, retry_after)
                if time.monotonic() + pause >= ends:
                    raise ProviderError(f"{self.label}: {failure} (no time left to try again)")
                log.warning("%s: %s; try %d of %d in %.2fs", self.label, failure, attempt + 1, self.policy.tries, pause)
                time.sleep(pause)
        raise ProviderError(f"{self.label}: {failure} (gave up after {self.policy.tries} tries)")

    def _send(self, url: str, body: dict[str, Any], ends: float) -> tuple[int, httpx.Headers, bytes]:
        """One request, its body read in full by ``ends`` (raises httpx.TimeoutException after)."""
        left = ends - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException("no time left")
        with self._client.stream("POST", url, json=body, timeout=httpx.Timeout(left)) as response:
            chunks = []
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if time.monotonic() >= ends:
                    raise httpx.ReadTimeout("the answer was still arriving at the deadline")
            return response.status_code, response.headers, b"".join(chunks)
