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
from collections.abc import Callable, Sequence

from cortadel_server.language.entities import AliasIndex, EntityMention, find_entities
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.storage.base import Job, MemoryRecord, Storage
from cortadel_server.text_caches import holds_text

__all__ = ["ENRICH", "MAX_ATTEMPTS", "Enricher"]

log = logging.getLogger("cortadel.pipeline")

ENRICH = "enrich"
MAX_ATTEMPTS = 5
BASE_DELAY = 2.0
POLL_SECONDS = 1.0
#: jobs of one kind and user a worker claims at once (enrichment: in one transaction)
CLAIMED_AT_ONCE = 64


class Enricher:
    def __init__(self, storage: Storage, taxonomy: Taxonomy, *, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.taxonomy = taxonomy
        self.clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: what runs each kind of job; other kinds of background work add theirs (curation/reconcile.py)
        self.handlers: dict[str, Callable[[Job], None]] = {ENRICH: lambda job: self._enrich([job])}
        #: jobs this worker claimed whose end it has not recorded yet (``_requeue_unsettled``)
        self._unsettled: dict[int, Job] = {}
        #: the user of the last claim and their alias index (``_aliases``)
        self._held: tuple[str, AliasIndex] | None = None
        holds_text(self.forget_held)

    def forget_held(self) -> None:
        """Drop the held alias index (text was deleted: its names may be among them)."""
        self._held = None

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
        """Run the oldest due job, and the due jobs of its kind and user queued behind it (up to
        ``CLAIMED_AT_ONCE``). Returns whether there was one."""
        self._requeue_unsettled()
        jobs = self.storage.claim_jobs(self.clock(), CLAIMED_AT_ONCE)
        if not jobs:
            return False
        self._unsettled = {job.id: job for job in jobs}
        if jobs[0].kind == ENRICH and len(jobs) > 1:
            try:
                self._enrich(jobs)
            except Exception as exc:  # noqa: BLE001 - rolled back whole: each job runs alone below, a failure only its own
                log.warning("enrichment: %d jobs failed together (%s); running each alone", len(jobs), exc)
            else:
                self.storage.finish_jobs([job.id for job in jobs])
                self._unsettled = {}
                return True
        for job in jobs:
            self._run(job)
            del self._unsettled[job.id]
        return True

    def _requeue_unsettled(self) -> None:
        """Queue again, due now, the jobs a run left claimed when the database failed under it
        before their end was recorded: only this process's end would free them otherwise. A job
        whose work had committed runs again (enrichment twice is the same enrichment)."""
        for job_id in list(self._unsettled):
            self.storage.fail_job(job_id, "requeued: the database failed before the job's end was recorded", self.clock())
            del self._unsettled[job_id]

    def _run(self, job: Job) -> None:
        try:
            handler = self.handlers.get(job.kind)
            if handler is None:
                raise ValueError(f"unknown job kind {job.kind!r}")
            handler(job)
        except Exception as exc:  # noqa: BLE001 - any failure is recorded on the job and retried, never lost
            self._failed(job, exc)
        else:
            self.storage.finish_job(job.id)

    def _enrich(self, jobs: Sequence[Job]) -> None:
        """Link the entities of the jobs' facts (all of one user) and fill in their categories, in
        one transaction: a fact cannot vanish half-way. One job a transaction, claimed and finished
        in two more, took three commits and a read of every alias of the user per fact."""
        user_id = jobs[0].user_id
        with self.storage.write(user_id):
            memories = self.storage.get_memories(user_id, [job.memory_id for job in jobs if job.memory_id is not None])
            # read once: each fact's new aliases join it as the next fact would read them
            aliases = self._aliases(user_id)
            done: set[str] = set()
            for job in jobs:
                if job.memory_id is None:
                    continue
                # a fact queued twice is read again: the first job changed it
                memory = self.storage.get_memory(user_id, job.memory_id) if job.memory_id in done else memories.get(job.memory_id)
                if memory is None:  # deleted before we got to it
                    continue
                self._link(memory, aliases)
                done.add(memory.id)

    def _aliases(self, user_id: str) -> AliasIndex:
        """The user's alias index: the last claim's, which its own facts' aliases kept current, when
        the rows read now are the rows it stands for (no other write changed them, and that claim
        committed); else built anew. At 26,000 aliases the build was half a claim (20–25 ms, and
        220 ms while the names' evidence is first worked out), where the comparison is a set of
        the rows the read brings anyway."""
        rows = self.storage.entity_aliases(user_id)
        held = self._held
        if held is not None and held[0] == user_id and held[1].rows == set(rows):
            return held[1]
        index = AliasIndex(rows)
        self._held = (user_id, index)
        return index

    def _link(self, memory: MemoryRecord, aliases: AliasIndex) -> None:
        """Enrich one fact against the user's ``aliases``, and add the aliases it stored."""
        own: dict[str, str] = {}  # the fact's own mentions resolve its later ones, after the stored aliases
        mentions = []
        for mention in find_entities(memory.text):
            canonical = aliases.canonical(mention.name, own)
            own.setdefault(mention.key, canonical)
            mentions.append(EntityMention(name=mention.name, kind=mention.kind, key=canonical))
        self.storage.link_entities(memory.user_id, memory.id, mentions)
        fields: dict[str, object] = {"extraction_status": "done"}
        detail: dict[str, object] = {"entities": [m.key for m in mentions]}
        if not memory.categories:
            fields["categories"] = detail["categories"] = list(self.taxonomy.categorize(memory.text))
        self.storage.update_memory(memory.user_id, memory.id, **fields)
        self.storage.record_event(memory.user_id, memory.id, "ENRICH", self.clock(), detail)
        for m in mentions:  # link_entities stores each under its canonical name and its own, lower-cased
            for alias in (m.key.lower(), m.name.lower()):
                aliases.add(alias, m.key)

    def _failed(self, job: Job, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if job.attempts >= MAX_ATTEMPTS:
            log.error("enrichment: giving up on job %d after %d attempts: %s", job.id, job.attempts, error)
            self.storage.fail_job(job.id, error, None)
            if job.memory_id is not None:
                self.storage.update_memory(job.user_id, job.memory_id, extraction_status="failed")
            return
        retry_at = self.clock() + BASE_DELAY * 2 ** (job.attempts - 1)
        self.storage.fail_job(job.id, error, retry_at)  # first: in an outage it fails too (_requeue_unsettled)
        log.warning("enrichment: job %d failed (attempt %d), retrying: %s", job.id, job.attempts, error)
