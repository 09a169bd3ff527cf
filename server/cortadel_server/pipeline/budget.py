"""What one write request may still spend, and whether its client is still waiting for it.

    budget = WriteBudget()  # one per request, made by the front door (the writer makes one otherwise)
    budget.start(60.0, llm_seconds=30.0)   # by the writer when it takes the request up, not while it queues
    budget.cancel()         # the client went away (called from the event loop)
    budget.check()          # raises RequestCancelled, or BudgetExceeded once the time is spent
    budget.llm_deadline     # the time.monotonic() instant every LLM call of the request must end by
    budget.llm_spent        # no time left for another LLM call: keep the rule decision

The pipeline looks at it between units of work — per sentence while extracting, before each LLM
call, before each fact is stored — so a fact is either stored whole or not at all.
"""

from __future__ import annotations

import math
import threading
import time

from cortadel_server.errors import BudgetExceeded, RequestCancelled

__all__ = ["WriteBudget"]


class WriteBudget:
    def __init__(self) -> None:
        self.seconds = math.inf
        self._deadline = self._llm_deadline = math.inf
        self._cancelled = threading.Event()

    def start(self, seconds: float, *, llm_seconds: float = math.inf) -> WriteBudget:
        """`seconds` for all the request's work, `llm_seconds` of it at most for its LLM calls together."""
        started = time.monotonic()
        self.seconds = seconds
        self._deadline = started + seconds
        self._llm_deadline = started + min(seconds, llm_seconds)
        return self

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def llm_deadline(self) -> float:
        return self._llm_deadline

    @property
    def llm_spent(self) -> bool:
        return time.monotonic() >= self._llm_deadline

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def spent(self) -> bool:
        return time.monotonic() >= self._deadline

    def check(self) -> None:
        if self.cancelled:
            raise RequestCancelled("the client went away")
        if self.spent:
            raise BudgetExceeded(
                f"Extracting facts from this input takes longer than the {self.seconds:g} s one request may "
                "spend (CORTADEL_WRITE_BUDGET); send it in smaller parts.",
            )
