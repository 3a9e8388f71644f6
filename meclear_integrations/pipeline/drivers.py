"""The drivers of the query flow and of the engine: each written once, sync and async.

The flow yields steps (:mod:`.steps`); a driver executes each and sends the value back, or
throws the step's exception into the flow. What the integration supplies is a host: how
to report an event, and the framework's pieces of an engine run (:class:`EngineJob`).
:func:`run_engine` and :func:`arun_engine` run a job the same way on both paths: a token
meter for the query, every stage event with the model calls so far
(:func:`~..runtime.usage.with_event_cost`), the engine inside the tracing scope, and the
report with its model calls (:func:`~..runtime.usage.with_model_calls`).

:func:`fan_out` is the step of a flow that runs several sub-flows: one after another on the
sync path, concurrently on the async one (an integration's batch of searches or candidates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..core.concurrency.step_driver import Call, arun_steps, call_async, call_sync, run_steps
from ..core.concurrency.tasks import gather_or_cancel
from ..core.events import StageEvent
from ..core.judging.evaluator import Evaluator
from ..core.report import ClearanceReport
from ..core.tracing.settings import TraceSettings
from ..judges.task import AsyncTaskEvaluator, TaskEvaluator
from ..runtime.usage import UsageMeter, cost_source, metering, with_event_cost, with_model_calls
from .steps import Clear, FlowEvent, Notify, Step, Steps

if TYPE_CHECKING:
    from ..core.engine import MeClearEngine

__all__ = [
    "AsyncHost",
    "EngineJob",
    "SyncHost",
    "arun_engine",
    "fan_out",
    "run_async",
    "run_engine",
    "run_sync",
]

T = TypeVar("T")

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


def fan_out(flows: Iterable[Steps[T]]) -> Call:
    """The step that runs ``flows`` and returns their results, in order.

    The sync path runs them one after another on the calling thread (the first failure
    stops the rest); the async path runs them concurrently on the loop, the first failure
    cancelling the others (:func:`~..core.concurrency.tasks.gather_or_cancel`). Each flow
    yields only :class:`~..core.concurrency.step_driver.Call` steps.

    Args:
        flows: The sub-flows (each a step generator, not yet started).

    Returns:
        A :class:`~..core.concurrency.step_driver.Call` whose value is the list of results.
    """
    pending = list(flows)

    def sync() -> list[Any]:
        return [run_steps(flow) for flow in pending]

    async def asynchronous() -> list[Any]:
        return await gather_or_cancel(arun_steps(flow) for flow in pending)

    return Call(sync, asynchronous)


def run_engine(job: EngineJob) -> ClearanceReport:
    """Run ``job`` on the calling thread.

    Args:
        job: The integration's engine run.

    Returns:
        The engine's report with the query's model calls.
    """
    meter, request = UsageMeter(), job.request
    with job.scope(cost_source(job.task, meter)), metering(meter):
        report = job.engine(meter).clear(
            list(request.memories), job.evaluate, prior_harmful=request.prior
        )
    return with_model_calls(report, job.task.calls, meter)


async def arun_engine(job: EngineJob) -> ClearanceReport:
    """Run ``job`` on the event loop (see :func:`run_engine`).

    Args:
        job: The integration's engine run.

    Returns:
        The engine's report with the query's model calls.
    """
    meter, request = UsageMeter(), job.request
    with job.scope(cost_source(job.task, meter)), metering(meter):
        report = await job.engine(meter).aclear(
            list(request.memories), job.evaluate, prior_harmful=request.prior
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

    def handle(step: Step) -> Any:
        if isinstance(step, Notify):
            return host.notify(step.event)
        if isinstance(step, Clear):
            return run_engine(host.engine_job(step))
        return call_sync(step)

    return run_steps(flow, handle)


async def run_async(flow: Steps[T], host: AsyncHost) -> T:
    """Drive ``flow`` on the event loop (blocking calls in worker threads).

    Args:
        flow: The flow generator (or an integration's query around it).
        host: The integration's engine and event sink.

    Returns:
        The flow's result.
    """

    async def handle(step: Step) -> Any:
        if isinstance(step, Notify):
            return await host.notify(step.event)
        if isinstance(step, Clear):
            return await arun_engine(host.engine_job(step))
        return await call_async(step)

    return await arun_steps(flow, handle)
