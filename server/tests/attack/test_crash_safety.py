"""kill -9 during concurrent ingest: every acknowledged write survives, every acknowledged delete stays.

Writer threads add memories (and delete some of their own) through REST while the server is killed
with SIGKILL at a random moment; the server restarts on the same SQLite file and every write that got
a 200 is read back with its exact text, every delete that got a 200 is still a 404. Twenty identical
adds racing each other store one memory.
"""

from __future__ import annotations

import random
import signal
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from attack import budget
from cortadel_server.testing import ServerProcess

VOCABULARY = ["harbour", "violin", "cactus", "meteor", "lantern", "quartz", "falcon", "tundra", "orchid", "saffron", "glacier", "mosaic", "compass", "walnut", "beacon", "cobalt", "ember", "fjord", "juniper", "kettle"]


@dataclass
class Ledger:
    """What the server acknowledged to one writer."""

    written: dict[str, str] = field(default_factory=dict)  # id -> exact text sent
    deleted: set[str] = field(default_factory=set)
    attempted_deletes: set[str] = field(default_factory=set)


def _writer(base_url: str, user: str, rng: random.Random, ledger: Ledger, stop: threading.Event) -> None:
    with httpx.Client(base_url=base_url, timeout=10) as http:
        while not stop.is_set():
            try:
                if ledger.written and rng.random() < 0.2:
                    victim = rng.choice(sorted(set(ledger.written) - ledger.attempted_deletes) or [""])
                    if victim:
                        ledger.attempted_deletes.add(victim)
                        response = http.request("DELETE", "/api/v1/memories",
                                                json={"user_id": user, "memory_ids": [victim]})
                        if response.status_code == 200:
                            ledger.deleted.add(victim)
                    continue
                text = " ".join(rng.sample(VOCABULARY, 6)) + f" {uuid.uuid4().hex}."
                response = http.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False})
                if response.status_code == 200 and response.json()["event"] == "ADD":
                    ledger.written[response.json()["id"]] = text
            except httpx.TransportError:
                return  # the server is gone; what it acknowledged before is what counts


def _crash_round(server: ServerProcess, number: int, tally: Counter[str]) -> None:
    user = f"crash-{number}-{uuid.uuid4().hex[:6]}"
    rng = random.Random(number)
    ledgers = [Ledger() for _ in range(budget.current().crash_writers)]
    stop = threading.Event()
    threads = [threading.Thread(target=_writer, args=(server.base_url, user, random.Random(rng.random()), ledger, stop))
               for ledger in ledgers]
    for thread in threads:
        thread.start()
    time.sleep(rng.uniform(1.5, 3.0))
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=10)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    server.start()

    written = {k: v for ledger in ledgers for k, v in ledger.written.items() if k not in ledger.attempted_deletes}
    deleted = set().union(*(ledger.deleted for ledger in ledgers))
    tally["crash: acknowledged writes checked"] += len(written)
    tally["crash: acknowledged deletes checked"] += len(deleted)
    assert len(written) >= 20, "too few writes before the kill to test anything"
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        for memory_id, text in written.items():
            response = http.get(f"/api/v1/memories/{memory_id}", params={"user_id": user})
            assert response.status_code == 200, (memory_id, response.text)
            assert response.json()["text"] == text
        for memory_id in deleted:
            response = http.get(f"/api/v1/memories/{memory_id}", params={"user_id": user})
            assert response.status_code == 404, (memory_id, response.text)


def test_acknowledged_writes_and_deletes_survive_kill_9(tmp_path: Path, tally: Counter[str]) -> None:
    server = ServerProcess(tmp_path / "cortadel.db")
    server.start()
    try:
        for number in range(budget.current().crash_rounds):
            _crash_round(server, number, tally)
    finally:
        server.stop()


def test_twenty_identical_concurrent_adds_store_one_memory(open_target: ServerProcess) -> None:
    user = f"dup-{uuid.uuid4().hex[:8]}"
    text = "Grandma's sourdough starter lives in the blue jar on the top shelf."
    start = threading.Barrier(20)
    replies: list[httpx.Response] = []

    def add() -> None:
        with httpx.Client(base_url=open_target.base_url, timeout=60) as http:
            start.wait()
            replies.append(http.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False}))

    threads = [threading.Thread(target=add) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status_code for r in replies] == [200] * 20
    assert sorted(r.json()["event"] for r in replies) == ["ADD"] + ["SKIP_DUPLICATE"] * 19
    assert len({r.json()["id"] for r in replies}) == 1
    listed = httpx.get(f"{open_target.base_url}/api/v1/memories", params={"user_id": user}).json()
    assert (listed["total"], [i["content"] for i in listed["items"]]) == (1, [text])
