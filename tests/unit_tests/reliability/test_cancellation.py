"""Cancelling a run leaves no background task, no running thread and no half-written state."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core import AnswerCache, StageEvent
from meclear_integrations.core.judging.dispatch import adedup_evaluator
from tests.support.faults import memories


async def _cancel_mid_run(evaluate, events: list[StageEvent], mid_run) -> None:  # type: ignore[no-untyped-def]
    """Cancel the run once ``mid_run()`` holds (polled: a loaded machine starts it late)."""
    engine = MeClearEngine(ClearanceConfig(estimator="exact"), listener=events.append)
    task = asyncio.create_task(engine.aclear(memories(4), evaluate))
    deadline = time.monotonic() + 10
    await asyncio.sleep(0.1)
    while not mid_run() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancel_async_evaluator_mid_run() -> None:
    started: list[int] = []
    finished: list[int] = []

    async def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        started.append(1)
        if len(coalition) < 4:
            await asyncio.sleep(10)
        finished.append(len(coalition))
        return 0.0

    events: list[StageEvent] = []
    await _cancel_mid_run(evaluate, events, lambda: len(started) > 2)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert len(started) > 2 and finished and set(finished) == {4}  # only baseline trials finished
    assert events[-1].phase == "error" and events[-1].payload["outcome"] == "cancelled"


async def test_cancel_sync_evaluator_mid_run_threads_finish() -> None:
    release = threading.Event()
    lock = threading.Lock()
    running = [0]
    calls = [0]

    def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        with lock:
            running[0] += 1
            calls[0] += 1
        try:
            if len(coalition) < 4:
                release.wait(10)
            return 0.0
        finally:
            with lock:
                running[0] -= 1

    events: list[StageEvent] = []
    await _cancel_mid_run(evaluate, events, lambda: running[0] > 0)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert running[0] > 0  # worker threads are still inside the evaluator
    at_cancel = calls[0]
    release.set()
    deadline = time.monotonic() + 5
    while running[0]:
        assert time.monotonic() < deadline, "evaluator threads did not finish"
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert calls[0] == at_cancel  # no call started after the cancellation


async def test_timeout_of_the_caller_leaves_nothing_behind() -> None:
    async def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0 if len(coalition) == 3 else 10)
        return 1.0 if not coalition else 0.0

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await MeClearEngine().aclear(memories(3), evaluate)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelled_owner_does_not_poison_the_single_flight_cache() -> None:
    """A cancelled computation is not cached; the next caller computes afresh."""
    cache = AnswerCache(deterministic=True)
    calls: list[int] = []

    async def answer(coalition, trial):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(10)
        return "December 2023"

    async def judge(text: str) -> float:
        return 1.0

    evaluate = adedup_evaluator(answer, judge, cache)
    first = asyncio.create_task(evaluate(tuple(memories(1)), 0))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await evaluate(tuple(memories(1)), 0) == 1.0
    assert len(calls) == 2 and not cache.answers._tasks
