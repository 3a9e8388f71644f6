"""The sync path on the real clock: a slow evaluator's independent calls run concurrently from
its first call, in as many rounds as the async path; the first failure stops the batch and
the deadline abandons a probing one."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.game import EvaluationRequest
from meclear_integrations.core.judging.dispatch import Pace, run_batch
from tests.support.games import make_memories
from tests.support.sync_batches import InFlight, single_memory_requests

DELAY = 0.1
WAIT = 60.0
"""How long a call waits for the others it must overlap (never reached unless they
cannot start: then the barrier breaks and the test fails)."""


def test_a_clean_query_runs_its_baseline_trials_at_once() -> None:
    meter = InFlight()
    trials = threading.Barrier(ClearanceConfig().trials, timeout=WAIT)  # a batch's calls

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        meter.enter()
        trials.wait()  # the batch's other calls are in flight too, or the barrier breaks
        meter.leave()
        return 1.0

    report = MeClearEngine(ClearanceConfig()).clear(make_memories(6), evaluate)
    assert report.early_exit
    assert meter.peak == ClearanceConfig().trials  # the first batch's calls overlap


@pytest.mark.slow
def test_sync_and_async_take_the_same_number_of_rounds() -> None:
    meter = InFlight()  # counts rounds: stretches with calls in flight
    ameter = InFlight()

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        meter(DELAY)
        return 0.0 if any(m.id == "m1" for m in coalition) else 1.0

    async def aevaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        ameter.enter()
        await asyncio.sleep(DELAY)
        ameter.leave()
        return 0.0 if any(m.id == "m1" for m in coalition) else 1.0

    engine = MeClearEngine(ClearanceConfig())
    sync = engine.clear(make_memories(10), evaluate)
    asynchronous = asyncio.run(engine.aclear(make_memories(10), aevaluate))
    assert sync.cleared_ids == asynchronous.cleared_ids == ["m1"]
    # The sync path takes no more rounds than the async one (today 7 against 10); one
    # serialised call per batch would add a round per batch (counted, not timed).
    assert meter.rounds <= ameter.rounds


def test_a_slow_first_call_does_not_delay_the_others() -> None:
    # Each call waits until all four are in flight: the first one is slow because the
    # others have not started yet, and the batch ends only if they start while it still
    # runs (a first call run alone, the others after it, breaks the barrier: the test
    # fails). Waiting on the calls themselves, not on a sleep, holds on a loaded machine.
    meter = InFlight()
    pace = Pace()
    together = threading.Barrier(4, timeout=WAIT)

    def call(request: EvaluationRequest) -> int:
        meter.enter()
        together.wait()
        meter.leave()
        return request.trial

    results = run_batch(call, single_memory_requests(4), budget=RunBudget(), workers=4, pace=pace)
    assert results == list(range(4))
    assert meter.peak == 4 and pace.fast is False
    assert meter.rounds == 1  # one round, not the first call plus a round


def test_a_slow_call_after_fast_ones_sends_the_rest_to_threads() -> None:
    meter = InFlight()
    pace = Pace(fast=True)
    together = threading.Barrier(4, timeout=WAIT)  # the four calls after the slow one

    def call(request: EvaluationRequest) -> int:
        index = request.trial
        if index == 1:
            meter(DELAY)  # inline and slow: longer than SLOW_CALL_SECONDS on any machine
        elif index > 1:
            meter.enter()
            together.wait()  # they went out together, or the barrier breaks
            meter.leave()
        else:
            meter(0.0)
        return index

    done: list[int] = []
    results = run_batch(
        call,
        single_memory_requests(6),
        budget=RunBudget(),
        workers=4,
        pace=pace,
        on_done=done.append,
    )
    assert results == list(range(6))
    assert pace.fast is False
    assert meter.peak == 4  # after the first slow call, the rest went out together
    assert done == list(range(1, 7))


@pytest.mark.parametrize("fast", [None, False])
def test_the_first_failure_stops_the_batch(fast: bool | None) -> None:
    taken: list[int] = []
    lock = threading.Lock()
    second = threading.Event()
    failing = threading.Event()

    def call(request: EvaluationRequest) -> int:
        index = request.trial
        with lock:
            taken.append(index)
        if index == 0:
            assert second.wait(WAIT)  # the other worker is busy with a call: it could go on
            failing.set()
            raise RuntimeError("boom")
        second.set()
        assert failing.wait(WAIT)  # returns once the first call is failing ...
        time.sleep(DELAY)  # ... and a moment after, so the failure is recorded first
        return index

    with pytest.raises(RuntimeError, match="boom"):
        run_batch(
            call, single_memory_requests(20), budget=RunBudget(), workers=2, pace=Pace(fast=fast)
        )
    # run_batch returns when its workers are idle: what they took is final
    assert sorted(taken) == [0, 1]  # the failure stopped the workers from taking new requests


def test_the_deadline_abandons_a_probing_batch() -> None:
    budget = RunBudget(max_seconds=DELAY)
    release = threading.Event()
    returned: list[int] = []

    def call(request: EvaluationRequest) -> None:
        release.wait(50 * DELAY)
        returned.append(request.trial)

    with pytest.raises(BudgetExceededError):
        run_batch(call, single_memory_requests(3), budget=budget, workers=3)
    assert returned == []  # it gave up at the deadline while every call still blocked
    release.set()
