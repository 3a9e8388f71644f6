"""The evaluator's calls: each distinct answer once, a sync batch inline or on threads.

Two halves of one concern, the cost of the model calls behind v^(S): deduplication (each
distinct prompt and answer reaches the model once) and the sync batch (the calls of one
batch run inline or on daemon threads, as the evaluator's pace calls for).

**Deduplication.** An evaluator v^(S) is one agent run on the coalition plus one judgement
of its answer. Within one query many coalitions produce the same answer (the reference, a
fault's answer, an abstention), so a reference-based judge needs to see each distinct answer
once; and a deterministic agent (temperature 0, or a cache the user enables) gives the same
answer to the same prompt in every trial. :class:`AnswerCache` holds both caches for one
query:

    cache = AnswerCache(deterministic=True)          # one per query
    answer = cache.answer(prompt, trial, lambda: llm(prompt))
    score = cache.judge(answer, lambda: judge(query, reference, answer))

Calls are single-flight: concurrent requests for the same key wait for the first one instead
of calling the model again; failures are not cached. Judges whose verdict depends on more
than the answer (e.g. a reference-free judge that reads the memories) must put that into the
key: ``cache.judge((answer, prompt), ...)``. :func:`dedup_evaluator` builds an engine
evaluator from an ``answer`` and a ``judge`` function with these caches.

**One batch** of blocking evaluator calls on the sync path runs inline or on daemon
threads. A model call (hundreds of milliseconds) gains everything from running the calls
of a batch concurrently; an in-process evaluator (the simulated world, a cache) answers in
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
threads (:mod:`..concurrency.workers`); the caller's thread waits on their completions,
reports progress (``on_done``) from its own thread, and on the first failure stops the workers
from taking new requests and raises it once every worker has stopped. At the deadline
the batch is abandoned: the budget is closed, so workers take nothing new and the calls
in flight start no further model call; they finish in their daemon threads, discarded.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, NoReturn, TypeVar

from ..answers import note_answer
from ..budget import RunBudget
from ..concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..concurrency.workers import submit
from ..errors import BudgetExceededError
from ..game import EvaluationRequest
from ..memory import Memory

__all__ = [
    "INLINE_BELOW_SECONDS",
    "PROBE_SECONDS",
    "SLOW_CALL_SECONDS",
    "AnswerCache",
    "DedupStats",
    "Pace",
    "SingleFlightCache",
    "adedup_evaluator",
    "dedup_evaluator",
    "render_prompt",
    "run_batch",
    "time_exceeded",
]


V = TypeVar("V")


class SingleFlightCache(Generic[V]):
    """key -> value memo: each key computed once (sync or async), concurrent callers wait."""

    def __init__(self) -> None:
        self._values: dict[Hashable, V] = {}
        self._threads: dict[Hashable, Future[V]] = {}
        self._tasks: dict[Hashable, asyncio.Future[V]] = {}
        self._lock = threading.Lock()
        self.calls = 0
        """Computations run (cache misses)."""
        self.hits = 0
        """Requests answered without a computation."""

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value for ``key``, computing it with ``compute()`` at most once.

        Args:
            key: the cache key.
            compute: produces the value on a miss.

        Returns:
            The cached or computed value.
        """
        value: V = run_steps(self._flight(key, compute, self._threads, Future))
        return value

    async def aget(self, key: Hashable, compute: Callable[[], Awaitable[V]]) -> V:
        """Async :meth:`get`: ``await compute()`` at most once per key on this event loop.

        Args:
            key: the cache key.
            compute: produces the value on a miss (awaited).

        Returns:
            The cached or computed value.
        """
        value: V = await arun_steps(self._flight(key, compute, self._tasks, _loop_future))
        return value

    def _flight(
        self,
        key: Hashable,
        compute: Callable[[], object],
        flights: dict[Hashable, Any],
        new: Callable[[], Any],
    ) -> Steps[V]:
        """:meth:`get` / :meth:`aget` as one step flow.

        ``flights`` holds the keys being computed, each with the future its waiters wait
        on (``concurrent.futures`` on the sync path, the loop's on the async one): a waiter
        blocks on it (sync) or awaits it shielded (async); the owner computes the value
        (``compute()``, awaited on the async path) and settles the future.
        """
        with self._lock:
            if key in self._values:
                self.hits += 1
                return self._values[key]
            pending = flights.get(key)
            owner = pending is None
            if owner:
                pending = flights[key] = new()
                self.calls += 1
            else:
                self.hits += 1
        assert pending is not None
        if not owner:
            waited: V = yield Call(pending.result, partial(asyncio.shield, pending))
            return waited
        try:
            value: V = yield Call.on_both(compute)
        except BaseException as exc:
            with self._lock:
                del flights[key]
            if not pending.done():
                pending.set_exception(exc)
                pending.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        with self._lock:
            self._values[key] = value
            del flights[key]
        pending.set_result(value)
        return value


def _loop_future() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


@dataclass(frozen=True)
class DedupStats:
    """Model calls made and saved for one query."""

    agent_calls: int
    agent_hits: int
    judge_calls: int
    judge_hits: int

    @property
    def model_calls(self) -> int:
        """Agent plus judge calls actually made."""
        return self.agent_calls + self.judge_calls


class AnswerCache:
    """Per-query agent and judge caches (see the module docstring).

    ``deterministic=True`` keys answers by prompt alone (every trial of a prompt gets the
    first answer); otherwise by (prompt, trial), which only removes exact repeats.
    ``normalize`` maps an answer to its judge key (default: strip surrounding space).

    Args:
        deterministic: key answers by prompt alone (a temperature-0 agent).
        normalize: an answer -> its judge key (default: ``str.strip``).

    Example:
        >>> from meclear_integrations.core import AnswerCache
        >>> cache = AnswerCache(deterministic=True)
        >>> cache.answer("prompt", 0, lambda: "Paris"), cache.answer("prompt", 1, lambda: "Rome")
        ('Paris', 'Paris')
    """

    def __init__(
        self, *, deterministic: bool = False, normalize: Callable[[str], str] | None = None
    ) -> None:
        self.deterministic = deterministic
        self.normalize = normalize if normalize is not None else str.strip
        self.answers: SingleFlightCache[str] = SingleFlightCache()
        self.judgements: SingleFlightCache[float] = SingleFlightCache()

    def _answer_key(self, prompt: str, trial: int) -> Hashable:
        return prompt if self.deterministic else (prompt, trial)

    def _judge_key(self, key: Hashable) -> Hashable:
        return self.normalize(key) if isinstance(key, str) else key

    def answer(self, prompt: str, trial: int, call: Callable[[], str]) -> str:
        """The agent's answer for ``(prompt, trial)``, calling the model only on a miss.

        Args:
            prompt: the rendered prompt.
            trial: the trial index (trials are cached separately).
            call: produces the answer on a miss.

        Returns:
            The cached or fresh answer.
        """
        return self.answers.get(self._answer_key(prompt, trial), call)

    async def aanswer(self, prompt: str, trial: int, call: Callable[[], Awaitable[str]]) -> str:
        """The async :meth:`answer`; concurrent misses of one key share one call.

        Args:
            prompt: the rendered prompt.
            trial: the trial index.
            call: produces the answer on a miss.

        Returns:
            The cached or fresh answer.
        """
        return await self.answers.aget(self._answer_key(prompt, trial), call)

    def judge(self, key: Hashable, call: Callable[[], float]) -> float:
        """The judgement for ``key`` (an answer, or a tuple with whatever else it reads).

        Args:
            key: what the verdict depends on.
            call: produces the verdict on a miss.

        Returns:
            The cached or fresh score.
        """
        return self.judgements.get(self._judge_key(key), call)

    async def ajudge(self, key: Hashable, call: Callable[[], Awaitable[float]]) -> float:
        """The async judge verdict for ``key``; concurrent misses share one call.

        Args:
            key: what the verdict depends on.
            call: produces the verdict on a miss.

        Returns:
            The cached or fresh score.
        """
        return await self.judgements.aget(self._judge_key(key), call)

    @property
    def stats(self) -> DedupStats:
        """Model calls made and saved so far."""
        return DedupStats(
            agent_calls=self.answers.calls,
            agent_hits=self.answers.hits,
            judge_calls=self.judgements.calls,
            judge_hits=self.judgements.hits,
        )


def render_prompt(coalition: tuple[Memory, ...]) -> str:
    """A plain rendering of a coalition, the default cache key.

    A plain rendering of a coalition (memory texts in retrieval order) used as the
    agent cache key when the caller gives no prompt renderer.

    Args:
        coalition: the memories shown to the agent.

    Returns:
        ``[id] content`` per memory, one per line.
    """
    return "\n".join(f"[{m.id}] {m.content}" for m in coalition)


def dedup_evaluator(
    answer: Callable[[tuple[Memory, ...], int], str],
    judge: Callable[[str], float],
    cache: AnswerCache,
    *,
    prompt: Callable[[tuple[Memory, ...]], str] = render_prompt,
) -> Callable[[tuple[Memory, ...], int], float]:
    """``evaluate(coalition, trial) = judge(answer(coalition, trial))`` through ``cache``.

    The answer is reported to the engine (``core.answers.note_answer``), so the checks that
    read answers (the cannot-answer and unexplained stops, answer groups) apply.

    Args:
        answer: ``answer(coalition, trial) -> str``, the agent.
        judge: ``judge(answer) -> score``.
        cache: the shared answer and verdict cache.
        prompt: renders a coalition as the agent's cache key (default:
            :func:`render_prompt`).

    Returns:
        An evaluator for :meth:`MeClearEngine.clear`.

    Example:
        >>> from meclear_integrations.core import AnswerCache, Memory
        >>> from meclear_integrations.core.judging.dispatch import dedup_evaluator
        >>> cache = AnswerCache(deterministic=True)
        >>> evaluate = dedup_evaluator(lambda c, t: "Paris", lambda a: 1.0, cache)
        >>> evaluate((Memory(id="a", content="x"),), 0)
        1.0
    """

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        text = cache.answer(prompt(coalition), trial, lambda: answer(coalition, trial))
        note_answer(text)  # the engine's answer-based checks read it (core.answers)
        return cache.judge(text, lambda: judge(text))

    return evaluate


def adedup_evaluator(
    answer: Callable[[tuple[Memory, ...], int], Awaitable[str]],
    judge: Callable[[str], Awaitable[float]],
    cache: AnswerCache,
    *,
    prompt: Callable[[tuple[Memory, ...]], str] = render_prompt,
) -> Callable[[tuple[Memory, ...], int], Awaitable[float]]:
    """Async :func:`dedup_evaluator` (coroutine ``answer`` and ``judge``).

    Args:
        answer: ``async answer(coalition, trial) -> str``, the agent.
        judge: ``async judge(answer) -> score``.
        cache: the shared answer and verdict cache.
        prompt: renders a coalition as the agent's cache key.

    Returns:
        An async evaluator for :meth:`MeClearEngine.aclear`.
    """

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        text = await cache.aanswer(prompt(coalition), trial, lambda: answer(coalition, trial))
        note_answer(text)  # the engine's answer-based checks read it (core.answers)
        return await cache.ajudge(text, lambda: judge(text))

    return evaluate


INLINE_BELOW_SECONDS = 0.002
"""A first call faster than this marks the run's evaluator as fast (calls run inline);
far above an in-process evaluator's call, far below a model call's."""

PROBE_SECONDS = 0.002
"""How long the run's first call may run alone before the other workers start."""

SLOW_CALL_SECONDS = 0.005
"""An inline call slower than this marks the evaluator as slow (calls go to threads)."""

RequestCall = Callable[[EvaluationRequest], object]
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
    call: RequestCall,
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
    call: RequestCall,
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
        call: RequestCall,
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
