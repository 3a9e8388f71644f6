"""The reports a run ends with: its cost, and the empty, failed and abstaining reports."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..errors import EvaluatorError
from ..events import StageEvent
from ..failures.kind import failure_kind
from ..report import (
    ClearanceCandidate,
    ClearanceCost,
    ClearanceFailure,
    ClearanceReport,
    FailedCoalition,
)
from .closing import error_text, fails_open, failure_reason, inconsistency
from .steps import Emit, Run

__all__ = [
    "clearance_end",
    "cost",
    "empty_report",
    "fail_open_report",
    "kept_report",
    "unverified_report",
]

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
