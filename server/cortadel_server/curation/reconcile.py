"""Reconciliation runs: durable background jobs that find duplicate entities and stale facts.

    reconciler = Reconciler(storage, embedder, settings, judge=None, wake=enricher.wake)
    enricher.handlers[RECONCILE] = reconciler.run_job   # the one job queue runs it
    run = reconciler.start("alice", limit=500, types=["entities", "facts"])
    reconciler.status("alice")                           # the latest run, or None (idle)
    reconciler.approve("alice", suggestion_id)           # apply; undo() reverses it

A run is a row (``reconcile_runs``) and a ``reconcile`` job in the durable job table. One run at
a time per user: starting while one is queued or running returns that one. Each finding is stored
as a suggestion and, when its confidence reaches CORTADEL_RECONCILE_AUTO_APPROVE, applied in the
same transaction; a suggestion's key keeps a later run from suggesting it again. A server killed
mid-run leaves every suggestion applied whole or not at all; at start the job is queued again
and the run starts over, finding only what it has not stored yet. So does a run the database
failed under (a StorageError): its job is retried, and only after its last attempt is the run
reported failed. A run whose job gave up before it could say so is reported failed by the next
start, which queues a new one.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence

from cortadel_server.config import Settings
from cortadel_server.curation import suggestions as book
from cortadel_server.curation.reconcile_entities import EntityProfile, find_entity_duplicates, find_role_aliases
from cortadel_server.curation.reconcile_facts import find_stale_facts
from cortadel_server.curation.reconcile_judge import ReconcileJudge
from cortadel_server.curation.suggestions import Finding
from cortadel_server.errors import Conflict, NotFound, StorageError, ValidationFailed
from cortadel_server.pipeline.enrich import MAX_ATTEMPTS
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.storage.base import Job, MemoryFilters, ReconcileRun, Storage, Suggestion

log = logging.getLogger("cortadel.curation")

#: the job kind in the durable job table
RECONCILE = "reconcile"
ENTITIES = "entities"
FACTS = "facts"
TYPES = (ENTITIES, FACTS)
#: run states; "idle" is what a user without runs reports
QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED = "queued", "running", "completed", "failed", "cancelled"
IDLE = "idle"
#: facts and entities one run looks at by default (the most recent / most mentioned)
DEFAULT_LIMIT = 500
MAX_LIMIT = 5000
#: findings below this confidence are not worth anyone's review
MIN_CONFIDENCE = 0.5
#: how often the scheduler looks for users due a run
SCHEDULE_POLL = 60.0
#: users the scheduler considers per pass (the most recently active)
SCHEDULE_USERS = 1000


class Reconciler:
    def __init__(self, storage: Storage, embedder: Embedder, settings: Settings, judge: ReconcileJudge | None,
                 wake: Callable[[], None], *, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.embedder = embedder
        self.auto_approve = settings.reconcile_auto_approve
        self.every = settings.reconcile_every
        self.judge = judge
        self.wake = wake
        self.clock = clock
        self._stop = threading.Event()
        self._scheduler: threading.Thread | None = None

    # -- runs ------------------------------------------------------------------------------------
    def start(self, user_id: str, *, limit: int | None = None, types: Sequence[str] | None = None) -> ReconcileRun:
        """Queue a run for the user, or return the one already queued or running."""
        chosen = list(dict.fromkeys(types or TYPES))
        unknown = [t for t in chosen if t not in TYPES]
        if unknown:
            raise ValidationFailed({"types": [f"Unknown type {unknown[0]!r}: expected any of {', '.join(TYPES)}"]})
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise ValidationFailed({"limit": [f"Must be between 1 and {MAX_LIMIT}"]})
        with self.storage.write(user_id):
            active = self.storage.reconcile_runs(user_id, active=True)
            if active and self._queued(active[0]):
                return active[0]
            if active:  # its job gave up (the database failed under its every attempt): it never ends by itself
                stale = active[0]
                stale.status, stale.finished_at = FAILED, self.clock()
                stale.error = "its job ended without finishing it (the database failed under every attempt)"
                self.storage.save_reconcile_run(stale)
                log.warning("reconcile: run %s had no job left; reported failed, a new run queued", stale.id)
            run = ReconcileRun(str(uuid.uuid4()), user_id, QUEUED, chosen, limit or DEFAULT_LIMIT, self.clock())
            self.storage.save_reconcile_run(run)
            self.storage.enqueue_job(RECONCILE, user_id, None, {"run_id": run.id})
        self.wake()
        return run

    def _queued(self, run: ReconcileRun) -> bool:
        """Whether the run's job is still queued or running (a running job is dumped as queued)."""
        return any(job.kind == RECONCILE and job.payload.get("run_id") == run.id and job.status == "queued"
                   for job in self.storage.dump_jobs(run.user_id))

    def status(self, user_id: str, run_id: str | None = None) -> ReconcileRun | None:
        """The run asked for (NotFound when it is not the user's), else the latest, else None."""
        runs = self.storage.reconcile_runs(user_id, run_id=run_id)
        if run_id is not None and not runs:
            raise NotFound(f"Reconciliation run {run_id} not found")
        return runs[0] if runs else None

    def cancel(self, user_id: str, run_id: str) -> ReconcileRun:
        """Stop a queued or running run after the suggestion it is at; what it applied stays."""
        with self.storage.write(user_id):
            run = self.status(user_id, run_id)
            assert run is not None
            if run.status not in (QUEUED, RUNNING):
                raise Conflict(f"Run {run_id} is {run.status}: only a queued or running run can be cancelled")
            run.status, run.finished_at = CANCELLED, self.clock()
            self.storage.save_reconcile_run(run)
        return run

    def run_job(self, job: Job) -> None:
        """The job handler: do the run, recording how it ended on the run. Raises only when the
        database failed under it and the job has attempts left: the job queue runs it again."""
        run = next(iter(self.storage.reconcile_runs(job.user_id, run_id=str(job.payload.get("run_id")))), None)
        if run is None or run.status not in (QUEUED, RUNNING):
            return  # erased with its user, cancelled while queued, or already finished
        if run.status == RUNNING:  # its counts stay: they were saved with each suggestion they count
            log.info("reconcile: run %s was interrupted; starting it over", run.id)
        run.status, run.started_at = RUNNING, self.clock()
        self.storage.save_reconcile_run(run)
        try:
            self._run(run)
        except Exception as exc:  # a run that failed is reported on the run, not retried...
            if isinstance(exc, StorageError) and job.attempts < MAX_ATTEMPTS:
                raise  # ...unless the database failed under it: reported, it stayed "failed" for an outage
            log.exception("reconcile: run %s failed", run.id)
            run.status, run.error = FAILED, f"{type(exc).__name__}: {exc}"
        else:
            if run.status == RUNNING:
                run.status = COMPLETED
        run.finished_at = self.clock()
        with self.storage.write(run.user_id):
            if self._current_status(run) == CANCELLED:
                run.status = CANCELLED
            self.storage.save_reconcile_run(run)

    def _current_status(self, run: ReconcileRun) -> str | None:
        stored = self.storage.reconcile_runs(run.user_id, run_id=run.id)
        return stored[0].status if stored else None

    def _run(self, run: ReconcileRun) -> None:
        for finding, context in self.findings(run.user_id, run.types, run.limit):
            if self.judge is not None and MIN_CONFIDENCE <= finding.confidence < self.auto_approve:
                finding = self.judge.judge(finding, context)
            if self._current_status(run) == CANCELLED:  # checked after the judge: its call may be long
                run.status = CANCELLED
                return
            if finding.confidence >= MIN_CONFIDENCE:
                self.record(run, finding)

    def record(self, run: ReconcileRun, finding: Finding) -> Suggestion | None:
        """Store a finding as a suggestion, applied at once when sure enough, and count it on the
        run, all in one transaction; None when it was suggested before or no longer applies."""
        with self.storage.write(run.user_id):
            if self.storage.suggestions(run.user_id, keys=[finding.key], limit=1)[1]:
                return None
            suggestion = book.suggestion_of(run.user_id, finding, run.id, self.clock())
            if finding.confidence >= self.auto_approve:
                try:
                    suggestion = book.apply(self.storage, suggestion, book.BY_AUTO, self.clock())
                except Conflict:
                    return None  # an earlier suggestion of this run changed what it acts on
            else:
                self.storage.save_suggestion(suggestion)
            run.suggested += 1
            run.auto_approved += suggestion.status == book.APPROVED
            self.storage.save_reconcile_run(run)
            return suggestion

    def findings(self, user_id: str, types: Sequence[str], limit: int) -> list[tuple[Finding, dict[str, list[str]]]]:
        """What a run would suggest now, each with the texts a judge reads (not stored)."""
        records, _ = self.storage.list_memories(user_id, MemoryFilters(), offset=0, limit=limit)
        texts = {r.id: r.text for r in records}
        found: list[tuple[Finding, dict[str, list[str]]]] = []
        if ENTITIES in types:
            entities = sorted((e for e in self.storage.dump_entities(user_id) if e.aliases),
                              key=lambda e: -len(e.memory_ids))[:limit]
            linked = self.storage.get_memories(user_id, sorted({m for e in entities for m in e.memory_ids} - set(texts)))
            texts.update({k: v.text for k, v in linked.items() if v.is_current})
            profiles = [EntityProfile(e.canonical, e.kind, e.aliases, e.memory_ids,
                                      tuple(texts[m] for m in e.memory_ids if m in texts)) for e in entities]
            by_name = {p.canonical: p for p in profiles}
            for f in find_role_aliases(sorted(texts.items()), profiles):
                found.append((f, {f.subject["target"]: list(by_name[f.subject["target"]].facts)}))
            for f in find_entity_duplicates(profiles, self.embedder.embed):
                found.append((f, {name: list(by_name[name].facts) for name in (f.subject["source"], f.subject["target"])}))
        if FACTS in types:
            for f in find_stale_facts(records, self.embedder.embed):
                found.append((f, {"a": [texts[f.subject["stale"]]], "b": [texts[f.subject["by"]]]}))
        return found

    # -- suggestions -----------------------------------------------------------------------------
    def suggestions(self, user_id: str, status: str | None, offset: int, limit: int) -> tuple[list[Suggestion], int]:
        if status is not None and status not in book.STATUSES:
            raise ValidationFailed({"status": [f"Must be one of {', '.join(book.STATUSES)}"]})
        return self.storage.suggestions(user_id, status=status, offset=offset, limit=limit)

    def _one(self, user_id: str, suggestion_id: str) -> Suggestion:
        found, _ = self.storage.suggestions(user_id, ids=[suggestion_id], limit=1)
        if not found:
            raise NotFound(f"Suggestion {suggestion_id} not found")
        return found[0]

    def approve(self, user_id: str, suggestion_id: str) -> Suggestion:
        with self.storage.write(user_id):
            return book.apply(self.storage, self._one(user_id, suggestion_id), book.BY_HAND, self.clock())

    def reject(self, user_id: str, suggestion_id: str) -> Suggestion:
        with self.storage.write(user_id):
            return book.reject(self.storage, self._one(user_id, suggestion_id), self.clock())

    def undo(self, user_id: str, suggestion_id: str) -> Suggestion:
        with self.storage.write(user_id):
            return book.undo(self.storage, self._one(user_id, suggestion_id), self.clock())

    def merge_by_hand(self, user_id: str, source: str, target: str) -> Suggestion:
        """Merge two entities a person chose: recorded as a suggestion approved by hand, so it is
        listed with the others and undone the same way."""
        finding = Finding(book.MERGE_ENTITIES, {"source": source, "target": target}, 1.0, [{"rule": "merged by hand"}])
        with self.storage.write(user_id):
            suggestion = book.suggestion_of(user_id, finding, None, self.clock())
            previous, _ = self.storage.suggestions(user_id, keys=[finding.key], limit=1)
            if previous:  # suggested (or merged and undone) before: that record is reused, decided by hand now
                if previous[0].status == book.APPROVED:
                    merged = previous[0].subject
                    raise Conflict(f"{merged['source']!r} is already merged into {merged['target']!r}")
                suggestion = dataclasses.replace(previous[0], status=book.PENDING, confidence=1.0, subject=finding.subject,
                                                 evidence=[*previous[0].evidence, *finding.evidence])
            return book.apply(self.storage, suggestion, book.BY_HAND, self.clock())

    # -- the schedule ----------------------------------------------------------------------------
    def start_schedule(self) -> None:
        """With CORTADEL_RECONCILE_EVERY set: every so often, a run for each user who wrote since their last."""
        if self.every <= 0:
            return
        self._stop.clear()
        self._scheduler = threading.Thread(target=self._schedule_loop, name="cortadel-reconcile-schedule", daemon=True)
        self._scheduler.start()

    def stop(self) -> None:
        self._stop.set()

    def _schedule_loop(self) -> None:
        while not self._stop.wait(min(SCHEDULE_POLL, self.every)):
            try:
                self.schedule_due()
            except Exception:  # the scheduler must outlive any database hiccup
                log.exception("reconcile: scheduling failed")

    def schedule_due(self) -> list[str]:
        """Start a run for each user due one; returns their ids."""
        due = []
        now = self.clock()
        for user in self.storage.user_summaries(SCHEDULE_USERS):
            last = self.status(user.user_id)
            if last is None or (last.created_at + self.every <= now and user.last_activity > last.created_at):
                self.start(user.user_id)
                due.append(user.user_id)
        return due
