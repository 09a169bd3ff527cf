"""Fading: a memory nobody writes, touches or recalls counts less in search as time passes.

A memory's weight is ``0.5 ** (idle / half_life)``, where ``idle`` is the time since it was last
*seen*: written, touched (re-confirmed by a later statement, which moves ``updated_at``) or recalled
(returned by a search). Search multiplies each candidate's fused score by its weight, so the stale
sink below the fresh, and leaves out those whose weight fell below ``hidden_below`` unless the
request sets ``include_faded``. Nothing is deleted, and browsing, lookups by id and the listing
never fade.

Off unless ``CORTADEL_FADE_HALF_LIFE_DAYS`` is set: then nothing is weighed, hidden or recorded,
so results are exactly those of a server without fading. Recalls are recorded only while fading
is on (a server that turns it on later counts each memory as seen when last written or touched).

Recording a recall is a write, so the search path never makes it: ``RecallLog`` collects the ids
searches returned and a background thread writes them in one small statement per user every
``FLUSH_SECONDS`` (and at shutdown).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cortadel_server.config import Settings
from cortadel_server.storage.base import Storage

log = logging.getLogger("cortadel")

DAY = 86400.0
#: how often noted recalls are written
FLUSH_SECONDS = 1.0


@dataclass(frozen=True)
class Fading:
    half_life_days: float
    hidden_below: float
    #: the server's clock (Settings.now)
    clock: Callable[[], float]

    @classmethod
    def from_settings(cls, settings: Settings) -> Fading | None:
        """The fading the settings ask for, or None when it is off."""
        if settings.fade_half_life_days <= 0:
            return None
        return cls(settings.fade_half_life_days, settings.fade_hidden_below, settings.now)

    def weight(self, idle_seconds: float) -> float:
        """How much a memory idle this long counts: 1 when just seen, halved every half-life."""
        return float(0.5 ** (max(0.0, idle_seconds) / (self.half_life_days * DAY)))

    def weigh(
        self, storage: Storage, user_id: str, fused: Sequence[tuple[str, float]], *, include_faded: bool
    ) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """The fused candidates with their scores times their weight, best first, the faded ones
        left out unless ``include_faded``; and each kept candidate's weight."""
        now = self.clock()
        seen = storage.last_seen(user_id, [memory_id for memory_id, _ in fused])
        weights: dict[str, float] = {}
        kept: list[tuple[str, float]] = []
        for memory_id, score in fused:
            weight = self.weight(now - seen.get(memory_id, now))
            if weight < self.hidden_below and not include_faded:
                continue
            weights[memory_id] = weight
            kept.append((memory_id, score * weight))
        kept.sort(key=lambda item: -item[1])  # stable: equal scores keep the fused order
        return kept, weights


class RecallLog:
    """The memories searches returned, written to storage in the background as recalls."""

    def __init__(self, storage: Storage, clock: Callable[[], float], interval: float = FLUSH_SECONDS) -> None:
        self.storage = storage
        self.clock = clock
        self.interval = interval
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, float]] = defaultdict(dict)  # user → memory id → recalled at
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def note(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        at = self.clock()
        with self._lock:
            self._pending[user_id].update(dict.fromkeys(memory_ids, at))
            if self._thread is None:  # started on first use: the MCP stdio server has no startup hook for it
                self._thread = threading.Thread(target=self._run, name="cortadel-recalls", daemon=True)
                self._thread.start()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, defaultdict(dict)
        for user_id, recalled in pending.items():
            by_time: dict[float, list[str]] = defaultdict(list)
            for memory_id, at in recalled.items():
                by_time[at].append(memory_id)
            for at, memory_ids in by_time.items():
                self.storage.record_recalls(user_id, memory_ids, at)

    def close(self) -> None:
        """Stop the thread and write what is left."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=10)
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception:  # a lost recall only makes a memory look older; never stop the thread for it
                log.exception("fading: writing recalls failed")
