"""How a run ends: a failing stage's close, and the reports a run ends with.

Every stage runs its evaluations inside :func:`closing`, the one error-handling helper: an
exception closes the open stage with an ``error`` event (what failed, redacted, and the
outcome: ``fail_open``, ``unverified``, ``raise`` or ``cancelled``), then propagates to
the driver, which turns it into a report or raises. The reports are built here too: the
run's cost, and the empty, kept, failed (fail open) and unverified reports.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

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
from ..report import (
    ClearanceCandidate,
    ClearanceCost,
    ClearanceFailure,
    ClearanceReport,
    FailedCoalition,
    FailureReason,
)
from .steps import Emit, Run, Steps

__all__ = [
    "FAILS_OPEN",
    "MAX_FAILURES_IN_EVENT",
    "clearance_end",
    "closing",
    "cost",
    "empty_report",
    "error_event",
    "error_text",
    "fail_open_report",
    "fails_open",
    "failure_reason",
    "inconsistency",
    "kept_report",
    "unverified_report",
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


logger = logging.getLogger("meclear_integrations.core.engine")


def cost(run: Run) -> ClearanceCost:
    """What the run has cost so far.

    Args:
        run: the run.

    Returns:
        Coalitions, evaluator calls, cache hits, wall time, rounds, attempts, retries.
    """
    game = run.game
    return ClearanceCost(
        coalitions=game.coalitions_evaluated,
        evaluator_calls=game.evaluator_calls,
        cache_hits=game.cache_hits,
        wall_seconds=time.perf_counter() - run.started,
        rounds=game.rounds,
        attempts=run.budget.calls,
        retries=run.budget.retries,
    )


def empty_report(run: Run) -> ClearanceReport:
    """The report of an empty context (nothing to attribute, nothing evaluated).

    Args:
        run: the run.

    Returns:
        A complete report with no memories.
    """
    return ClearanceReport(
        baseline_value=None,
        final_value=None,
        recovered=False,
        kept=[],
        cleared=[],
        attributions=[],
        candidates=[],
        cost=ClearanceCost(
            coalitions=0,
            evaluator_calls=0,
            cache_hits=0,
            wall_seconds=time.perf_counter() - run.started,
        ),
        config=run.config,
    )


def kept_report(run: Run, *, recovered: bool, **status: Any) -> ClearanceReport:
    """The report of a run that keeps the whole context (C_0 selected, nothing cleared).

    Args:
        run: the run.
        recovered: whether the full context already recovers (an early exit).
        **status: ``early_exit``, or ``status`` / ``status_reason`` of a stopped run.

    Returns:
        The report with every memory kept and the one empty candidate.
    """
    game = run.game
    baseline = game.value(game.full)
    empty = ClearanceCandidate(
        size=0,
        memory_ids=[],
        value=baseline,
        gain=0.0,
        recovered=recovered,
        admissible=True,
        trials=game.trials_of(game.full),
        family="nested",
    )
    return ClearanceReport(
        baseline_value=baseline,
        final_value=baseline,
        recovered=recovered,
        kept=list(game.context),
        cleared=[],
        attributions=[],
        candidates=[empty],
        cost=cost(run),
        config=run.config,
        **status,
    )


def unverified_report(
    run: Run, reason: str, candidates: list[ClearanceCandidate] | None = None
) -> ClearanceReport:
    """The abstaining report: every memory kept, nothing verified.

    Args:
        run: the run.
        reason: the ``status_reason`` (why nothing could be verified).
        candidates: the candidates tried, if any.

    Returns:
        A report with ``status="unverified"`` and the context unchanged.
    """
    game = run.game
    baseline = game.value(game.full) if game.trials_of(game.full) else None
    logger.info("MeClear abstained (unverified): %s", reason)
    return ClearanceReport(
        baseline_value=baseline,
        final_value=baseline,
        recovered=False,
        kept=list(game.context),
        cleared=[],
        attributions=list(run.attributions or []),
        candidates=candidates or [],
        cost=cost(run),
        config=run.config,
        estimator=run.estimator,
        status="unverified",
        status_reason=reason,
    )


def fail_open_report(exc: Exception, run: Run) -> ClearanceReport:
    """The report of a run that ``exc`` ended, or ``exc`` re-raised.

    Inconsistent verdicts are no failure: the run abstains (``unverified``) whatever
    ``on_failure`` says.

    Args:
        exc: the exception that ended the run.
        run: the run.

    Returns:
        A report with ``status="failed"`` (the full context, unchanged, and why) or
        ``status="unverified"``.

    Raises:
        Exception: ``exc`` itself, when it does not fail open (``on_failure="closed"``,
            a permanent failure, a bug).
    """
    reason = inconsistency(exc)
    if reason is not None:
        return unverified_report(run, reason)
    if not fails_open(run.config, exc):
        raise exc
    game = run.game
    failures = list(run.failures)
    if isinstance(exc, EvaluatorError) and not any(
        tuple(f.memory_ids) == exc.coalition and f.trial == exc.trial for f in failures
    ):
        failures.append(
            FailedCoalition(
                memory_ids=list(exc.coalition),
                trial=exc.trial,
                error_type=type(exc.__cause__ or exc).__name__,
                error=error_text(exc.__cause__ or exc),
                transient=False,
                attempts=1,
                kind=failure_kind(exc),
            )
        )
    baseline = game.value(game.full) if game.trials_of(game.full) else None
    failure = ClearanceFailure(
        reason=failure_reason(exc),
        stage=run.stage,
        error_type=type(exc).__name__,
        error=error_text(exc),
        failed_coalitions=failures,
        estimates_usable=run.attributions is not None,
        coalitions_evaluated=game.coalitions_evaluated,
        kind=failure_kind(exc),
    )
    logger.warning(
        "MeClear failed open (%s, kind %s, in %s): %s",
        failure.reason,
        failure.kind,
        failure.stage,
        failure.error,
    )
    return ClearanceReport(
        baseline_value=baseline,
        final_value=baseline,
        recovered=False,
        kept=list(game.context),
        cleared=[],
        attributions=list(run.attributions or []),
        candidates=[],
        cost=cost(run),
        config=run.config,
        estimator=run.estimator,
        status="failed",
        failure=failure,
    )


def clearance_end(selected: int, report: ClearanceReport) -> Emit:
    """The ``end`` event of the clearance stage.

    Args:
        selected: the index j^ of the selected candidate (Eq. 20).
        report: the run's report.

    Returns:
        The event: cleared and kept ids, values, cost.
    """
    return Emit(
        StageEvent(
            stage="clearance",
            phase="end",
            payload={
                "selected_size": len(report.cleared),
                "selected_index": selected,
                "cleared_ids": report.cleared_ids,
                "kept_ids": report.kept_ids,
                "baseline_value": report.baseline_value,
                "final_value": report.final_value,
                "recovered": report.recovered,
                "early_exit": report.early_exit,
                "escalation_ids": [
                    c.memory_ids for c in report.candidates if c.family == "escalation"
                ],
                "carrier_ids": report.carrier_ids,
                "withheld_ids": report.withheld_ids,
                "carrier_status": report.carrier_status,
                "cost": report.cost.model_dump(),
                "suspect_ids": report.suspect_ids,
                "suspects_kept": report.suspects_kept,
            },
        )
    )
