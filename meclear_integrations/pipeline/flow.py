"""The flow around one query, written once: guard, trigger, ledger lookup, clearance, record.

Both integrations, sync and async, and the background audit run this generator through
the drivers of :mod:`.drivers`; only turning the result into documents or nodes and
reporting events is theirs. The order of the decisions:

1. No items: a ``skipped: "empty"`` event, nothing else.
2. The live guard (``guard.live_bounds``): an open circuit breaker or a call cap that cannot pay
   for clearance declines the query (``guarded``), or raises when failing closed.
3. The gate (``guard.gate.ClearanceGate``, with a trigger or a ledger): the trigger decides and
   the ledger offers its verified harm as the prior candidate; a declined query is
   recorded and reported (``declined``).
4. The engine clears the context (:class:`~.steps.Clear`); the breaker learns the outcome.
5. The gate fits the token budget and records the decision in the ledger.

Any exception before a report ends the flow as ``failed``: the integration fails open or
raises (``guard.policy``). Cancellation is returned the same way and re-raised there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.config import ClearanceConfig
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from ..guard.gate import ClearanceGate, GateOutcome, GatePlan
from ..guard.live_bounds import LiveGuard, live_config
from ..guard.policy import FailureSwitch, failure_mode
from .steps import Call, Clear, Flow, FlowEvent, FlowResult, Notify, Steps

__all__ = [
    "EMPTY_EVENT",
    "QuerySettings",
    "clearance_flow",
    "component_config",
    "make_gate",
    "trigger_event",
]

EMPTY_EVENT = FlowEvent(
    {"stage": "clearance", "phase": "end", "skipped": "empty", "cleared_ids": []}, "empty"
)
"""The event of a query with no items."""


def component_config(
    clearance: ClearanceConfig, on_failure: FailureSwitch | None
) -> ClearanceConfig:
    """A component's engine configuration: its own ``on_failure`` switch and the live wall bound.

    Args:
        clearance: The component's ``clearance`` setting.
        on_failure: The component's ``on_failure`` switch (None follows ``clearance``).

    Returns:
        The configuration each query runs with.
    """
    mode = failure_mode(clearance, on_failure)
    if clearance.failure.mode == mode:
        return live_config(clearance)
    failure = clearance.failure.model_copy(update={"mode": mode})
    return live_config(clearance.model_copy(update={"failure": failure}))


def make_gate(trigger: Any, ledger: Any, *, origin: str = "live") -> ClearanceGate | None:
    """The gate of a component with a trigger or a ledger (None: neither).

    Args:
        trigger: The component's trigger, or None.
        ledger: The component's ledger, or None.
        origin: The origin label of its ledger records.

    Returns:
        The gate, or None.
    """
    if trigger is None and ledger is None:
        return None
    return ClearanceGate(trigger=trigger, ledger=ledger, origin=origin)


def trigger_event(plan: GatePlan) -> FlowEvent:
    """The event of a query the trigger declined.

    Args:
        plan: The gate's plan.

    Returns:
        The clearance ``end`` payload with ``skipped: "trigger"``.
    """
    reason = plan.decision.status_reason
    payload = {
        "stage": "clearance",
        "phase": "end",
        "skipped": "trigger",
        "status_reason": reason,
        "trigger": plan.decision.policy,
        "cleared_ids": [],
    }
    return FlowEvent(payload, reason)


@dataclass(frozen=True, slots=True)
class QuerySettings:
    """What one query runs with (built by the component for each query).

    Args:
        config: The engine configuration (:func:`component_config`).
        guard: The component's live guard.
        gate: The component's gate (:func:`make_gate`), or None.
        record: The ledger fields the integration knows (success signal, models, trace id;
            a background audit adds ``run_id``).
    """

    config: ClearanceConfig
    guard: LiveGuard
    gate: ClearanceGate | None = None
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def closed(self) -> bool:
        """Declined and failed queries raise instead of failing open."""
        return self.config.failure.mode == "closed"


def clearance_flow(
    query: str, count: int, load: Callable[[], Sequence[Memory]], settings: QuerySettings
) -> Flow:
    """The flow of one query (module docstring).

    Args:
        query: The query text.
        count: How many items were retrieved (0: the empty path, ``load`` is not called).
        load: Turns the items into memories (raises on an unusable item).
        settings: The component's settings for this query.

    Returns:
        A generator for :func:`~.drivers.run_sync` or :func:`~.drivers.run_async`.
    """
    if count == 0:
        yield Notify(EMPTY_EVENT)
        return FlowResult("empty")
    gate, plan = settings.gate, None
    try:
        memories = tuple(load())
        ticket = settings.guard.admit(memories, settings.config)
        if ticket.declined:
            if settings.closed:
                raise ticket.error()
            yield Notify(FlowEvent(ticket.event_payload(), str(ticket.reason)))
            return FlowResult(
                "guarded", report=ticket.report, reason=ticket.reason, detail=ticket.detail()
            )
        with ticket:
            if gate is not None:
                plan = yield from _plan(gate, query, memories, settings.config)
                if not plan.run:
                    outcome = yield from _finish(gate, plan, gate.skipped(plan), settings.record)
                    yield Notify(trigger_event(plan))
                    return FlowResult("declined", report=outcome.report, outcome=outcome)
            config = plan.config if plan is not None else settings.config
            prior = plan.prior if plan is not None else PriorCandidate()
            report: ClearanceReport = yield Clear(memories, config, prior)
            ticket.observe(report)
    except BaseException as exc:  # the integration fails open or re-raises
        return FlowResult("failed", error=exc)
    if gate is None or plan is None:
        return FlowResult("cleared", report=report)
    outcome = yield from _finish(gate, plan, report, settings.record)
    return FlowResult("cleared", report=report, outcome=outcome)


def _plan(
    gate: ClearanceGate, query: str, memories: Sequence[Memory], config: ClearanceConfig
) -> Steps[GatePlan]:
    plan: GatePlan = yield Call(
        lambda: gate.plan(query, memories, config),
        lambda: gate.aplan(query, memories, config),
    )
    return plan


def _finish(
    gate: ClearanceGate, plan: GatePlan, report: ClearanceReport, record: dict[str, Any]
) -> Steps[GateOutcome]:
    outcome: GateOutcome = yield Call(
        lambda: gate.finish(plan, report, **dict(record)),
        lambda: gate.afinish(plan, report, **dict(record)),
    )
    return outcome
