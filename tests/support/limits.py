"""Probes for the shared call limiter: a gauge of calls in flight, a slot holder, a queued
waiter, a counting rate limiter and polling waits."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.concurrency.workers import call_gate
from meclear_integrations.runtime.limiter import CallLimiter


class Gauge:
    """Counts callers inside a region and remembers the most at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    @contextmanager
    def inside(self) -> Iterator[None]:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            yield
        finally:
            with self._lock:
                self.now -= 1


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.002)


async def await_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.002)


class Holder:
    """A thread holding one slot of ``limiter`` until :meth:`release`."""

    def __init__(self, limiter: CallLimiter) -> None:
        self._go = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(limiter,), daemon=True)
        self._thread.start()
        self._held.wait(5)

    def _hold(self, limiter: CallLimiter) -> None:
        with limiter.slot():
            self._held.set()
            self._go.wait(120)  # until release(): a test's own bound, not the machine's speed

    @property
    def holding(self) -> bool:
        """Whether the slot is still held (until :meth:`release`)."""
        return self._thread.is_alive()

    def release(self) -> None:
        self._go.set()
        self._thread.join(5)


def queued_waiter(
    limiter: CallLimiter, budget: RunBudget
) -> tuple[threading.Thread, list[BaseException]]:
    """A thread inside ``budget``'s run, queued for a slot; what it raised goes to the list."""
    outcome: list[BaseException] = []

    def waiter() -> None:
        with call_gate(budget):
            try:
                with limiter.slot():
                    pass
            except BaseException as exc:
                outcome.append(exc)

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    wait_until(lambda: limiter.stats().waiting == 1)
    return thread, outcome


class CountingRateLimiter:
    """LangChain's rate-limiter interface: one token every ``interval`` seconds.

    ``requests_per_second``, when given, is advertised as LangChain's
    ``InMemoryRateLimiter`` does (the limiter then asks for tokens at that pace, not every
    ``PACE_SECONDS``).
    """

    def __init__(self, interval: float, requests_per_second: float | None = None) -> None:
        self.interval = interval
        self.requests_per_second = requests_per_second
        self.granted = 0
        self.starts: list[float] = []
        self._next = 0.0
        self._lock = threading.Lock()

    def _take(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return False
            self._next = now + self.interval
            self.granted += 1
            self.starts.append(now)
            return True

    def acquire(self, *, blocking: bool = True) -> bool:
        while not self._take():
            if not blocking:
                return False
            time.sleep(0.005)
        return True

    async def aacquire(self, *, blocking: bool = True) -> bool:
        while not self._take():
            if not blocking:
                return False
            await asyncio.sleep(0.005)
        return True
