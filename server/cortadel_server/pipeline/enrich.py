"""Enrichment off the request path: entities and categories for newly stored facts.

    enricher = Enricher(storage, taxonomy)
    enricher.start()        # a daemon thread working through the durable job table
    enricher.wake()         # after enqueuing, so the job runs now rather than at the next poll
    enricher.run_once()     # or one job at a time, synchronously (tests, CLI)
    enricher.stop()

A fact is written with `extraction_status="pending"` and an `enrich` job. The job links the
entities its text mentions (resolving aliases such as "NYC" and "New York City" to one entity of
the user's), fills in categories when the fact has none, and sets the status to "done". A failing
job is retried with exponential backoff; after `MAX_ATTEMPTS` the fact is marked "failed". Jobs a
process had claimed when it died are queued again, at the next start or the next claim of another
process serving the same store, so a restart or a killed worker loses nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cortadel_server.language.entities import EntityMention, canonical_entity, find_entities
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.storage.base import Job, Storage

__all__ = ["ENRICH", "MAX_ATTEMPTS", "Enricher"]

log = logging.getLogger("cortadel.pipeline")

ENRICH = "enrich"
MAX_ATTEMPTS = 5
BASE_DELAY = 2.0
POLL_SECONDS = 1.0




class Enricher:
    def __init__(self, storage: Storage, taxonomy: Taxonomy, *, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.taxonomy = taxonomy
        self.clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: what runs each kind of job; other kinds of background work add theirs (curation/reconcile.py)
        self.handlers: dict[str, Callable[[Job], None]] = {ENRICH: self._enrich}

    def start(self) -> None:
        """Requeue jobs that processes now gone left claimed, then work in a daemon thread."""
        requeued = self.storage.requeue_running_jobs()
        if requeued:
            log.info("enrichment: requeued %d jobs interrupted by a process that ended", requeued)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cortadel-enrich", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                worked = self.run_once()
            except Exception:  # the worker must outlive any database hiccup
                log.exception("enrichment: worker error")
                worked = False
            if not worked:
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()

    def run_once(self) -> bool:
        """Run the oldest due job, if any. Returns whether there was one."""
        job = self.storage.claim_job(self.clock())
        if job is None:
            return False
        try:
            handler = self.handlers.get(job.kind)
            if handler is None:
                raise ValueError(f"unknown job kind {job.kind!r}")
            handler(job)
        except Exception as exc:  # noqa: BLE001 - any failure is recorded on the job and retried, never lost
            self._failed(job, exc)
        else:
            self.storage.finish_job(job.id)
        return True

    def _enrich(self, job: Job) -> None:
        if job.memory_id is None:
            return
        with self.storage.write():  # one transaction: the fact cannot vanish half-way
            memory = self.storage.get_memory(job.user_id, job.memory_id)
            if memory is None:  # deleted before we got to it
                return
            known = self.storage.entity_names(job.user_id)
            mentions = []
            for mention in find_entities(memory.text):
                canonical = canonical_entity(mention.name, known)
                known.setdefault(mention.key, canonical)
                mentions.append(EntityMention(name=mention.name, kind=mention.kind, key=canonical))
            self.storage.link_entities(job.user_id, memory.id, mentions)
            fields: dict[str, object] = {"extraction_status": "done"}
            detail: dict[str, object] = {"entities": [m.key for m in mentions]}
            if not memory.categories:
                fields["categories"] = detail["categories"] = list(self.taxonomy.categorize(memory.text))
            self.storage.update_memory(job.user_id, memory.id, **fields)
            self.storage.record_event(job.user_id, memory.id, "ENRICH", self.clock(), detail)

    def _failed(self, job: Job, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if job.attempts >= MAX_ATTEMPTS:
            log.error("enrichment: giving up on job %d after %d attempts: %s", job.id, job.attempts, error)
            self.storage.fail_job(job.id, error, None)
            if job.memory_id is not None:
                self.storage.update_memory(job.user_id, job.memory_id, extraction_status="failed")
            return
        retry_at = self.clock() + BASE_DELAY * 2 ** (job.attempts - 1)
        log.warning("enrichment: job %d failed (attempt %d), retrying: %s", job.id, job.attempts, error)
        self.storage.fail_job(job.id, error, retry_at)
