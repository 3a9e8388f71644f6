"""The automatic choice of estimator by context size (``estimator="auto"``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError
from .base import (
    Estimator,
    EstimatorSettings,
    ShapleyEstimator,
    SimilaritySource,
    moved_settings,
    run_rng,
    same_settings,
    settings_hash,
)
from .exact import ErrorModel, ExactShapley, exact_bound
from .hierarchical import HierarchicalShapley
from .kernel import KernelShapley

__all__ = ["AutoShapley", "clearance_bound", "hierarchical_of"]


def hierarchical_of(auto: AutoShapley) -> HierarchicalShapley:
    """The hierarchical estimator the automatic choice's hierarchical settings describe.

    Args:
        auto: the automatic choice (``blocks``, ``branching``, ``partitions``,
            ``anchor_samples``; its kernel estimator is the flat fallback).

    Returns:
        An unbound hierarchical estimator (see :meth:`HierarchicalShapley.for_context`).
    """
    return HierarchicalShapley(
        blocks=auto.blocks,
        branching=auto.branching,
        attempts=auto.partitions,
        samples=auto.anchor_samples,
        fallback=auto.kernel,
    )


class AutoShapley:
    """Chooses the estimator by context size K (what ``estimator="auto"`` means).

    Exact enumeration (Eq. 3) when 2^K <= ``exact_budget`` (and K is at most the exact
    estimator's bound, ``exact_max_memories``), else paired KernelSHAP below
    ``hierarchical_from`` memories and hierarchical attribution
    (:class:`~.hierarchical.HierarchicalShapley`) from there on.

    Args:
        exact_budget: enumerate every coalition when 2^K is at most this.
        coalitions_per_memory: the kernel estimator's budget per memory (also that of the
            hierarchical estimator's flat fallback).
        max_table_fraction: the most of the 2^K coalitions the kernel estimator plans.
        seed: seed of the chosen estimator (None: the run's generator).
        exact_error_model: the exact estimator's ``error_model`` (``"none"``: zero-width
            intervals; ``"pooled"``: intervals from the run's trial disagreement).
        exact_noise_floor: the exact estimator's ``noise_floor``.
        exact_z: the exact estimator's interval quantile ``z`` (None: from the run).
        exact_refine_rounds: the exact estimator's ``refine_rounds``.
        exact_max_memories: the exact estimator's ``max_memories`` (None: 14).
        hierarchical_from: contexts of at least this many memories are attributed
            hierarchically.
        blocks: G, blocks of the hierarchical first level (2^G block unions, each
            evaluated once).
        branching: sub-blocks per cut when the hierarchical estimator screens a block.
        partitions: block partitions tried to find a union of blocks that recovers.
        anchor_samples: random coalitions evaluated when no union of blocks recovers
            (0: give up).
        **moved: ``exact_residual_z``, ``exact_answer_flags`` and
            ``exact_answer_residual_z`` are clearance policy now
            (``ClearanceConfig(table_evidence=TableEvidence(...))``); given here they raise.

    Raises:
        ConfigurationError: a setting is out of range, or one that moved.

    Example:
        >>> from meclear_integrations.core import AutoShapley, ClearanceConfig
        >>> ClearanceConfig(estimator=AutoShapley(exact_budget=32)).estimator_name
        'auto'
    """

    name = "auto"

    def __init__(
        self,
        *,
        exact_budget: int = 32,
        coalitions_per_memory: float = 10.0,
        max_table_fraction: float = 0.75,
        seed: int | None = None,
        exact_error_model: ErrorModel = "pooled",
        exact_noise_floor: float = 0.02,
        exact_z: float | None = 1.0,
        exact_refine_rounds: int = 0,
        exact_max_memories: int | None = None,
        hierarchical_from: int = 7,
        blocks: int = 5,
        branching: int = 4,
        partitions: int = 1,
        anchor_samples: int = 32,
        **moved: object,
    ) -> None:
        moved_settings(moved, prefix="exact_")
        if not 1 <= exact_budget <= 1 << 20:
            raise ConfigurationError(f"exact_budget must be in [1, 2^20], got {exact_budget}")
        for name, value, low, high in [
            ("exact_max_memories", exact_max_memories, 1, 20),
            ("hierarchical_from", hierarchical_from, 2, 4096),
            ("blocks", blocks, 2, 10),
            ("branching", branching, 2, 64),
            ("partitions", partitions, 1, 10),
            ("anchor_samples", anchor_samples, 0, 4096),
        ]:
            if value is not None and not low <= value <= high:
                raise ConfigurationError(f"{name} must be in [{low}, {high}], got {value}")
        self.exact_budget = exact_budget
        self.hierarchical_from = hierarchical_from
        self.blocks = blocks
        self.branching = branching
        self.partitions = partitions
        self.anchor_samples = anchor_samples
        self.exact = ExactShapley(
            max_memories=exact_max_memories,
            error_model=exact_error_model,
            noise_floor=exact_noise_floor,
            z=exact_z,
            refine_rounds=exact_refine_rounds,
        )
        self.kernel = KernelShapley(
            coalitions_per_memory=coalitions_per_memory, max_table_fraction=max_table_fraction
        )
        self.seed = seed

    def choose(self, k: int, config: EstimatorSettings) -> str:
        """The name of the estimator used at context size ``k``.

        Args:
            k: the number of memories.
            config: the run's settings (unused: the choice is the estimator's own).

        Returns:
            ``"exact"``, ``"kernel"`` or ``"hierarchical"``.
        """
        if (1 << k) <= self.exact_budget and k <= exact_bound(self.exact):
            return "exact"
        if k >= self.hierarchical_from:
            return "hierarchical"
        return "kernel"

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> ShapleyEstimator:
        """The chosen estimator, fresh for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings.
            rng: the run's generator (used unless ``seed`` is set).
            similarity: the memories' similarity (hierarchical attribution).

        Returns:
            An exact, kernel or hierarchical estimator.
        """
        drawn = run_rng(self.seed, rng)
        choice = self.choose(k, config)
        chosen: ShapleyEstimator
        if choice == "exact":
            chosen = self.exact
        elif choice == "hierarchical":
            chosen = hierarchical_of(self)
        else:
            chosen = self.kernel
        return chosen.for_context(k, config=config, rng=drawn, similarity=similarity)

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "auto", "exact_budget": ..., ...}``.
        """
        return {
            "name": self.name,
            "exact_budget": self.exact_budget,
            "coalitions_per_memory": self.kernel.coalitions_per_memory,
            "max_table_fraction": self.kernel.max_table_fraction,
            "seed": self.seed,
            "exact_error_model": self.exact.error_model,
            "exact_noise_floor": self.exact.noise_floor,
            "exact_z": self.exact.z,
            "exact_refine_rounds": self.exact.refine_rounds,
            "exact_max_memories": self.exact.max_memories,
            "hierarchical_from": self.hierarchical_from,
            "blocks": self.blocks,
            "branching": self.branching,
            "partitions": self.partitions,
            "anchor_samples": self.anchor_samples,
        }

    def __eq__(self, other: object) -> bool:
        return same_settings(self, other)

    def __hash__(self) -> int:
        return settings_hash(self)

    def __repr__(self) -> str:
        settings = {k: v for k, v in self.settings().items() if k != "name"}
        return f"AutoShapley({', '.join(f'{k}={v!r}' for k, v in settings.items())})"


def clearance_bound(estimator: Estimator) -> int:
    """The largest H^ minimal clearance enumerates: the exact estimator's bound.

    Args:
        estimator: the configured estimator (an automatic choice's exact estimator counts).

    Returns:
        ``core.estimators.exact.exact_bound`` of the estimator that would enumerate.
    """
    return exact_bound(estimator.exact if isinstance(estimator, AutoShapley) else estimator)
