"""Errors raised by judges."""

from __future__ import annotations

from ..core.errors import MeClearError

__all__ = ["JudgeError", "MissingReferenceError", "VerdictParseError"]


class JudgeError(MeClearError):
    """A judge could not produce a score for one call."""


class MissingReferenceError(JudgeError, ValueError):
    """A reference-based judge was called without a reference answer."""


class VerdictParseError(JudgeError, ValueError):
    """An LLM judge's reply holds no readable verdict.

    Raised per call, never replaced by a default score: the engine turns it into an
    :class:`~meclear_integrations.core.errors.EvaluatorError` naming the coalition.
    ``raw`` is the model's reply (truncated to 2,000 characters).

    Args:
        message: What was wrong with the reply.
        raw: The model's reply.
    """

    unreadable_reply = True
    """Marks a model reply that could not be read: ``RetryPolicy.retry_unreadable``
    retries it (a sampled judge's next reply usually parses)."""

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw[:2000]
