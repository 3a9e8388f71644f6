"""Where a case's task values come from: the simulated world, or real models.

The runner asks a :class:`CaseBackend` for each (case, method) evaluator (:meth:`query`),
runs the method inside :meth:`session` (which charges the model calls made in it to that
evaluator) and measures the context the method returned on trials no method saw
(:meth:`measure`). :class:`SimulatedBackend` is the simulated evidence world (SIMULATED
figures); :class:`~.real_backend.RealModelBackend` runs real chat models.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from meclear_integrations.core.memory import Memory
from meclear_integrations.simulation import SimulatedQuery

from .cases import BenchCase
from .measure import ContextQuality, measure_context
from .settings import BenchSettings, case_world

__all__ = ["SIMULATED", "CaseBackend", "QueryEvaluator", "SimulatedBackend"]


class QueryEvaluator(Protocol):
    """``evaluate(coalition, trial) -> score`` of one (case, method), with its model calls."""

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` on trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The judge's score in [0, 1].
        """

    @property
    def model_calls(self) -> int:
        """Agent plus judge calls made so far (what a user pays)."""

    @property
    def agent_calls(self) -> int:
        """Agent calls made so far."""

    @property
    def judge_calls(self) -> int:
        """Judge calls made so far."""


class CaseBackend(Protocol):
    """Task values of benchmark cases."""

    simulated: bool
    """True for the simulated evidence world (figures labelled SIMULATED)."""

    def query(self, case: BenchCase, settings: BenchSettings) -> QueryEvaluator:
        """A fresh evaluator for one method on ``case``.

        Args:
            case: The benchmark case.
            settings: The run's settings.

        Returns:
            The evaluator, counting its model calls.
        """
        ...

    def session(self, query: Any) -> AbstractContextManager[Any]:
        """Context in which a method runs against ``query``.

        Args:
            query: The evaluator from :meth:`query`.

        Returns:
            A context manager yielding ``query``.
        """
        ...

    def measure(
        self, case: BenchCase, kept: Sequence[str], settings: BenchSettings
    ) -> ContextQuality:
        """What the context ``kept`` achieves on fresh trials (uncharged).

        Args:
            case: The benchmark case.
            kept: The ids of the memories left in the context.
            settings: The run's settings.

        Returns:
            The context's accuracy and recovery on trials no method saw.
        """
        ...


class SimulatedBackend:
    """The simulated evidence world and its simulated judge (SIMULATED)."""

    simulated = True

    def query(self, case: BenchCase, settings: BenchSettings) -> SimulatedQuery:
        """A fresh simulated evaluator for one method on ``case``.

        Args:
            case: The benchmark case.
            settings: The run's settings (world options and success signal).

        Returns:
            The case's simulated query, counting its agent and judge calls.
        """
        return SimulatedQuery(
            case_world(case.world, settings),
            case.reference,
            case_id=case.case_id,
            context_ids=[m.id for m in case.memories],
            signal=settings.judge,
            question=case.query,
            seed=settings.seed,
        )

    def session(self, query: Any) -> AbstractContextManager[Any]:
        """The context in which a method runs against ``query`` (nothing to set up here).

        Args:
            query: The evaluator from :meth:`query`.

        Returns:
            A context manager yielding ``query``.
        """
        return nullcontext(query)

    def measure(
        self, case: BenchCase, kept: Sequence[str], settings: BenchSettings
    ) -> ContextQuality:
        """What the context ``kept`` achieves on fresh trials (uncharged).

        Args:
            case: The benchmark case.
            kept: The ids of the memories left in the context.
            settings: The run's settings (``recovery_trials``).

        Returns:
            The context's accuracy and recovery on trials no method saw.
        """
        return measure_context(
            case_world(case.world, settings),
            case.reference,
            kept,
            case_id=case.case_id,
            trials=settings.recovery_trials,
        )


SIMULATED = SimulatedBackend()
"""The default backend."""
