"""Threads adding distinct memories over HTTP back to back until stopped, each outcome recorded:
what backups and outages are tested under."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import httpx


@dataclass(frozen=True)
class Acknowledged:
    answered_at: float  # time.monotonic() when the 200 ADD came back
    user_id: str
    text: str
    memory_id: str


class WriteBurst:
    """One writer thread per entry of ``users``, each adding as that user (several may share one)."""

    def __init__(self, base_url: str, users: Sequence[str]) -> None:
        self.base_url = base_url
        self.acknowledged: list[Acknowledged] = []
        self.refused: list[tuple[str, httpx.Response]] = []  # (text, the answer that was not a 200 ADD)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._write, args=(n, user)) for n, user in enumerate(users)]

    def _write(self, writer: int, user: str) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as api:
            n = 0
            while not self._stop.is_set():
                n += 1
                text = f"Writer {writer} note {n}: the code word is w{writer}n{n}."
                response = api.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False})
                answered = time.monotonic()
                with self._lock:
                    if response.status_code == 200 and response.json()["event"] == "ADD":
                        self.acknowledged.append(Acknowledged(answered, user, text, response.json()["id"]))
                    else:
                        self.refused.append((text, response))

    def count(self) -> int:
        with self._lock:
            return len(self.acknowledged)

    def wait_for(self, total: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.count() < total:
            assert time.monotonic() < deadline, f"only {self.count()} writes acknowledged in {timeout:g} s"
            time.sleep(0.05)

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
