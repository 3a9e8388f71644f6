"""Exact Shapley values by enumerating every coalition (Eq. 3).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3.
"""

from __future__ import annotations

from math import factorial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..coalitions import Coalition
from ..errors import ConfigurationError
from ..game import CoalitionGame
from .base import ShapleyEstimate, ShapleyEstimator, SimilaritySource

if TYPE_CHECKING:
    from ..config import ClearanceConfig

__all__ = ["ExactShapley", "exact_shapley", "shapley_weights"]


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


class ExactShapley(ShapleyEstimator):
    """Enumerates all 2^K coalitions: no sampling error, every LOO and candidate cached.

    Args:
        max_memories: the largest K it enumerates (None: ``max_exact_memories`` of the
            run's configuration, 14 outside a run).

    Example:
        >>> from meclear_integrations.core import ClearanceConfig, ExactShapley
        >>> ClearanceConfig(estimator=ExactShapley()).estimator_name
        'exact'
    """

    name = "exact"

    def __init__(self, *, max_memories: int | None = None) -> None:
        self.max_memories = max_memories

    def for_context(
        self,
        k: int,
        *,
        config: ClearanceConfig,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> ExactShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings (``max_exact_memories`` when this has no bound).
            rng: unused (enumeration draws nothing).
            similarity: unused.

        Returns:
            An exact estimator with its bound set.
        """
        bound = self.max_memories if self.max_memories is not None else config.max_exact_memories
        return ExactShapley(max_memories=bound)

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "exact", "max_memories": ...}``.
        """
        return {"name": self.name, "max_memories": self.max_memories}

    def plan(self, k: int) -> list[Coalition]:
        """Every coalition, 2^K of them.

        Args:
            k: the number of memories.

        Returns:
            The coalitions 0 .. 2^K - 1.

        Raises:
            ConfigurationError: K exceeds ``max_memories``.
        """
        bound = self.max_memories if self.max_memories is not None else 14
        if k > bound:
            raise ConfigurationError(
                f"exact enumeration needs 2^{k} coalitions; K={k} exceeds "
                f"max_exact_memories={bound} (use estimator='permutation')"
            )
        return list(range(1 << k))

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi by Eq. 3 over the full table.

        Args:
            game: the coalition table with every coalition evaluated.

        Returns:
            Exact contributions (zero-width intervals).
        """
        table = np.array([game.value(c) for c in range(1 << game.k)], dtype=float)
        psi = exact_shapley(table, game.k)
        return ShapleyEstimate(values=psi, lower=psi.copy(), upper=psi.copy())
