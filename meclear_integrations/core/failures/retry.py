"""Retrying one evaluator call on transient errors (tenacity), within the run's budget.

The wait before retry n is the server's ``retry-after`` when it sent one (and
``RetryPolicy.honour_retry_after``), else exponential backoff with jitter. Retrying stops
at ``max_attempts``, when the requested wait exceeds ``max_retry_after``, when the wait
would pass the run's deadline, or when the call budget is spent; the last error is then
raised unchanged. ``sleep`` / ``asleep`` are injectable so tests never wait.

The loop is written once as a step flow (:meth:`CallRetrier.steps`, the house step driver
of :mod:`..concurrency.step_driver`): :meth:`~CallRetrier.call` and
:meth:`~CallRetrier.acall` drive it, and a flow that makes the attempts itself (the
evaluator's) runs it with ``yield from``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    wait_exponential_jitter,
)

from ..budget import RunBudget
from ..concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..config import RetryPolicy
from .faults import is_transient, is_unreadable_reply, retry_after

__all__ = ["AsyncSleep", "CallRetrier", "Sleep"]

T = TypeVar("T")
Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None]]


class CallRetrier:
    """Runs evaluator attempts under a :class:`RetryPolicy` and a :class:`RunBudget`.

    Args:
        policy: the retry policy.
        budget: the run's budget (every attempt is taken from it).
        sleep: replaces the backoff waits (sync).
        asleep: replaces the backoff waits (async).
    """

    def __init__(
        self,
        policy: RetryPolicy,
        budget: RunBudget,
        *,
        sleep: Sleep | None = None,
        asleep: AsyncSleep | None = None,
    ) -> None:
        self.policy = policy
        self.budget = budget
        self.sleep = sleep if sleep is not None else time.sleep
        self.asleep = asleep if asleep is not None else asyncio.sleep
        self._backoff = wait_exponential_jitter(
            multiplier=policy.initial_backoff,
            max=policy.max_backoff,
            exp_base=policy.multiplier,
            jitter=policy.jitter,
        )

    def _requested(self, state: RetryCallState) -> float | None:
        if not self.policy.honour_retry_after or state.outcome is None:
            return None
        exc = state.outcome.exception()
        return retry_after(exc) if exc is not None else None

    def _wait(self, state: RetryCallState) -> float:
        requested = self._requested(state)
        return requested if requested is not None else float(self._backoff(state))

    def _stop(self, state: RetryCallState) -> bool:
        if state.attempt_number >= self.policy.max_attempts:
            return True
        requested = self._requested(state)
        if requested is not None and requested > self.policy.max_retry_after:
            return True
        remaining = self.budget.remaining_seconds()
        if remaining is not None and state.upcoming_sleep >= remaining:
            return True
        return self.budget.exhausted()

    def _options(self) -> dict[str, object]:
        return {
            "stop": self._stop,
            "wait": self._wait,
            "retry": retry_if_exception(self._retryable_error),
            "reraise": True,
        }

    def _retryable_error(self, exc: BaseException) -> bool:
        """Transient errors, and unreadable replies when the policy says so."""
        return is_transient(exc) or (self.policy.retry_unreadable and is_unreadable_reply(exc))

    def _retryable(self, exc: BaseException) -> bool:
        return (
            self.policy.max_attempts > 1
            and isinstance(exc, Exception)
            and self._retryable_error(exc)
        )

    def steps(self, attempt: Callable[[], Steps[T]]) -> Steps[T]:
        """The retry loop as a step flow: ``attempt()``'s steps with retries.

        Each attempt is taken from the budget first. The first attempt runs outside
        tenacity (the common, successful case costs no retry machinery); a transient
        failure is replayed into tenacity as its attempt 1, so waits and stop rules see
        exactly the same sequence as a plain retry loop. A backoff wait is one step:
        ``sleep`` on the sync path, ``await asleep`` (cancellable) on the loop.

        Args:
            attempt: makes one attempt's flow.

        Returns:
            What the first successful attempt returns.

        Raises:
            BudgetExceededError: the budget ran out.
            Exception: the last attempt's error once retries are exhausted or it is permanent.
        """
        self.budget.take(retry=False)
        try:
            return (yield from attempt())
        except BaseException as exc:
            if not self._retryable(exc):
                raise
            replay: list[BaseException] = [exc]
        waits: list[float] = []  # tenacity's wait, taken as a step before the next round
        for round_ in Retrying(sleep=waits.append, **self._options()):  # type: ignore[arg-type]
            if waits:
                wait = waits.pop()
                yield Call(partial(self.sleep, wait), partial(self.asleep, wait))
            with round_:
                if replay:
                    raise replay.pop()
                self.budget.take(retry=True)
                return (yield from attempt())
        raise AssertionError("unreachable")  # pragma: no cover

    def call(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` with retries on the calling thread (:meth:`steps`).

        Args:
            attempt: one attempt of the call.

        Returns:
            What the first successful attempt returns.

        Raises:
            BudgetExceededError: the budget ran out.
            Exception: the last attempt's error once retries are exhausted or it is permanent.
        """
        result: T = run_steps(self.steps(partial(_once, attempt)))
        return result

    async def acall(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Async :meth:`call`: ``await attempt()``, the backoff waits ``await asleep(...)``."""
        result: T = await arun_steps(self.steps(partial(_once, attempt)))
        return result


def _once(attempt: Callable[[], object]) -> Steps[Any]:
    """One attempt as a step: ``attempt()``, awaited on the async path."""
    return (yield Call.on_both(attempt))
