"""Permutation-sampled Shapley values (Eq. 11) with Hoeffding intervals (Eq. 13, 40, 42)."""

from __future__ import annotations

import math

import numpy as np

from ..coalitions import Coalition
from ..game import CoalitionGame
from .base import ShapleyEstimate, ShapleyEstimator

__all__ = [
    "PermutationShapley",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]


def hoeffding_epsilon(permutations: int, k: int, delta: float = 0.05) -> float:
    """epsilon with Pr(max_i |psi^_i - psi~_i| >= epsilon) <= delta (Eq. 13 solved for epsilon)."""
    if permutations < 1 or k < 1:
        raise ValueError("permutations and k must be positive")
    return math.sqrt(2.0 * math.log(2.0 * k / delta) / permutations)


def sufficient_permutations(epsilon: float, delta: float, k: int) -> int:
    """Smallest L with L >= (2 / epsilon^2) log(2K / delta) (Eq. 40)."""
    if not (epsilon > 0 and 0 < delta < 1 and k >= 1):
        raise ValueError("need epsilon > 0, 0 < delta < 1 and k >= 1")
    return math.ceil(2.0 / epsilon**2 * math.log(2.0 * k / delta))


def sufficient_permutations_for_gap(
    contributions: np.ndarray | list[float], tau: float, delta: float
) -> int:
    """L of Eq. 42: enough permutations that no estimate crosses -tau, gamma = min |psi + tau|."""
    psi = np.asarray(contributions, dtype=float)
    gamma = float(np.min(np.abs(psi + tau)))
    if gamma <= 0:
        raise ValueError("a contribution lies exactly on the threshold -tau: no finite L suffices")
    return sufficient_permutations(gamma, delta, len(psi))


class PermutationShapley(ShapleyEstimator):
    """Samples L uniform permutations and averages marginal contributions (Eq. 11)."""

    name = "permutation"

    def __init__(
        self,
        *,
        permutations: int = 16,
        delta: float = 0.05,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.permutations = permutations
        self.delta = delta
        self.rng = rng if rng is not None else np.random.default_rng()
        self.orders: list[np.ndarray] = []

    def plan(self, k: int) -> list[Coalition]:
        self.orders = [self.rng.permutation(k) for _ in range(self.permutations)]
        coalitions: list[Coalition] = []
        for order in self.orders:
            prefix = 0
            coalitions.append(prefix)
            for position in order:
                prefix |= 1 << int(position)
                coalitions.append(prefix)
        return coalitions

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        k = game.k
        totals = np.zeros(k)
        for order in self.orders:
            prefix = 0
            before = game.value(prefix)
            for position in order:
                prefix |= 1 << int(position)
                after = game.value(prefix)
                totals[int(position)] += after - before
                before = after
        psi = totals / len(self.orders)
        eps = hoeffding_epsilon(len(self.orders), k, self.delta)
        return ShapleyEstimate(
            values=psi, lower=np.clip(psi - eps, -1.0, 1.0), upper=np.clip(psi + eps, -1.0, 1.0)
        )
