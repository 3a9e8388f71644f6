"""Permutation-sampled Shapley values (Eq. 11) with Hoeffding intervals (Eq. 13, 40, 42).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 11, 13, 40, 42.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError
from ..game import Coalition, CoalitionGame
from .base import EstimatorSettings, ShapleyEstimate, ShapleyEstimator, SimilaritySource, run_rng

__all__ = [
    "PermutationShapley",
    "hoeffding_epsilon",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]


def hoeffding_epsilon(permutations: int, k: int, delta: float = 0.05) -> float:
    """Epsilon with Pr(max_i |psi^_i - psi~_i| >= epsilon) <= delta (Eq. 13 solved for epsilon).

    Args:
        permutations: L.
        k: the number of memories.
        delta: the failure probability.

    Returns:
        epsilon.

    Raises:
        ConfigurationError: L or K not positive.
    """
    if permutations < 1 or k < 1:
        raise ConfigurationError("permutations and k must be positive")
    return math.sqrt(2.0 * math.log(2.0 * k / delta) / permutations)


def sufficient_permutations(epsilon: float, delta: float, k: int) -> int:
    """Smallest L with L >= (2 / epsilon^2) log(2K / delta) (Eq. 40).

    Args:
        epsilon: the accuracy wanted.
        delta: the failure probability.
        k: the number of memories.

    Returns:
        L.

    Raises:
        ConfigurationError: epsilon, delta or K out of range.
    """
    if not (epsilon > 0 and 0 < delta < 1 and k >= 1):
        raise ConfigurationError("need epsilon > 0, 0 < delta < 1 and k >= 1")
    return math.ceil(2.0 / epsilon**2 * math.log(2.0 * k / delta))


def sufficient_permutations_for_gap(
    contributions: np.ndarray | list[float], tau: float, delta: float
) -> int:
    """L of Eq. 42: enough permutations that no estimate crosses -tau, gamma = min |psi + tau|.

    Args:
        contributions: psi by position.
        tau: the harm tolerance.
        delta: the failure probability.

    Returns:
        L.

    Raises:
        ConfigurationError: a contribution lies exactly on -tau.
    """
    psi = np.asarray(contributions, dtype=float)
    gamma = float(np.min(np.abs(psi + tau)))
    if gamma <= 0:
        raise ConfigurationError(
            "a contribution lies exactly on the threshold -tau: no finite L suffices"
        )
    return sufficient_permutations(gamma, delta, len(psi))


class PermutationShapley(ShapleyEstimator):
    """Samples L uniform permutations and averages marginal contributions (Eq. 11).

    Args:
        permutations: L, the permutations sampled (the paper's 16).
        delta: level of the Hoeffding intervals (Eq. 13); in a run, the configuration's
            ``confidence_delta``.
        seed: seed of the permutations (None: the run's generator, seeded by
            ``ClearanceConfig.seed``).
        rng: the generator to draw from (overrides ``seed``).

    Raises:
        ConfigurationError: ``permutations`` is not positive.

    Example:
        >>> from meclear_integrations.core import ClearanceConfig, PermutationShapley
        >>> ClearanceConfig(estimator=PermutationShapley(permutations=64)).estimator_name
        'permutation'
    """

    name = "permutation"

    def __init__(
        self,
        *,
        permutations: int = 16,
        delta: float = 0.05,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        if not 1 <= permutations <= 100_000:
            raise ConfigurationError(f"permutations must be in [1, 100000], got {permutations}")
        self.permutations = permutations
        self.delta = delta
        self.seed = seed
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.orders: list[np.ndarray] = []

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> PermutationShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings (``confidence_delta``).
            rng: the run's generator (used unless ``seed`` is set).
            similarity: unused.

        Returns:
            A permutation estimator with no orders drawn yet.
        """
        return PermutationShapley(
            permutations=self.permutations,
            delta=config.confidence_delta,
            rng=run_rng(self.seed, rng),
        )

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "permutation", "permutations": L, "seed": ...}``.
        """
        return {"name": self.name, "permutations": self.permutations, "seed": self.seed}

    def plan(self, k: int) -> list[Coalition]:
        """The prefixes of L permutations drawn now.

        Args:
            k: the number of memories.

        Returns:
            Every prefix coalition of every permutation (L (K + 1) with repeats).
        """
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
        """Psi by Eq. 11 with Hoeffding intervals (Eq. 13).

        Args:
            game: the coalition table with the planned prefixes evaluated.

        Returns:
            The sampled contributions and their intervals.
        """
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
