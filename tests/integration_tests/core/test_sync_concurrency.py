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
from meclear_integrations.core.judging.batch import PROBE_SECONDS, Pace, run_batch
from tests.support.games import make_memories
from tests.support.sync_batches import InFlight, single_memory_requests

DELAY = 0.1


def test_a_clean_query_runs_its_baseline_trials_at_once() -> None:
    meter = InFlight()

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        meter(DELAY)
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
    meter = InFlight()
    pace = Pace()
    started = time.perf_counter()
    results = run_batch(
        lambda r: (meter(DELAY), r.trial)[1],
        single_memory_requests(4),
        budget=RunBudget(),
        workers=4,
        pace=pace,
    )
    took = time.perf_counter() - started
    assert results == list(range(4))
    assert meter.peak == 4 and pace.fast is False
    assert meter.rounds == 1  # one round, not the first call plus a round
    assert took >= DELAY


def test_a_slow_call_after_fast_ones_sends_the_rest_to_threads() -> None:
    meter = InFlight()
    pace = Pace(fast=True)
    slow = {1, 2, 3, 4, 5}

    def call(request: EvaluationRequest) -> int:
        index = request.trial
        meter(DELAY if index in slow else 0.0)
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

    def call(request: EvaluationRequest) -> int:
        index = request.trial
        with lock:
            taken.append(index)
        if index == 0:
            time.sleep(PROBE_SECONDS * 10)
            raise RuntimeError("boom")
        time.sleep(DELAY)
        return index

    with pytest.raises(RuntimeError, match="boom"):
        run_batch(
            call, single_memory_requests(20), budget=RunBudget(), workers=2, pace=Pace(fast=fast)
        )
    time.sleep(DELAY)
    assert len(taken) <= 3  # the failure stopped the workers from taking new requests


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
