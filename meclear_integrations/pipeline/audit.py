"""The background audit: the same query flow, driven from a job's frozen snapshot.

A worker hands the component the snapshot; the component rebuilds its items and drives
:func:`~.flow.clearance_flow` with :func:`audit_settings`: the trigger's recorded decision
replayed (its early-exit wish included), the ledger's verified harm as the prior
candidate, verification as configured, and the ledger record written under the job id
(``run_id``: recording the same job twice is a no-op). Runs that fail open are not
recorded: :func:`audit_outcome` sends them back for a retry (provider away) or to the dead
letters (a failure retrying cannot heal). A run the engine stopped early with
``status="skipped"`` (no memory explains the failure, or the model cannot answer even from
the full context: ``ClearanceConfig.stops``) is a final verdict, not a failure: the job is
done with that reason and no ledger run (nothing was proven harmful, so nothing is recorded
against any memory), never retried into the dead letters.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..core.errors import ConfigurationError
from ..core.failures.kind import failure_kind
from ..guard.gate import ClearanceGate
from ..guard.live_bounds import provider_outcome
from ..jobs.protocol import Auditor, AuditOutcome, AuditQueue
from ..jobs.snapshot import AuditSnapshot
from ..triggers.base import Trigger, TriggerContext, TriggerDecision
from .flow import QuerySettings
from .steps import FlowResult

__all__ = [
    "Replayed",
    "Stoppable",
    "audit_outcome",
    "audit_settings",
    "open_queue",
    "run_pending",
    "start_workers",
]

_RETRYABLE_REASONS = frozenset({"time_budget"})


class Replayed(Trigger):
    """The trigger decision a live query made, replayed by its audit."""

    def __init__(self, decision: TriggerDecision) -> None:
        self.decision = decision
        self.name = decision.policy

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """The recorded decision.

        Args:
            context: The query (unused).

        Returns:
            The decision the live query made.
        """
        return self.decision


def audit_settings(settings: QuerySettings, snapshot: AuditSnapshot, run_id: str) -> QuerySettings:
    """The settings of an audit: the component's, with the replayed gate and the job's run id.

    Args:
        settings: The component's settings for a live query.
        snapshot: The job's snapshot.
        run_id: The job id (the ledger run id of the result).

    Returns:
        The audit's settings.

    Raises:
        ValueError: The component has no ledger to record the audit in.
    """
    ledger = settings.gate.ledger if settings.gate is not None else None
    if ledger is None:
        raise ValueError("a background audit needs the component's ledger")
    gate = ClearanceGate(
        trigger=Replayed(snapshot.decision()),
        ledger=ledger,
        origin="audit",
        record_skipped=False,
        record_failed=False,
    )
    known = {k: v for k, v in snapshot.record.items() if v is not None}  # the live run's
    record = {**settings.record, **known, "run_id": run_id}
    if snapshot.reference is not None:
        record["success_signal"] = "reference"
        record["extra"] = {**(record.get("extra") or {}), "reference": snapshot.reference}
    return QuerySettings(settings.config, settings.guard, gate, record)


def audit_outcome(result: FlowResult) -> AuditOutcome:
    """What the job does after one audit attempt (module docstring).

    Args:
        result: The flow's result.

    Returns:
        ``done`` with the ledger run, ``retry`` or ``dead`` with the reason.
    """
    if result.kind == "failed":
        exc = result.error
        reason = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, Exception):
            return AuditOutcome("retry", reason)
        return AuditOutcome("retry" if failure_kind(exc) != "permanent" else "dead", reason)
    if result.kind == "guarded":
        return AuditOutcome("retry", f"clearance declined: {result.reason}")
    report = result.report
    if result.kind != "cleared" or report is None:
        return AuditOutcome("dead", f"nothing to audit ({result.kind})")
    if report.status == "failed":
        failure = report.failure
        reason = f"{failure.reason}: {failure.error}" if failure is not None else "failed"
        retry = provider_outcome(report) == "failure" or (
            failure is not None and failure.reason in _RETRYABLE_REASONS
        )
        return AuditOutcome("retry" if retry else "dead", reason)
    if report.status == "skipped":
        return AuditOutcome("done", f"skipped: {report.status_reason or 'early stop'}")
    outcome = result.outcome
    if outcome is None or outcome.ledger_run_id is None:
        note = (outcome.notes.get("ledger") if outcome is not None else None) or "not recorded"
        return AuditOutcome("retry", f"ledger write failed: {note}")
    return AuditOutcome("done", None, outcome.ledger_run_id)


class Stoppable(Protocol):
    """Workers a component started (stopped by its ``close``)."""

    def stop(self, timeout: float | None = ...) -> None:
        """Stop after the jobs in flight."""


def open_queue(ledger: Any, queue: Any) -> AuditQueue:
    """The audit queue of a background component: its own, else a job table by its ledger.

    Args:
        ledger: The component's ledger (its URL and namespace place the job table).
        queue: The queue the user passed, or None.

    Returns:
        The queue.

    Raises:
        ConfigurationError: No ledger (background mode reads and writes verified harm).
    """
    if ledger is None:
        raise ConfigurationError(
            'mode="background" needs loop=Loop(ledger=HarmLedger(...)): the request path '
            "withholds the harm the ledger verified, and the audits record there"
        )
    if queue is not None:
        if not callable(getattr(queue, "submit", None)):
            raise ConfigurationError("loop.audit_queue must have submit(snapshot) (a JobStore...)")
        return queue
    from ..jobs.store import JobStore

    return JobStore(ledger.url, namespace=getattr(ledger, "namespace", "default"))


def start_workers(queue: Any, auditor: Auditor, concurrency: int) -> Stoppable | None:
    """In-process audit workers for ``queue`` (None when ``concurrency`` is 0).

    Args:
        queue: The component's audit queue.
        auditor: The component (runs each audit).
        concurrency: Worker threads (0: run ``meclear worker`` elsewhere).

    Returns:
        The running workers, or None.
    """
    if concurrency <= 0:
        return None
    start = getattr(queue, "start_workers", None)
    if start is None:
        raise ConfigurationError(
            f"{type(queue).__name__} cannot run in-process workers: set loop.audit_workers=0 "
            "and run `meclear worker`"
        )
    pool: Stoppable = start(auditor, concurrency=concurrency)
    return pool


def run_pending(queue: Any, auditor: Auditor, *, limit: int | None = None) -> list[AuditOutcome]:
    """Run the due audits of ``queue`` on the calling thread (scripts, tests, cron).

    Args:
        queue: The component's audit queue.
        auditor: The component.
        limit: The most audits to run.

    Returns:
        Their outcomes, in the order they ran (empty for a distributed queue, whose own
        worker drains it).
    """
    run_worker = getattr(queue, "run_worker", None)
    if run_worker is not None:
        run_worker(auditor, wait=False)
        return []
    from ..jobs.worker import AuditWorker

    return [outcome for _, outcome in AuditWorker(queue, auditor).run_until_idle(limit=limit)]
