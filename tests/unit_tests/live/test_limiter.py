"""The shared call limiter: the bound holds across threads and event loops, waiters are
served first come first served, a cancelled waiter never leaks a slot, a stopped run stops
its waiters, and LangChain's rate limiter is accepted. The waits on the real clock (a run's
deadline, a rate limiter's pacing) are tested in the integration tier (``live/test_limiter.py``)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.errors import BudgetExceededError, ConfigurationError
from meclear_integrations.runtime.limiter import CallLimiter, resolve_limiter
from tests.support.limits import Gauge, Holder, await_until, queued_waiter, wait_until


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
