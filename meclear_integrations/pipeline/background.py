"""``mode="background"``: the request path answers from proven harm and queues the audit.

No model call on the request path. For each query the flow

1. lets the trigger decide (policies look at the query and context only, no model call);
2. reads the ledger's verified harm for this question or ones like it
   (:func:`~.harm.verified_harm`) and withholds those memories;
3. when the trigger runs, submits an audit job with the frozen snapshot
   (:class:`~meclear_integrations.jobs.AuditSnapshot`); an identical question whose audit is
   still pending joins it (single flight);
4. reports a ``meclear.clearance`` event with ``mode: "background"`` and returns.

With an :class:`~meclear_integrations.jobs.audit_gate.AuditGate` (what the components
pass) step 3 is bounded per question: a question whose audit is pending joins it whatever
its retrieved context, and a question audited recently (or too often today) queues nothing
and says until when under ``notes["audit"]`` (``Loop.audits_per_question_per_day``,
``audit_backoff_seconds``).

A trigger, ledger or queue that fails never fails the query: nothing is withheld or
queued, a warning is logged and ``notes`` says so. Every returned item carries
``status: "kept"`` (or ``"withheld"`` when the edge-case policy keeps a context whose every
memory was withheld), ``mode: "background"``, the ``withheld`` memories with their reason
and the run that proved them, and the ``audit`` ticket (job id, joined).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.memory import Memory
from ..core.redaction import redact
from ..guard.gate import ClearanceGate
from ..jobs.protocol import AuditQueue, AuditTicket
from ..jobs.snapshot import AuditSnapshot
from ..runtime.payloads import EdgeCasePolicy
from ..triggers.base import TriggerContext, TriggerDecision
from .flow import EMPTY_EVENT, QuerySettings
from .harm import Withheld, verified_harm
from .steps import Call, Flow, FlowEvent, FlowResult, Notify

if TYPE_CHECKING:  # SQLAlchemy: loaded in background mode only
    from ..jobs.audit_gate import AuditGate

__all__ = ["BackgroundDecision", "background_flow"]

logger = logging.getLogger(__name__)


def _failure(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")[:300]


@dataclass(frozen=True, slots=True)
class BackgroundDecision:
    """What the request path decided for one background query."""

    query_id: str
    withheld: tuple[Withheld, ...]
    decision: TriggerDecision
    audit: AuditTicket | None = None
    notes: dict[str, str] = field(default_factory=dict)
    policy: EdgeCasePolicy = field(default_factory=EdgeCasePolicy)

    @property
    def withheld_ids(self) -> list[str]:
        """The withheld memories' ids, in retrieval order."""
        return [w.memory_id for w in self.withheld]

    def _run_fields(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "mode": "background",
            "trigger": {
                "policy": self.decision.policy,
                "reason": self.decision.reason,
                "run": self.decision.run,
            },
            "withheld": [w.metadata() for w in self.withheld],
            "audit": self.audit.metadata() if self.audit is not None else None,
        }
        if self.notes:
            meta["notes"] = dict(self.notes)
        return meta

    def metadata(self, ids: Sequence[str]) -> list[tuple[int, dict[str, Any]]]:
        """``(position, metadata)`` of every item to return, in retrieval order.

        Args:
            ids: The items' memory ids.

        Returns:
            The kept items (all of them, marked, when every one was withheld and the
            edge-case policy says ``keep_all``).
        """
        out = set(self.withheld_ids)
        keep_all = bool(ids) and out >= set(ids) and self.policy.all_cleared == "keep_all"
        run = self._run_fields()
        chosen: list[tuple[int, dict[str, Any]]] = []
        for position, mid in enumerate(ids):
            if mid not in out:
                chosen.append((position, {"memory_id": mid, "status": "kept", **run}))
            elif keep_all:
                entry = {"memory_id": mid, "status": "withheld", "kept_by_policy": True, **run}
                chosen.append((position, entry))
        return chosen

    def event(self) -> FlowEvent:
        """The ``meclear.clearance`` end event of the query."""
        payload = {
            "stage": "clearance",
            "phase": "end",
            "mode": "background",
            "query_id": self.query_id,
            "cleared_ids": self.withheld_ids,
            "withheld": [w.metadata() for w in self.withheld],
            "audit": self.audit.metadata() if self.audit is not None else None,
            "trigger": self.decision.policy,
            "status_reason": self.decision.status_reason,
        }
        return FlowEvent(payload, "background")


def background_flow(
    query: str,
    count: int,
    load: Callable[[], Sequence[Memory]],
    settings: QuerySettings,
    queue: AuditQueue | None,
    *,
    policy: EdgeCasePolicy | None = None,
    snapshot: dict[str, Any] | None = None,
    audits: AuditGate | None = None,
) -> Flow:
    """The request path of a background query (module docstring).

    Args:
        query: The question.
        count: How many items were retrieved.
        load: Turns the items into memories (raises on an unusable item).
        settings: The component's settings (its gate holds the trigger and the ledger).
        queue: Where audits go (None: withhold only, queue nothing).
        policy: The edge-case policy (every memory withheld).
        snapshot: Extra snapshot fields (``reference``, ``answer``, ``feedback``).
        audits: The per-question audit bounds (None: every triggered query submits).

    Returns:
        A generator for the drivers; its result has ``kind="background"``.
    """
    if count == 0:
        yield Notify(EMPTY_EVENT)
        return FlowResult("empty")
    gate = settings.gate if settings.gate is not None else ClearanceGate()
    try:
        memories = tuple(load())
    except BaseException as exc:
        return FlowResult("failed", error=exc)
    notes: dict[str, str] = {}
    context = TriggerContext(query=query, query_id=gate.query_id(query), memories=memories)
    decision: TriggerDecision = yield Call(
        lambda: _decide(gate, context, notes), lambda: _adecide(gate, context, notes)
    )
    withheld: list[Withheld] = yield Call(lambda: _harm(gate, query, memories, notes))
    ticket: AuditTicket | None = None
    if decision.run and queue is not None:
        fields = dict(snapshot or {})
        fields["record"] = settings.record
        frozen = AuditSnapshot.of(query, context.query_id, memories, decision, **fields)
        ticket = yield Call(lambda: _gated_submit(queue, frozen, audits, notes))
    result = BackgroundDecision(
        context.query_id,
        tuple(withheld),
        decision,
        ticket,
        notes,
        policy if policy is not None else EdgeCasePolicy(),
    )
    yield Notify(result.event())
    return FlowResult("background", background=result)


def _decide(gate: ClearanceGate, context: TriggerContext, notes: dict[str, str]) -> TriggerDecision:
    try:
        return gate.trigger.decide(context)
    except Exception as exc:
        return _trigger_failed(gate, exc, notes)


async def _adecide(
    gate: ClearanceGate, context: TriggerContext, notes: dict[str, str]
) -> TriggerDecision:
    try:
        return await gate.trigger.adecide(context)
    except Exception as exc:
        return _trigger_failed(gate, exc, notes)


def _trigger_failed(gate: ClearanceGate, exc: Exception, notes: dict[str, str]) -> TriggerDecision:
    notes["trigger"] = f"failed, auditing anyway: {_failure(exc)}"
    logger.warning(
        "MeClear trigger %s failed; auditing anyway: %s", gate.trigger.name, _failure(exc)
    )
    return TriggerDecision(run=True, policy=gate.trigger.name, reason="trigger_error")


def _harm(
    gate: ClearanceGate, query: str, memories: Sequence[Memory], notes: dict[str, str]
) -> list[Withheld]:
    if gate.ledger is None:
        return []
    try:
        return verified_harm(gate.ledger, query, memories)
    except Exception as exc:
        notes["ledger"] = f"harm lookup failed, nothing withheld: {_failure(exc)}"
        logger.warning("MeClear ledger lookup failed; nothing withheld: %s", _failure(exc))
        return []


def _submit(
    queue: AuditQueue, snapshot: AuditSnapshot, notes: dict[str, str]
) -> AuditTicket | None:
    try:
        return queue.submit(snapshot)
    except Exception as exc:
        notes["audit"] = f"queueing failed, no audit: {_failure(exc)}"
        logger.warning("MeClear audit could not be queued: %s", _failure(exc))
        return None


def _gated_submit(
    queue: AuditQueue,
    snapshot: AuditSnapshot,
    audits: AuditGate | None,
    notes: dict[str, str],
) -> AuditTicket | None:
    """Submit through the per-question bounds (module docstring); the gate failing submits."""
    if audits is None:
        return _submit(queue, snapshot, notes)
    try:
        decision = audits.admit(snapshot.query_id)
    except Exception as exc:
        notes["audit_gate"] = f"audit bounds unavailable, queued anyway: {_failure(exc)}"
        logger.warning("MeClear audit bounds unavailable; queued anyway: %s", _failure(exc))
        return _submit(queue, snapshot, notes)
    if decision.action == "join":
        if decision.job_id is None:  # its submission is in flight: the queue's single flight
            return _submit(queue, snapshot, notes)
        return AuditTicket(decision.job_id, True, str(getattr(queue, "backend", "sqlite")))
    if decision.action != "submit" or decision.token is None:
        notes["audit"] = decision.note()
        return None
    ticket = _submit(queue, snapshot, notes)
    try:
        if ticket is None:
            audits.released(snapshot.query_id, decision.token)
        else:
            audits.submitted(snapshot.query_id, decision.token, ticket.job_id)
    except Exception as exc:
        notes["audit_gate"] = f"audit bounds not updated: {_failure(exc)}"
        logger.warning("MeClear audit bounds not updated: %s", _failure(exc))
    return ticket
