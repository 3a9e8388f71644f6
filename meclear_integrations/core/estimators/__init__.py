"""Shapley estimators (one per module) and the factory the engine uses."""

from __future__ import annotations

import numpy as np

from ..config import ClearanceConfig
from .base import ShapleyEstimate, ShapleyEstimator
from .exact import ExactShapley, exact_shapley, shapley_weights
from .permutation import (
    PermutationShapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)

__all__ = [
    "ExactShapley",
    "PermutationShapley",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "exact_shapley",
    "hoeffding_epsilon",
    "make_estimator",
    "shapley_weights",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]


def make_estimator(config: ClearanceConfig, rng: np.random.Generator) -> ShapleyEstimator:
    """The estimator named by ``config.estimator``."""
    if config.estimator == "exact":
        return ExactShapley(max_memories=config.max_exact_memories)
    return PermutationShapley(
        permutations=config.permutations, delta=config.confidence_delta, rng=rng
    )
