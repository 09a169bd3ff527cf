"""Prometheus metrics of one server: what an operator graphs and alerts on.

    metrics = Metrics(storage)
    metrics.observe_request("Memories_Search", 200, 0.012)   # REST operations and MCP tools
    metrics.observe_search({"text_ms": 1.2, "vector_ms": 3.4, "fusion_ms": 0.3})
    metrics.count_writes(["ADD", "SKIP_DUPLICATE"])
    embedder = metrics.watch_embedder(embedder)               # counts its ProviderErrors
    metrics.exposition()                                      # the text format, for GET /metrics

Each server has its own registry (no process-wide state): request latency per operation and
status (a histogram, whose ``_count`` is the request count), search phase timings, write events
by kind, provider failures, and, read at scrape time, the job queue depth, the age of the oldest
queued job of each kind and the database size, plus the process's own CPU, memory and file descriptors.

What is counted as a failure is also kept, the latest ``RECENT_ERRORS`` of them, for the
dashboard's System page: every answer of 500 or more and every failed provider call, with its
time, operation and request id (``metrics.recent_errors()``, newest first).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cortadel_server.errors import ProviderError, StorageError
from cortadel_server.pipeline.model import Event
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.llm.base import ChatClient, ChatResult
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.storage.base import JobGroup, Storage
from cortadel_server.storage.sqlite import SqliteStorage

log = logging.getLogger("cortadel.metrics")

#: seconds; from a cached search (~5 ms) to a write waiting on a slow LLM
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: seconds; one search phase is a fraction of the request
PHASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
PROVIDERS = ("embedder", "reranker", "llm")
#: how many of the latest errors the server keeps for the System page
RECENT_ERRORS = 50
#: the longest error message kept (a provider's reply can be long)
ERROR_MESSAGE_CHARS = 300

#: the id of the request being served: set for each request, seen by the worker threads it runs
#: (the worker pools copy the context into them, workers.py), so a provider failure names the request it failed
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)


@dataclass(frozen=True)
class RecentError:
    """One answer of 500 or more, or one failed provider call."""

    at: float
    #: the REST operation id (``Memories_Search``), or the provider (embedder, reranker, llm)
    operation: str
    #: the HTTP status, or "provider error"
    status: str
    #: None outside a request (a background job)
    request_id: str | None
    message: str | None = None


class Metrics:
    def __init__(self, storage: Storage) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.request_seconds = Histogram(
            "cortadel_request_duration_seconds",
            "Requests by operation (REST operation id, or mcp:<tool> for an MCP tool call) and status "
            "(HTTP status; ok or error for a tool call).",
            ["operation", "status"], buckets=REQUEST_BUCKETS, registry=self.registry,
        )
        self.search_phase_seconds = Histogram(
            "cortadel_search_phase_duration_seconds",
            "Time of each search phase: embed, each arm (text, vector, session, entity, time), fusion, rerank.",
            ["phase"], buckets=PHASE_BUCKETS, registry=self.registry,
        )
        self.write_events = Counter(
            "cortadel_write_events", "Write outcomes, by pipeline event (ADD, SUPERSEDE, SKIP_DUPLICATE, …).",
            ["event"], registry=self.registry,
        )
        self.provider_errors = Counter(
            "cortadel_provider_errors", "Failed calls to a model provider (after its retries).",
            ["provider"], registry=self.registry,
        )
        # Zero series from the start, so rate() sees the first increment.
        for event in Event:
            self.write_events.labels(event.value)
        for provider in PROVIDERS:
            self.provider_errors.labels(provider)
        self.registry.register(StorageCollector(storage))
        self._recent_errors: deque[RecentError] = deque(maxlen=RECENT_ERRORS)
        self._recent_lock = threading.Lock()  # worker threads add while a page reads

    def exposition(self) -> bytes:
        """Every metric in Prometheus' text format (this reads the database: run it off the event loop)."""
        return generate_latest(self.registry)

    def observe_request(self, operation: str, status: int | str, seconds: float) -> None:
        self.request_seconds.labels(operation, str(status)).observe(seconds)
        if isinstance(status, int) and status >= 500:
            self._note_error(operation, str(status))

    def observe_search(self, timings_ms: Mapping[str, float]) -> None:
        """The retriever's phase timings (``text_ms`` …) of one search."""
        for key, ms in timings_ms.items():
            self.search_phase_seconds.labels(key.removesuffix("_ms")).observe(ms / 1000)

    def count_writes(self, events: Iterable[str]) -> None:
        for event in events:
            self.write_events.labels(event).inc()

    @contextmanager
    def _failures_of(self, provider: str) -> Iterator[None]:
        try:
            yield
        except ProviderError as exc:
            self.provider_errors.labels(provider).inc()
            self._note_error(provider, "provider error", str(exc)[:ERROR_MESSAGE_CHARS])
            raise

    def _note_error(self, operation: str, status: str, message: str | None = None) -> None:
        error = RecentError(time.time(), operation, status, current_request_id.get(), message)
        with self._recent_lock:
            self._recent_errors.append(error)

    def recent_errors(self) -> list[RecentError]:
        """The latest errors, newest first."""
        with self._recent_lock:
            return list(reversed(self._recent_errors))

    def watch_embedder(self, embedder: Embedder) -> Embedder:
        return WatchedEmbedder(embedder, lambda: self._failures_of("embedder"))

    def watch_reranker(self, reranker: Reranker | None) -> Reranker | None:
        return None if reranker is None else WatchedReranker(reranker, lambda: self._failures_of("reranker"))

    def watch_chat(self, chat: ChatClient) -> ChatClient:
        return WatchedChatClient(chat, lambda: self._failures_of("llm"))


#: a fresh context manager that counts a ProviderError raised inside it
Watch = Callable[[], AbstractContextManager[None]]


class WatchedEmbedder:
    """The embedder, its failures counted."""

    def __init__(self, inner: Embedder, watch: Watch) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.dim = inner.dim
        self._watch = watch

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._watch():
            return self.inner.embed(texts)


class WatchedReranker:
    """The reranker, its failures counted."""

    def __init__(self, inner: Reranker, watch: Watch) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self._watch = watch

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        with self._watch():
            return self.inner.score(query, documents)


class WatchedChatClient:
    """The chat model, its failures counted (a failed repair included)."""

    def __init__(self, inner: ChatClient, watch: Watch) -> None:
        self.inner = inner
        self.model = inner.model
        self._watch = watch

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        schema_name: str,
        validate: Callable[[Any], Any] | None = None,
        deadline: float | None = None,
    ) -> ChatResult:
        with self._watch():
            return self.inner.complete_json(messages, schema, schema_name, validate, deadline)


@runtime_checkable
class JobQueue(Protocol):
    """A backend that counts its background jobs (both do; the Storage interface does not say so)."""

    def pending_jobs(self) -> int: ...

    def job_groups(self) -> list[JobGroup]:
        """The jobs per kind and status, each group with its oldest job's creation time."""
        ...


class StorageCollector(Collector):
    """Read at scrape time: the job queue depth, the oldest queued job's age per kind and, for
    SQLite, the database's bytes on disk."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def collect(self) -> Iterator[Metric]:
        if isinstance(self.storage, JobQueue):
            try:
                pending = self.storage.pending_jobs()
                groups = self.storage.job_groups()
            except StorageError as exc:  # a scrape still answers; the missing series is the alert
                log.warning("metrics: cannot count pending jobs: %s", exc)
            else:
                yield GaugeMetricFamily("cortadel_jobs_pending", "Background jobs queued or running.", value=pending)
                yield queued_job_age(groups, time.time())
        if isinstance(self.storage, SqliteStorage):
            yield GaugeMetricFamily(
                "cortadel_storage_bytes", "The SQLite database file plus its WAL, in bytes.", value=self.storage.file_size()
            )


def queued_job_age(groups: Iterable[JobGroup], now: float) -> GaugeMetricFamily:
    """Seconds since the oldest queued job of each kind was created: a queue that drains keeps it
    near zero, a stuck or starved one lets it climb. A kind with nothing queued has no series."""
    gauge = GaugeMetricFamily(
        "cortadel_jobs_oldest_queued_age_seconds", "Age of the oldest queued background job, by job kind.", labels=["kind"]
    )
    for group in groups:
        if group.status == "queued":
            gauge.add_metric([group.kind], max(0.0, now - group.oldest_created_at))
    return gauge
