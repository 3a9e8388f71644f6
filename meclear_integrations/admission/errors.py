"""Exceptions of the admission package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import MeClearError

if TYPE_CHECKING:
    from .decision import AdmissionDecision

__all__ = ["AdmissionError", "AdmissionFailedError"]


class AdmissionError(MeClearError):
    """Base class of admission errors."""


class AdmissionFailedError(AdmissionError):
    """A decision could not be reached and the caller's policy is to raise.

    ``decision`` holds the partial evidence and the :class:`StageError`.

    Args:
        decision: The failed decision.
    """

    def __init__(self, decision: AdmissionDecision) -> None:
        err = decision.error
        where = f"{err.stage}: {err.message}" if err else "unknown stage"
        super().__init__(f"admission failed for candidate {decision.candidate_id!r} ({where})")
        self.decision = decision
