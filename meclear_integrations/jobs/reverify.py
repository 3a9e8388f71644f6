"""Re-verification jobs: a challenged settlement answered by the audit worker, not a cron.

A background audit that withholds a settled harm the live judge did not confirm records a
*challenge* (``ledger.settlement``). Without this module only the routine replay
(``ledger.replay.replay_pending``, ``meclear ledger replay``) answers it; with it, the
worker that ran the audit queues a ``reverify`` job (:data:`REVERIFY`) on the same durable
queue, and a worker runs ``ledger.reverify.reverify_settlement`` on the component's own
agent and judge (its ``_replay_tools()``), so a running loop lifts a wrong settlement by
itself.

Bounds, as for audits (``jobs.audit_gate``): one pending re-verification per question
(the gate's row in its own scope, ``<namespace>:reverify``, and the queue's single flight
per question), a backoff after each and the same daily cap (``Loop.audit_backoff_seconds``,
``Loop.audits_per_question_per_day``); the ledger's quiet period after an ``upheld``
verdict (``HarmLedger(reverify_quiet_seconds=)``, a day by default) covers the challenges
of the same context.

Nothing is lost when a worker dies: the job is durable (leases, at-least-once); the ledger
is the source of truth (a challenge stays pending until a verdict names it, so a job that
ran twice answers once, and one that was never queued is picked up by the next audit of
that question or by the routine replay). The payload is versioned
(:data:`REVERIFY_VERSION`); another version goes to the dead letters with the reason.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .protocol import AuditOutcome, AuditTicket

__all__ = [
    "REVERIFY",
    "REVERIFY_VERSION",
    "ReverifyJob",
    "can_reverify",
    "queue_reverify",
    "reverify_handler",
]

REVERIFY = "reverify"
"""The kind of a settlement re-verification (payload: :class:`ReverifyJob` JSON)."""
REVERIFY_VERSION: Literal[1] = 1
"""The payload format; a worker refuses (dead-letters) any other."""

logger = logging.getLogger(__name__)


class ReverifyJob(BaseModel):
    """A re-verification job's payload: the question and the challenge that queued it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = REVERIFY_VERSION
    namespace: str
    query_id: str
    challenge: str
    """The challenge run that queued it (the newest pending one of the question runs)."""

    @property
    def key(self) -> str:
        """The single-flight key: one pending re-verification per question."""
        text = f"{REVERIFY}\x1f{self.namespace}\x1f{self.query_id}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def dumps(self) -> str:
        """The payload text."""
        return self.model_dump_json()

    @classmethod
    def loads(cls, payload: str) -> ReverifyJob:
        """Parse a payload (raises on another version or an unreadable one).

        Args:
            payload: The stored text.

        Returns:
            The job.

        Raises:
            ValueError: Unreadable, or a version this package does not run.
        """
        try:
            return cls.model_validate_json(payload)
        except ValidationError as exc:
            raise ValueError(
                f"not a version-{REVERIFY_VERSION} re-verification payload: {exc.errors()[0]}"
            ) from exc


def can_reverify(component: Any) -> bool:
    """Whether ``component`` runs ``reverify`` jobs: a ledger and ``_replay_tools()``.

    Args:
        component: A background clearance component.

    Returns:
        True when its ledger and its agent and judge can re-verify a settlement.
    """
    loop = getattr(component, "loop", None)
    ledger = getattr(loop, "ledger", None)
    return getattr(ledger, "engine", None) is not None and callable(
        getattr(component, "_replay_tools", None)
    )


def _gate(component: Any, queue: Any) -> Any:
    """The re-verification bounds of ``component`` (its audit bounds, in their own scope)."""
    from .audit_gate import AuditGate

    loop = component.loop
    return AuditGate(
        loop.ledger,
        queue,
        per_day=loop.audits_per_question_per_day,
        backoff_seconds=loop.audit_backoff_seconds,
        pending_seconds=loop.audit_pending_seconds,
        scope=REVERIFY,
    )


def queue_reverify(
    component: Any, run_id: str, *, quiet_seconds: float | None = None
) -> AuditTicket | None:
    """After an audit recorded ``run_id``: queue its question's pending challenge, if any.

    Asks the ledger (not the run alone) whether the question has a pending challenge, so a
    challenge whose re-verification was never queued (a worker died between) is queued by
    the question's next audit. Bounded per question (module docstring).

    Args:
        component: The background component whose audit recorded the run.
        run_id: The recorded run (the audit's job id).
        quiet_seconds: The quiet period after an ``upheld`` verdict (None: the ledger's
            ``reverify_quiet_seconds``).

    Returns:
        The ticket, or None when nothing is pending, the bounds hold it back, or the
        component cannot re-verify.
    """
    queue: Any = getattr(component, "_queue", None)
    if not callable(getattr(queue, "enqueue", None)) or not can_reverify(component):
        return None
    from ..ledger.database import read_transaction  # the ledger extra: only with a ledger
    from ..ledger.reverify import quiet_of
    from ..ledger.settlement import pending_challenges

    ledger = component.loop.ledger
    run = ledger.find_run(run_id)
    with read_transaction(ledger.engine) as conn:
        pending = pending_challenges(
            conn,
            ledger.namespace,
            limit=1,
            quiet_seconds=quiet_of(ledger, quiet_seconds),
            query_ids=[run.query_id],
        )
    if not pending:
        return None
    job = ReverifyJob(namespace=ledger.namespace, query_id=run.query_id, challenge=pending[0])
    gate = _gate(component, queue)
    decision = gate.admit(run.query_id)
    if decision.action != "submit" or decision.token is None:
        logger.info(
            "MeClear re-verification of challenge %s not queued: %s", job.challenge, decision.note()
        )
        return None
    try:
        ticket: AuditTicket = queue.enqueue(REVERIFY, job.dumps(), key=job.key)
    except Exception:
        gate.released(run.query_id, decision.token)
        raise
    gate.submitted(run.query_id, decision.token, ticket.job_id)
    return ticket


def reverify_handler(component: Any, *, quiet_seconds: float | None = None) -> Any:
    """The ``reverify`` handler of ``component``: answer its question's pending challenge.

    The question's newest pending challenge is answered (it may be newer than the one that
    queued the job); none pending (answered meanwhile, by a run of this job that died after
    its verdict, or covered by the quiet period) is ``done`` without a model call.

    Args:
        component: A background clearance component (:func:`can_reverify`).
        quiet_seconds: The quiet period after an ``upheld`` verdict (None: the ledger's).

    Returns:
        ``(payload, job_id) -> AuditOutcome``: ``done`` (the last re-verification run as its
        ledger run), ``dead`` for an unreadable payload, another namespace or a challenge
        that cannot be re-verified (``ReplayError``: no texts, no question), exceptions
        classified by the worker (transient -> retry).
    """
    from ..ledger.database import read_transaction  # the ledger extra: only with a ledger
    from ..ledger.replay_context import ReplayError
    from ..ledger.reverify import quiet_of, reverify_settlement
    from ..ledger.settlement import pending_challenges

    def handle(payload: str, job_id: str) -> AuditOutcome:
        try:
            job = ReverifyJob.loads(payload)
        except ValueError as exc:
            return AuditOutcome("dead", f"unreadable payload: {exc}")
        ledger = component.loop.ledger
        if job.namespace != ledger.namespace:
            return AuditOutcome(
                "dead", f"namespace {job.namespace!r} is not this ledger's ({ledger.namespace!r})"
            )
        with read_transaction(ledger.engine) as conn:
            pending = pending_challenges(
                conn,
                ledger.namespace,
                quiet_seconds=quiet_of(ledger, quiet_seconds),
                query_ids=[job.query_id],
            )
        if not pending:
            return AuditOutcome("done", "no pending challenge (answered, or quiet)")
        resolve, evaluator_for = component._replay_tools()
        try:
            result = reverify_settlement(
                ledger,
                pending[-1],
                evaluator_for=evaluator_for,
                resolve=resolve,
                config=component._engine_config(),
            )
        except ReplayError as exc:
            return AuditOutcome("dead", f"challenge {pending[-1]} not re-verified: {exc}")
        evidence = result.runs[-1].run_id if result.runs else None
        summary = f"upheld {result.upheld or 'nothing'}; lifted {result.lifted or 'nothing'}"
        return AuditOutcome("done", summary, evidence)

    return handle
