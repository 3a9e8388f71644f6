"""Exceptions raised by the MeClear engine."""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "ClearanceFailedError",
    "ConfigurationError",
    "ConfigurationTypeError",
    "DuplicateMemoryError",
    "EstimatorError",
    "EvaluatorError",
    "InconsistentVerdictsError",
    "InvalidRetrievalError",
    "MeClearError",
    "RedactedError",
    "ScoreOutOfRangeError",
    "TooManyMemoriesError",
    "TransientError",
]


class MeClearError(Exception):
    """Base class of every error raised by meclear-integrations."""


class ConfigurationError(MeClearError, ValueError):
    """A configuration value or an input is not usable."""


class ConfigurationTypeError(ConfigurationError, TypeError):
    """A setting or an input has the wrong type (also a ``TypeError``)."""


class DuplicateMemoryError(MeClearError, ValueError):
    """Two memories in one retrieved context share an id."""


class EvaluatorError(MeClearError):
    """The caller's evaluator raised or misbehaved on a coalition.

    ``coalition`` holds the memory ids of the coalition, ``trial`` the trial index.

    Args:
        message: what failed.
        coalition: ids of the coalition whose evaluation failed.
        trial: the trial that failed.
    """

    def __init__(self, message: str, *, coalition: tuple[str, ...], trial: int) -> None:
        super().__init__(message)
        self.coalition = coalition
        self.trial = trial


class EstimatorError(MeClearError):
    """The attribution estimator failed numerically.

    The attribution estimator failed numerically (an overflow, a singular system, out of
    memory) after evaluator calls were spent. The run fails open or closed like an evaluator
    failure (``ClearanceConfig.failure.mode``); the original error is the ``__cause__``.
    """


class InvalidRetrievalError(MeClearError, TypeError):
    """The wrapped retriever returned an item that is not a usable document.

    The wrapped retriever returned an item that is not a usable document (not a
    ``Document`` / node, or one without text). Integrations fail open on it (every item
    returned unchanged) or raise it, per their ``on_error``.
    """


class ScoreOutOfRangeError(EvaluatorError, ValueError):
    """The evaluator returned a score outside [0, 1] (or not a number)."""


class InconsistentVerdictsError(MeClearError):
    """The judge's verdicts within one query contradict each other.

    For example it accepted two different answers to the same question, or repeated
    trials of the same context keep disagreeing, so no clearance can be verified: the run
    abstains
    (``status="unverified"``) and returns the context unchanged. ``reason`` names the
    inconsistency.

    Args:
        message: what contradicted what.
        reason: the run's ``status_reason``.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class TooManyMemoriesError(ConfigurationError):
    """The retrieved context holds more memories than ``ClearanceConfig.budget.max_memories``."""


class TransientError(MeClearError):
    """Raise from an evaluator to mark a failure as transient (retried with backoff).

    ``retry_after`` (seconds), when given, is honoured as the wait before the next attempt.

    Args:
        message: what failed.
        retry_after: seconds the server asked to wait, if it said.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetExceededError(MeClearError):
    """The per-query budget (``max_evaluator_calls`` or ``max_wall_seconds``) ran out.

    ``reason`` is ``"call_budget"`` or ``"time_budget"``.

    Args:
        message: which budget ran out.
        reason: ``"time_budget"`` or ``"call_budget"``.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ClearanceFailedError(MeClearError):
    """Raised by integrations that fail closed when the engine reported a failed run.

    For example a report produced by a fail-open engine run); ``failure`` describes it.

    Args:
        message: what failed.
        failure: the failed run's description.
    """

    def __init__(self, message: str, *, failure: object = None) -> None:
        super().__init__(message)
        self.failure = failure


class RedactedError(MeClearError):
    """Stands in for an error whose message may hold secrets.

    Stands in for an error whose message may hold secrets (see ``faults.sanitize``):
    the message is redacted, the original's class name, transient classification,
    retry-after and HTTP status are kept, and no traceback chain is attached.

    Args:
        message: ``"<Type>: <redacted message>"``.
        original_type: the original exception's class name.
        transient: whether retrying may heal it.
        retry_after: seconds the server asked to wait, if any.
        status_code: the HTTP status, if any.
        unreadable_reply: whether it was a model reply that could not be read.
    """

    def __init__(
        self,
        message: str,
        *,
        original_type: str,
        transient: bool,
        retry_after: float | None = None,
        status_code: int | None = None,
        unreadable_reply: bool = False,
    ) -> None:
        super().__init__(message)
        self.original_type = original_type
        self.transient = transient
        self.retry_after = retry_after
        self.status_code = status_code
        self.unreadable_reply = unreadable_reply
