"""Exact Shapley values by enumerating every coalition (Eq. 3)."""

from __future__ import annotations

from math import factorial

import numpy as np

from ..coalitions import Coalition
from ..errors import ConfigurationError
from ..game import CoalitionGame
from .base import ShapleyEstimate, ShapleyEstimator

__all__ = ["ExactShapley", "exact_shapley", "shapley_weights"]


def shapley_weights(k: int) -> np.ndarray:
    """w[s] = s! (K - s - 1)! / K!, the probability that a given S of size s precedes m_i."""
    return np.array(
        [factorial(s) * factorial(k - s - 1) / factorial(k) for s in range(k)], dtype=float
    )


def exact_shapley(table: np.ndarray, k: int) -> np.ndarray:
    """psi_i = sum_S w(|S|) [v(S u {i}) - v(S)] for a full value table indexed by bitmask."""
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


class ExactShapley(ShapleyEstimator):
    """Enumerates all 2^K coalitions: no sampling error, every LOO and candidate cached."""

    name = "exact"

    def __init__(self, *, max_memories: int = 14) -> None:
        self.max_memories = max_memories

    def plan(self, k: int) -> list[Coalition]:
        if k > self.max_memories:
            raise ConfigurationError(
                f"exact enumeration needs 2^{k} coalitions; K={k} exceeds "
                f"max_exact_memories={self.max_memories} (use estimator='permutation')"
            )
        return list(range(1 << k))

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        table = np.array([game.value(c) for c in range(1 << game.k)], dtype=float)
        psi = exact_shapley(table, game.k)
        return ShapleyEstimate(values=psi, lower=psi.copy(), upper=psi.copy())
