"""The baselines' view of one case: v^(S) over the frozen context, T trials per coalition.

Coalitions are sets of positions in retrieval order; values go through the run's
:class:`~meclear_integrations.bench.counting.CountingEvaluator`, so a baseline's cost is
counted exactly as the engine's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core import Memory
from .counting import CountingEvaluator

__all__ = ["CaseOracle"]


class CaseOracle:
    """Values v^(S) (mean of T trials) and the recovery predicate over one frozen context."""

    def __init__(
        self,
        context: Sequence[Memory],
        evaluate: CountingEvaluator,
        *,
        trials: int,
        success_threshold: float = 1.0,
    ) -> None:
        self.context = tuple(context)
        self.evaluate = evaluate
        self.trials = trials
        self.success_threshold = success_threshold
        self._scores: dict[frozenset[int], tuple[float, ...]] = {}

    @property
    def k(self) -> int:
        return len(self.context)

    @property
    def full(self) -> frozenset[int]:
        return frozenset(range(self.k))

    def scores(self, coalition: Iterable[int]) -> tuple[float, ...]:
        """The T trial scores of the coalition (positions), evaluated once."""
        key = frozenset(coalition)
        if key not in self._scores:
            memories = tuple(self.context[i] for i in sorted(key))
            self._scores[key] = tuple(self.evaluate(memories, t) for t in range(self.trials))
        return self._scores[key]

    def value(self, coalition: Iterable[int]) -> float:
        """v^(S): the mean of the coalition's T trial scores."""
        s = self.scores(coalition)
        return sum(s) / len(s)

    def recovers(self, coalition: Iterable[int]) -> bool:
        """nu(S) = 1: every trial scores at least the success threshold."""
        return all(x >= self.success_threshold for x in self.scores(coalition))

    def without(self, positions: Iterable[int]) -> frozenset[int]:
        """M minus the given positions."""
        return self.full - frozenset(positions)
