"""Running the engine for an integration, written once: meter, events with cost, report.

The query flow's :class:`~.steps.Clear` step asks its host for an :class:`EngineJob`: the
framework's pieces (the task evaluator, what the engine calls, where stage events go,
the tracing scope). :func:`run_engine` and :func:`arun_engine` run it the same way on
both paths: a token meter for the query, every stage event with the model calls so far
(:func:`~..runtime.cost.with_event_cost`), the engine inside the tracing scope, and the
report with its model calls (:func:`~..runtime.cost.with_model_calls`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..core.engine import MeClearEngine
from ..core.evaluation import Evaluator
from ..core.events import StageEvent
from ..core.report import ClearanceReport
from ..core.trace_settings import TraceSettings
from ..judges.task import AsyncTaskEvaluator, TaskEvaluator
from ..runtime.cost import cost_source, with_event_cost, with_model_calls
from ..runtime.usage import UsageMeter, metering
from .steps import Clear

__all__ = ["EngineJob", "arun_engine", "run_engine"]

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

        return MeClearEngine(self.request.config, listener=listener, tracing=self.tracing)


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
