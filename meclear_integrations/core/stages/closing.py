"""What a stage does when it fails: the error event, and whether the run fails open.

Every stage runs its evaluations inside :func:`closing`, the one error-handling helper: an
exception closes the open stage with an ``error`` event (what failed, redacted, and the
outcome: ``fail_open``, ``unverified``, ``raise`` or ``cancelled``), then propagates to
the driver, which turns it into a report (:mod:`.outcomes`) or raises.
"""

from __future__ import annotations

from typing import TypeVar

from ..config import ClearanceConfig
from ..errors import (
    BudgetExceededError,
    EstimatorError,
    EvaluatorError,
    InconsistentVerdictsError,
    ScoreOutOfRangeError,
    TooManyMemoriesError,
)
from ..events import Stage, StageEvent
from ..failures.faults import exception_chain
from ..failures.kind import failure_kind
from ..redaction import redact
from ..report import FailureReason
from .steps import Emit, Run, Steps

__all__ = [
    "FAILS_OPEN",
    "MAX_FAILURES_IN_EVENT",
    "closing",
    "error_event",
    "error_text",
    "fails_open",
    "failure_reason",
    "inconsistency",
]

T = TypeVar("T")

FAILS_OPEN = (EvaluatorError, BudgetExceededError, TooManyMemoriesError, EstimatorError)
"""Errors after which a run can fail open; anything else (a bug, a configuration error,
cancellation) always propagates."""
MAX_FAILURES_IN_EVENT = 20
"""Failed coalitions listed in an error event (the report lists them all)."""


def failure_reason(exc: BaseException) -> FailureReason:
    """The report's name for why a run failed.

    Args:
        exc: the exception that ended the run.

    Returns:
        ``too_many_memories``, ``time_budget``, ``call_budget``, ``invalid_score``,
        ``estimator_error`` or ``evaluator_error``.
    """
    if isinstance(exc, TooManyMemoriesError):
        return "too_many_memories"
    if isinstance(exc, BudgetExceededError):
        return "time_budget" if exc.reason == "time_budget" else "call_budget"
    if isinstance(exc, ScoreOutOfRangeError):
        return "invalid_score"
    if isinstance(exc, EstimatorError):
        return "estimator_error"
    return "evaluator_error"


def error_text(exc: BaseException) -> str:
    """The exception's message, redacted and cut to 500 characters.

    Args:
        exc: any exception.

    Returns:
        Text safe to put in an event or a report.
    """
    return redact(str(exc))[:500]


def inconsistency(exc: BaseException) -> str | None:
    """Why the judge's verdicts contradict each other, if that is what ``exc`` says.

    Args:
        exc: the exception that ended a stage (an
            :class:`~meclear_integrations.core.errors.InconsistentVerdictsError`, also one
            wrapped or redacted).

    Returns:
        The reason, or None when ``exc`` is another failure.
    """
    for link in exception_chain(exc):
        if isinstance(link, InconsistentVerdictsError):
            return link.reason or "inconsistent_verdicts"
        if getattr(link, "original_type", None) == InconsistentVerdictsError.__name__:
            return "inconsistent_verdicts"
    return None


def fails_open(config: ClearanceConfig, exc: BaseException) -> bool:
    """Whether the run returns a fail-open report for ``exc`` instead of raising.

    Only failures that retrying can heal fail open (``core.failures.kind``), and only
    under ``on_failure="open"``.

    Args:
        config: the run's settings.
        exc: the exception that ended the run.

    Returns:
        True when the run fails open.
    """
    return (
        config.failure.mode == "open"
        and isinstance(exc, FAILS_OPEN)
        and failure_kind(exc) != "permanent"
    )


def error_event(stage: Stage, exc: BaseException, run: Run) -> Emit:
    """The ``error`` event closing ``stage``.

    Args:
        stage: the open stage.
        exc: what ended it.
        run: the run (its failed coalitions are listed, at most 20).

    Returns:
        The event: what failed (redacted) and whether the run fails open (``outcome``),
        abstains, raises, or was cancelled.
    """
    payload: dict[str, object] = {"error_type": type(exc).__name__, "error": error_text(exc)}
    reason = inconsistency(exc)
    if not isinstance(exc, Exception):
        payload["outcome"] = "cancelled"
    elif reason is not None:
        payload["outcome"] = "unverified"
        payload["status_reason"] = reason
    elif fails_open(run.config, exc):
        payload["outcome"] = "fail_open"
        payload["reason"] = failure_reason(exc)
        payload["kind"] = failure_kind(exc)
        payload["estimates_usable"] = run.attributions is not None
    else:
        payload["outcome"] = "raise"
    if run.failures:
        payload["failed_coalitions"] = [
            {
                "memory_ids": f.memory_ids,
                "trial": f.trial,
                "error_type": f.error_type,
                "kind": f.kind,
            }
            for f in run.failures[:MAX_FAILURES_IN_EVENT]
        ]
        payload["failed_count"] = len(run.failures)
    return Emit(StageEvent(stage=stage, phase="error", payload=payload))


def closing(stage: Stage, body: Steps[T], run: Run) -> Steps[T]:
    """Run a stage's body; if it raises, close the stage with its error event first.

    Args:
        stage: the stage the body belongs to (opened by the caller).
        body: the stage's evaluations, as steps.
        run: the run.

    Returns:
        What the body returns.

    Raises:
        BaseException: whatever the body raised (cancellation included), after the
            ``error`` event was emitted. Closing the generator emits nothing.
    """
    try:
        return (yield from body)
    except GeneratorExit:
        raise
    except BaseException as exc:
        yield error_event(stage, exc, run)
        raise
