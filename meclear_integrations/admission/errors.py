"""Exceptions of the admission package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..core.errors import MeClearError

if TYPE_CHECKING:
    from .background_models import AdmissionRecord
    from .decision import AdmissionDecision

__all__ = [
    "AdmissionError",
    "AdmissionFailedError",
    "BackgroundAdmissionFailedError",
    "CandidateTypeError",
    "InvalidCandidateError",
    "InvalidReason",
]

InvalidReason = Literal["not_text", "empty", "too_long", "malformed"]
"""Why a write was refused before any model call (``admission.validation``)."""


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


class InvalidCandidateError(AdmissionError, ValueError):
    """A write refused before any model call: empty, oversized or malformed input.

    Args:
        field: The offending field (``candidate``, ``context[2].content``,
            ``documents[1].page_content``...).
        reason: ``not_text``, ``empty``, ``too_long`` or ``malformed``.
        detail: One line on what was wrong (never the text itself).
    """

    def __init__(self, field: str, reason: InvalidReason, detail: str) -> None:
        super().__init__(f"invalid admission input {field}: {detail}")
        self.field = field
        self.reason: InvalidReason = reason
        self.detail = detail

    def at(self, prefix: str) -> InvalidCandidateError:
        """The same error with its field placed under ``prefix`` (a batch item).

        Args:
            prefix: E.g. ``documents[3]``.

        Returns:
            A new error of the same class, ``field`` = ``prefix.field``.
        """
        error = type(self)(f"{prefix}.{self.field}", self.reason, self.detail)
        error.__cause__ = self.__cause__
        return error


class CandidateTypeError(InvalidCandidateError, TypeError):
    """A write whose candidate or context is not text (bytes, a number, None, a dict...)."""


class BackgroundAdmissionFailedError(AdmissionError):
    """A background decision failed (``record.state == "failed"``); the write was kept.

    Raised by :meth:`AdmissionTicket.result`; the job (candidate, context, payload) stays
    in the durable record so :meth:`BackgroundAdmission.resubmit` can queue it again.

    Args:
        record: The failed record.
    """

    def __init__(self, record: AdmissionRecord) -> None:
        super().__init__(
            f"background admission failed for job {record.job_id} "
            f"(candidate {record.candidate_id!r}): {record.error}"
        )
        self.record = record
