"""Which processes serving one SQLite file are alive: for the job queue and the once-only work.

Several processes may serve one file (``cortadel serve --workers N``, or servers started side by
side). Each holds a POSIX record lock (``fcntl``) on one byte of ``<database>-claims``, at an
offset of its own picked at random; each of its open storages names the jobs it claims
``<offset>.<pid>.<start ns>.<n>``.
The kernel drops the lock the moment the process ends, however it ends (SIGKILL included), so a
job whose claimer's byte nobody holds was left by a process that is gone. Chosen over a pid and
its start time read from /proc: it works where there is no /proc (macOS), across the pid
namespaces of containers that share the file, and no reused pid can pass for a dead claimer.

Within one process the byte cannot tell storages apart: a storage of the file that closed is gone
as well (so a test may play a dead process by closing one). A few low offsets are duties
instead: the process that holds one does that work for the file (``holds_duty``), and when it
ends the next process to start takes the duty.

POSIX drops *all* of a process's locks on a file when it closes *any* descriptor of it, so each
process opens the claims file once (``claimer_for``) and closes it when its last storage of the
file closes.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
from pathlib import Path

__all__ = ["BACKGROUND_DUTY", "Claimer", "claimer_for"]

#: the reconcile schedule and the repair of stale embeddings: one process of the file's does them
BACKGROUND_DUTY = "background"
_DUTY_OFFSETS = {BACKGROUND_DUTY: 0}
#: processes pick their byte at or above this (below are the duties), below ``_LAST_SLOT``
_FIRST_SLOT = 1024
_LAST_SLOT = 2**31


class _ProcessClaims:
    """This process's hold on one database's claims file: its byte, the duties it holds and the
    names of its storages that are open (``Claimer``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._lock = threading.Lock()  # a liveness probe locks and unlocks another byte: one at a time
        self._duties: set[str] = set()
        #: the names of this process's open storages of the file (their byte cannot tell them apart)
        self.open_names: set[str] = set()
        while True:
            slot = random.randrange(_FIRST_SLOT, _LAST_SLOT)
            if self._try_lock(slot):
                break
        self.slot = slot
        #: unique even where a later process gets the same byte
        self.prefix = f"{slot}.{os.getpid()}.{time.time_ns()}."
        self._opened = 0

    def _try_lock(self, offset: int) -> bool:
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError:  # EAGAIN or EACCES: another process holds it
            return False
        return True

    def open_name(self) -> str:
        self._opened += 1
        name = f"{self.prefix}{self._opened}"
        self.open_names.add(name)
        return name

    def alive(self, claimer: str | None) -> bool:
        if claimer is not None and claimer.startswith(self.prefix):
            return claimer in self.open_names
        head = (claimer or "").partition(".")[0]
        if not head.isdigit() or int(head) == self.slot:
            # No claimer recorded (a server from before claimers were), or this process holds the
            # byte now: whoever had it before is gone.
            return False
        slot = int(head)
        with self._lock:
            if not self._try_lock(slot):
                return True
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)
            return False

    def holds_duty(self, duty: str) -> bool:
        with self._lock:
            if duty not in self._duties and self._try_lock(_DUTY_OFFSETS[duty]):
                self._duties.add(duty)
            return duty in self._duties

    def close(self) -> None:
        os.close(self._fd)  # drops every lock: the jobs still claimed become another process's


class Claimer:
    """One open storage's name on the jobs it claims, and how it tells live claimers from gone ones."""

    def __init__(self, claims: _ProcessClaims) -> None:
        self._claims = claims
        #: what the jobs this storage claims carry (``jobs.claimed_by``)
        self.name = claims.open_name()

    def alive(self, claimer: str | None) -> bool:
        """Whether the storage that claimed a job as ``claimer`` is open, in this process or another."""
        return self._claims.alive(claimer)

    def holds_duty(self, duty: str) -> bool:
        """Take ``duty`` for this process if no other process holds it; whether this process holds it."""
        return self._claims.holds_duty(duty)

    def close(self) -> None:
        with _open_lock:
            if self.name not in self._claims.open_names:
                return  # closed before
            self._claims.open_names.remove(self.name)
            if not self._claims.open_names:
                del _open[self._claims.path]
                self._claims.close()


_open: dict[Path, _ProcessClaims] = {}
_open_lock = threading.Lock()


def claimer_for(database: Path) -> Claimer:
    """A claimer for a storage of ``database`` in this process; ``Claimer.close`` when the storage closes."""
    path = Path(str(database.resolve()) + "-claims")
    with _open_lock:
        claims = _open.get(path)
        if claims is None:
            claims = _open[path] = _ProcessClaims(path)
        return Claimer(claims)
