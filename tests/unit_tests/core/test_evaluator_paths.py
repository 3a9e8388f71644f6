"""``evaluate_sync`` and ``evaluate_async`` are one flow: same calls, results and errors.

Both drive ``core.judging.evaluator._batch`` (one evaluator attempt is ``_evaluation``, one
retried call ``_Calls.steps``). Each test runs the same evaluator on a fresh game on both
paths, the async one with the evaluator as a coroutine function and as a plain function (run
in a worker thread), and compares what the evaluator saw, what the game holds, the budget,
the waits between retries, the progress callbacks and the errors with their report entries.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from meclear_integrations.core import Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.core.budget import RunBudget
from meclear_integrations.core.config import RetryPolicy
from meclear_integrations.core.errors import BudgetExceededError, EvaluatorError
from meclear_integrations.core.failures.retry import CallRetrier
from meclear_integrations.core.game import CoalitionGame
from meclear_integrations.core.judging.evaluator import evaluate_async, evaluate_sync
from meclear_integrations.core.report import FailedCoalition

K = 4
COALITIONS = [0b0011, 0b0101, 0b1111, 0b0011]
KEY = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2"


def _score(ids: tuple[str, ...], trial: int) -> float:
    return (len(ids) + trial) / (K + 2)


class Script:
    """A scripted evaluator: what it saw, in order; ``fail`` says how to fail an attempt."""

    def __init__(self, fail: Callable[[tuple[str, ...], int, int], BaseException | None]) -> None:
        self.fail = fail
        self.seen: list[tuple[tuple[str, ...], int]] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self, memories: tuple[Memory, ...], trial: int) -> float:
        ids = tuple(m.id for m in memories)
        with self._lock:
            self.seen.append((ids, trial))
            self.threads.add(threading.get_ident())
            attempt = self.seen.count((ids, trial))
        error = self.fail(ids, trial, attempt)
        if error is not None:
            raise error
        note_answer(f"answer {len(ids)}/{trial}")
        return _score(ids, trial)

    async def coroutine(self, memories: tuple[Memory, ...], trial: int) -> float:
        await asyncio.sleep(0)
        return self(memories, trial)


def _never(ids: tuple[str, ...], trial: int, attempt: int) -> BaseException | None:
    return None


def _game() -> CoalitionGame:
    return CoalitionGame(
        context=tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(K)), trials=2
    )


def _run(
    path: str,
    fail: Callable[..., BaseException | None],
    policy: RetryPolicy,
    coalitions: list[int] = COALITIONS,
    trials: int | None = None,
) -> dict:
    """One batch on ``path`` ("sync", "async", "async-thread"): everything observable."""
    script = Script(fail)
    game = _game()
    waits: list[float] = []
    budget = RunBudget(max_calls=50)

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    retrier = CallRetrier(policy, budget, sleep=waits.append, asleep=asleep)
    failures: list[FailedCoalition] = []
    progress: list[tuple[str, int]] = []
    error: BaseException | None = None
    loop_thread: int | None = None
    try:
        if path == "sync":
            evaluate_sync(
                game,
                coalitions,
                script,
                1,
                trials,
                retrier=retrier,
                failures=failures,
                on_start=lambda n: progress.append(("start", n)),
                on_done=lambda n: progress.append(("done", n)),
            )
        else:

            async def on_start(n: int) -> None:
                progress.append(("start", n))

            async def on_done(n: int) -> None:
                progress.append(("done", n))

            async def main() -> None:
                nonlocal loop_thread
                loop_thread = threading.get_ident()
                evaluate = script.coroutine if path == "async" else script
                await evaluate_async(
                    game,
                    coalitions,
                    evaluate,
                    1,
                    trials,
                    retrier=retrier,
                    failures=failures,
                    on_start=on_start,
                    on_done=on_done,
                )

            asyncio.run(main())
    except BaseException as exc:  # compared below
        error = exc
    if path == "async":
        assert script.threads == {loop_thread}  # a coroutine evaluator runs on the loop
    if path == "async-thread":
        assert loop_thread not in script.threads  # a plain one never does
    return {
        "seen": script.seen,
        "scores": game.scores,
        "answers": game.answers,
        "evaluator_calls": game.evaluator_calls,
        "cache_hits": game.cache_hits,
        "rounds": game.rounds,
        "budget": (budget.calls, budget.retries),
        "waits": waits,
        "progress": progress,
        "failures": [f.model_dump() for f in failures],
        "error": _described(error),
    }


def _described(error: BaseException | None) -> Any:
    if error is None:
        return None
    chain = []
    link: BaseException | None = error
    while link is not None:
        chain.append((type(link).__name__, str(link)))
        link = link.__cause__
    return chain, error.__context__ is None or error.__suppress_context__


PATHS = ["async", "async-thread"]
NO_RETRY = RetryPolicy(max_attempts=1)
RETRY = RetryPolicy(max_attempts=3, jitter=0.0, initial_backoff=0.5, retry_unreadable=False)


def _same_on_both_paths(fail: Callable[..., BaseException | None], policy: RetryPolicy) -> dict:
    sync = _run("sync", fail, policy)
    for path in PATHS:
        assert _run(path, fail, policy) == sync, path
    return sync


def _one_call_alike(fail: Callable[..., BaseException | None], policy: RetryPolicy) -> dict:
    """One request (one coalition, one trial): a failure leaves no other call in flight."""
    sync = _run("sync", fail, policy, [0b0101], 1)
    for path in PATHS:
        assert _run(path, fail, policy, [0b0101], 1) == sync, path
    return sync


def test_scores_answers_and_progress_are_the_same_on_both_paths() -> None:
    sync = _same_on_both_paths(_never, NO_RETRY)
    assert sync["error"] is None
    assert len(sync["seen"]) == 6  # three distinct coalitions, two trials each
    assert sync["scores"][0b1111] == (_score(("m0",) * 4, 0), _score(("m0",) * 4, 1))
    assert sync["answers"][0b0011] == ("answer 2/0", "answer 2/1")
    assert sync["progress"] == [("start", 6)] + [("done", n) for n in range(1, 7)]
    assert sync["budget"] == (6, 0) and sync["rounds"] == 1


def test_transient_errors_are_retried_alike() -> None:
    def flaky(ids: tuple[str, ...], trial: int, attempt: int) -> BaseException | None:
        return ConnectionError("connection reset") if attempt == 1 and trial == 0 else None

    sync = _same_on_both_paths(flaky, RETRY)
    assert sync["error"] is None
    assert sync["budget"] == (9, 3)  # three retried trials
    assert sync["waits"] == [0.5, 0.5, 0.5]
    assert sync["failures"] == []


def _leaky(ids: tuple[str, ...], trial: int, attempt: int) -> BaseException | None:
    return ValueError(f"bad key {KEY}") if ids == ("m0", "m2") else None


def test_a_permanent_error_fails_the_call_alike_redacted() -> None:
    sync = _one_call_alike(_leaky, RETRY)
    chain, no_context = sync["error"]
    assert [name for name, _ in chain] == ["EvaluatorError", "ValueError"]
    assert all(KEY not in text for _, text in chain) and no_context
    assert sync["scores"] == {} and sync["seen"] == [(("m0", "m2"), 0)]
    [failure] = sync["failures"]
    assert failure["memory_ids"] == ["m0", "m2"] and failure["attempts"] == 1
    assert KEY not in failure["error"]


@pytest.mark.parametrize("path", PATHS)
def test_a_failed_batch_raises_the_same_error_and_stores_nothing(path: str) -> None:
    """On the loop the next call may have started before the failure is seen (then it is
    cancelled or discarded): the error, its report entry and the empty table are the same."""
    sync, other = _run("sync", _leaky, RETRY), _run(path, _leaky, RETRY)
    assert other["error"] == sync["error"] and other["scores"] == sync["scores"] == {}
    assert other["failures"][0] == sync["failures"][0]
    assert other["seen"][: len(sync["seen"])] == sync["seen"]


def test_retries_exhausted_alike() -> None:
    def down(ids: tuple[str, ...], trial: int, attempt: int) -> BaseException | None:
        return ConnectionError("connection refused") if ids == ("m0", "m2") else None

    sync = _one_call_alike(down, RETRY)
    assert [name for name, _ in sync["error"][0]] == ["EvaluatorError", "ConnectionError"]
    assert sync["waits"] == [0.5, 1.0]
    assert [f["attempts"] for f in sync["failures"]] == [3]
    assert sync["failures"][0]["transient"] is True


@pytest.mark.parametrize(
    "error",
    [
        EvaluatorError("the evaluator's own error", coalition=("m0", "m1"), trial=0),
        BudgetExceededError("the run's gate refused a model call", reason="time_budget"),
    ],
    ids=["evaluator-error", "budget"],
)
def test_the_package_errors_pass_unwrapped_alike(error: BaseException) -> None:
    def raising(ids: tuple[str, ...], trial: int, attempt: int) -> BaseException | None:
        return error if ids == ("m0", "m2") else None

    sync = _one_call_alike(raising, RETRY)
    assert sync["error"][0] == [(type(error).__name__, str(error))]
    assert len(sync["failures"]) == 1


def test_the_sync_path_refuses_a_coroutine_evaluator_and_closes_the_coroutine() -> None:
    script = Script(_never)
    made: list[Any] = []

    def returns_coroutine(memories: tuple[Memory, ...], trial: int) -> Any:
        made.append(script.coroutine(memories, trial))
        return made[-1]

    failures: list[FailedCoalition] = []
    with pytest.raises(EvaluatorError, match="awaitable on the sync path: use aclear"):
        evaluate_sync(_game(), [0b0011], returns_coroutine, 1, 1, failures=failures)
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED
    assert script.seen == [] and [f.error_type for f in failures] == ["EvaluatorError"]

    # a plain function runs in a worker thread on the async path too: refused alike
    failures_async: list[FailedCoalition] = []
    with pytest.raises(EvaluatorError, match="awaitable on the sync path: use aclear"):
        asyncio.run(
            evaluate_async(_game(), [0b0011], returns_coroutine, 1, 1, failures=failures_async)
        )
    assert inspect.getcoroutinestate(made[-1]) == inspect.CORO_CLOSED
    assert [f.model_dump() for f in failures_async] == [f.model_dump() for f in failures[:1]]
