"""Answer-level deduplication for evaluators (agent and judge calls), sync and async.

An evaluator v^(S) is one agent run on the coalition plus one judgement of its answer.
Within one query many coalitions produce the same answer (the reference, a fault's answer,
an abstention), so a reference-based judge needs to see each distinct answer once; and a
deterministic agent (temperature 0, or a cache the user enables) gives the same answer to
the same prompt in every trial. :class:`AnswerCache` holds both caches for one query:

    cache = AnswerCache(deterministic=True)          # one per query
    answer = cache.answer(prompt, trial, lambda: llm(prompt))
    score = cache.judge(answer, lambda: judge(query, reference, answer))

Calls are single-flight: concurrent requests for the same key wait for the first one
instead of calling the model again; failures are not cached. Judges whose verdict depends
on more than the answer (e.g. a reference-free judge that reads the memories) must put that
into the key: ``cache.judge((answer, prompt), ...)``. :func:`dedup_evaluator` builds an
engine evaluator from an ``answer`` and a ``judge`` function with these caches.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from ..answers import note_answer
from ..concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..memory import Memory

__all__ = [
    "AnswerCache",
    "DedupStats",
    "SingleFlightCache",
    "adedup_evaluator",
    "dedup_evaluator",
    "render_prompt",
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
        >>> from meclear_integrations.core.judging.dedup import dedup_evaluator
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
