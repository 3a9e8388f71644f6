"""The shared call limiter: the bound holds across threads and event loops, waiters are
served first come first served, a cancelled or timed-out waiter never leaks a slot, a wait
ends at the engine run's deadline (or when the run is stopped), and a rate limiter paces
one token per model call."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.errors import BudgetExceededError, ConfigurationError
from meclear_integrations.core.workers import call_gate
from meclear_integrations.runtime.limiter import (
    DEADLINE_GRACE_SECONDS,
    CallLimiter,
    resolve_limiter,
)


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
            self._go.wait(10)

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


def test_bound_holds_across_threads_and_an_event_loop() -> None:
    limiter = CallLimiter(2)
    gauge = Gauge()

    def sync_call() -> None:
        with limiter.slot(), gauge.inside():
            time.sleep(0.02)

    async def async_call() -> None:
        async with limiter.aslot():
            with gauge.inside():
                await asyncio.sleep(0.02)

    async def loop_side() -> None:
        await asyncio.gather(*(async_call() for _ in range(6)))

    threads = [threading.Thread(target=sync_call) for _ in range(6)]
    for t in threads:
        t.start()
    asyncio.run(loop_side())
    for t in threads:
        t.join(5)
    stats = limiter.stats()
    assert gauge.peak == 2 == stats.peak_in_flight
    assert stats.acquisitions == 12
    assert (stats.in_flight, stats.waiting) == (0, 0)
    assert stats.waited >= 1 and stats.wait_seconds > 0


def test_waiters_are_served_first_come_first_served() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    order: list[str] = []
    lock = threading.Lock()

    def thread_waiter(name: str) -> threading.Thread:
        def run() -> None:
            with limiter.slot(), lock:
                order.append(name)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever, daemon=True)
    loop_thread.start()

    async def loop_waiter(name: str) -> None:
        async with limiter.aslot():
            with lock:
                order.append(name)

    try:
        queued: list[object] = []
        for i, kind in enumerate(["thread", "loop", "thread", "loop", "thread"]):
            name = f"{kind}-{i}"
            if kind == "thread":
                queued.append(thread_waiter(name))
            else:
                queued.append(asyncio.run_coroutine_threadsafe(loop_waiter(name), loop))
            wait_until(lambda n=i + 1: limiter.stats().waiting == n)
        holder.release()
        for item in queued:
            if isinstance(item, threading.Thread):
                item.join(5)
            else:
                item.result(5)  # type: ignore[attr-defined]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        loop_thread.join(5)
        loop.close()
    assert order == ["thread-0", "loop-1", "thread-2", "loop-3", "thread-4"]
    assert limiter.stats().in_flight == 0


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)

    async def wait_for_slot() -> None:
        async with limiter.aslot():
            pytest.fail("the cancelled waiter got the slot")

    task = asyncio.create_task(wait_for_slot())
    await await_until(lambda: limiter.stats().waiting == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert limiter.stats().waiting == 0
    holder.release()
    stats = limiter.stats()
    assert (stats.in_flight, stats.gave_up) == (0, 1)
    async with limiter.aslot() as ticket:  # the slot came back to the pool
        assert not ticket.waited


async def test_a_waiter_cancelled_after_it_was_given_the_slot_passes_it_on() -> None:
    limiter = CallLimiter(1)
    go = asyncio.Event()

    async def hold() -> None:
        async with limiter.aslot():
            await go.wait()

    async def wait_for_slot() -> None:
        async with limiter.aslot():
            pytest.fail("the cancelled waiter ran its call")

    second_got_it = asyncio.Event()

    async def second() -> None:
        async with limiter.aslot():
            second_got_it.set()

    holder = asyncio.create_task(hold())
    await await_until(lambda: limiter.stats().in_flight == 1)
    first = asyncio.create_task(wait_for_slot())
    await await_until(lambda: limiter.stats().waiting == 1)
    later = asyncio.create_task(second())
    await await_until(lambda: limiter.stats().waiting == 2)
    # the holder runs first and hands its slot to ``first``, whose cancellation is already
    # scheduled: ``first`` must pass the slot on
    go.set()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(asyncio.gather(holder, later), 5)
    assert second_got_it.is_set()
    stats = limiter.stats()
    assert (stats.in_flight, stats.waiting, stats.gave_up) == (0, 0, 1)
    assert stats.acquisitions == 3  # holder, first (granted, then given up), second


def test_a_wait_ends_at_the_runs_deadline() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    budget = RunBudget(max_seconds=0.2)
    started = time.monotonic()
    with call_gate(budget), pytest.raises(BudgetExceededError) as caught, limiter.slot():
        pytest.fail("got a slot that was held")
    waited = time.monotonic() - started
    holder.release()
    assert caught.value.reason == "time_budget"
    assert 0.15 <= waited < 2.0
    stats = limiter.stats()
    assert (stats.in_flight, stats.waiting, stats.gave_up) == (0, 0, 1)


async def test_an_async_wait_ends_at_the_runs_deadline() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    with call_gate(RunBudget(max_seconds=0.2)), pytest.raises(BudgetExceededError) as caught:
        async with limiter.aslot():
            pytest.fail("got a slot that was held")
    holder.release()
    assert caught.value.reason == "time_budget"
    assert limiter.stats().in_flight == 0


def test_the_deadline_follows_the_runs_clock() -> None:
    """With an injected clock: the waiter waits while the run has time, and gives up once
    the run's clock is past the deadline (plus the grace that lets the engine stop the run
    first), whatever the wall clock says."""
    now = [0.0]
    budget = RunBudget(max_seconds=5.0, clock=lambda: now[0])
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    thread, outcome = queued_waiter(limiter, budget)
    time.sleep(0.3)  # real time passes; the run's clock does not
    assert not outcome and limiter.stats().waiting == 1
    now[0] = 5.0 + DEADLINE_GRACE_SECONDS
    thread.join(5)
    holder.release()
    assert isinstance(outcome[0], BudgetExceededError) and outcome[0].reason == "time_budget"
    assert limiter.stats().in_flight == 0


def test_a_stopped_run_stops_its_waiters() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    budget = RunBudget()  # no deadline
    thread, outcome = queued_waiter(limiter, budget)
    budget.close("cancelled")
    thread.join(5)
    holder.release()
    assert isinstance(outcome[0], BudgetExceededError) and outcome[0].reason == "cancelled"
    assert (limiter.stats().in_flight, limiter.stats().waiting) == (0, 0)


def test_a_nested_acquisition_takes_no_second_slot() -> None:
    limiter = CallLimiter(1)
    with limiter.slot(), limiter.slot() as inner:
        assert not inner.waited
        assert limiter.stats().in_flight == 1
    assert limiter.stats().acquisitions == 1


class CountingRateLimiter:
    """LangChain's rate-limiter interface: one token every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
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


@pytest.mark.parametrize("in_a_run", [False, True])
def test_a_rate_limiter_paces_one_token_per_call(in_a_run: bool) -> None:
    pacer = CountingRateLimiter(0.03)
    limiter = CallLimiter(4, rate_limiter=pacer)

    def call() -> None:
        budget = RunBudget(max_seconds=30.0) if in_a_run else None
        with call_gate(budget) if budget else _nothing(), limiter.slot():
            pass

    async def acall() -> None:
        async with limiter.aslot():
            await asyncio.sleep(0)

    threads = [threading.Thread(target=call) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)

    async def loop_side() -> None:
        await asyncio.gather(*(acall() for _ in range(5)))

    asyncio.run(loop_side())
    assert pacer.granted == 10 == limiter.stats().acquisitions
    gaps = [b - a for a, b in zip(pacer.starts, pacer.starts[1:], strict=False)]
    assert min(gaps) >= 0.03 - 1e-3
    assert limiter.stats().waited >= 1


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_pacing_respects_the_deadline_and_frees_the_slot() -> None:
    class Never:
        def acquire(self, *, blocking: bool = True) -> bool:
            assert not blocking, "a run's pacing must not block past its deadline"
            return False

    limiter = CallLimiter(1, rate_limiter=Never())
    with call_gate(RunBudget(max_seconds=0.1)), pytest.raises(BudgetExceededError), limiter.slot():
        pytest.fail("called without a token")
    stats = limiter.stats()
    assert (stats.in_flight, stats.gave_up) == (0, 1)


def test_in_memory_rate_limiter_of_langchain_is_accepted() -> None:
    from langchain_core.rate_limiters import InMemoryRateLimiter

    pacer = InMemoryRateLimiter(requests_per_second=50, check_every_n_seconds=0.005)
    limiter = CallLimiter(2, rate_limiter=pacer)
    started = time.monotonic()
    for _ in range(4):
        with limiter.slot():
            pass
    assert time.monotonic() - started >= 3 / 50 - 0.01  # the first token after 1/50 s


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_bounds_raise(bad: object) -> None:
    with pytest.raises(ConfigurationError):
        CallLimiter(bad)  # type: ignore[arg-type]


def test_a_rate_limiter_needs_acquire() -> None:
    with pytest.raises(ConfigurationError, match="acquire"):
        CallLimiter(2, rate_limiter=object())  # type: ignore[arg-type]


def test_resolve_limiter() -> None:
    shared = CallLimiter(3)
    assert resolve_limiter(shared, None) is shared
    own = resolve_limiter(None, 2)
    assert own is not None and own.max_in_flight == 2
    assert resolve_limiter(None, None) is None
    with pytest.raises(ConfigurationError, match="not both"):
        resolve_limiter(shared, 2)
