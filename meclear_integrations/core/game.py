"""The empirical cooperative game v^(S) over a frozen context (Eq. 2).

The game owns the value cache keyed by memory identity: a coalition is evaluated at most
once per run, v^(S) is the mean of its T trial scores, and every trial score is kept for
the recovery predicate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .coalitions import Coalition, full, members
from .errors import ScoreOutOfRangeError
from .memory import Memory

__all__ = ["CoalitionGame", "EvaluationRequest"]


@dataclass(frozen=True, slots=True)
class EvaluationRequest:
    """One evaluator call: a coalition (its memories in retrieval order) and a trial."""

    coalition: Coalition
    memories: tuple[Memory, ...]
    trial: int

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.memories)


@dataclass(slots=True)
class CoalitionGame:
    """Cache of v^(S) for one frozen context; counts what evaluation cost."""

    context: tuple[Memory, ...]
    trials: int
    scores: dict[Coalition, tuple[float, ...]] = field(default_factory=dict)
    cache_hits: int = 0
    evaluator_calls: int = 0

    @property
    def k(self) -> int:
        return len(self.context)

    @property
    def full(self) -> Coalition:
        return full(self.k)

    def memories_of(self, coalition: Coalition) -> tuple[Memory, ...]:
        """The memories of ``coalition`` in retrieval order."""
        return tuple(self.context[i] for i in members(coalition))

    def missing(self, coalitions: Iterable[Coalition]) -> list[Coalition]:
        """Coalitions not cached yet, deduplicated, in first-seen order; counts cache hits."""
        seen: set[Coalition] = set()
        todo: list[Coalition] = []
        for coalition in coalitions:
            if coalition in self.scores or coalition in seen:
                self.cache_hits += 1
                continue
            seen.add(coalition)
            todo.append(coalition)
        return todo

    def requests(self, coalitions: Sequence[Coalition]) -> list[EvaluationRequest]:
        """The evaluator calls needed for ``coalitions`` (T per coalition)."""
        return [
            EvaluationRequest(c, self.memories_of(c), trial)
            for c in coalitions
            for trial in range(self.trials)
        ]

    def record(self, request: EvaluationRequest, score: object) -> float:
        """Validate one evaluator score; returns it as a float in [0, 1]."""
        self.evaluator_calls += 1
        try:
            value = float(score)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = math.nan
        if isinstance(score, bool) or not (0.0 <= value <= 1.0):
            raise ScoreOutOfRangeError(
                f"evaluator returned {score!r} for coalition {list(request.memory_ids)} "
                f"(trial {request.trial}); scores must be numbers in [0, 1]",
                coalition=request.memory_ids,
                trial=request.trial,
            )
        return value

    def store(self, coalition: Coalition, trial_scores: Sequence[float]) -> None:
        self.scores[coalition] = tuple(trial_scores)

    def value(self, coalition: Coalition) -> float:
        """v^(S): the mean of the coalition's trial scores."""
        trial_scores = self.scores[coalition]
        return sum(trial_scores) / len(trial_scores)

    def recovers(self, coalition: Coalition, threshold: float) -> bool:
        """nu(S) = 1: every trial of the coalition scores at least ``threshold``."""
        return all(s >= threshold for s in self.scores[coalition])

    @property
    def coalitions_evaluated(self) -> int:
        return len(self.scores)
