"""Prometheus metrics of one server: what an operator graphs and alerts on.

    metrics = Metrics(storage)
    metrics.observe_request("Memories_Search", 200, 0.012)   # REST operations and MCP tools
    metrics.observe_search({"text_ms": 1.2, "vector_ms": 3.4, "fusion_ms": 0.3})
    metrics.count_writes(["ADD", "SKIP_DUPLICATE"])
    embedder = metrics.watch_embedder(embedder)               # counts its ProviderErrors
    metrics.exposition()                                      # the text format, for GET /metrics

Each server has its own registry (one of one process keeps no process-wide state): request latency per operation and
status (a histogram, whose ``_count`` is the request count), search phase timings, write events
by kind, provider failures, what keeping the in-process caches current read from the database,
and, read at scrape time, the job queue depth, the age of the oldest queued job of each kind and
the database size, plus the process's own CPU, memory and file descriptors. In a worker process
of ``cortadel serve --workers N`` the counters and histograms are kept in the files every worker
shares instead, and a scrape answers for the whole server (worker_metrics.py).

What is counted as a failure is also kept, the latest ``RECENT_ERRORS`` of them, for the
dashboard's System page: every answer of 500 or more and every failed provider call, with its
time, operation and request id (``metrics.recent_errors()``, newest first; of every worker).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, fields
from pathlib import Path
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
from cortadel_server.storage.vector_cache import CacheReads
from cortadel_server.worker_metrics import SharedFilesCollector, WorkerProcessCollector, shared_directory

log = logging.getLogger("cortadel.metrics")

#: seconds; from a cached search (~5 ms) to a write waiting on a slow LLM
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: seconds; one search phase is a fraction of the request
PHASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
PROVIDERS = ("embedder", "reranker", "llm")
#: the fields of ``CacheReads`` that count reads (the others count what they read)
CACHE_READ_OUTCOMES = ("reloads", "catch_ups")
CACHE_COUNTS = tuple(field.name for field in fields(CacheReads))
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
        self.storage = storage
        shared = shared_directory()
        #: what a scrape reads
        self.registry = CollectorRegistry()
        if shared is None:
            ProcessCollector(registry=self.registry)
        else:  # a scrape reads every worker's counts from the shared files (this one's too), and process_* from /proc
            SharedFilesCollector(self.registry, shared)
            self.registry.register(WorkerProcessCollector(shared))
        own = self.registry if shared is None else None
        self.request_seconds = Histogram(
            "cortadel_request_duration_seconds",
            "Requests by operation (REST operation id, or mcp:<tool> for an MCP tool call) and status "
            "(HTTP status; ok or error for a tool call).",
            ["operation", "status"], buckets=REQUEST_BUCKETS, registry=own,
        )
        self.search_phase_seconds = Histogram(
            "cortadel_search_phase_duration_seconds",
            "Time of each search phase: embed, each arm (text, vector, session, entity, time), fusion, rerank.",
            ["phase"], buckets=PHASE_BUCKETS, registry=own,
        )
        self.write_events = Counter(
            "cortadel_write_events", "Write outcomes, by pipeline event (ADD, SUPERSEDE, SKIP_DUPLICATE, …).",
            ["event"], registry=own,
        )
        self.provider_errors = Counter(
            "cortadel_provider_errors", "Failed calls to a model provider (after its retries).",
            ["provider"], registry=own,
        )
        self.cache_reads = Counter(
            "cortadel_cache_reads",
            "Reads of the database that kept an in-process cache current, by cache and outcome "
            "(reloads: a user's whole entry; catch_ups: an entry brought up to date by the rows changed since).",
            ["cache", "outcome"], registry=own,
        )
        self.cache_rows_read = Counter(
            "cortadel_cache_rows_read",
            "What those reads read, by cache and kind (rows: whole rows; rowids: the ids alone, to tell "
            "which rows another process deleted).",
            ["cache", "kind"], registry=own,
        )
        # Each series' child, once made: ``labels()`` took as long as the observation, seven times a search.
        self._request_series: dict[tuple[str, int | str], Histogram] = {}
        self._phase_series: dict[str, Histogram] = {}
        #: the storage's cache counts already added to the counters above, by (cache, field)
        self._cache_counted: dict[tuple[str, str], int] = {}
        self._cache_lock = threading.Lock()
        # Zero series from the start, so rate() sees the first increment.
        for event in Event:
            self.write_events.labels(event.value)
        for provider in PROVIDERS:
            self.provider_errors.labels(provider)
        self._count_cache_reads()
        self.registry.register(StorageCollector(storage))
        self.errors = ErrorLog(shared)

    def exposition(self) -> bytes:
        """Every metric in Prometheus' text format (this reads the database: run it off the event loop)."""
        self._count_cache_reads()
        return generate_latest(self.registry)

    def observe_request(self, operation: str, status: int | str, seconds: float) -> None:
        series = self._request_series.get((operation, status))
        if series is None:  # operations and statuses are bounded sets (api/request_metrics.py)
            series = self._request_series[(operation, status)] = self.request_seconds.labels(operation, str(status))
        series.observe(seconds)
        if isinstance(status, int) and status >= 500:
            self._note_error(operation, str(status))
        self._count_cache_reads()

    def _count_cache_reads(self) -> None:
        """Add to the cache counters what the storage counted since (it counts on its own, knowing
        nothing of metrics): after each request, so a worker's files hold what its requests read,
        and before a scrape."""
        with self._cache_lock:
            for cache, reads in self.storage.cache_counts().items():
                for name in CACHE_COUNTS:
                    count = getattr(reads, name)
                    counted = self._cache_counted.get((cache, name))
                    if counted == count:
                        continue
                    counter = self.cache_reads if name in CACHE_READ_OUTCOMES else self.cache_rows_read
                    # the first time, the series is made: at zero, or at the count
                    counter.labels(cache, name).inc(count - (counted or 0))
                    self._cache_counted[(cache, name)] = count

    def observe_search(self, timings_ms: Mapping[str, float]) -> None:
        """The retriever's phase timings (``text_ms`` …) of one search."""
        for key, ms in timings_ms.items():
            series = self._phase_series.get(key)
            if series is None:
                series = self._phase_series[key] = self.search_phase_seconds.labels(key.removesuffix("_ms"))
            series.observe(ms / 1000)

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
        self.errors.add(RecentError(time.time(), operation, status, current_request_id.get(), message))

    def recent_errors(self) -> list[RecentError]:
        """The latest errors, newest first."""
        return self.errors.latest()

    def watch_embedder(self, embedder: Embedder) -> Embedder:
        return WatchedEmbedder(embedder, lambda: self._failures_of("embedder"))

    def watch_reranker(self, reranker: Reranker | None) -> Reranker | None:
        return None if reranker is None else WatchedReranker(reranker, lambda: self._failures_of("reranker"))

    def watch_chat(self, chat: ChatClient) -> ChatClient:
        return WatchedChatClient(chat, lambda: self._failures_of("llm"))


class ErrorLog:
    """The latest ``RECENT_ERRORS`` errors of this process, in memory; in a worker process, also in
    its file of the directory the workers share (``errors_<pid>.json``, replaced whole on each
    error: errors are rare), where a reader finds every worker's, a dead one's too."""

    def __init__(self, shared: Path | None) -> None:
        self.shared = shared
        self._errors: deque[RecentError] = deque(maxlen=RECENT_ERRORS)
        self._lock = threading.Lock()  # worker threads add while a page reads

    def add(self, error: RecentError) -> None:
        with self._lock:
            self._errors.append(error)
            if self.shared is None:
                return
            path = self.shared / f"errors_{os.getpid()}.json"
            partial = path.with_suffix(".partial")
            try:
                partial.write_text(json.dumps([asdict(e) for e in self._errors]), encoding="utf-8")
                partial.replace(path)  # a reader never sees a half-written file
            except OSError as exc:  # the error is still counted and logged; only the System page misses it
                log.warning("metrics: cannot keep the recent errors in %s: %s", path, exc)

    def latest(self) -> list[RecentError]:
        """Newest first."""
        if self.shared is None:
            with self._lock:
                return list(reversed(self._errors))
        found: list[RecentError] = []
        for path in self.shared.glob("errors_*.json"):
            try:
                found.extend(RecentError(**error) for error in json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                log.warning("metrics: cannot read the recent errors in %s: %s", path, exc)
        return sorted(found, key=lambda e: e.at, reverse=True)[:RECENT_ERRORS]


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
