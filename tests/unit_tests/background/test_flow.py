"""The one query flow: both drivers take the same decisions from the same steps."""

from __future__ import annotations

import asyncio
from contextlib import nullcontext

import pytest

from meclear_integrations import ClearanceConfig, Memory
from meclear_integrations.core.events import StageEvent
from meclear_integrations.core.failures.kind import CircuitOpenError
from meclear_integrations.guard.live_bounds import LiveGuard
from meclear_integrations.judges.task import TaskCalls
from meclear_integrations.pipeline import (
    FlowEvent,
    QuerySettings,
    clearance_flow,
    run_async,
    run_sync,
)
from meclear_integrations.pipeline.flow import EngineJob, make_gate
from meclear_integrations.pipeline.shaping import result_metadata
from meclear_integrations.pipeline.steps import Clear
from meclear_integrations.runtime.breaker import CircuitBreaker
from meclear_integrations.runtime.payloads import EdgeCasePolicy
from meclear_integrations.triggers import Sampling

MEMORIES = [Memory(id="a", content="Paris"), Memory(id="b", content="Rome")]


def evaluate(coalition, trial) -> float:
    return 0.0 if any(m.id == "b" for m in coalition) else 1.0


class Task:
    """A task evaluator's call count (the engine calls ``evaluate``)."""

    calls = TaskCalls(agent_calls=0, agent_hits=0, judge_calls=0, judge_hits=0)


class Host:
    def __init__(self) -> None:
        self.events: list[FlowEvent] = []
        self.stage_events: list[StageEvent] = []
        self.runs = 0

    def notify(self, event: FlowEvent) -> None:
        self.events.append(event)

    def engine_job(self, request: Clear) -> EngineJob:
        self.runs += 1
        return EngineJob(request, Task(), evaluate, self.stage_events.append, nullcontext_of)  # type: ignore[arg-type]


def nullcontext_of(cost):
    return nullcontext()


class AsyncHost(Host):
    async def notify(self, event: FlowEvent) -> None:  # type: ignore[override]
        self.events.append(event)


def settings(**kwargs) -> QuerySettings:
    guard = kwargs.pop("guard", LiveGuard(None))
    return QuerySettings(ClearanceConfig(), guard, **kwargs)


def both(query, memories, make_settings):
    sync_host, async_host = Host(), AsyncHost()
    sync = run_sync(
        clearance_flow(query, len(memories), lambda: memories, make_settings()), sync_host
    )
    flow = clearance_flow(query, len(memories), lambda: memories, make_settings())
    asynchronous = asyncio.run(run_async(flow, async_host))
    return (sync, sync_host), (asynchronous, async_host)


def test_sync_and_async_drivers_clear_the_same_way() -> None:
    for result, host in both("q", MEMORIES, settings):
        assert result.kind == "cleared" and host.runs == 1
        assert result.report.cleared_ids == ["b"]
        chosen = result_metadata(result, ["a", "b"], policy=EdgeCasePolicy())
        assert [(i, m["status"]) for i, m in chosen] == [(0, "complete")]


def test_empty_context_reports_one_event_and_runs_nothing() -> None:
    for result, host in both("q", [], settings):
        assert result.kind == "empty" and host.runs == 0
        assert [e.payload["skipped"] for e in host.events] == ["empty"]


def test_a_declining_trigger_records_nothing_runs_nothing_and_marks_skipped() -> None:
    def declined() -> QuerySettings:
        return settings(gate=make_gate(Sampling(0.0, seed=1), None))

    for result, host in both("q", MEMORIES, declined):
        assert result.kind == "declined" and host.runs == 0
        assert host.events[0].payload["skipped"] == "trigger"
        chosen = result_metadata(result, ["a", "b"], policy=EdgeCasePolicy())
        assert [m["status"] for _, m in chosen] == ["skipped", "skipped"]


def test_an_open_breaker_declines_or_raises_when_closed() -> None:
    breaker = CircuitBreaker(failures=1)
    breaker.record("failure")
    for result, host in both("q", MEMORIES, lambda: settings(guard=LiveGuard(breaker))):
        assert result.kind == "guarded" and result.reason == "circuit_open" and host.runs == 0
    closed = QuerySettings(ClearanceConfig(failure={"mode": "closed"}), LiveGuard(breaker))
    result = run_sync(clearance_flow("q", 2, lambda: MEMORIES, closed), Host())
    assert result.kind == "failed" and isinstance(result.error, CircuitOpenError)


def test_an_engine_error_ends_the_flow_as_failed_on_both_drivers() -> None:
    class Broken(Host):
        def engine_job(self, request):
            raise ConnectionError("provider down")

    class ABroken(AsyncHost):
        engine_job = Broken.engine_job

    flow = clearance_flow("q", 2, lambda: MEMORIES, settings())
    assert isinstance(run_sync(flow, Broken()).error, ConnectionError)
    flow = clearance_flow("q", 2, lambda: MEMORIES, settings())
    assert isinstance(asyncio.run(run_async(flow, ABroken())).error, ConnectionError)


def test_an_unusable_item_fails_the_flow_before_any_run() -> None:
    def load():
        raise ValueError("not a document")

    host = Host()
    result = run_sync(clearance_flow("q", 1, load, settings()), host)
    assert result.kind == "failed" and host.runs == 0


def test_failed_results_have_no_metadata() -> None:
    result = run_sync(clearance_flow("q", 1, lambda: 1 / 0, settings()), Host())
    with pytest.raises(ValueError):
        result_metadata(result, ["a"], policy=EdgeCasePolicy())
