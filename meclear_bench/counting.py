"""A counting, caching layer over a case evaluator: every method pays the same way.

Cost is measured outside the methods: the runner hands each method a fresh
:class:`CountingEvaluator`, so the engine and the baselines are charged identically —
one evaluator call per distinct (coalition, trial) actually run, and the number of
distinct coalitions (by memory identity) that reached the evaluator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from meclear_integrations.core import Memory

__all__ = ["CountingEvaluator"]

_Key = tuple[frozenset[str], int]


class CountingEvaluator:
    """``evaluate(coalition, trial) -> float`` that caches and counts what it forwards.

    Args:
        evaluate: The evaluator wrapped; each distinct (coalition, trial) reaches it once.

    Example:
        >>> from meclear_bench import CountingEvaluator, load_builtin_cases
        >>> case = load_builtin_cases()[0]
        >>> evaluate = CountingEvaluator(case.evaluator())
        >>> context = tuple(case.context())
        >>> evaluate(context, 0) == evaluate(context, 0)
        True
        >>> evaluate.calls, evaluate.cache_hits
        (1, 1)
    """

    def __init__(self, evaluate: Callable[[tuple[Memory, ...], int], float]) -> None:
        self._evaluate = evaluate
        self._cache: dict[_Key, float] = {}
        self._coalitions: set[frozenset[str]] = set()
        self._lock = threading.Lock()
        self.calls = 0
        """Calls forwarded to the wrapped evaluator (cache misses)."""
        self.cache_hits = 0
        """Calls answered from the cache."""

    @property
    def coalitions(self) -> int:
        """Distinct coalitions (sets of memory ids) that reached the evaluator."""
        return len(self._coalitions)

    def trial_scores(self, memory_ids: Iterable[str]) -> list[float]:
        """The scores the method obtained on this coalition, by trial index.

        Args:
            memory_ids: The coalition's memory ids.

        Returns:
            The scores, by trial index.
        """
        ids = frozenset(memory_ids)
        with self._lock:
            return [
                v for (c, _), v in sorted(self._cache.items(), key=lambda kv: kv[0][1]) if c == ids
            ]

    def charge(self, calls: int) -> None:
        """Charge model calls made outside the evaluator (a filter call) to the query.

        Args:
            calls: The number of model calls.

        Raises:
            TypeError: The wrapped evaluator does not count model calls.
        """
        charge = getattr(self._evaluate, "charge", None)
        if charge is None:
            raise TypeError("the wrapped evaluator does not count model calls")
        charge(calls)

    def answer(self, coalition: tuple[Memory, ...], trial: int) -> str | None:
        """The agent's answer on ``coalition``, when the wrapped evaluator gives it.

        Real-model queries do (one agent call, charged like any, no judge call); the
        simulated evaluator does not (None).

        Args:
            coalition: The memories kept in the context.
            trial: The trial index.

        Returns:
            The answer, or None.
        """
        answer = getattr(self._evaluate, "answer", None)
        return str(answer(coalition, trial)) if callable(answer) else None

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` on trial ``trial``, once per distinct (coalition, trial).

        Args:
            coalition: The memories kept in the context.
            trial: The trial index.

        Returns:
            The wrapped evaluator's score (cached for a repeated request).
        """
        key = (frozenset(m.id for m in coalition), int(trial))
        with self._lock:
            if key in self._cache:
                self.cache_hits += 1
                return self._cache[key]
        score = float(self._evaluate(coalition, trial))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = score
                self.calls += 1
                self._coalitions.add(key[0])
        return score
