"""Answer-level deduplication: identical answers judged once per query, identical prompts
answered once when the agent is deterministic; single-flight under concurrency."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core import AnswerCache
from meclear_integrations.core.judging.dispatch import (
    SingleFlightCache,
    adedup_evaluator,
    dedup_evaluator,
)
from tests.support.games import make_memories


def reader(coalition: tuple[Memory, ...], trial: int) -> str:
    """m0 says 'Paris', m1 and m2 each say 'Rome' (and win); nothing: abstain."""
    ids = {m.id for m in coalition}
    if ids & {"m1", "m2"}:
        return "Rome"
    return "Paris" if "m0" in ids else "I don't know"


class Counted:
    def __init__(self) -> None:
        self.agent: list[tuple[str, ...]] = []
        self.judge: list[str] = []
        self.lock = threading.Lock()

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
        with self.lock:
            self.agent.append(tuple(m.id for m in coalition))
        return reader(coalition, trial)

    def grade(self, answer: str) -> float:
        with self.lock:
            self.judge.append(answer)
        return 1.0 if answer == "Paris" else 0.0


@pytest.mark.parametrize("deterministic", [True, False])
def test_engine_run_judges_each_distinct_answer_once(deterministic: bool) -> None:
    counted = Counted()
    cache = AnswerCache(deterministic=deterministic)
    evaluate = dedup_evaluator(counted.answer, counted.grade, cache)
    config = ClearanceConfig.paper(estimator="exact", trials=2)
    report = MeClearEngine(config).clear(make_memories(4), evaluate)
    assert report.cleared_ids == ["m1", "m2"]
    assert sorted(counted.judge) == ["I don't know", "Paris", "Rome"]
    # 16 coalitions x 2 trials reach the evaluator; a deterministic agent answers each
    # prompt once, otherwise once per (prompt, trial).
    assert report.cost.evaluator_calls == 32
    assert len(counted.agent) == (16 if deterministic else 32)
    stats = cache.stats
    assert (stats.agent_calls, stats.judge_calls) == (len(counted.agent), 3)
    assert stats.agent_hits == 32 - stats.agent_calls and stats.judge_hits == 32 - 3
    assert stats.model_calls == stats.agent_calls + 3


def test_judge_key_can_carry_what_the_judge_reads() -> None:
    cache = AnswerCache()
    calls: list[object] = []

    def judge(key: object) -> float:
        calls.append(key)
        return 1.0

    cache.judge(("Paris", "context A"), lambda: judge(1))
    cache.judge(("Paris", "context A"), lambda: judge(2))
    cache.judge(("Paris", "context B"), lambda: judge(3))
    cache.judge(" Paris ", lambda: judge(4))
    cache.judge("Paris", lambda: judge(5))  # normalised (stripped) answers share a key
    assert calls == [1, 3, 4]


def test_single_flight_threads_compute_once_and_failures_are_not_cached() -> None:
    cache: SingleFlightCache[int] = SingleFlightCache()
    computed: list[int] = []
    gate = threading.Event()

    def slow() -> int:
        computed.append(1)
        gate.wait(1.0)
        return 7

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(cache.get, "k", slow) for _ in range(8)]
        time.sleep(0.05)
        gate.set()
        assert [f.result() for f in futures] == [7] * 8
    assert computed == [1] and cache.calls == 1 and cache.hits == 7

    def boom() -> int:
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError):
        cache.get("x", boom)
    assert cache.get("x", lambda: 3) == 3  # the failure was not cached


async def test_single_flight_async_and_engine_async_path() -> None:
    cache: SingleFlightCache[str] = SingleFlightCache()
    started = 0

    async def slow() -> str:
        nonlocal started
        started += 1
        await asyncio.sleep(0.02)
        return "v"

    assert await asyncio.gather(*(cache.aget("k", slow) for _ in range(10))) == ["v"] * 10
    assert started == 1 and cache.hits == 9

    counted = Counted()

    async def answer(coalition: tuple[Memory, ...], trial: int) -> str:
        await asyncio.sleep(0.001)
        return counted.answer(coalition, trial)

    async def grade(text: str) -> float:
        await asyncio.sleep(0.001)
        return counted.grade(text)

    answers = AnswerCache(deterministic=True)
    report = await MeClearEngine(ClearanceConfig(budget={"max_concurrency": 32})).aclear(
        make_memories(5), adedup_evaluator(answer, grade, answers)
    )
    assert report.cleared_ids == ["m1", "m2"]
    assert sorted(counted.judge) == ["I don't know", "Paris", "Rome"]
    assert len(counted.agent) == report.cost.coalitions < report.cost.evaluator_calls


async def test_async_failure_propagates_to_waiters_and_is_not_cached() -> None:
    cache: SingleFlightCache[int] = SingleFlightCache()

    async def boom() -> int:
        await asyncio.sleep(0.01)
        raise ValueError("bad")

    results = await asyncio.gather(
        *(cache.aget("k", boom) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, ValueError) for r in results)

    async def ok() -> int:
        return 5

    assert await cache.aget("k", ok) == 5


def test_dedup_evaluators_report_the_answer_to_the_engine() -> None:
    """Answers reach core.answers, so the answer-based checks apply (cached answers too)."""
    import asyncio as _asyncio

    from meclear_integrations.core import AnswerCache, Memory
    from meclear_integrations.core.answers import answer_note
    from meclear_integrations.core.judging.dispatch import adedup_evaluator, dedup_evaluator

    memory = (Memory(id="a", content="x"),)
    evaluate = dedup_evaluator(lambda c, t: "Paris", lambda a: 1.0, AnswerCache())
    for _ in range(2):  # the second call is answered from the cache
        with answer_note() as note:
            assert evaluate(memory, 0) == 1.0
        assert note.answer == "Paris"

    async def answer(c: tuple[Memory, ...], t: int) -> str:
        return "Rome"

    async def judge(a: str) -> float:
        return 0.0

    aevaluate = adedup_evaluator(answer, judge, AnswerCache())

    async def run() -> str | None:
        with answer_note() as note:
            await aevaluate(memory, 0)
        return note.answer

    assert _asyncio.run(run()) == "Rome"
