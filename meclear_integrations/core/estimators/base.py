"""Shapley estimator interface: plan coalitions, then read contributions off the game."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..coalitions import Coalition
from ..game import CoalitionGame

__all__ = ["ShapleyEstimate", "ShapleyEstimator"]


@dataclass(frozen=True)
class ShapleyEstimate:
    """Contributions psi_i with a per-memory confidence interval (lower, upper)."""

    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


class ShapleyEstimator(ABC):
    """An estimator of psi (Eq. 3) whose cost is counted in distinct coalitions."""

    name: str

    @abstractmethod
    def plan(self, k: int) -> list[Coalition]:
        """Coalitions the estimate needs (all requested in one batch)."""

    def extend(self, game: CoalitionGame) -> list[Coalition]:
        """Further coalitions after looking at the values so far (adaptive stopping);
        empty when the estimate is final. Fixed-budget estimators plan everything at once."""
        return []

    @abstractmethod
    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """psi from the cached values of the planned coalitions."""
