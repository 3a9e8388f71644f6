"""Shapley estimators (one per module), the factory the engine uses, interactions (Eq. 15).

The pairwise interaction index omega_ij is :mod:`.interactions`.

``ClearanceConfig(estimator=...)`` takes ``"auto"``, a name, or an estimator object
(:class:`Estimator`): :class:`AutoShapley`, :class:`ExactShapley`,
:class:`KernelShapley`, :class:`PermutationShapley`, :class:`BernsteinPermutationShapley`
or :class:`HierarchicalShapley`, each with its own keyword-only settings and ``seed``.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 11, 13, 15.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..lazy import lazy_exports
from .base import (
    Estimator,
    EstimatorName,
    EstimatorSettings,
    ShapleyEstimate,
    ShapleyEstimator,
    SimilaritySource,
    guarded,
)

if TYPE_CHECKING:
    import numpy as np

    from .auto import AutoShapley
    from .base import NUMERICAL_FAILURES
    from .bernstein import BernsteinPermutationShapley, empirical_bernstein_radius
    from .exact import ExactShapley, exact_shapley, shapley_weights
    from .hierarchical import HierarchicalShapley, ReducedGame
    from .kernel import KernelShapley, kernel_budget, solve_constrained
    from .permutation import (
        PermutationShapley,
        hoeffding_epsilon,
        sufficient_permutations,
        sufficient_permutations_for_gap,
    )

__all__ = [
    "NUMERICAL_FAILURES",
    "AutoShapley",
    "BernsteinPermutationShapley",
    "Estimator",
    "ExactShapley",
    "HierarchicalShapley",
    "KernelShapley",
    "PermutationShapley",
    "ReducedGame",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "SimilaritySource",
    "configured_estimator",
    "empirical_bernstein_radius",
    "estimator_from_settings",
    "exact_shapley",
    "guarded",
    "hoeffding_epsilon",
    "kernel_budget",
    "make_estimator",
    "named_estimator",
    "resolve_estimator",
    "shapley_weights",
    "solve_constrained",
    "sufficient_permutations",
    "sufficient_permutations_for_gap",
]

# NUMERICAL_FAILURES names numpy's LinAlgError: made with its first use. The estimators
# load on first use, so the configuration (which names only ``Estimator``) loads none.
_LAZY = {
    "NUMERICAL_FAILURES": ".base",
    "AutoShapley": ".auto",
    **dict.fromkeys(["BernsteinPermutationShapley", "empirical_bernstein_radius"], ".bernstein"),
    **dict.fromkeys(["ExactShapley", "exact_shapley", "shapley_weights"], ".exact"),
    **dict.fromkeys(["HierarchicalShapley", "ReducedGame"], ".hierarchical"),
    **dict.fromkeys(["KernelShapley", "kernel_budget", "solve_constrained"], ".kernel"),
    **dict.fromkeys(
        [
            "PermutationShapley",
            "hoeffding_epsilon",
            "sufficient_permutations",
            "sufficient_permutations_for_gap",
        ],
        ".permutation",
    ),
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)


def named_estimator(name: EstimatorName, config: EstimatorSettings) -> Estimator:
    """The estimator a name stands for, with its default settings.

    Args:
        name: ``"auto"``, ``"exact"``, ``"kernel"``, ``"permutation"``, ``"bernstein"``
            or ``"hierarchical"``.
        config: the run's settings (unused: every setting is the estimator's own).

    Returns:
        The estimator (unbound: see :meth:`Estimator.for_context`).

    Raises:
        ConfigurationError: an unknown name.
    """
    from .auto import AutoShapley, hierarchical_of
    from .bernstein import BernsteinPermutationShapley
    from .exact import ExactShapley
    from .kernel import KernelShapley
    from .permutation import PermutationShapley

    if name == "auto":
        return AutoShapley()
    if name == "exact":
        return ExactShapley()
    if name == "kernel":
        return KernelShapley()
    if name == "permutation":
        return PermutationShapley()
    if name == "bernstein":
        return BernsteinPermutationShapley()
    if name == "hierarchical":
        return hierarchical_of(AutoShapley())
    raise ConfigurationError(f"unknown estimator {name!r}")


def estimator_from_settings(settings: Mapping[str, Any]) -> Estimator:
    """The estimator that :meth:`Estimator.settings` describes (a JSON round trip).

    Args:
        settings: ``{"name": ..., <setting>: <value>, ...}`` as ``settings()`` returns it.

    Returns:
        An equal estimator.

    Raises:
        ConfigurationError: an unknown name or setting.
    """
    from .auto import AutoShapley
    from .bernstein import BernsteinPermutationShapley
    from .exact import ExactShapley
    from .hierarchical import HierarchicalShapley
    from .kernel import KernelShapley
    from .permutation import PermutationShapley

    data = dict(settings)
    name = data.pop("name", None)
    kinds: dict[str, type[Any]] = {
        "auto": AutoShapley,
        "exact": ExactShapley,
        "kernel": KernelShapley,
        "permutation": PermutationShapley,
        "bernstein": BernsteinPermutationShapley,
        "hierarchical": HierarchicalShapley,
    }
    if not isinstance(name, str) or name not in kinds:
        raise ConfigurationError(f"unknown estimator {name!r}; expected one of {sorted(kinds)}")
    if name == "hierarchical" and isinstance(data.get("fallback"), Mapping):
        data["fallback"] = estimator_from_settings(data["fallback"])
    try:
        estimator: Estimator = kinds[name](**data)
    except TypeError as exc:
        raise ConfigurationError(f"invalid settings for the {name} estimator: {exc}") from exc
    return estimator


def configured_estimator(config: EstimatorSettings) -> Estimator:
    """``config.estimator`` as an estimator object (a name gets the default settings).

    Args:
        config: the run's settings.

    Returns:
        The estimator.
    """
    chosen = config.estimator
    return named_estimator(chosen, config) if isinstance(chosen, str) else chosen


def resolve_estimator(config: EstimatorSettings, k: int) -> str:
    """The name of the concrete estimator ``config.estimator`` means at context size ``k``.

    ``"auto"`` is exact enumeration when 2^K <= ``exact_budget`` (and K <= the exact
    estimator's bound), else paired KernelSHAP below ``hierarchical_from`` memories and
    hierarchical attribution from there on (:class:`AutoShapley`).

    Args:
        config: the run's settings.
        k: the number of memories.

    Returns:
        ``"exact"``, ``"kernel"``, ``"hierarchical"``, ``"permutation"`` or
        ``"bernstein"``.
    """
    from .auto import AutoShapley

    estimator = configured_estimator(config)
    if isinstance(estimator, AutoShapley):
        return estimator.choose(k, config)
    return estimator.name


def make_estimator(
    config: EstimatorSettings,
    rng: np.random.Generator,
    k: int | None = None,
    similarity: SimilaritySource | None = None,
) -> ShapleyEstimator:
    """The estimator of ``config.estimator``, fresh for one run over ``k`` memories.

    Args:
        config: the run's settings.
        rng: the run's random generator.
        k: the number of memories (None: 0).
        similarity: called only by the hierarchical estimator, when its attribution
            starts (default: no similarity, so blocks are formed at random).

    Returns:
        The estimator the engine drives.
    """
    return configured_estimator(config).for_context(
        k if k is not None else 0, config=config, rng=rng, similarity=similarity
    )
