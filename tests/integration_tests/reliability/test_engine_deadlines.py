"""Engine faults on the real clock: the wall-time budget cancels hung async calls, abandons
hung sync calls (whose worker threads then finish) and, failing closed, raises."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core import BudgetExceededError
from tests.support.faults import memories

HANG = 30.0
"""How long a hung model call blocks: the budget (0.3 s) must end the run long before."""


async def test_wall_time_budget_async_cancels_hanging_calls() -> None:
    hung: list[int] = []
    finished: list[int] = []
    cancelled: list[int] = []

    async def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        if len(coalition) < 3:
            hung.append(1)
            try:
                await asyncio.sleep(HANG)  # a hung model call
            except asyncio.CancelledError:
                cancelled.append(1)
                raise
            finished.append(1)
        return 1.0 if len(coalition) == 0 else 0.0

    config = ClearanceConfig(budget={"max_wall_seconds": 0.3}, estimator="exact")
    started = time.monotonic()
    report = await MeClearEngine(config).aclear(memories(3), evaluate)
    assert time.monotonic() - started < HANG / 2  # ended by the budget, not by the hang
    assert report.failed and report.failure.reason == "time_budget"
    assert report.kept_ids == ["m0", "m1", "m2"]
    assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left running
    # every hung call that started (none, when a loaded machine spends the budget before
    # them) was cancelled, none completed
    assert len(cancelled) == len(hung) and finished == []


@pytest.mark.slow
def test_wall_time_budget_sync_abandons_hanging_calls_whose_threads_then_finish() -> None:
    release = threading.Event()

    hung: list[int] = []
    returned: list[int] = []

    def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        if len(coalition) < 3:
            hung.append(1)
            release.wait(HANG)
            returned.append(1)
        return 0.0

    config = ClearanceConfig(
        budget={"max_wall_seconds": 0.3, "max_concurrency": 4},
        estimator="exact",
    )
    report = MeClearEngine(config).clear(memories(3), evaluate)
    assert report.failed and report.failure.reason == "time_budget"
    assert hung and returned == []  # it returned while its hung calls still blocked
    release.set()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("meclear") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "worker threads did not finish"
        time.sleep(0.01)


def test_wall_time_budget_closed_raises() -> None:
    def evaluate(coalition, trial):  # type: ignore[no-untyped-def]
        time.sleep(0.05)
        return 0.0

    config = ClearanceConfig(
        budget={"max_wall_seconds": 0.1, "max_concurrency": 1},
        failure={"mode": "closed"},
    )
    with pytest.raises(BudgetExceededError) as info:
        MeClearEngine(config).clear(memories(4), evaluate)
    assert info.value.reason == "time_budget"
