"""``SingleFlightCache.get``/``aget`` and ``CallRetrier.call``/``acall`` are one flow each.

Each pair drives one step flow (``SingleFlightCache._flight``, ``CallRetrier.steps``): the
same script on both paths gives the same values, counts, waits and errors.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest

from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.config import RetryPolicy
from meclear_integrations.core.failures.retry import CallRetrier
from meclear_integrations.core.judging.dispatch import SingleFlightCache


def _cache_run(asynchronous: bool, script: Sequence[tuple[str, BaseException | None]]) -> list[Any]:
    """Each (key, error) in turn: the value or the error, then the cache's counters."""
    cache: SingleFlightCache[str] = SingleFlightCache()
    computed: list[str] = []
    seen: list[Any] = []

    def compute(key: str, error: BaseException | None) -> str:
        computed.append(key)
        if error is not None:
            raise error
        return key.upper()

    async def acompute(key: str, error: BaseException | None) -> str:
        await asyncio.sleep(0)
        return compute(key, error)

    async def main() -> None:
        for key, error in script:
            try:
                seen.append(await cache.aget(key, partial(acompute, key, error)))
            except Exception as exc:
                seen.append(exc)

    if asynchronous:
        asyncio.run(main())
    else:
        for key, error in script:
            try:
                seen.append(cache.get(key, partial(compute, key, error)))
            except Exception as exc:
                seen.append(exc)
    return [seen, computed, cache.calls, cache.hits, cache._threads, cache._tasks]


def test_single_flight_get_and_aget_cache_values_not_failures_alike() -> None:
    boom = ValueError("boom")
    script = [("a", None), ("a", None), ("b", boom), ("b", None), ("b", None), ("c", boom)]
    sync = _cache_run(False, script)
    assert _cache_run(True, script) == sync
    assert sync == [["A", "A", boom, "B", "B", boom], ["a", "b", "b", "c"], 4, 2, {}, {}]


def _threads_share(error: BaseException | None) -> list[Any]:
    """Three threads ask for one key; the owner's compute blocks until both others wait."""
    cache: SingleFlightCache[str] = SingleFlightCache()
    release = threading.Event()
    out: list[Any] = []

    def compute() -> str:
        release.wait(5)
        if error is not None:
            raise error
        return "value"

    def one() -> None:
        try:
            out.append(cache.get("k", compute))
        except Exception as exc:
            out.append(exc)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    while cache.hits < 2:
        threading.Event().wait(0.001)
    release.set()
    for thread in threads:
        thread.join(5)
    return [out, cache.calls, cache.hits, cache._threads]


def _tasks_share(error: BaseException | None) -> list[Any]:
    """Three tasks ask for one key; the owner's compute waits until both others wait."""
    cache: SingleFlightCache[str] = SingleFlightCache()

    async def main() -> list[Any]:
        gate = asyncio.Event()

        async def compute() -> str:
            await gate.wait()
            if error is not None:
                raise error
            return "value"

        tasks = [asyncio.ensure_future(cache.aget("k", compute)) for _ in range(3)]
        while cache.hits < 2:
            await asyncio.sleep(0)
        gate.set()
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    return [asyncio.run(main()), cache.calls, cache.hits, cache._tasks]


@pytest.mark.parametrize("error", [None, ValueError("shared failure")], ids=["value", "error"])
def test_concurrent_waiters_share_one_computation_and_its_error_alike(
    error: BaseException | None,
) -> None:
    expected = "value" if error is None else error
    assert _threads_share(error) == _tasks_share(error) == [[expected] * 3, 1, 2, {}]


class Flaky:
    """Raises the scripted errors in turn, then returns the attempt number."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = list(errors)
        self.attempts = 0

    def __call__(self) -> int:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.attempts


def _retry_run(asynchronous: bool, errors: list[BaseException], policy: RetryPolicy) -> list:
    waits: list[Any] = []
    budget = RunBudget(max_calls=4)

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    retrier = CallRetrier(policy, budget, sleep=waits.append, asleep=asleep)
    attempt = Flaky(errors)

    async def aattempt() -> int:
        return attempt()

    outcome: Any
    try:
        outcome = asyncio.run(retrier.acall(aattempt)) if asynchronous else retrier.call(attempt)
    except BaseException as exc:  # compared below
        outcome = exc
    return [
        outcome,
        attempt.attempts,
        waits,
        [type(w) for w in waits],
        budget.calls,
        budget.retries,
    ]


RETRY = RetryPolicy(max_attempts=3, jitter=0.0, initial_backoff=0.5, retry_unreadable=False)


@pytest.mark.parametrize(
    ("errors", "policy", "expected"),
    [
        ([], RETRY, [1, 1, [], [], 1, 0]),
        ([ConnectionError("reset")], RETRY, [2, 2, [0.5], None, 2, 1]),
        (
            [ConnectionError(f"reset {i}") for i in range(3)],
            RETRY,
            ["error 2", 3, [0.5, 1.0], None, 3, 2],
        ),
        ([ValueError("permanent")], RETRY, ["error 0", 1, [], [], 1, 0]),
        ([ConnectionError("reset")], RetryPolicy(max_attempts=1), ["error 0", 1, [], [], 1, 0]),
        (
            [ConnectionError(f"reset {i}") for i in range(5)],
            RetryPolicy(max_attempts=9, jitter=0.0),
            ["error 3", 4, [0.5, 1.0, 2.0], None, 4, 3],
        ),
    ],
    ids=["first", "retried", "exhausted", "permanent", "one-attempt", "budget"],
)
def test_call_and_acall_retry_alike(
    errors: list[BaseException], policy: RetryPolicy, expected: list
) -> None:
    sync = _retry_run(False, errors, policy)
    other = _retry_run(True, errors, policy)
    assert other == sync
    outcome = sync[0]
    if isinstance(expected[0], str):
        assert outcome is errors[int(expected[0].split()[1])]  # the last error, unchanged
    else:
        assert outcome == expected[0]
    assert sync[1:3] == expected[1:3] and sync[4:] == expected[4:]
    if sync[2]:
        assert {t.__name__ for t in sync[3]} == {"DoSleep"}  # tenacity's own wait object


def test_acall_backoff_wait_is_cancellable() -> None:
    started = asyncio.Event()

    async def asleep(seconds: float) -> None:
        started.set()
        await asyncio.sleep(3600)

    retrier = CallRetrier(RETRY, RunBudget(), asleep=asleep)
    attempt = Flaky([ConnectionError("reset")])

    async def aattempt() -> int:
        return attempt()

    async def main() -> None:
        task = asyncio.ensure_future(retrier.acall(aattempt))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert attempt.attempts == 1
