"""Blocking calls never outlive the deadline's promise, on the real clock: no model call starts
after the wall deadline, and the engine returns at the deadline while a slow provider thread
still runs (its calls finish after the run)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
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


@pytest.mark.slow
def test_sync_workers_start_no_model_call_after_the_deadline() -> None:
    rec = _Recorder()
    evaluate = task_evaluator(rec.agent, rec.judge, question="When?", reference="December 2023")
    report = MeClearEngine(_config()).clear(_memories(), evaluate)
    returned = time.monotonic() - rec.t0
    time.sleep(AGENT_SECONDS + 0.5)  # the abandoned agent calls return meanwhile
    assert report.failed and report.failure.reason == "time_budget"
    assert returned < DEADLINE + 0.5
    assert rec.starts and rec.late() == []  # the judge calls after them never started


@pytest.mark.slow
async def test_async_path_with_a_sync_evaluator_starts_no_model_call_after_the_deadline() -> None:
    rec = _Recorder()
    evaluate = task_evaluator(rec.agent, rec.judge, question="When?", reference="December 2023")
    report = await MeClearEngine(_config()).aclear(_memories(), evaluate)
    returned = time.monotonic() - rec.t0
    await asyncio.sleep(AGENT_SECONDS + 0.5)
    assert report.failed and report.failure.reason == "time_budget"
    assert returned < DEADLINE + 0.5
    assert rec.starts and rec.late() == []
