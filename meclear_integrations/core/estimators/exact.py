"""Exact Shapley values by enumerating every coalition (Eq. 3).

Enumeration has no sampling error, but under a sampled reader or a noisy judge each
coalition's value is itself the mean of a few noisy trials. With ``error_model="pooled"``
the estimate carries an interval from a model of that error: each coalition's trial
variance is its own within-trial variance or, when larger, the pooled within-trial variance
of every coalition with repeated trials (the judge's and reader's disagreement rate seen in
this run; ``noise_floor`` e adds a floor e(1 - e)), divided by its trials; psi_i's variance
is sum_S w(|S|)^2 [var v(S u {i}) + var v(S)], and the interval is psi_i -/+ z sigma_i with
z the one-sided normal quantile at the run's ``confidence_delta``. Without a noise floor a
deterministic run (every repeated trial agrees) keeps zero-width intervals, so Eq. 14 is
unchanged there.

With ``refine_rounds`` R > 0 the estimator spends trials where intervals overlap the harm
threshold: after the first pass, for every memory whose interval holds -tau it asks one more
trial of the two coalitions that weigh most in its value ({i} and M minus {i}, weight 1/K
each) and of the empty and full contexts, then re-estimates; at most R rounds.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3.
"""

from __future__ import annotations

from math import factorial
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError
from ..game import Coalition, CoalitionGame
from .base import (
    EstimatorSettings,
    ShapleyEstimate,
    ShapleyEstimator,
    SimilaritySource,
    moved_settings,
)

__all__ = [
    "MAX_EXACT_MEMORIES",
    "ErrorModel",
    "ExactShapley",
    "exact_bound",
    "exact_shapley",
    "shapley_sigma",
    "shapley_weights",
]

ErrorModel = Literal["none", "pooled"]
"""How the exact estimator models each coalition's trial error (module docstring)."""


def shapley_weights(k: int) -> np.ndarray:
    """w[s] = s! (K - s - 1)! / K!, the probability that a given S of size s precedes m_i.

    Args:
        k: the number of memories.

    Returns:
        w[s] for s = 0..K-1.
    """
    return np.array(
        [factorial(s) * factorial(k - s - 1) / factorial(k) for s in range(k)], dtype=float
    )


def exact_shapley(table: np.ndarray, k: int) -> np.ndarray:
    """psi_i = sum_S w(|S|) [v(S u {i}) - v(S)] for a full value table indexed by bitmask.

    Args:
        table: v(S) for every coalition S, indexed by bitmask.
        k: the number of memories.

    Returns:
        psi by position (Eq. 3).

    Example:
        >>> import numpy as np
        >>> from meclear_integrations import exact_shapley
        >>> exact_shapley(np.array([0.0, 1.0, 0.0, 1.0]), 2).tolist()
        [1.0, 0.0]
    """
    masks = np.arange(1 << k)
    sizes = np.array([int(m).bit_count() for m in masks])
    weights = shapley_weights(k) if k else np.zeros(0)
    psi = np.zeros(k)
    for i in range(k):
        bit = 1 << i
        without_i = masks[(masks & bit) == 0]
        psi[i] = float(
            np.sum(weights[sizes[without_i]] * (table[without_i | bit] - table[without_i]))
        )
    return psi


def shapley_sigma(variances: np.ndarray, k: int) -> np.ndarray:
    """Standard deviation of each psi_i of Eq. 3 given independent coalition variances.

    Args:
        variances: Var v(S) for every coalition S, indexed by bitmask.
        k: the number of memories.

    Returns:
        sigma_i by position.
    """
    masks = np.arange(1 << k)
    sizes = np.array([int(m).bit_count() for m in masks])
    weights = shapley_weights(k) if k else np.zeros(0)
    sigma = np.zeros(k)
    for i in range(k):
        bit = 1 << i
        without_i = masks[(masks & bit) == 0]
        w2 = weights[sizes[without_i]] ** 2
        sigma[i] = float(np.sqrt(np.sum(w2 * (variances[without_i | bit] + variances[without_i]))))
    return sigma


def _coalition_variances(game: CoalitionGame, noise_floor: float) -> np.ndarray:
    """Var v(S) per coalition: max(own, pooled within-trial variance, floor) / trials."""
    trials = [game.scores[c] for c in range(1 << game.k)]
    within = np.zeros(len(trials))
    pooled_num = pooled_den = 0.0
    for c, scores in enumerate(trials):
        n = len(scores)
        if n >= 2:
            within[c] = float(np.var(scores, ddof=1))
            pooled_num += within[c] * (n - 1)
            pooled_den += n - 1
    pooled = pooled_num / pooled_den if pooled_den else 0.0
    floor = max(pooled, noise_floor * (1.0 - noise_floor))
    counts = np.array([len(s) for s in trials], dtype=float)
    variances: np.ndarray = np.maximum(within, floor) / counts
    return variances


MAX_EXACT_MEMORIES = 14
"""The largest K exact enumeration (and minimal clearance) covers by default (2^14
coalitions)."""


def exact_bound(estimator: object) -> int:
    """The largest K an estimator enumerates exactly, and minimal clearance searches.

    Args:
        estimator: any estimator; an :class:`ExactShapley`'s ``max_memories`` when set
            (an automatic choice's: ``core.estimators.auto.clearance_bound``).

    Returns:
        The bound (:data:`MAX_EXACT_MEMORIES` unless the estimator sets one).
    """
    bound = estimator.max_memories if isinstance(estimator, ExactShapley) else None
    return bound if bound is not None else MAX_EXACT_MEMORIES


class ExactShapley(ShapleyEstimator):
    """Enumerates all 2^K coalitions: no sampling error, every LOO and candidate cached.

    Args:
        max_memories: the largest K it enumerates (None: :data:`MAX_EXACT_MEMORIES`);
            minimal clearance (``ClearanceConfig.clearance``) enumerates subsets of H^ up to
            the same bound.
        error_model: ``"none"`` (zero-width intervals) or ``"pooled"`` (intervals from
            the run's trial disagreement; module docstring).
        noise_floor: e, a floor e(1 - e) on every coalition's trial variance (pooled only).
        z: the interval's normal quantile (None: from the run's ``confidence_delta``,
            one-sided; 1.645 outside a run).
        refine_rounds: rounds of extra trials where intervals hold -tau (pooled only;
            module docstring).
        **moved: the add-ons that read the complete table (``residual_z``,
            ``answer_flags``, ``answer_residual_z``) are clearance policy now:
            ``ClearanceConfig(table_evidence=TableEvidence(...))``; given here they raise.

    Raises:
        ConfigurationError: a setting out of range, or one that moved.

    Example:
        >>> from meclear_integrations.core import ClearanceConfig, ExactShapley
        >>> ClearanceConfig(estimator=ExactShapley()).estimator_name
        'exact'
    """

    name = "exact"
    enumerates = True

    @property
    def interval_harm(self) -> bool:
        """Intervals from the trials' error (``error_model="pooled"``) are meaningful."""
        return self.error_model != "none"

    def __init__(
        self,
        *,
        max_memories: int | None = None,
        error_model: ErrorModel = "none",
        noise_floor: float = 0.0,
        z: float | None = None,
        refine_rounds: int = 0,
        **moved: object,
    ) -> None:
        moved_settings(moved, prefix="")
        if not 0 <= refine_rounds <= 8:
            raise ConfigurationError(f"refine_rounds must be in [0, 8], got {refine_rounds}")
        if error_model not in ("none", "pooled"):
            raise ConfigurationError(f"error_model must be 'none' or 'pooled', got {error_model!r}")
        if not 0.0 <= noise_floor <= 0.5:
            raise ConfigurationError(f"noise_floor must be in [0, 0.5], got {noise_floor}")
        if z is not None and not z >= 0:
            raise ConfigurationError(f"z must be a non-negative number, got {z}")
        self.max_memories = max_memories
        self.error_model: ErrorModel = error_model
        self.noise_floor = float(noise_floor)
        self.z = z
        self.refine_rounds = int(refine_rounds)
        self.tau = 0.05
        self._rounds_done = 0

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> ExactShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings (``confidence_delta``, ``harm_tolerance``).
            rng: unused (enumeration draws nothing).
            similarity: unused.

        Returns:
            An exact estimator with its bound set.
        """
        bound = exact_bound(self)
        z = self.z if self.z is not None else NormalDist().inv_cdf(1 - config.confidence_delta)
        fresh = ExactShapley(
            max_memories=bound,
            error_model=self.error_model,
            noise_floor=self.noise_floor,
            z=z,
            refine_rounds=self.refine_rounds,
        )
        fresh.tau = config.harm_tolerance
        return fresh

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "exact", "max_memories": ..., "error_model": ..., ...}``.
        """
        return {
            "name": self.name,
            "max_memories": self.max_memories,
            "error_model": self.error_model,
            "noise_floor": self.noise_floor,
            "z": self.z,
            "refine_rounds": self.refine_rounds,
        }

    def plan(self, k: int) -> list[Coalition]:
        """Every coalition, 2^K of them.

        Args:
            k: the number of memories.

        Returns:
            The coalitions 0 .. 2^K - 1.

        Raises:
            ConfigurationError: K exceeds ``max_memories``.
        """
        bound = exact_bound(self)
        if k > bound:
            raise ConfigurationError(
                f"exact enumeration needs 2^{k} coalitions; K={k} exceeds "
                f"ExactShapley(max_memories={bound}) (use estimator='permutation')"
            )
        return list(range(1 << k))

    def refine(self, game: CoalitionGame) -> list[tuple[Coalition, int]]:
        """More trials where an interval holds -tau (module docstring); [] when settled.

        Args:
            game: the coalition table with every coalition evaluated.

        Returns:
            (coalition, trials it must have) pairs to evaluate before re-estimating.
        """
        if self.error_model == "none" or self._rounds_done >= self.refine_rounds:
            return []
        self._rounds_done += 1
        est = self.estimate(game)
        k = game.k
        full = (1 << k) - 1
        unsure = [i for i in range(k) if est.lower[i] < -self.tau < est.upper[i]]
        if not unsure:
            return []
        wanted = {0, full}
        for i in unsure:
            wanted.update({1 << i, full & ~(1 << i)})
        return [(c, game.trials_of(c) + 1) for c in sorted(wanted)]

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi by Eq. 3 over the full table.

        Args:
            game: the coalition table with every coalition evaluated.

        Returns:
            Exact contributions; zero-width intervals, or under ``error_model="pooled"``
            intervals from the trials' error (module docstring).
        """
        table = np.array([game.value(c) for c in range(1 << game.k)], dtype=float)
        psi = exact_shapley(table, game.k)
        if self.error_model == "none":
            return ShapleyEstimate(values=psi, lower=psi.copy(), upper=psi.copy())
        z = self.z if self.z is not None else NormalDist().inv_cdf(0.95)
        half = z * shapley_sigma(_coalition_variances(game, self.noise_floor), game.k)
        return ShapleyEstimate(values=psi, lower=psi - half, upper=psi + half)
