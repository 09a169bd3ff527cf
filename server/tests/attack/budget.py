"""How hard the attack suite pushes: a bounded run inside `make test`, a long one in `make test-attack`.

`pytest --attack-long` (set by `make test-attack`) selects LONG; tests read ``current()`` at import
time, because schemathesis fixes its example count when a test module is collected.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    name: str
    schema_examples: int  # Hypothesis examples per REST operation, per server (open and with auth)
    mcp_examples: int  # Hypothesis examples per MCP tool
    isolation_ops: int  # operations in one tenant-isolation run
    crash_rounds: int  # kill -9 rounds during concurrent ingest
    crash_writers: int  # writer threads per round
    soak_requests: int  # 0: no soak
    seconds: float  # wall-clock cap of each loop that is not a Hypothesis run


BOUNDED = Budget("bounded", schema_examples=40, mcp_examples=25, isolation_ops=300, crash_rounds=1,
                 crash_writers=4, soak_requests=0, seconds=60)
LONG = Budget("long", schema_examples=1000, mcp_examples=400, isolation_ops=10_000, crash_rounds=3,
              crash_writers=6, soak_requests=30_000, seconds=1200)

_selected: list[Budget] = [BOUNDED]


def select(budget: Budget) -> None:
    _selected[0] = budget


def current() -> Budget:
    return _selected[0]
