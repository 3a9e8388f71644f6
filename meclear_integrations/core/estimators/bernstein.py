"""Permutation sampling with adaptive stopping on empirical-Bernstein intervals.

Antithetic permutation pairs (pi, reversed pi) are sampled in rounds that double the sample
(``initial``, then 2x, 4x, ...), up to ``max_permutations``. Each pair's mean marginal is
one i.i.d. observation in [-1, 1]; after every round the empirical-Bernstein bound (Maurer
and Pontil, 2009) |mean - psi_i| <= sqrt(2 V ln(2/d) / n) + 14 ln(2/d) / (3 (n - 1)) holds
for every memory and every look with d = delta / (K * looks). Sampling stops once every
interval lies wholly below or wholly above -tau: then H^ (Eq. 14) equals the harmful set of
the exact empirical game with probability >= 1 - delta. Unlike Hoeffding (Eq. 13, 40) the
bound shrinks with the variance of the marginals, so low-variance games stop early.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 11, 13-14.
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

__all__ = ["BernsteinPermutationShapley", "empirical_bernstein_radius"]


def empirical_bernstein_radius(samples: np.ndarray, delta: float, width: float = 2.0) -> np.ndarray:
    """Per-column radius of the empirical-Bernstein interval for samples of range ``width``.

    Args:
        samples: observations (n x K).
        delta: the failure probability of each interval.
        width: the range of one observation.

    Returns:
        The radius by column.
    """
    n = samples.shape[0]
    if n < 2:
        return np.full(samples.shape[1], width)
    variance = samples.var(axis=0, ddof=1)
    log_term = math.log(2.0 / delta)
    radius = np.sqrt(2.0 * variance * log_term / n) + 7.0 * width * log_term / (3.0 * (n - 1))
    return np.asarray(radius, dtype=float)


class BernsteinPermutationShapley(ShapleyEstimator):
    """Antithetic permutation sampling that stops when H^ is settled (see module docstring).

    Args:
        max_permutations: the most permutations it samples (pairs of two).
        tau: the harm tolerance its intervals must clear; in a run, the configuration's
            ``harm_tolerance``.
        delta: the overall level of the intervals; in a run, ``confidence_delta``.
        initial: permutations of the first round.
        seed: seed of the permutations (None: the run's generator).
        rng: the generator to draw from (overrides ``seed``).

    Raises:
        ConfigurationError: ``max_permutations`` is not positive.

    Example:
        >>> from meclear_integrations.core import ClearanceConfig
        >>> from meclear_integrations.core.estimators import BernsteinPermutationShapley
        >>> estimator = BernsteinPermutationShapley(max_permutations=4096)
        >>> ClearanceConfig(estimator=estimator).estimator_name
        'bernstein'
    """

    name = "bernstein"

    def __init__(
        self,
        *,
        max_permutations: int = 16,
        tau: float = 0.05,
        delta: float = 0.05,
        initial: int = 8,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        if not 1 <= max_permutations <= 100_000:
            raise ConfigurationError(
                f"max_permutations must be in [1, 100000], got {max_permutations}"
            )
        self.max_permutations = max_permutations
        self.initial = initial
        self.seed = seed
        self.max_pairs = max(1, max_permutations // 2)
        self.tau = tau
        self.delta = delta
        self.initial_pairs = max(2, initial // 2)
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.orders: list[np.ndarray] = []
        self._k = 0
        self._looks = max(1, math.ceil(math.log2(max(1, self.max_pairs / self.initial_pairs))) + 1)

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> BernsteinPermutationShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings (``harm_tolerance``, ``confidence_delta``).
            rng: the run's generator (used unless ``seed`` is set).
            similarity: unused.

        Returns:
            An estimator with nothing sampled yet.
        """
        return BernsteinPermutationShapley(
            max_permutations=self.max_permutations,
            tau=config.harm_tolerance,
            delta=config.confidence_delta,
            initial=self.initial,
            rng=run_rng(self.seed, rng),
        )

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "bernstein", "max_permutations": ..., ...}``.
        """
        return {
            "name": self.name,
            "max_permutations": self.max_permutations,
            "initial": self.initial,
            "seed": self.seed,
        }

    def _draw(self, pairs: int) -> list[Coalition]:
        coalitions: list[Coalition] = []
        for _ in range(pairs):
            order = self.rng.permutation(self._k)
            for o in (order, order[::-1]):
                self.orders.append(o)
                prefix = 0
                coalitions.append(prefix)
                for position in o:
                    prefix |= 1 << int(position)
                    coalitions.append(prefix)
        return coalitions

    def plan(self, k: int) -> list[Coalition]:
        """The first round of antithetic permutation pairs.

        Args:
            k: the number of memories.

        Returns:
            The prefix coalitions of the first round.
        """
        self._k = k
        self.orders = []
        return self._draw(min(self.initial_pairs, self.max_pairs))

    def _pair_marginals(self, game: CoalitionGame) -> np.ndarray:
        marginals = np.zeros((len(self.orders), game.k))
        for row, order in enumerate(self.orders):
            prefix = 0
            before = game.value(prefix)
            for position in order:
                prefix |= 1 << int(position)
                after = game.value(prefix)
                marginals[row, int(position)] = after - before
                before = after
        return np.asarray(marginals.reshape(-1, 2, game.k).mean(axis=1), dtype=float)

    def _interval(self, game: CoalitionGame) -> tuple[np.ndarray, np.ndarray]:
        samples = self._pair_marginals(game)
        radius = empirical_bernstein_radius(samples, self.delta / (game.k * self._looks))
        return samples.mean(axis=0), radius

    def extend(self, game: CoalitionGame) -> list[Coalition]:
        """The next round, doubling the sample, until H^ is settled or the budget is spent.

        Args:
            game: the coalition table with the rounds so far evaluated.

        Returns:
            More prefix coalitions; empty when sampling stops.
        """
        pairs = len(self.orders) // 2
        if pairs >= self.max_pairs:
            return []
        psi, radius = self._interval(game)
        settled = (psi + radius < -self.tau) | (psi - radius > -self.tau)
        if bool(settled.all()):
            return []
        return self._draw(min(pairs, self.max_pairs - pairs))

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi by Eq. 11 with empirical-Bernstein intervals.

        Args:
            game: the coalition table with every round evaluated.

        Returns:
            The sampled contributions and their intervals.
        """
        psi, radius = self._interval(game)
        return ShapleyEstimate(
            values=psi,
            lower=np.clip(psi - radius, -1.0, 1.0),
            upper=np.clip(psi + radius, -1.0, 1.0),
        )
