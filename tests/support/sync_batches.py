"""Probes for the sync path's batches: calls in flight, their peak and threads."""

from __future__ import annotations

import threading
import time

from meclear_integrations.core.game import EvaluationRequest
from tests.support.games import make_memories


class InFlight:
    """Counts calls in flight, their peak, the threads they ran on and the rounds: the
    stretches with a call in flight (calls that overlap share one round)."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.rounds = 0
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def enter(self) -> None:
        """A call starts."""
        with self.lock:
            self.rounds += self.now == 0
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.threads.add(threading.get_ident())

    def leave(self) -> None:
        """A call ends."""
        with self.lock:
            self.now -= 1

    def __call__(self, delay: float) -> None:
        self.enter()
        if delay:
            time.sleep(delay)
        self.leave()


def single_memory_requests(n: int) -> list[EvaluationRequest]:
    """``n`` single-memory requests; the trial numbers them."""
    memories = tuple(make_memories(n))
    return [EvaluationRequest(coalition=1 << i, memories=(memories[i],), trial=i) for i in range(n)]
