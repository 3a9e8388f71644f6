"""The one query flow, written once (guard, trigger, ledger, clearance, record), and its drivers.

Both integrations, sync and async, and the background audit run this generator through
:func:`run_sync` and :func:`run_async`; only turning the result into documents or nodes and
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

The drivers execute each step the flow yields (:mod:`.steps`) and send the value back, or
throw the step's exception into the flow. What the integration supplies is a host: how to
report an event, and the framework's pieces of an engine run (:class:`EngineJob`).
:func:`run_engine` and :func:`arun_engine` run a job the same way on both paths: a token
meter for the query, every stage event with the model calls so far
(:func:`~..runtime.usage.with_event_cost`), the engine inside the tracing scope, and the
report with its model calls (:func:`~..runtime.usage.with_model_calls`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..core.concurrency.step_driver import arun_steps, call_async, call_sync, run_steps
from ..core.config import ClearanceConfig
from ..core.events import StageEvent
from ..core.memory import Memory
from ..core.prior import PriorCandidate
from ..core.report import ClearanceReport
from ..core.tracing.settings import TraceSettings
from ..guard.gate import ClearanceGate, GateOutcome, GatePlan
from ..guard.live_bounds import LiveGuard, live_config
from ..guard.policy import FailureSwitch, failure_mode
from ..runtime.usage import UsageMeter, cost_source, metering, with_event_cost, with_model_calls
from .steps import Call, Clear, Flow, FlowEvent, FlowResult, Notify, Step, Steps

if TYPE_CHECKING:
    from ..core.engine import MeClearEngine
    from ..core.judging.evaluator import Evaluator
    from ..judges.task import AsyncTaskEvaluator, TaskEvaluator

__all__ = [
    "EMPTY_EVENT",
    "AsyncHost",
    "EngineJob",
    "QuerySettings",
    "SyncHost",
    "arun_engine",
    "clearance_flow",
    "component_config",
    "make_gate",
    "run_async",
    "run_engine",
    "run_sync",
    "trigger_event",
]

T = TypeVar("T")

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
        A generator for :func:`run_sync` or :func:`run_async`.
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


CostSource = Callable[[], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class EngineJob:
    """One engine run of an integration's query.

    Args:
        request: The flow's :class:`~.steps.Clear` step (context, config, prior).
        task: The query's task evaluator (agent and judge; its calls are counted).
        evaluate: What the engine calls (``task`` itself, or the framework's wrapper).
        emit: Receives every stage event, cost filled in (a function, or a coroutine
            function on the async path).
        scope: The tracing scope of the run, given the cost source the span reads.
        tracing: The component's OpenTelemetry settings.
    """

    request: Clear
    task: TaskEvaluator | AsyncTaskEvaluator
    evaluate: Evaluator
    emit: Callable[[StageEvent], Any]
    scope: Callable[[CostSource], AbstractContextManager[Any]]
    tracing: TraceSettings | None = None

    def engine(self, meter: UsageMeter) -> MeClearEngine:
        """The engine of this run, its events carrying the model calls so far."""
        task, emit = self.task, self.emit  # the calls so far are read at each event

        def listener(event: StageEvent) -> Any:
            return emit(with_event_cost(event, task.calls, meter))

        from ..core.engine import MeClearEngine  # loaded with the first run, not on import

        return MeClearEngine(self.request.config, listener=listener, tracing=self.tracing)


def run_engine(job: EngineJob) -> ClearanceReport:
    """Run ``job`` on the calling thread (:func:`_engine_steps`).

    Args:
        job: The integration's engine run.

    Returns:
        The engine's report with the query's model calls.
    """
    return run_steps(_engine_steps(job))


async def arun_engine(job: EngineJob) -> ClearanceReport:
    """Run ``job`` on the event loop (see :func:`run_engine`)."""
    return await arun_steps(_engine_steps(job))


def _engine_steps(job: EngineJob) -> Steps[ClearanceReport]:
    """An engine run as a step flow: ``clear`` on the calling thread, ``aclear`` on the loop.

    The meter and the tracing scope are entered by the flow, on the driver's thread or
    task, and held across the engine's step.
    """
    meter, request = UsageMeter(), job.request
    with job.scope(cost_source(job.task, meter)), metering(meter):
        engine, memories = job.engine(meter), list(request.memories)
        report = yield Call(
            partial(engine.clear, memories, job.evaluate, prior_harmful=request.prior),
            partial(engine.aclear, memories, job.evaluate, prior_harmful=request.prior),
        )
    return with_model_calls(report, job.task.calls, meter)


class SyncHost(Protocol):
    """What the sync driver needs from an integration."""

    def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    def engine_job(self, request: Clear) -> EngineJob:
        """The engine run of ``request`` (the integration's agent, judge and listener)."""
        ...


class AsyncHost(Protocol):
    """What the async driver needs from an integration."""

    async def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    def engine_job(self, request: Clear) -> EngineJob:
        """The engine run of ``request`` (async agent and judge, awaited listener)."""
        ...


def run_sync(flow: Steps[T], host: SyncHost) -> T:
    """Drive ``flow`` on the calling thread.

    Args:
        flow: The flow generator (or an integration's query around it).
        host: The integration's engine and event sink.

    Returns:
        The flow's result.
    """
    return run_steps(flow, lambda step: call_sync(_host_call(step, host)))


async def run_async(flow: Steps[T], host: AsyncHost) -> T:
    """Drive ``flow`` on the event loop (blocking calls in worker threads)."""
    return await arun_steps(flow, lambda step: call_async(_host_call(step, host)))


def _host_call(step: Step, host: SyncHost | AsyncHost) -> Any:
    """The :class:`Call` of a host's step; any other step as it is.

    A :class:`Notify` is the host's event sink (a function, or a coroutine function on the
    async path), a :class:`Clear` its engine run (:func:`run_engine` / :func:`arun_engine`).
    """
    if isinstance(step, Notify):
        return Call.on_both(partial(host.notify, step.event))
    if isinstance(step, Clear):
        job = host.engine_job(step)
        return Call(partial(run_engine, job), partial(arun_engine, job))
    return step
