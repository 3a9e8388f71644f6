"""Running the caller's evaluator on coalitions: sync (optionally threaded) and async.

An evaluator is ``evaluate(coalition: tuple[Memory, ...], trial: int) -> float`` or a
coroutine function with that signature: one task-agent run on the coalition plus one
judgement, a score in [0, 1].

Every call goes through a :class:`~..failures.retry.CallRetrier` (transient errors retried with
backoff, every attempt taken from the run's :class:`~..budget.RunBudget`). A batch is all
or nothing: scores reach the game only when every call of the batch succeeded, so a
failed, timed-out or cancelled batch leaves no half-written state. Failed calls are
appended to ``failures`` (memory ids, trial, redacted error) for the report. An
evaluator's exception is wrapped in an :class:`~..errors.EvaluatorError` (redacted message)
whose ``__cause__`` chain is redacted too (:func:`~..failures.faults.redact_chain`), so no secret
reaches a log or trace through the chain.

Blocking calls run on daemon threads (:mod:`..concurrency.workers`), never on the event loop and
never on threads that anything joins: an abandoned or hung call cannot hold the caller past the
run's deadline nor keep the interpreter from exiting. While an evaluator call runs, the
run's budget is its call gate: once the deadline passes or the run is stopped, the model
calls the package makes inside it (agent, judge) refuse to start.

Both paths are written once as step flows run by :mod:`..concurrency.step_driver`
(``run_steps`` / ``arun_steps``): a batch (``_batch``, the batch itself one step), a retried
call (``_Calls.steps``) and one attempt (``_evaluation``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import Any

from ..answers import AnswerNote, answer_note
from ..budget import RunBudget
from ..concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..concurrency.workers import call_gate, in_worker
from ..config import RetryPolicy
from ..errors import BudgetExceededError, EvaluatorError, RedactedError
from ..failures.faults import exception_chain, is_transient, redact_chain
from ..failures.kind import failure_kind, failure_url, is_not_api_reply
from ..failures.retry import CallRetrier
from ..game import Coalition, CoalitionGame, EvaluationRequest
from ..memory import Memory
from ..redaction import redact
from ..report import FailedCoalition
from .dispatch import Pace, run_batch, time_exceeded

__all__ = ["Evaluator", "evaluate_async", "evaluate_sync", "is_async_evaluator"]

Evaluator = Callable[[tuple[Memory, ...], int], float | Awaitable[float]]
"""Scores a coalition: ``evaluate(memories, trial) -> float`` in [0, 1], sync or async."""


def is_async_evaluator(evaluate: Callable[..., Any]) -> bool:
    """True when ``evaluate`` is a coroutine function (or an object whose ``__call__`` is).

    Args:
        evaluate: an evaluator.

    Returns:
        True for coroutine evaluators.
    """
    return inspect.iscoroutinefunction(evaluate) or inspect.iscoroutinefunction(
        getattr(evaluate, "__call__", None)  # noqa: B004
    )


def _failure(request: EvaluationRequest, exc: BaseException) -> EvaluatorError:
    what = str(exc) if isinstance(exc, RedactedError) else f"{type(exc).__name__}: {exc}"
    return EvaluatorError(
        f"evaluator raised {redact(what)[:1000]} on coalition "
        f"{list(request.memory_ids)} (trial {request.trial})",
        coalition=request.memory_ids,
        trial=request.trial,
    )


def _root(exc: BaseException) -> BaseException:
    """The original exception behind the engine's wrapper."""
    return exc.__cause__ if isinstance(exc, EvaluatorError) and exc.__cause__ else exc


def failed_call(request: EvaluationRequest, exc: BaseException, attempts: int) -> FailedCoalition:
    """The report entry of one failed evaluator call (error text redacted).

    Args:
        request: the failed evaluation.
        exc: what it raised.
        attempts: attempts made.

    Returns:
        The entry.
    """
    root = _root(exc)
    error = redact(str(root))[:500]
    url = failure_url(exc) if is_not_api_reply(exc) else None
    if url is not None and url not in error:  # a web page: say where it came from
        error = f"{error[:280]} (from {url})"
    return FailedCoalition(
        memory_ids=list(request.memory_ids),
        trial=request.trial,
        error_type=getattr(root, "original_type", None) or type(root).__name__,
        error=error,
        transient=any(is_transient(e) for e in exception_chain(exc)),
        attempts=attempts,
        kind=failure_kind(exc),
    )


class _Refused:
    """A sync evaluate call's awaitable, refused once outside the error handling."""


_REFUSED = _Refused()


def _refused(awaitable: Awaitable[object]) -> _Refused:
    """The sync path's answer to an awaitable result: closed (a coroutine) and refused."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    return _REFUSED


def _evaluation(evaluate: Evaluator, request: EvaluationRequest) -> Steps[object]:
    """One attempt of one evaluator call, as a step flow (either driver).

    The evaluator is called on the driver's thread (the loop, on the async path); an
    awaitable it returns is one step: awaited on the loop, refused on the sync path (it
    needs ``aclear()``). The call's errors are wrapped in a redacted
    :class:`EvaluatorError`, raised outside the handler (no unredacted ``__context__``);
    the run's gate refusing a model call (:class:`BudgetExceededError`) passes unchanged.
    """
    failure: BaseException | None = None
    try:
        result: object = evaluate(request.memories, request.trial)
        if inspect.isawaitable(result):
            awaitable = result
            result = yield Call(partial(_refused, awaitable), lambda: awaitable)
    except BudgetExceededError:
        raise  # the run's gate refused a model call: the deadline, not the evaluator
    except EvaluatorError as exc:
        failure = redact_chain(exc)
    except Exception as exc:
        failure = _failure(request, exc)
        failure.__cause__ = redact_chain(exc)
    if failure is not None:  # raised outside the handler: no unredacted __context__
        raise failure
    if result is _REFUSED:
        raise EvaluatorError(
            "the evaluator returned an awaitable on the sync path: use aclear() "
            "(or an async-capable integration) with a coroutine evaluator",
            coalition=request.memory_ids,
            trial=request.trial,
        )
    return result


def _store(
    game: CoalitionGame, requests: Sequence[EvaluationRequest], results: Sequence[object]
) -> None:
    grouped: dict[Coalition, list[float]] = defaultdict(list)
    answers: dict[Coalition, list[str | None]] = defaultdict(list)
    for request, result in zip(requests, results, strict=True):
        note = result if isinstance(result, _Noted) else None
        value = note.value if note is not None else result
        grouped[request.coalition].append(game.record(request, value))
        answers[request.coalition].append(note.note.answer if note is not None else None)
        if note is not None and note.note.same is not None:
            game.same = note.note.same
    for coalition, trial_scores in grouped.items():
        game.store(coalition, trial_scores, answers[coalition])


class _Noted:
    """An evaluator's result and the answer it reported (``core.answers``)."""

    __slots__ = ("note", "value")

    def __init__(self, value: object, note: AnswerNote) -> None:
        self.value = value
        self.note = note


class _Calls:
    """The retried calls of one batch and the failures they produced."""

    def __init__(
        self, evaluate: Evaluator, retrier: CallRetrier, failures: list[FailedCoalition]
    ) -> None:
        self.evaluate = evaluate
        self.retrier = retrier
        self.failures: list[FailedCoalition] = failures
        self._lock = threading.Lock()

    def _failed(self, request: EvaluationRequest, exc: BaseException, attempts: int) -> None:
        if isinstance(exc, BudgetExceededError) and attempts == 0:
            return  # never started: not a failure of the coalition
        with self._lock:
            self.failures.append(failed_call(request, exc, attempts))

    def sync(self, request: EvaluationRequest) -> object:
        """One retried call on the calling thread (:meth:`steps`)."""
        return run_steps(self.steps(request, ()))

    async def asynchronous(self, request: EvaluationRequest) -> object:
        """One retried call on the loop (:meth:`steps`); a cancellation is the task's."""
        return await arun_steps(self.steps(request, (asyncio.CancelledError,)))

    def steps(
        self, request: EvaluationRequest, unrecorded: tuple[type[BaseException], ...]
    ) -> Steps[object]:
        """One call with its retries, under the run's call gate, with its answer noted.

        A failure is recorded (``failures``) and raised; ``unrecorded`` errors are only
        raised (on the loop, a cancellation is the task's, not the call's).
        """
        attempts = 0

        def attempt() -> Steps[object]:
            nonlocal attempts
            attempts += 1
            return _evaluation(self.evaluate, request)

        try:
            with call_gate(self.retrier.budget), answer_note() as note:
                return _Noted((yield from self.retrier.steps(attempt)), note)
        except unrecorded:
            raise
        except BaseException as exc:
            self._failed(request, exc, attempts)
            raise


def _default_retrier(retrier: CallRetrier | None) -> CallRetrier:
    return retrier if retrier is not None else CallRetrier(RetryPolicy(max_attempts=1), RunBudget())


def evaluate_sync(
    game: CoalitionGame,
    coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
    evaluate: Evaluator,
    max_concurrency: int,
    trials: int | None = None,
    *,
    retrier: CallRetrier | None = None,
    failures: list[FailedCoalition] | None = None,
    pace: Pace | None = None,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[int], None] | None = None,
) -> None:
    """Evaluate ``coalitions`` up to ``trials`` trials each (sync).

    Bring ``coalitions`` to ``trials`` trials each (T by default), all in one batch, up to
    ``max_concurrency`` calls at once (:func:`~.dispatch.run_batch`: a slow evaluator on
    daemon worker threads from its first call, a fast one inline). When the run has a
    deadline the batch always goes to threads (never inline), so that the caller's thread
    can stop waiting at the deadline; calls already in flight then finish in their
    threads, discarded. ``on_start`` / ``on_done`` are called on the caller's thread, with
    the batch's size before the first call and with the calls done after each call.

    Args:
        game: the coalition table (filled in place).
        coalitions: coalitions, or (coalition, trials) pairs.
        evaluate: the evaluator.
        max_concurrency: evaluator calls in flight at once.
        trials: trials each coalition needs (None: T, or the pair's).
        retrier: retries and budget of the run (None: one attempt, no budget).
        failures: collects the calls that failed.
        pace: the run's evaluator speed, kept across its batches (None: a fresh one).
        on_start: called with the number of calls of the batch before the first one.
        on_done: called with the number of calls done, after each call.

    Raises:
        EvaluatorError: a call failed after its retries.
        BudgetExceededError: the run's budget ran out.
    """
    # the arguments as given: nothing is assigned before this line
    run_steps(_batch(**locals()))


async def _settle(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel every unfinished task and wait until all have finished."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _failed_task(task: asyncio.Future[Any]) -> bool:
    return task.done() and not task.cancelled() and task.exception() is not None


async def _wait(
    tasks: Sequence[asyncio.Future[Any]], on_done: Callable[[int], Awaitable[None]] | None
) -> None:
    """Wait until every task is done or one failed; report the calls done as they finish."""
    pending: set[asyncio.Future[Any]] = set(tasks)
    while pending:
        finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if any(_failed_task(t) for t in finished):
            return
        if on_done is not None:  # one count per call, as on the sync path
            for done in range(len(tasks) - len(pending) - len(finished), len(tasks) - len(pending)):
                await on_done(done + 1)


async def evaluate_async(
    game: CoalitionGame,
    coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
    evaluate: Evaluator,
    max_concurrency: int,
    trials: int | None = None,
    *,
    retrier: CallRetrier | None = None,
    failures: list[FailedCoalition] | None = None,
    on_start: Callable[[int], Awaitable[None]] | None = None,
    on_done: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    """Evaluate ``coalitions`` up to ``trials`` trials each (async).

    The arguments, result and errors of :func:`evaluate_sync` (without ``pace``), the same
    flow; ``on_start`` and ``on_done`` are awaited on the caller's task, ``on_done`` whenever
    calls finish.

    A sync evaluator runs in daemon worker threads (:func:`~..concurrency.workers.in_worker`),
    never on the loop. On any failure, the deadline, or cancellation every call still in flight
    is cancelled and awaited before the error propagates, so no task of the batch outlives
    it; a sync call abandoned that way finishes in its daemon thread, starts no further
    model call (the run's budget is closed) and is discarded.
    """
    # the arguments as given: nothing is assigned before this line
    await arun_steps(_batch(pace=None, **locals()))


def _batch(
    *,
    game: CoalitionGame,
    coalitions: Iterable[Coalition] | Iterable[tuple[Coalition, int]],
    evaluate: Evaluator,
    max_concurrency: int,
    trials: int | None,
    retrier: CallRetrier | None,
    failures: list[FailedCoalition] | None,
    pace: Pace | None,
    on_start: Callable[[int], Any] | None,
    on_done: Callable[[int], Any] | None,
) -> Steps[None]:
    """One batch of :func:`evaluate_sync` / :func:`evaluate_async`, as a step flow.

    The batch itself is one step: :func:`~.dispatch.run_batch` on the calling thread, the
    tasks of :func:`_gather` on the loop. ``on_start`` returns None on the sync path and
    a coroutine on the async one (awaited).
    """
    requests = game.pending(coalitions, trials)
    if not requests:
        return
    retrier = _default_retrier(retrier)
    retrier.budget.ensure(len(requests))
    game.rounds += 1
    calls = _Calls(evaluate, retrier, failures if failures is not None else [])
    if on_start is not None:
        yield Call.on_both(partial(on_start, len(requests)))
    results = yield Call(
        partial(
            run_batch,
            calls.sync,
            requests,
            budget=retrier.budget,
            workers=max_concurrency,
            pace=pace,
            on_done=on_done,
        ),
        partial(_gather, calls, requests, max_concurrency, on_done),
    )
    _store(game, requests, results)


async def _gather(
    calls: _Calls,
    requests: Sequence[EvaluationRequest],
    max_concurrency: int,
    on_done: Callable[[int], Awaitable[None]] | None,
) -> list[object]:
    """The batch's calls as tasks on the loop, at most ``max_concurrency`` at once.

    Every call still in flight is cancelled and awaited before an error propagates.
    """
    budget = calls.retrier.budget
    semaphore = asyncio.Semaphore(max_concurrency)
    run_in_thread = not is_async_evaluator(calls.evaluate)

    async def call(request: EvaluationRequest) -> object:
        async with semaphore:
            if run_in_thread:
                return await in_worker(calls.sync, request)
            return await calls.asynchronous(request)

    tasks = [asyncio.ensure_future(call(r)) for r in requests]
    try:
        async with asyncio.timeout(budget.remaining_seconds()):
            await _wait(tasks, on_done)
    except TimeoutError:
        budget.close("time_budget")
        await _settle(tasks)
        raise time_exceeded(budget) from None
    except BaseException:
        budget.close("cancelled")
        await _settle(tasks)
        raise
    failed = [t for t in tasks if _failed_task(t)]
    if failed:
        await _settle(tasks)
        raise failed[0].exception()  # type: ignore[misc]
    return [t.result() for t in tasks]
