"""Shapley estimators (one per module) and the factory the engine uses."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..config import ClearanceConfig
from .base import ShapleyEstimate, ShapleyEstimator
from .bernstein import BernsteinPermutationShapley, empirical_bernstein_radius
from .exact import ExactShapley, exact_shapley, shapley_weights
from .guard import NUMERICAL_FAILURES, guarded
from .hierarchical import FLAT_FALLBACK_MAX, HierarchicalShapley, ReducedGame
from .kernel import KernelShapley, kernel_budget, solve_constrained
from .permutation import (
    PermutationShapley,
    hoeffding_epsilon,
    sufficient_permutations,
    sufficient_permutations_for_gap,
)

__all__ = [
    "NUMERICAL_FAILURES",
    "BernsteinPermutationShapley",
    "ExactShapley",
    "HierarchicalShapley",
    "KernelShapley",
    "PermutationShapley",
    "ReducedGame",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "SimilaritySource",
    "empirical_bernstein_radius",
    "exact_shapley",
    "guarded",
    "hoeffding_epsilon",
    "kernel_budget",
    "make_estimator",
    "resolve_estimator",
    "shapley_weights",
    "solve_constrained",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]


def resolve_estimator(config: ClearanceConfig, k: int) -> str:
    """The concrete estimator ``config.estimator`` means at context size ``k``.

    ``"auto"`` is exact enumeration when 2^K <= ``exact_budget`` (and K <=
    ``max_exact_memories``), else paired KernelSHAP below ``hierarchical_from`` memories
    and hierarchical attribution from there on.
    """
    if config.estimator != "auto":
        return config.estimator
    if (1 << k) <= config.exact_budget and k <= config.max_exact_memories:
        return "exact"
    if k >= config.hierarchical_from:
        return "hierarchical"
    return "kernel"


SimilaritySource = Callable[[], np.ndarray]
"""Computes the K x K similarity between memories when an estimator needs it."""


def make_estimator(
    config: ClearanceConfig,
    rng: np.random.Generator,
    k: int | None = None,
    similarity: SimilaritySource | None = None,
) -> ShapleyEstimator:
    """The estimator named by ``config.estimator`` (``"auto"`` resolved at size ``k``).

    ``similarity`` is called only by the hierarchical estimator, when its attribution
    starts (default: no similarity, so blocks are formed at random)."""
    name = resolve_estimator(config, k if k is not None else 0)
    if name == "exact":
        return ExactShapley(max_memories=config.max_exact_memories)
    if name == "kernel":
        return KernelShapley(
            budget=kernel_budget(k or 1, config.coalitions_per_memory, config.max_table_fraction),
            rng=rng,
            delta=config.confidence_delta,
        )
    if name == "hierarchical":
        size = k or 1
        return HierarchicalShapley(
            similarity=similarity,
            threshold=config.success_threshold,
            tau=config.harm_tolerance,
            blocks=config.blocks,
            branching=config.branching,
            attempts=config.partitions,
            samples=config.anchor_samples,
            fallback=KernelShapley(
                budget=kernel_budget(size, config.coalitions_per_memory, config.max_table_fraction),
                rng=rng,
                delta=config.confidence_delta,
            )
            if size <= FLAT_FALLBACK_MAX
            else None,
            rng=rng,
        )
    if config.stopping == "bernstein":
        return BernsteinPermutationShapley(
            max_permutations=config.permutations,
            tau=config.harm_tolerance,
            delta=config.confidence_delta,
            rng=rng,
        )
    return PermutationShapley(
        permutations=config.permutations, delta=config.confidence_delta, rng=rng
    )
