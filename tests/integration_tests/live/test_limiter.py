"""The shared call limiter on the real clock: a wait for a slot ends at the run's deadline
(sync and async) and follows the run's clock, not the wall clock; a rate limiter paces one
token per call and never blocks past the run's deadline."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.concurrency.workers import call_gate
from meclear_integrations.core.errors import BudgetExceededError
from meclear_integrations.runtime.limiter import DEADLINE_GRACE_SECONDS, CallLimiter
from tests.support.limits import CountingRateLimiter, Holder, queued_waiter


def test_a_wait_ends_at_the_runs_deadline() -> None:
    limiter = CallLimiter(1)
    holder = Holder(limiter)
    budget = RunBudget(max_seconds=0.2)
    started = time.monotonic()
    with call_gate(budget), pytest.raises(BudgetExceededError) as caught, limiter.slot():
        pytest.fail("got a slot that was held")
    waited = time.monotonic() - started
    held_throughout = holder.holding  # it gave up at the deadline, not when the slot freed
    holder.release()
    assert caught.value.reason == "time_budget"
    assert waited >= 0.15 and held_throughout
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
