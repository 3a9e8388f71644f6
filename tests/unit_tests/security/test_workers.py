"""Blocking calls never outlive the deadline's promise: no model call starts after it, and a
hung provider thread neither holds the caller nor keeps the interpreter from exiting."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import BudgetExceededError
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.workers import call_gate, check_call_allowed, in_worker
from meclear_integrations.judges import CallableJudge, task_evaluator

DEADLINE = 1.0
AGENT_SECONDS = 1.5


class _Recorder:
    """A slow agent and an honest judge that record when each of their calls starts."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.starts: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self.judge = CallableJudge(self._judge)

    def _started(self, who: str) -> None:
        with self._lock:
            self.starts.append((who, time.monotonic() - self.t0))

    def _judge(self, answer: str, reference: str | None) -> bool:
        self._started("judge")
        return answer == reference

    def agent(self, coalition: tuple[Memory, ...]) -> str:
        self._started("agent")
        time.sleep(AGENT_SECONDS)  # a slow model call that outlives the deadline
        return "December 2023"

    def late(self) -> list[tuple[str, float]]:
        return [(who, t) for who, t in self.starts if t > DEADLINE + 0.2]


def _memories() -> list[Memory]:
    return [Memory(id=f"m{i}", content=f"memory {i}") for i in range(3)]


def _config() -> ClearanceConfig:
    return ClearanceConfig(
        budget={"max_wall_seconds": DEADLINE, "max_concurrency": 4},
        estimator="exact",
    )


def test_sync_workers_start_no_model_call_after_the_deadline() -> None:
    rec = _Recorder()
    evaluate = task_evaluator(rec.agent, rec.judge, question="When?", reference="December 2023")
    report = MeClearEngine(_config()).clear(_memories(), evaluate)
    returned = time.monotonic() - rec.t0
    time.sleep(AGENT_SECONDS + 0.5)  # the abandoned agent calls return meanwhile
    assert report.failed and report.failure.reason == "time_budget"
    assert returned < DEADLINE + 0.5
    assert rec.starts and rec.late() == []  # the judge calls after them never started


async def test_async_path_with_a_sync_evaluator_starts_no_model_call_after_the_deadline() -> None:
    rec = _Recorder()
    evaluate = task_evaluator(rec.agent, rec.judge, question="When?", reference="December 2023")
    report = await MeClearEngine(_config()).aclear(_memories(), evaluate)
    returned = time.monotonic() - rec.t0
    await asyncio.sleep(AGENT_SECONDS + 0.5)
    assert report.failed and report.failure.reason == "time_budget"
    assert returned < DEADLINE + 0.5
    assert rec.starts and rec.late() == []


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
    release = threading.Event()
    task = asyncio.create_task(in_worker(release.wait, 30))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 0.5
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
