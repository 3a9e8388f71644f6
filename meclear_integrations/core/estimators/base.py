"""The estimator protocol: plan coalitions, then read contributions off the game.

An estimator object carries its own settings (keyword-only, with a ``seed``) and is
reusable: :meth:`Estimator.for_context` returns a fresh estimator for one run over K
memories, whose :meth:`ShapleyEstimator.plan`, :meth:`~ShapleyEstimator.extend` and
:meth:`~ShapleyEstimator.estimate` the engine drives. The budget is counted in distinct
coalitions (value-function evaluations).

The engine calls every estimator step through :func:`guarded`, so an overflow, a singular
system or an allocation failure after evaluator calls were spent fails open (context
unchanged, ``reason="estimator_error"``) or closed like an evaluator failure, instead of
escaping as a bare numpy / Python error. Any other exception is a bug and propagates.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    Union,
    runtime_checkable,
)

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError, ConfigurationTypeError, EstimatorError
from ..game import Coalition, CoalitionGame
from ..similarity_graph import SimilarityGraph

__all__ = [
    "NUMERICAL_FAILURES",
    "TABLE_EVIDENCE",
    "Estimator",
    "EstimatorName",
    "EstimatorSettings",
    "ShapleyEstimate",
    "ShapleyEstimator",
    "SimilaritySource",
    "guarded",
    "moved_settings",
    "run_rng",
    "same_settings",
    "settings_hash",
]

SimilaritySource = Callable[[], Union["np.ndarray", SimilarityGraph]]
"""Computes the K x K similarity between memories when an estimator needs it (dense or
sparse, :class:`~..similarity_graph.SimilarityGraph`)."""


@dataclass(frozen=True)
class ShapleyEstimate:
    """Contributions psi_i with a per-memory confidence interval (lower, upper).

    Args:
        values: psi_i by memory position.
        lower: lower ends of the intervals.
        upper: upper ends of the intervals.
    """

    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


EstimatorName = Literal["auto", "permutation", "bernstein", "exact", "kernel", "hierarchical"]
"""The estimators ``ClearanceConfig(estimator=...)`` knows by name."""


class _SuccessThreshold(Protocol):
    @property
    def success_threshold(self) -> float: ...


class EstimatorSettings(Protocol):
    """What an estimator reads of the run's settings (``ClearanceConfig`` is one).

    The estimators read these and nothing else, so they need nothing of the configuration
    module (which builds estimators from names).
    """

    @property
    def estimator(self) -> EstimatorName | Estimator:
        """The estimator asked for: a name or an object."""
        ...

    @property
    def estimator_name(self) -> str:
        """The estimator's name (``"auto"`` until a run resolves it)."""
        ...

    @property
    def confidence_delta(self) -> float:
        """Delta of the per-memory confidence intervals."""
        ...

    @property
    def harm_tolerance(self) -> float:
        """Tau of Eq. 14: a memory is harmful when its upper bound is below -tau."""
        ...

    @property
    def verification(self) -> _SuccessThreshold:
        """The recovery rule's settings (``success_threshold``)."""
        ...


@runtime_checkable
class Estimator(Protocol):
    """What ``ClearanceConfig(estimator=...)`` accepts besides a name.

    Every concrete estimator (:class:`ShapleyEstimator` subclasses) and
    :class:`~meclear_integrations.core.estimators.AutoShapley` implement it.

    Example:
        >>> from meclear_integrations.core import ClearanceConfig, PermutationShapley
        >>> config = ClearanceConfig(estimator=PermutationShapley(permutations=64))
        >>> config.estimator_name
        'permutation'
    """

    @property
    def name(self) -> str:
        """The estimator's name (reported as ``ClearanceReport.estimator``)."""
        ...

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> ShapleyEstimator:
        """A fresh estimator for one run over ``k`` memories.

        Args:
            k: the number of memories.
            config: the run's settings (decision settings such as ``confidence_delta``
                and ``harm_tolerance`` come from it).
            rng: the run's random generator (used unless the estimator has a ``seed``).
            similarity: the memories' similarity, for estimators that group them.

        Returns:
            An estimator with this one's settings and empty run state.
        """
        ...

    def settings(self) -> dict[str, Any]:
        """The estimator's settings, JSON-serialisable (recorded in reports).

        Returns:
            ``{"name": ..., <setting>: <value>, ...}``; the keys are the constructor's keywords.
        """
        ...


def run_rng(seed: int | None, rng: np.random.Generator) -> np.random.Generator:
    """The generator one run of an estimator draws from.

    Args:
        seed: the estimator's own seed (None: use the run's).
        rng: the run's generator (seeded by ``ClearanceConfig.seed``).

    Returns:
        A generator seeded by ``seed``, or ``rng``.
    """
    return np.random.default_rng(seed) if seed is not None else rng


def same_settings(a: Estimator, b: object) -> bool:
    """Whether two estimators are of one kind with equal settings.

    Args:
        a: an estimator.
        b: anything.

    Returns:
        True when ``b`` is an estimator of ``a``'s class with equal :meth:`~Estimator.settings`.
    """
    return type(a) is type(b) and a.settings() == b.settings()


def settings_hash(estimator: Estimator) -> int:
    """A hash consistent with :func:`same_settings`.

    Args:
        estimator: an estimator.

    Returns:
        The hash of its class and settings.
    """
    return hash((type(estimator).__name__, json.dumps(estimator.settings(), sort_keys=True)))


TABLE_EVIDENCE = ("residual_z", "answer_flags", "answer_residual_z")
"""Settings that were the exact estimator's and are clearance policy now
(``ClearanceConfig.table_evidence``)."""


def moved_settings(given: Mapping[str, object], *, prefix: str) -> None:
    """Reject keyword settings an estimator no longer takes, naming where they went.

    Args:
        given: the keywords the constructor did not declare.
        prefix: how the estimator spells the exact estimator's settings (``"exact_"``
            for :class:`~.auto.AutoShapley`, ``""`` for the exact estimator).

    Raises:
        ConfigurationError: a setting that moved to ``ClearanceConfig.table_evidence``.
        ConfigurationTypeError: any other unknown keyword (also a ``TypeError``, as Python
            raises it).
    """
    for key in given:
        own = key[len(prefix) :] if key.startswith(prefix) else key
        if own in TABLE_EVIDENCE:
            raise ConfigurationError(
                f"`{key}` moved: use ClearanceConfig(table_evidence=TableEvidence({own}=...)) "
                "(the add-ons that read the complete coalition table are clearance policy, "
                "not estimator settings)"
            )
    if given:
        raise ConfigurationTypeError(f"unexpected keyword argument(s) {sorted(given)}")


class ShapleyEstimator(ABC):
    """An estimator of psi (Eq. 3) whose cost is counted in distinct coalitions.

    Two estimators are equal when they are of one class with equal settings (run state
    does not count), so configurations holding them compare and hash by value.
    """

    name: str
    memory_loo: bool = True
    """The screening batch evaluates M minus each memory (LOO, Eq. 7) for it."""
    enumerates: bool = False
    """It evaluates every coalition (Eq. 3): the table is complete after attribution,
    which the table-evidence add-ons read (``ClearanceConfig.table_evidence``)."""
    suspects: Sequence[int] = ()
    """Positions it singled out as harmful on its own evidence (searched by escalation
    before the other negatively valued memories, ``core.escalation``)."""

    @property
    def interval_harm(self) -> bool:
        """Its intervals are meaningful for ``harm_rule="auto"`` (the interval rule)."""
        return False

    def __eq__(self, other: object) -> bool:
        return same_settings(self, other)

    def __hash__(self) -> int:
        return settings_hash(self)

    def __repr__(self) -> str:
        settings = {k: v for k, v in self.settings().items() if k != "name"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in settings.items())})"

    @abstractmethod
    def plan(self, k: int) -> list[Coalition]:
        """Coalitions the estimate needs (all requested in one batch).

        Args:
            k: the number of memories.

        Returns:
            The coalitions to evaluate.
        """

    def extend(self, game: CoalitionGame) -> list[Coalition]:
        """Further coalitions after looking at the values so far (adaptive stopping).

        Fixed-budget estimators plan everything at once.

        Args:
            game: the coalition table with the planned coalitions evaluated.

        Returns:
            More coalitions to evaluate; empty when the estimate is final.
        """
        return []

    @abstractmethod
    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi from the cached values of the planned coalitions.

        Args:
            game: the coalition table with every planned coalition evaluated.

        Returns:
            The contributions and their intervals.
        """

    @abstractmethod
    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> ShapleyEstimator:
        """A fresh estimator for one run over ``k`` memories (see :class:`Estimator`).

        Args:
            k: the number of memories.
            config: the run's settings.
            rng: the run's random generator (used unless the estimator has a ``seed``).
            similarity: the memories' similarity, for estimators that group them.

        Returns:
            An estimator with this one's settings and empty run state.
        """

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The estimator's settings, JSON-serialisable (recorded in reports).

        Returns:
            ``{"name": ..., <setting>: <value>, ...}``.
        """


P = ParamSpec("P")
R = TypeVar("R")


def guarded(
    estimator: ShapleyEstimator, step: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    """``step(*args, **kwargs)``, with a numerical failure re-raised as EstimatorError.

    Args:
        estimator: the estimator (named in the error).
        step: its plan, extend or estimate.
        *args: passed to ``step``.
        **kwargs: passed to ``step``.

    Returns:
        What ``step`` returns.

    Raises:
        EstimatorError: ``step`` failed numerically (one of :data:`NUMERICAL_FAILURES`).
    """
    try:
        return step(*args, **kwargs)
    except (ArithmeticError, MemoryError, np.linalg.LinAlgError) as exc:  # numpy on failure only
        raise EstimatorError(
            f"the {estimator.name} estimator failed: {type(exc).__name__}: {exc}"
        ) from exc


def __getattr__(name: str) -> Any:
    """:data:`NUMERICAL_FAILURES`, made on first use (it names numpy's LinAlgError)."""
    if name == "NUMERICAL_FAILURES":
        failures = (ArithmeticError, np.linalg.LinAlgError, MemoryError)
        globals()[name] = failures
        return failures
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


NUMERICAL_FAILURES: tuple[type[BaseException], ...]
"""What counts as an estimator failure (ArithmeticError covers OverflowError,
ZeroDivisionError and FloatingPointError); :func:`guarded` catches exactly these."""
