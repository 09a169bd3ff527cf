"""The metrics of a server of several worker processes (``cortadel serve --workers N``), as one.

Each worker keeps its counters and histograms in files of one directory, the supervisor's
(prometheus_client's multiprocess mode: an mmap file per process and metric type), and a scrape
on any worker sums every file of it: those of the live workers and of the dead ones, so a count
never goes backwards when a worker is replaced. What only a live process knows is read at scrape
time from /proc: ``process_*`` once per live worker, labelled with its ``pid``. The System page's
recent errors are one small file a worker (metrics.py ``ErrorLog``).

    share_across_processes(directory)   # in a worker, before any Metrics is made
    shared_directory()                  # that directory; None in a server of one process

A server of one process keeps each ``Metrics``' own registry, in memory (a test process may run
several servers).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import ProcessCollector, values
from prometheus_client.core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

__all__ = ["SharedFilesCollector", "WorkerProcessCollector", "live_workers", "share_across_processes", "shared_directory"]

_directory: Path | None = None


def share_across_processes(directory: Path) -> None:
    """Make this process one worker of the server whose metrics live in ``directory``.

    prometheus_client picks where a metric keeps its value when the metric is made (its
    ``values.ValueClass``, chosen at import from ``PROMETHEUS_MULTIPROC_DIR``): both are set here,
    so what imported it before is no matter; it reads the variable again to name its files.
    """
    global _directory
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]  # the library's own, untyped
    _directory = directory


def shared_directory() -> Path | None:
    return _directory


def live_workers(directory: Path) -> list[int]:
    """The pids of the live workers that wrote to ``directory``: those with a file there that are
    still children of this worker's supervisor (a dead worker's pid, reused, is not)."""
    pids = {int(pid) for f in directory.glob("*_*.db") if (pid := f.stem.rpartition("_")[2]).isdigit()}
    supervisor = os.getppid()
    return sorted(pid for pid in pids if _parent_of(pid) == supervisor)


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:  # gone
        return None
    return int(stat.rpartition(b")")[2].split()[1])  # after the command name, which may hold spaces: state, ppid


class SharedFilesCollector(MultiProcessCollector):
    """Every worker's counts, from the files of ``directory`` (prometheus_client's collector),
    leaving out a file a starting worker has made but not sized yet: it holds no count, and the
    library's reader fails on an empty file, which made a scrape during a worker's start a 500."""

    def __init__(self, registry: CollectorRegistry, directory: Path) -> None:
        super().__init__(registry, path=str(directory))  # type: ignore[no-untyped-call]  # the library's, untyped
        self.directory = directory

    def collect(self) -> Iterable[Metric]:
        files = []
        for path in self.directory.glob("*.db"):
            try:
                if path.stat().st_size:
                    files.append(str(path))
            except FileNotFoundError:  # a live gauge's file, removed with its process
                continue
        return self.merge(files, accumulate=True)  # type: ignore[no-untyped-call,no-any-return]


class WorkerProcessCollector(Collector):
    """``process_*`` (CPU seconds, memory, file descriptors, start time) of each live worker,
    labelled ``pid``: each is that process's own, so a replaced worker's CPU seconds are a series
    that ends, not a sum that drops."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for pid in live_workers(self.directory):
            for family in _process(pid).collect():
                merged = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
        yield from families.values()


def _process(pid: int) -> ProcessCollector:
    return ProcessCollector(pid=lambda: pid, registry=None)
