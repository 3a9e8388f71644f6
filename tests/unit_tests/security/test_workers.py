"""The worker primitives behind the deadline's promise: a worker call runs off the loop in
the caller's context and is abandoned at once when cancelled; the call gate closes with the
run's budget, and its refusal ends the run on that budget. (The wall-deadline runs with a
hung provider thread are in ``tests/integration_tests/security/test_workers.py``.)"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.concurrency.workers import call_gate, check_call_allowed, in_worker

# ---------------------------------------------------------------- the worker primitives
_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")


async def test_in_worker_runs_off_the_loop_in_the_callers_context() -> None:
    _VAR.set("caller")
    loop_thread = threading.current_thread()

    def probe() -> tuple[bool, bool, str]:
        thread = threading.current_thread()
        return thread is loop_thread, thread.daemon, _VAR.get()

    assert await in_worker(probe) == (False, True, "caller")
    with pytest.raises(ZeroDivisionError):
        await in_worker(lambda: 1 / 0)


async def test_cancelling_in_worker_abandons_the_call_without_waiting() -> None:
    release, running, done = threading.Event(), threading.Event(), threading.Event()

    def blocked() -> None:
        running.set()
        release.wait(30)
        done.set()

    task = asyncio.create_task(in_worker(blocked))
    while not running.is_set():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not done.is_set()  # the cancel returned while the call still blocks: not waited
    release.set()


def test_the_call_gate_closes_with_the_budget() -> None:
    budget = RunBudget(max_seconds=60)
    check_call_allowed()  # outside a run: no gate
    with call_gate(budget):
        check_call_allowed()
        budget.close("time_budget")
        with pytest.raises(BudgetExceededError):
            check_call_allowed()
    check_call_allowed()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_call_the_gate_refuses_ends_the_run_on_its_budget_not_as_an_evaluator_bug(
    asynchronous: bool,
) -> None:
    """The gate's refusal inside an evaluator call (the deadline won the race against the
    driver) is reported as the time budget, never as the evaluator's error."""
    memories = [Memory(id=name, content=name) for name in "abc"]
    budget_error = BudgetExceededError("max_wall_seconds exhausted", reason="time_budget")

    def evaluate(coalition, trial):
        if len(coalition) < 3:
            raise budget_error  # what check_call_allowed raises past the deadline
        return 0.0

    async def aevaluate(coalition, trial):
        return evaluate(coalition, trial)

    engine = MeClearEngine(ClearanceConfig(estimator="exact", early_exit=False))
    if asynchronous:
        report = asyncio.run(engine.aclear(memories, aevaluate))
    else:
        report = engine.clear(memories, evaluate)
    assert report.status == "failed" and report.failure is not None
    assert report.failure.reason == "time_budget"
    assert report.kept_ids == ["a", "b", "c"]
    with pytest.raises(BudgetExceededError):
        MeClearEngine(
            ClearanceConfig(estimator="exact", early_exit=False, failure={"mode": "closed"})
        ).clear(memories, evaluate)
