"""Paired KernelSHAP: Shapley values (Eq. 3) by constrained weighted least squares.

The Shapley value is the solution of min_phi sum_S w(S) (v(S) - v(empty) - sum_{i in S}
phi_i)^2 subject to sum_i phi_i = v(M) - v(empty), with the Shapley kernel
w(S) = (K - 1) / (C(K, |S|) |S| (K - |S|)) (Lundberg and Lee, 2017). This estimator always
includes the empty set, M, every singleton and every leave-one-out coalition (2K + 2, so
the LOO screening of Eq. 7 is free), then samples the remaining budget as complementary
pairs (S, M minus S) without replacement (paired sampling, Covert and Lee, 2021). Sizes
are drawn in proportion to their kernel mass; each sampled coalition of size s carries its
size's kernel mass divided by the number sampled of that size. With the whole table the
estimate is exact. Intervals are percentile-bootstrap intervals over the sampled pairs
(400 resamples; zero width when no size is sampled partially), simultaneous over the K
memories by a union bound (tails of delta / (2K), as Eq. 40 does for Hoeffding); they are
not Hoeffding bounds. For large designs (n (K-1)^2 above 2^20, K > 47 at the default
budget) each replicate is the first-order linearisation of the weighted least squares
around the full-sample solution instead of a fresh solve, so the bootstrap costs one Gram
matrix rather than 400.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 7, 40.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError
from ..game import Coalition, CoalitionGame, full, membership_matrix
from .base import EstimatorSettings, ShapleyEstimate, ShapleyEstimator, SimilaritySource, run_rng

__all__ = [
    "KernelShapley",
    "kernel_budget",
    "linearized_batch",
    "solve_constrained",
    "solve_constrained_batch",
]


def kernel_budget(k: int, coalitions_per_memory: float, max_table_fraction: float = 1.0) -> int:
    """Distinct coalitions the kernel estimator plans at context size ``k``.

    Distinct coalitions the kernel estimator plans: min(ceil(c K), floor(f 2^K)), at least
    2K + 2 and at most 2^K.

    Args:
        k: the number of memories.
        coalitions_per_memory: c.
        max_table_fraction: f.

    Returns:
        The budget in distinct coalitions.
    """
    cap = math.floor(max_table_fraction * (1 << k))
    return min(1 << k, max(2 * k + 2, min(cap, math.ceil(coalitions_per_memory * k))))


def _size_mass(k: int) -> np.ndarray:
    """Total kernel weight of all coalitions of size s, (K - 1) / (s (K - s)), s = 1..K-1."""
    mass = np.zeros(k + 1)
    for s in range(1, k):
        mass[s] = (k - 1) / (s * (k - s))
    return mass


def _reduce(x: np.ndarray, y: np.ndarray, total: float) -> tuple[np.ndarray, np.ndarray]:
    """Eliminate the constraint: phi_K = total - sum_{i<K} phi_i."""
    last = x[:, -1]
    return x[:, :-1] - last[:, None], y - last * total


def solve_constrained(x: np.ndarray, y: np.ndarray, w: np.ndarray, total: float) -> np.ndarray:
    """argmin_phi sum_r w_r (y_r - x_r . phi)^2 subject to sum(phi) = total.

    Args:
        x: the design (n x K, 0/1).
        y: the targets.
        w: the row weights.
        total: the sum the solution must have (efficiency).

    Returns:
        phi.
    """
    return np.asarray(solve_constrained_batch(x, y, w[None, :], total)[0], dtype=float)


def solve_constrained_batch(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, total: float
) -> np.ndarray:
    """:func:`solve_constrained` for every row of ``weights`` (B x n) at once.

    Small designs form every Gram matrix in one vectorised product; above
    ``_VECTORISED_LIMIT`` elements of the n x (K-1)^2 outer-product tensor the Gram matrices
    are formed and solved one weight row at a time, so memory stays O(n K + K^2).

    Args:
        x: the design (n x K, 0/1).
        y: the targets.
        weights: row weights, one row per problem (B x n).
        total: the sum every solution must have.

    Returns:
        The solutions (B x K).
    """
    n_batch, k = weights.shape[0], x.shape[1]
    if k == 1:
        return np.full((n_batch, 1), total)
    design, target = _reduce(x, y, total)
    m = k - 1
    if len(design) * m * m <= _VECTORISED_LIMIT:
        outer = (design[:, :, None] * design[:, None, :]).reshape(len(design), m * m)
        grams = (weights @ outer).reshape(n_batch, m, m)
        rhs = weights @ (design * target[:, None])
        grams += 1e-12 * np.eye(m)
        try:
            head = np.linalg.solve(grams, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            head = np.stack([_solve(g, r) for g, r in zip(grams, rhs, strict=True)])
    else:
        weighted_target = design * target[:, None]
        head = np.stack([_solve((design.T * w) @ design, w @ weighted_target) for w in weights])
    return np.concatenate([head, (total - head.sum(axis=1))[:, None]], axis=1)


_VECTORISED_LIMIT = 1 << 20
"""Elements of the outer-product tensor above which Gram matrices are formed one by one."""

_EXACT_BOOTSTRAP_LIMIT = _VECTORISED_LIMIT
"""n (K-1)^2 above which bootstrap replicates are linearised (:func:`linearized_batch`)
instead of re-solved: each exact replicate costs a fresh n x (K-1)^2 Gram product."""


def linearized_batch(
    x: np.ndarray, y: np.ndarray, base: np.ndarray, weights: np.ndarray, total: float
) -> np.ndarray:
    """First-order approximation of :func:`solve_constrained_batch` (bootstrap).

    First-order (influence-function) approximation of :func:`solve_constrained_batch`
    around the solution with row weights ``base``: phi_b = phi + G^-1 D' W_b e, with
    G = D' W D and e the residuals at phi (D' W e = 0 there). One Gram matrix and one
    (B x n) (n x K) product instead of B Gram matrices.

    Args:
        x: the design (n x K, 0/1).
        y: the targets.
        base: the row weights of the solution linearised around.
        weights: row weights, one row per problem (B x n).
        total: the sum every solution must have.

    Returns:
        The approximate solutions (B x K).
    """
    n_batch, k = weights.shape[0], x.shape[1]
    if k == 1:
        return np.full((n_batch, 1), total)
    design, target = _reduce(x, y, total)
    gram = design.T @ (design * base[:, None]) + 1e-12 * np.eye(k - 1)
    head = _solve(gram, design.T @ (base * target))
    residual = target - design @ head
    shifts = (weights * residual[None, :]) @ design
    heads = head[None, :] + _solve(gram, shifts.T).T
    return np.concatenate([heads, (total - heads.sum(axis=1))[:, None]], axis=1)


def _solve(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """gram^-1 rhs with a tiny ridge; least squares when the system is singular."""
    regularised = gram + 1e-12 * np.eye(len(gram))
    try:
        return np.linalg.solve(regularised, rhs)
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.lstsq(regularised, rhs, rcond=None)[0])


class KernelShapley(ShapleyEstimator):
    """Paired KernelSHAP over ``budget`` distinct coalitions (see module docstring).

    Args:
        coalitions_per_memory: the budget in a run: min(ceil(this * K),
            floor(max_table_fraction * 2^K)) distinct coalitions, at least 2K + 2 (always
            included: empty, full, singletons, leave-one-outs).
        max_table_fraction: the most of the 2^K coalitions it plans.
        budget: a fixed budget of distinct coalitions (None: from the two settings above
            at the run's K).
        delta: level of the bootstrap intervals; in a run, the configuration's
            ``confidence_delta``.
        bootstrap: bootstrap replicates of the intervals (0: none).
        simultaneous: intervals that hold for all K memories at once (union bound).
        seed: seed of the sampled pairs and the bootstrap (None: the run's generator).
        rng: the generator to draw from (overrides ``seed``).

    Raises:
        ConfigurationError: a setting is out of range.

    Example:
        >>> from meclear_integrations.core import ClearanceConfig
        >>> from meclear_integrations.core.estimators.kernel import KernelShapley
        >>> config = ClearanceConfig(estimator=KernelShapley(coalitions_per_memory=4.0))
        >>> config.estimator_name
        'kernel'
    """

    name = "kernel"

    @property
    def interval_harm(self) -> bool:
        """Bootstrap intervals: the interval rule reads them under ``harm_rule="auto"``."""
        return True

    def __init__(
        self,
        *,
        coalitions_per_memory: float = 10.0,
        max_table_fraction: float = 0.75,
        budget: int | None = None,
        rng: np.random.Generator | None = None,
        delta: float = 0.05,
        bootstrap: int = 400,
        simultaneous: bool = True,
        seed: int | None = None,
    ) -> None:
        if not 0.0 < coalitions_per_memory <= 1000.0:
            raise ConfigurationError(
                f"coalitions_per_memory must be in (0, 1000], got {coalitions_per_memory}"
            )
        if not 0.0 < max_table_fraction <= 1.0:
            raise ConfigurationError(
                f"max_table_fraction must be in (0, 1], got {max_table_fraction}"
            )
        self.coalitions_per_memory = coalitions_per_memory
        self.max_table_fraction = max_table_fraction
        self.budget = budget
        self.seed = seed
        self._rng = rng
        self._rng_seed = seed
        self.delta = delta
        self.bootstrap = bootstrap
        self.simultaneous = simultaneous
        self.always: list[Coalition] = []
        self.pairs: list[tuple[Coalition, Coalition]] = []

    @property
    def rng(self) -> np.random.Generator:
        """The generator drawn from: ``rng``, else one seeded by ``seed``, made on first use.

        (Made on first use so that building the settings, e.g. ``ClearanceConfig``'s
        defaults, does not import numpy.)
        """
        if self._rng is None:
            self._rng = np.random.default_rng(self._rng_seed)
        return self._rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self._rng = value

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> KernelShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories (sets the budget).
            config: the run's settings (``confidence_delta``).
            rng: the run's generator (used unless ``seed`` is set).
            similarity: unused.

        Returns:
            A kernel estimator with its budget fixed for K and nothing planned yet.
        """
        budget = (
            self.budget
            if self.budget is not None
            else kernel_budget(k or 1, self.coalitions_per_memory, self.max_table_fraction)
        )
        return KernelShapley(
            coalitions_per_memory=self.coalitions_per_memory,
            max_table_fraction=self.max_table_fraction,
            budget=budget,
            rng=run_rng(self.seed, rng),
            delta=config.confidence_delta,
            bootstrap=self.bootstrap,
            simultaneous=self.simultaneous,
        )

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "kernel", "coalitions_per_memory": ..., ...}``.
        """
        return {
            "name": self.name,
            "coalitions_per_memory": self.coalitions_per_memory,
            "max_table_fraction": self.max_table_fraction,
            "budget": self.budget,
            "bootstrap": self.bootstrap,
            "simultaneous": self.simultaneous,
            "seed": self.seed,
        }

    def plan(self, k: int) -> list[Coalition]:
        """The always-included coalitions and sampled complementary pairs.

        Args:
            k: the number of memories.

        Returns:
            At most ``budget`` distinct coalitions (all 2^K when they fit).
        """
        everything = full(k)
        if self.budget is None:
            self.budget = kernel_budget(k, self.coalitions_per_memory, self.max_table_fraction)
        if (1 << k) <= self.budget:
            self.always = list(range(1 << k))
            self.pairs = []
            return list(self.always)
        always = [0, everything]
        always += [1 << i for i in range(k)]
        always += [everything ^ (1 << i) for i in range(k)]
        self.always = list(dict.fromkeys(always))
        self.pairs = self._sample_pairs(k, max(0, (self.budget - len(self.always)) // 2))
        return self.always + [c for pair in self.pairs for c in pair]

    def _sample_pairs(self, k: int, n_pairs: int) -> list[tuple[Coalition, Coalition]]:
        everything = full(k)
        sizes = [s for s in range(2, k // 2 + 1)]  # the smaller side of each pair
        if not sizes or n_pairs == 0:
            return []
        mass = _size_mass(k)
        capacity = {s: math.comb(k, s) // (2 if 2 * s == k else 1) for s in sizes}
        weight = {s: mass[s] * (1 if 2 * s == k else 2) for s in sizes}
        chosen: set[Coalition] = set()
        pairs: list[tuple[Coalition, Coalition]] = []
        taken = dict.fromkeys(sizes, 0)
        while len(pairs) < n_pairs:
            open_sizes = [s for s in sizes if taken[s] < capacity[s]]
            if not open_sizes:
                break
            p = np.array([weight[s] for s in open_sizes])
            s = open_sizes[int(np.searchsorted(np.cumsum(p / p.sum()), self.rng.random()))]
            mask = sum(1 << int(i) for i in self.rng.permutation(k)[:s])
            if mask in chosen or (everything ^ mask) in chosen:
                continue
            chosen.update((mask, everything ^ mask))
            taken[s] += 1
            pairs.append((mask, everything ^ mask))
        return pairs

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi by constrained weighted regression, with bootstrap intervals.

        Args:
            game: the coalition table with the planned coalitions evaluated.

        Returns:
            The contributions (summing to v(M) - v(empty)) and their intervals.
        """
        k = game.k
        empty, total = game.value(0), game.value(full(k)) - game.value(0)
        fixed = [c for c in self.always if 0 < c.bit_count() < k]
        sampled = [c for pair in self.pairs for c in pair]
        rows = membership_matrix(fixed + sampled, k)
        y = np.array([game.value(c) - empty for c in fixed + sampled])
        sizes = rows.sum(axis=1).astype(int) if len(rows) else np.zeros(0, dtype=int)
        mass = _size_mass(k)
        n_fixed = len(fixed)
        pair_of = np.repeat(np.arange(len(self.pairs)), 2)
        size_onehot = np.zeros((len(sizes), k + 1))
        size_onehot[np.arange(len(sizes)), sizes] = 1.0

        def weights(pair_counts: np.ndarray) -> np.ndarray:
            """Row weights (B x n): fixed rows once, sampled rows by their draw counts."""
            counts = np.concatenate(
                [np.ones((len(pair_counts), n_fixed)), pair_counts[:, pair_of]], axis=1
            )
            per_size = counts @ size_onehot
            with np.errstate(divide="ignore", invalid="ignore"):
                w = counts * mass[sizes] / np.take(per_size, sizes, axis=1)
            return np.where(counts > 0, w, 0.0)

        n_pairs = len(self.pairs)
        psi = solve_constrained_batch(rows, y, weights(np.ones((1, n_pairs))), total)[0]
        if not self.pairs or self.bootstrap <= 0:
            return ShapleyEstimate(values=psi, lower=psi.copy(), upper=psi.copy())
        draws = self.rng.integers(0, n_pairs, size=(self.bootstrap, n_pairs))
        offsets = (np.arange(self.bootstrap)[:, None] * n_pairs + draws).ravel()
        counts = np.bincount(offsets, minlength=self.bootstrap * n_pairs)
        counts = counts.reshape(self.bootstrap, n_pairs).astype(float)
        if len(rows) * (k - 1) ** 2 <= _EXACT_BOOTSTRAP_LIMIT:
            boot = solve_constrained_batch(rows, y, weights(counts), total)
        else:
            boot = linearized_batch(
                rows, y, weights(np.ones((1, n_pairs)))[0], weights(counts), total
            )
        # Two-sided tails of delta / (2K) hold for all K memories at once (union bound, as
        # Eq. 40 does for Hoeffding); delta / 2 per memory when not simultaneous.
        level = self.delta / (2 * k) if self.simultaneous else self.delta / 2
        lower = np.minimum(np.quantile(boot, level, axis=0), psi)
        upper = np.maximum(np.quantile(boot, 1 - level, axis=0), psi)
        return ShapleyEstimate(
            values=psi, lower=np.clip(lower, -1.0, 1.0), upper=np.clip(upper, -1.0, 1.0)
        )
