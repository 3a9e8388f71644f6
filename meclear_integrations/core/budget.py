"""The per-query budget: evaluator calls (retries included) and wall time.

One :class:`RunBudget` per engine run, shared by every worker thread or task of that run
(thread-safe). Every evaluator attempt first calls :meth:`RunBudget.take`; a batch first
checks :meth:`RunBudget.ensure` so that no batch is started that cannot fit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .errors import BudgetExceededError

__all__ = ["Clock", "RunBudget"]

Clock = Callable[[], float]
"""A monotonic clock in seconds (``time.monotonic`` by default; injectable in tests)."""


class RunBudget:
    """Counts evaluator attempts against ``max_calls`` and time against ``max_seconds``.

    Args:
        max_calls: the most evaluator attempts, retries included (None: no cap).
        max_seconds: the wall-time cap in seconds (None: no cap).
        clock: the monotonic clock (inject one so tests never wait).
    """

    def __init__(
        self,
        *,
        max_calls: int | None = None,
        max_seconds: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.max_calls = max_calls
        self.clock = clock
        self.started = clock()
        self.deadline = None if max_seconds is None else self.started + max_seconds
        self.calls = 0
        """Evaluator attempts started (first tries and retries)."""
        self.retries = 0
        """Attempts that were retries of a transient failure."""
        self._closed: str | None = None
        self._lock = threading.Lock()

    def remaining_seconds(self) -> float | None:
        """Seconds left before the deadline (None without a time cap; may be <= 0).

        Returns:
            Seconds, or None.
        """
        return None if self.deadline is None else self.deadline - self.clock()

    def calls_left(self) -> int | None:
        """Attempts left (None without a call cap).

        Returns:
            Attempts, or None.
        """
        return None if self.max_calls is None else max(0, self.max_calls - self.calls)

    def _check(self, needed: int) -> None:
        if self._closed is not None:
            raise BudgetExceededError(f"the run was stopped ({self._closed})", reason=self._closed)
        remaining = self.remaining_seconds()
        if remaining is not None and remaining <= 0:
            raise BudgetExceededError(
                f"max_wall_seconds exhausted after {self.clock() - self.started:.3f}s",
                reason="time_budget",
            )
        left = self.calls_left()
        if left is not None and left < needed:
            raise BudgetExceededError(
                f"max_evaluator_calls={self.max_calls}: {self.calls} used, {needed} more needed",
                reason="call_budget",
            )

    def ensure(self, needed: int) -> None:
        """Raise ``BudgetExceededError`` unless ``needed`` more attempts fit now.

        Args:
            needed: attempts about to be started.

        Raises:
            BudgetExceededError: they do not fit in what is left.
        """
        with self._lock:
            self._check(needed)

    def take(self, *, retry: bool = False) -> None:
        """Account for one attempt about to start; raises when the budget is spent.

        Args:
            retry: the attempt is a retry (counted as such).

        Raises:
            BudgetExceededError: the budget is spent or the run was stopped.
        """
        with self._lock:
            self._check(1)
            self.calls += 1
            if retry:
                self.retries += 1

    def check_open(self) -> None:
        """Raise when the run was stopped or its deadline passed.

        Raise ``BudgetExceededError`` when the run was stopped or its deadline passed
        (the gate of every model call inside an evaluator call; takes no attempt).
        """
        with self._lock:
            self._check(0)

    def exhausted(self) -> bool:
        """No further attempt may start.

        Returns:
            True when the budget is spent or the run was stopped.
        """
        try:
            self.ensure(1)
        except BudgetExceededError:
            return True
        return False

    def close(self, reason: str) -> None:
        """Refuse every further attempt (abandoned workers stop at their next attempt).

        Args:
            reason: why (``"time_budget"``, ``"cancelled"``), named in the errors that follow.
        """
        with self._lock:
            if self._closed is None:
                self._closed = reason
