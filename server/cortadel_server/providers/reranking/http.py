"""A remote rerank API. Two request dialects exist; the URL picks one, the reply's shape is read either way.

    reranker = HttpReranker("http://localhost:8080")                 # TEI
    reranker = HttpReranker("http://localhost:8080/v1", model="bge")  # llama.cpp, Jina, Cohere

* The endpoint is the URL itself when its path ends in ``/rerank``, else the URL plus ``/rerank``.
* An endpoint under a version segment (``/v1/rerank``, ``/v2/rerank``) gets the Cohere dialect
  ``{model, query, documents, top_n}``, answered by ``{"results": [{index, relevance_score}]}``
  (Cohere, Jina, llama.cpp, vLLM, LiteLLM; Voyage's ``"data"`` key is read as well).
* Any other endpoint (``http://tei:8080/rerank``) gets TEI's ``{query, texts, truncate}``,
  answered by ``[{index, score}]``; llama.cpp's bare ``/rerank`` understands it too.

Scores are passed through as the server computed them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy

TIMEOUT = 30.0
_VERSIONED = re.compile(r"/v\d+/rerank$")


def endpoint(url: str) -> tuple[str, str]:
    """The rerank endpoint for ``url`` and its dialect, ``"cohere"`` or ``"tei"``."""
    url = url.rstrip("/")
    if not urlsplit(url).path.endswith("/rerank"):
        url += "/rerank"
    return url, "cohere" if _VERSIONED.search(urlsplit(url).path) else "tei"


class HttpReranker:
    name = "http"

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = TIMEOUT,
        policy: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.url, self.dialect = endpoint(url)
        self.model = model or ""
        self._api = JsonApi(self.url, api_key=api_key, timeout=timeout, label="http reranker", policy=policy)

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpReranker:
        if not settings.reranker_url:
            raise ProviderError("http reranker: CORTADEL_RERANKER_URL is required")
        return cls(settings.reranker_url, model=settings.reranker_model, api_key=settings.reranker_api_key)

    def close(self) -> None:
        self._api.close()

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        body: dict[str, Any]
        if self.dialect == "cohere":
            body = {"query": query, "documents": list(documents), "top_n": len(documents)}
            if self.model:
                body["model"] = self.model
        else:
            body = {"query": query, "texts": list(documents), "truncate": True}
        return self._scores(self._api.post("", body), len(documents))

    def _scores(self, reply: Any, expected: int) -> list[float]:
        try:
            if isinstance(reply, list):
                pairs = [(item["index"], item["score"]) for item in reply]
            else:
                items = reply["results"] if "results" in reply else reply["data"]
                pairs = [(item["index"], item["relevance_score"]) for item in items]
        except (KeyError, TypeError) as exc:
            raise ProviderError(f"http reranker: unexpected reply from {self.url}: {str(reply)[:200]}") from exc
        scores: dict[int, float] = {int(index): float(value) for index, value in pairs}
        if sorted(scores) != list(range(expected)):
            raise ProviderError(f"http reranker: {self.url} scored documents {sorted(scores)} of {expected}")
        return [scores[i] for i in range(expected)]
