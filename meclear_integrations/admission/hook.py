"""A write hook for memory systems (Mem0-style): ``before_write(candidate, context)``."""

from __future__ import annotations

from typing import Literal

from .decision import AdmissionDecision, AdmissionFailedError
from .engine import ConMemAdmitter
from .prompts import Context

__all__ = ["AdmissionHook", "OnError", "admits"]

OnError = Literal["reject", "admit", "raise"]
"""What a gate does with a failed decision: drop the candidate, keep it, or raise."""


def admits(decision: AdmissionDecision, on_error: OnError = "reject") -> bool:
    """Whether a write goes ahead: ``decision.store``, or the ``on_error`` policy on failure.

    Args:
        decision: The admission decision.
        on_error: The policy for a failed decision: ``reject``, ``admit`` or ``raise``.

    Returns:
        Whether to write.

    Raises:
        AdmissionFailedError: The decision failed and ``on_error="raise"``.
    """
    if decision.ok:
        return decision.store
    if on_error == "raise":
        raise AdmissionFailedError(decision)
    return on_error == "admit"


class AdmissionHook:
    """Call ``before_write`` before persisting a memory; store it when ``decision.store``.

    The score is CMTE rescaled to [0, 1] (0.5 at CMTE = 0, where the tie-break judge
    decides): higher means stronger counterfactual evidence for storing. When a stage fails
    the decision carries the error and ``on_error`` sets the outcome: ``reject`` returns
    score 0.0, ``admit`` 1.0, ``raise`` raises :class:`AdmissionFailedError`.

    Args:
        admitter: The ConMem engine.
        on_error: ``reject``, ``admit`` or ``raise``.
    """

    def __init__(self, admitter: ConMemAdmitter, *, on_error: OnError = "reject") -> None:
        self.admitter = admitter
        self.on_error = on_error

    def _score(self, decision: AdmissionDecision) -> float:
        if decision.ok:
            assert decision.score is not None
            return decision.score
        if self.on_error == "raise":
            assert decision.error is not None
            raise AdmissionFailedError(decision)
        return 1.0 if self.on_error == "admit" else 0.0

    def before_write(
        self, candidate: str, context: Context, *, candidate_id: str | None = None
    ) -> tuple[float, AdmissionDecision]:
        """(score in [0, 1], decision) for ``candidate`` extracted from ``context``.

        Args:
            candidate: The candidate memory's text.
            context: Its historical context.
            candidate_id: The candidate's id in the decision.

        Returns:
            ``(score in [0, 1], decision)``.

        Raises:
            AdmissionFailedError: A stage failed and ``on_error="raise"``.
        """
        decision = self.admitter.decide(candidate, context, candidate_id=candidate_id)
        return self._score(decision), decision

    async def abefore_write(
        self, candidate: str, context: Context, *, candidate_id: str | None = None
    ) -> tuple[float, AdmissionDecision]:
        """Async :meth:`before_write` (its arguments, result and errors)."""
        decision = await self.admitter.adecide(candidate, context, candidate_id=candidate_id)
        return self._score(decision), decision

    def should_store(self, decision: AdmissionDecision) -> bool:
        """Whether the write goes ahead under the ``on_error`` policy.

        Args:
            decision: The admission decision.

        Returns:
            Whether to write.

        Raises:
            AdmissionFailedError: The decision failed and ``on_error="raise"``.
        """
        return admits(decision, self.on_error)
