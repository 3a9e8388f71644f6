"""One batch of blocking evaluator calls on the sync path: inline or on daemon threads.

A model call (hundreds of milliseconds) gains everything from running the calls of a batch
concurrently; an in-process evaluator (the simulated world, a cache) answers in
microseconds and only loses to a thread hand-off. The :class:`Pace` of a run remembers
which kind its evaluator is:

- unknown (the run's first batch): the first call runs inline while a starter job on a
  worker waits :data:`PROBE_SECONDS` for it. A call still running then is slow: the
  starter starts the other workers, so a slow evaluator gets full concurrency from its
  first call (delayed by at most :data:`PROBE_SECONDS`, once per run). A first call that
  returned within :data:`INLINE_BELOW_SECONDS` makes the evaluator *fast*: the rest of
  the batch runs inline, with no thread hand-off on the caller's path.
- fast: calls run inline; a call slower than :data:`SLOW_CALL_SECONDS` (a cache miss)
  makes the evaluator *slow* and sends the rest of the batch to threads.
- slow: every batch goes to threads.

A run with a deadline always uses threads, so that the caller can stop waiting at the
deadline. Threaded calls are pulled from one shared queue by up to ``workers`` daemon
threads (:mod:`..concurrency.workers`); the caller's thread waits on their completions, reports
progress (``on_done``) from its own thread, and on the first failure stops the workers
from taking new requests and raises it once every worker has stopped. At the deadline
the batch is abandoned: the budget is closed, so workers take nothing new and the calls
in flight start no further model call; they finish in their daemon threads, discarded.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from ..budget import RunBudget
from ..concurrency.workers import submit
from ..errors import BudgetExceededError
from ..game import EvaluationRequest

__all__ = [
    "INLINE_BELOW_SECONDS",
    "PROBE_SECONDS",
    "SLOW_CALL_SECONDS",
    "Pace",
    "run_batch",
    "time_exceeded",
]

INLINE_BELOW_SECONDS = 0.002
"""A first call faster than this marks the run's evaluator as fast (calls run inline);
far above an in-process evaluator's call, far below a model call's."""

PROBE_SECONDS = 0.002
"""How long the run's first call may run alone before the other workers start."""

SLOW_CALL_SECONDS = 0.005
"""An inline call slower than this marks the evaluator as slow (calls go to threads)."""

Call = Callable[[EvaluationRequest], object]
OnDone = Callable[[int], None]


@dataclass(slots=True)
class Pace:
    """How fast a run's sync evaluator answers: decides inline calls or threads.

    Args:
        fast: True once the first call was fast, False once a call was slow, None before.
    """

    fast: bool | None = None


def time_exceeded(budget: RunBudget) -> BudgetExceededError:
    """The error of a batch stopped at the run's deadline.

    Args:
        budget: the run's budget.

    Returns:
        The error to raise.
    """
    return BudgetExceededError(
        f"max_wall_seconds exhausted after {budget.clock() - budget.started:.3f}s",
        reason="time_budget",
    )


def _noop(done: int) -> None:
    return None


def run_batch(
    call: Call,
    requests: Sequence[EvaluationRequest],
    *,
    budget: RunBudget,
    workers: int,
    pace: Pace | None = None,
    on_done: OnDone | None = None,
) -> list[object]:
    """Results of ``call(r)`` for every request, in order (inline or threaded, see above).

    Args:
        call: one retried evaluator call.
        requests: the batch.
        budget: the run's budget (its deadline bounds the wait).
        workers: calls in flight at once.
        pace: the run's evaluator speed (None: a fresh one).
        on_done: called on the caller's thread with the calls done so far, after each.

    Returns:
        The results, in request order.

    Raises:
        BudgetExceededError: the deadline passed.
        BaseException: the first call's failure.
    """
    pace = pace if pace is not None else Pace()
    report = on_done if on_done is not None else _noop
    workers = max(1, min(workers, len(requests)))
    if budget.deadline is None and (workers == 1 or pace.fast):
        return _inline(call, requests, budget, workers, pace, report)
    return _Threaded(call, requests, budget, report).run(workers, probe=pace)


def _inline(
    call: Call,
    requests: Sequence[EvaluationRequest],
    budget: RunBudget,
    workers: int,
    pace: Pace,
    report: OnDone,
) -> list[object]:
    """Calls one after another; a slow one sends the rest to threads."""
    results: list[object] = []
    for request in requests:
        started = time.perf_counter()
        results.append(call(request))
        report(len(results))
        rest = requests[len(results) :]
        if workers > 1 and rest and time.perf_counter() - started > SLOW_CALL_SECONDS:
            pace.fast = False
            threaded = _Threaded(call, rest, budget, lambda n: report(len(results) + n))
            return [*results, *threaded.run(workers, probe=pace)]
    return results


class _Threaded:
    """The threaded run of one batch: workers pull requests, the caller collects."""

    def __init__(
        self,
        call: Call,
        requests: Sequence[EvaluationRequest],
        budget: RunBudget,
        report: OnDone,
    ) -> None:
        self.call = call
        self.requests = requests
        self.budget = budget
        self.report = report
        self.results: list[object] = [None] * len(requests)
        self.done = 0
        self._pending = iter(range(len(requests)))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._running = 0
        self._idle = threading.Condition(self._lock)
        self._decided = False
        """Whether the first call's pace is settled (by the caller or the starter)."""
        self._completions: queue.SimpleQueue[tuple[int, bool, object, float]] = queue.SimpleQueue()

    # ------------------------------------------------------------- worker side
    def _take(self) -> int | None:
        with self._lock:
            return None if self._stop.is_set() else next(self._pending, None)

    def _execute(self, index: int) -> bool:
        started = time.perf_counter()
        try:
            value: object = self.call(self.requests[index])
        except BaseException as exc:  # handed to the caller's thread
            self._stop.set()
            self._completions.put((index, False, exc, time.perf_counter() - started))
            return False
        self._completions.put((index, True, value, time.perf_counter() - started))
        return True

    def _start(self, job: Callable[[], None]) -> None:
        with self._lock:
            self._running += 1

        def wrapped() -> None:
            try:
                job()
            finally:
                with self._lock:
                    self._running -= 1
                    if self._running == 0:
                        self._idle.notify_all()

        # Each worker runs in a copy of the caller's context, so context variables
        # (tracing spans, callback managers) are seen by the evaluator as on the caller's
        # thread.
        submit(wrapped)

    def _work(self) -> None:
        while (index := self._take()) is not None and self._execute(index):
            pass

    # ------------------------------------------------------------- caller side
    def run(self, workers: int, *, probe: Pace) -> list[object]:
        """Run the batch on up to ``workers`` threads; probe the pace when it is unknown."""
        try:
            if probe.fast is None and self.budget.deadline is None:
                return self._probe(workers, probe)
            for _ in range(workers):
                self._start(self._work)
            return self._collect()
        except BaseException:
            self._stop.set()  # whatever stopped the caller: workers take nothing new
            raise

    def _probe(self, workers: int, pace: Pace) -> list[object]:
        """The run's first call inline, the other workers started if it is slow.

        A starter job on a worker waits :data:`PROBE_SECONDS` for the first call; if the
        call is still running then, it starts ``workers - 1`` workers on the rest. The
        caller never waits for a thread hand-off when its evaluator is fast.
        """
        first = self._take()
        assert first is not None
        returned = threading.Event()

        def starter() -> None:
            if returned.wait(PROBE_SECONDS):
                return
            with self._lock:
                if self._decided:
                    return
                self._decided = True
            for _ in range(workers - 1):
                self._start(self._work)

        submit(starter)
        try:
            self._execute(first)
        finally:
            returned.set()
        with self._lock:
            started_by_starter = self._decided
            self._decided = True
        index, ok, value, took = self._completions.get()
        self._receive(index, ok, value)
        rest = len(self.requests) - 1
        if started_by_starter or took >= INLINE_BELOW_SECONDS:
            pace.fast = False
            for _ in range(1 if started_by_starter else min(workers, rest)):
                if rest:
                    self._start(self._work)
            return self._collect()
        pace.fast = True
        tail = _inline(self.call, self.requests[1:], self.budget, workers, pace, self._after)
        return [self.results[0], *tail]

    def _after(self, done: int) -> None:
        self.report(1 + done)

    def _receive(self, index: int, ok: bool, value: object) -> None:
        if not ok:
            self._fail(value)
        self.results[index] = value
        self.done += 1
        self.report(self.done)

    def _fail(self, error: object) -> NoReturn:
        self._stop.set()
        with self._lock:
            stopped = self._idle.wait_for(lambda: self._running == 0, self._remaining())
        if not stopped:
            self._abandon()
        assert isinstance(error, BaseException)
        raise error

    def _remaining(self) -> float | None:
        remaining = self.budget.remaining_seconds()
        return None if remaining is None else max(0.0, remaining)

    def _abandon(self) -> NoReturn:
        self._stop.set()
        self.budget.close("time_budget")
        raise time_exceeded(self.budget)

    def _collect(self) -> list[object]:
        while self.done < len(self.requests):
            try:
                index, ok, value, _ = self._completions.get(timeout=self._remaining())
            except queue.Empty:
                self._abandon()
            self._receive(index, ok, value)
        return self.results
