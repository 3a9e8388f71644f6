"""Running the caller's evaluator on coalitions: sync (optionally threaded) and async.

An evaluator is ``evaluate(coalition: tuple[Memory, ...], trial: int) -> float`` or a
coroutine function with that signature: one task-agent run on the coalition plus one
judgement, a score in [0, 1].
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .coalitions import Coalition
from .errors import EvaluatorError
from .game import CoalitionGame, EvaluationRequest
from .memory import Memory

__all__ = ["Evaluator", "evaluate_async", "evaluate_sync", "is_async_evaluator"]

Evaluator = Callable[[tuple[Memory, ...], int], float | Awaitable[float]]


def is_async_evaluator(evaluate: Callable[..., Any]) -> bool:
    """True when ``evaluate`` is a coroutine function (or an object whose ``__call__`` is)."""
    return inspect.iscoroutinefunction(evaluate) or inspect.iscoroutinefunction(
        getattr(evaluate, "__call__", None)  # noqa: B004
    )


def _failure(request: EvaluationRequest, exc: BaseException) -> EvaluatorError:
    return EvaluatorError(
        f"evaluator raised {type(exc).__name__}: {exc} on coalition "
        f"{list(request.memory_ids)} (trial {request.trial})",
        coalition=request.memory_ids,
        trial=request.trial,
    )


def _call_sync(evaluate: Evaluator, request: EvaluationRequest) -> object:
    try:
        result = evaluate(request.memories, request.trial)
    except EvaluatorError:
        raise
    except Exception as exc:
        raise _failure(request, exc) from exc
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise EvaluatorError(
            "the evaluator returned an awaitable on the sync path: use aclear() "
            "(or an async-capable integration) with a coroutine evaluator",
            coalition=request.memory_ids,
            trial=request.trial,
        )
    return result


def _store(game: CoalitionGame, requests: Sequence[EvaluationRequest], results: Sequence[object]):
    grouped: dict[Coalition, list[float]] = defaultdict(list)
    for request, result in zip(requests, results, strict=True):
        grouped[request.coalition].append(game.record(request, result))
    for coalition, trial_scores in grouped.items():
        game.store(coalition, trial_scores)


def _call_threaded(
    evaluate: Evaluator, requests: Sequence[EvaluationRequest], workers: int
) -> list[object]:
    """Run ``requests`` on ``workers`` threads that pull from one shared queue (a few
    thread hand-offs per batch instead of one future per call); the first failure stops
    the workers from taking new requests and is raised."""
    results: list[object] = [None] * len(requests)
    pending = iter(range(len(requests)))
    failures: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if failures:
                    return
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = _call_sync(evaluate, requests[index])
            except BaseException as exc:
                with lock:
                    failures.append(exc)
                return

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="meclear") as pool:
        for future in [pool.submit(work) for _ in range(workers)]:
            future.result()
    if failures:
        raise failures[0]
    return results


def evaluate_sync(
    game: CoalitionGame,
    coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
    evaluate: Evaluator,
    max_concurrency: int,
    trials: int | None = None,
) -> None:
    """Bring ``coalitions`` to ``trials`` trials each (T by default), all in one batch, in
    worker threads up to ``max_concurrency``."""
    requests = game.pending(coalitions, trials)
    if not requests:
        return
    game.rounds += 1
    if max_concurrency <= 1 or len(requests) == 1:
        results = [_call_sync(evaluate, r) for r in requests]
    else:
        results = _call_threaded(evaluate, requests, min(max_concurrency, len(requests)))
    _store(game, requests, results)


async def evaluate_async(
    game: CoalitionGame,
    coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
    evaluate: Evaluator,
    max_concurrency: int,
    trials: int | None = None,
) -> None:
    """Bring ``coalitions`` to ``trials`` trials each (T by default), all in one batch,
    at most ``max_concurrency`` calls at once.

    A sync evaluator runs in worker threads. On any failure or cancellation every call
    still in flight is cancelled before the error propagates.
    """
    requests = game.pending(coalitions, trials)
    if not requests:
        return
    game.rounds += 1
    semaphore = asyncio.Semaphore(max_concurrency)
    run_in_thread = not is_async_evaluator(evaluate)

    async def call(request: EvaluationRequest) -> object:
        async with semaphore:
            if run_in_thread:
                return await asyncio.to_thread(_call_sync, evaluate, request)
            try:
                result = evaluate(request.memories, request.trial)
                if inspect.isawaitable(result):
                    result = await result
            except EvaluatorError:
                raise
            except Exception as exc:
                raise _failure(request, exc) from exc
            return result

    tasks = [asyncio.ensure_future(call(r)) for r in requests]
    try:
        results = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    _store(game, requests, results)
