"""Job kinds: one durable queue, several kinds of work, one handler per kind.

The job table (:class:`~.store.JobStore`) and the procrastinate queue carry every kind of
background work the package has: ``audit`` (a background clearance, :data:`AUDIT`),
``reverify`` (a challenged settlement re-verified, ``jobs.reverify``: queued by the audit
that recorded the challenge) and ``admission`` (a ConMem store / reject decision). Each job
names its kind; a worker holds a :class:`JobKinds` registry and runs the handler registered
for the kind. Leases, backoff, dead letters and single flight are the queue's and the same
for every kind.

A handler takes the stored payload and the job id (its idempotency key) and returns an
:class:`~.protocol.AuditOutcome` (``done`` / ``retry`` / ``dead``). An exception it raises
is classified like an audit's (:func:`~meclear_integrations.core.failures.kind.failure_kind`:
transient -> retry with backoff, anything else -> dead letter). A job of a kind the worker
has no handler for goes to the dead letters with the reason (``unknown job kind``). A
handler with a ``dead(payload, job_id, reason)`` method is told when its job is
dead-lettered (the admission handler records the decision as failed).

Components say what they run with ``job_handlers() -> {kind: handler}``; a component with
only an ``audit(snapshot, run_id=)`` method (the background clearance components) runs
``audit`` jobs, and ``reverify`` jobs too when it has a ledger and ``_replay_tools()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..core.failures.kind import failure_kind
from .protocol import Auditor, AuditOutcome
from .reverify import REVERIFY, can_reverify, queue_reverify, reverify_handler
from .snapshot import AuditSnapshot

__all__ = ["ADMISSION", "AUDIT", "REVERIFY", "JobHandler", "JobKinds", "audit_handler"]

AUDIT = "audit"
"""The kind of a background clearance audit (payload: :class:`AuditSnapshot` JSON)."""
ADMISSION = "admission"
"""The kind of a background ConMem admission decision (payload: ``AdmissionJob`` JSON)."""

logger = logging.getLogger(__name__)

JobHandler = Callable[[str, str], AuditOutcome]
"""``(payload, job_id) -> outcome``: runs one job of its kind."""


def audit_handler(auditor: Auditor) -> JobHandler:
    """The ``audit`` handler: parse the snapshot, run the component's verified clearance.

    Args:
        auditor: The component that enqueued the audit (its ``audit`` method).

    Returns:
        The handler.
    """

    def handle(payload: str, job_id: str) -> AuditOutcome:
        try:
            snapshot = AuditSnapshot.loads(payload)
        except Exception as exc:
            return AuditOutcome("dead", f"unreadable payload: {type(exc).__name__}: {exc}")
        outcome = auditor.audit(snapshot, run_id=job_id)
        if outcome.state == "done" and outcome.ledger_run_id is not None:
            _queue_reverify(auditor, outcome.ledger_run_id)
        return outcome

    return handle


def _queue_reverify(auditor: Any, run_id: str) -> None:
    """Queue the re-verification of a challenge the audit recorded (``jobs.reverify``).

    Never fails the audit: a challenge not queued stays pending in the ledger (the next
    audit of the question or the routine replay queues or answers it).
    """
    try:
        ticket = queue_reverify(auditor, run_id)
    except Exception as exc:
        logger.warning(
            "MeClear re-verification after audit %s not queued (stays pending): %s: %s",
            run_id,
            type(exc).__name__,
            exc,
            exc_info=True,
        )
        return
    if ticket is not None:
        logger.info(
            "MeClear audit %s: challenge re-verification queued (job %s)", run_id, ticket.job_id
        )


class JobKinds:
    """The handlers a worker runs, by job kind.

    Args:
        handlers: ``{kind: handler}``.

    Example:
        >>> from meclear_integrations.jobs.kinds import JobKinds
        >>> from meclear_integrations.jobs.protocol import AuditOutcome
        >>> kinds = JobKinds({"echo": lambda payload, job_id: AuditOutcome("done")})
        >>> kinds.run("echo", "{}", "j1").state, kinds.run("nope", "{}", "j2").reason
        ('done', "unknown job kind 'nope' (this worker runs: echo)")
    """

    def __init__(self, handlers: Mapping[str, JobHandler] | None = None) -> None:
        self._handlers: dict[str, JobHandler] = {}
        for kind, handler in (handlers or {}).items():
            self.register(kind, handler)

    def __repr__(self) -> str:
        return f"JobKinds({sorted(self._handlers)})"

    @classmethod
    def of(cls, *targets: Any) -> JobKinds:
        """The registry of one or more components (or registries), merged.

        Args:
            *targets: :class:`JobKinds`, objects with ``job_handlers()``, or auditors
                (objects with ``audit(snapshot, run_id=)``).

        Returns:
            The merged registry.

        Raises:
            TypeError: A target runs no kind of job.
            ValueError: Two targets register the same kind.
        """
        merged = cls()
        for target in targets:
            if isinstance(target, JobKinds):
                handlers: Mapping[str, JobHandler] = target._handlers
            elif callable(getattr(target, "job_handlers", None)):
                handlers = target.job_handlers()
            elif callable(getattr(target, "audit", None)):
                handlers = {AUDIT: audit_handler(target)}
                if can_reverify(target):
                    handlers[REVERIFY] = reverify_handler(target)
            else:
                raise TypeError(
                    f"{type(target).__name__} runs no job kind: give it job_handlers() or audit()"
                )
            for kind, handler in handlers.items():
                merged.register(kind, handler)
        return merged

    def register(self, kind: str, handler: JobHandler) -> JobKinds:
        """Add the handler of ``kind``.

        Args:
            kind: The job kind (``audit``, ``admission``, ...).
            handler: ``(payload, job_id) -> AuditOutcome``.

        Returns:
            This registry.

        Raises:
            ValueError: Empty kind, or ``kind`` already has a handler.
        """
        if not kind or len(kind) > 40:
            raise ValueError("a job kind is 1-40 characters")
        if kind in self._handlers:
            raise ValueError(f"job kind {kind!r} already has a handler")
        self._handlers[kind] = handler
        return self

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds this registry runs, sorted."""
        return tuple(sorted(self._handlers))

    def __contains__(self, kind: object) -> bool:
        return kind in self._handlers

    def run(self, kind: str, payload: str, job_id: str) -> AuditOutcome:
        """Run one job: its kind's handler, exceptions classified, unknown kinds dead.

        Args:
            kind: The job's kind.
            payload: The stored payload.
            job_id: The job id (the handler's idempotency key).

        Returns:
            The outcome.
        """
        handler = self._handlers.get(kind)
        if handler is None:
            runs = ", ".join(self.kinds) or "nothing"
            return AuditOutcome("dead", f"unknown job kind {kind!r} (this worker runs: {runs})")
        try:
            return handler(payload, job_id)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            return AuditOutcome("retry" if failure_kind(exc) == "transient" else "dead", reason)

    def dead(self, kind: str, payload: str, job_id: str, reason: str) -> None:
        """Tell the kind's handler its job went to the dead letters (if it listens).

        Args:
            kind: The job's kind.
            payload: The stored payload.
            job_id: The job id.
            reason: Why.
        """
        hook = getattr(self._handlers.get(kind), "dead", None)
        if hook is None:
            return
        try:
            hook(payload, job_id, reason)
        except Exception:
            logger.exception("MeClear %s job %s: the dead-letter hook failed", kind, job_id)
