"""Games with known values for engine tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import permutations
from math import factorial

from meclear_integrations import Memory

ValueFn = Callable[[frozenset[str]], float]


def make_memories(k: int) -> list[Memory]:
    return [Memory(id=f"m{i}", content=f"memory number {i}") for i in range(k)]


class CountingEvaluator:
    """Evaluator over a value function of the coalition's ids; records every call."""

    def __init__(self, value: ValueFn) -> None:
        self.value = value
        self.calls: list[tuple[frozenset[str], int]] = []
        self._lock = threading.Lock()

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        ids = frozenset(m.id for m in coalition)
        with self._lock:
            self.calls.append((ids, trial))
        return self.value(ids)


def brute_force_shapley(ids: list[str], value: ValueFn) -> dict[str, float]:
    """Independent implementation: average marginals over every permutation (Eq. 10)."""
    totals = dict.fromkeys(ids, 0.0)
    for order in permutations(ids):
        present: set[str] = set()
        before = value(frozenset())
        for mid in order:
            present.add(mid)
            after = value(frozenset(present))
            totals[mid] += after - before
            before = after
    n = factorial(len(ids))
    return {mid: t / n for mid, t in totals.items()}
