"""Exceptions of the admission package.

The two that carry a result live beside it, so this module imports nothing of the package:
:class:`~meclear_integrations.admission.decision.AdmissionFailedError` (a decision) and
:class:`~meclear_integrations.admission.background_models.BackgroundAdmissionFailedError`
(a background record). Both subclass :class:`AdmissionError`.
"""

from __future__ import annotations

from typing import Literal

from ..core.errors import MeClearError

__all__ = [
    "AdmissionError",
    "CandidateTypeError",
    "InvalidCandidateError",
    "InvalidReason",
]

InvalidReason = Literal["not_text", "empty", "too_long", "malformed"]
"""Why a write was refused before any model call (``admission.validation``)."""


class AdmissionError(MeClearError):
    """Base class of admission errors."""


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
