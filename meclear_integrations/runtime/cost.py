"""What a query cost in model calls, agent and judge apart (what a user pays).

The engine counts evaluator calls; one evaluator call is an agent call plus a judge call,
minus what the task evaluator's per-query caches saved (``judges.task``). The integrations
put the model calls and, when the provider reported usage, the tokens into the report's
``cost`` (:func:`with_model_calls`), into the ``cost`` of the clearance end event
(:func:`with_event_cost`), and from there into the document metadata and trace outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.events import StageEvent
from ..core.report import ClearanceReport
from ..judges.task import TaskCalls
from .usage import UsageMeter

__all__ = ["cost_fields", "cost_source", "with_event_cost", "with_model_calls"]


def cost_fields(calls: TaskCalls, meter: UsageMeter | None) -> dict[str, Any]:
    """The model-call fields of ``ClearanceCost`` for one query.

    Args:
        calls: The query's agent and judge calls.
        meter: The query's token meter, if any.

    Returns:
        ``agent_calls``, ``judge_calls``, ``agent_tokens`` and ``judge_tokens``.
    """
    return {
        "agent_calls": calls.agent_calls,
        "judge_calls": calls.judge_calls,
        "agent_tokens": meter.tokens("agent") if meter is not None else None,
        "judge_tokens": meter.tokens("judge") if meter is not None else None,
    }


def cost_source(task: Any, meter: UsageMeter | None) -> Callable[[], dict[str, Any]]:
    """What the clearance span reads when the run ends (``clearance_scope(cost=...)``).

    Args:
        task: The query's task evaluator (its ``calls`` are read at call time).
        meter: The query's token meter, if any.

    Returns:
        A function giving :func:`cost_fields` at the time it is called.
    """
    return lambda: cost_fields(task.calls, meter)


def with_model_calls(
    report: ClearanceReport, calls: TaskCalls, meter: UsageMeter | None
) -> ClearanceReport:
    """``report`` with its cost's model calls (and tokens) filled in.

    Args:
        report: The engine's report.
        calls: The query's agent and judge calls.
        meter: The query's token meter, if any.

    Returns:
        A new report.
    """
    cost = report.cost.model_copy(update=cost_fields(calls, meter))
    return report.model_copy(update={"cost": cost})


def with_event_cost(event: StageEvent, calls: TaskCalls, meter: UsageMeter | None) -> StageEvent:
    """A clearance end event whose ``cost`` also holds the model calls so far.

    With a limiter, the event also gets ``limiter``: its bound (``max_in_flight``), its
    ``peak_in_flight`` so far, and this query's ``acquisitions``, ``waited`` and
    ``wait_seconds`` (``meclear_integrations.runtime.limiter``).

    A ``progress`` event gets ``model_calls_done``: the agent and judge calls so far.

    Args:
        event: An engine stage event (only clearance end and progress events change).
        calls: The query's agent and judge calls so far.
        meter: The query's token meter, if any.

    Returns:
        The event, or a copy with the model calls added to its cost.
    """
    if event.phase == "progress":
        done = calls.agent_calls + calls.judge_calls
        return event.model_copy(update={"payload": {**event.payload, "model_calls_done": done}})
    cost = event.payload.get("cost")
    if event.stage != "clearance" or event.phase != "end" or not isinstance(cost, dict):
        return event
    fields = cost_fields(calls, meter)
    extra = {k: v.model_dump() if hasattr(v, "model_dump") else v for k, v in fields.items()}
    extra["model_calls"] = calls.agent_calls + calls.judge_calls
    payload = {**event.payload, "cost": {**cost, **extra}}
    if calls.limiter is not None:
        payload["limiter"] = calls.limiter
    return event.model_copy(update={"payload": payload})
