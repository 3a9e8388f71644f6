"""Instrumentation: typed stage events in start/end pairs reach root event handlers (sync
and async), carry the LangChain payloads, belong to the postprocessor's span, and close on
errors."""

from __future__ import annotations

import pytest

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.engine import MeClearEngine
from meclear_integrations.core.errors import EvaluatorError
from meclear_integrations.core.events import StageEvent
from meclear_integrations.llama_index import (
    MeClearPostprocessor,
    MeClearStageEndEvent,
    MeClearStageStartEvent,
    SimulatedLLM,
)
from meclear_integrations.llama_index.events import (
    AttributionEndEvent,
    AttributionStartEvent,
    ClearanceEndEvent,
    ClearanceStartEvent,
    ScreeningEndEvent,
    ScreeningStartEvent,
)
from meclear_integrations.runtime.payloads import stage_event_payload

SEQUENCE = [
    ScreeningStartEvent,
    ScreeningEndEvent,
    AttributionStartEvent,
    AttributionEndEvent,
    ClearanceStartEvent,
    ClearanceEndEvent,
]
CLOSED = ClearanceConfig(failure={"mode": "closed"})
FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
"""Retries without backoff waits (the error tests need the retries, not the sleeps)."""


def assert_balanced(events) -> None:
    """Every start is closed by an end of the same stage, properly nested."""
    open_stages: list[str] = []
    for event in events:
        if isinstance(event, MeClearStageStartEvent):
            open_stages.append(event.stage)
        else:
            assert isinstance(event, MeClearStageEndEvent)
            assert open_stages and open_stages[-1] == event.stage, (open_stages, event)
            open_stages.pop()
    assert not open_stages


def engine_payloads(case) -> list[dict]:
    """What the LangChain integration would send as ``meclear.<stage>`` data."""
    seen: list[StageEvent] = []
    MeClearEngine(ClearanceConfig(), listener=seen.append).clear(case.memories, case.evaluator())
    return [stage_event_payload(e, query_id="q") for e in seen if e.phase != "progress"]


def check_run(events, case) -> None:
    assert [type(e) for e in events] == SEQUENCE
    assert_balanced(events)
    assert len({e.query_id for e in events}) == 1
    span = events[0].span_id
    assert span and span.startswith("MeClearPostprocessor.") and span == events[0].query_id
    assert all(e.span_id == span for e in events)
    for event, expected in zip(events, engine_payloads(case), strict=True):
        assert set(event.payload) == set(expected)
        assert event.payload["stage"] == event.stage and event.payload["phase"] in (
            "start",
            "end",
        )
    end = events[-1]
    assert sorted(end.cleared_ids) == ["f1", "f2"] and end.recovered is True
    assert sorted(end.payload["cleared_ids"]) == ["f1", "f2"]
    assert set(events[1].payload["loo"]) == {m.id for m in case.memories}
    assert set(events[3].payload["harmful_ids"]) == {"f1", "f2"}
    assert all(e.error is None for e in events if isinstance(e, MeClearStageEndEvent))
    assert all(e.class_name().startswith("MeClear") for e in events)


def test_sync_query_emits_the_stage_pairs(case, index, llm, events) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    engine.query(case.query)
    check_run(events.events, case)
    assert events.events[0].span_id.startswith("MeClearPostprocessor._postprocess_nodes-")


async def test_async_query_emits_the_stage_pairs(case, index, llm, events) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    await engine.aquery(case.query)
    check_run(events.events, case)
    assert events.events[0].span_id.startswith("MeClearPostprocessor._apostprocess_nodes-")


def test_events_serialise_with_their_class_name(case, nodes, llm, events) -> None:
    MeClearPostprocessor(llm=llm, reference=case.reference).postprocess_nodes(
        nodes, query_str=case.query
    )
    dumped = events.events[-1].model_dump(mode="json")
    assert dumped["class_name"] == "MeClearClearanceEndEvent"
    assert dumped["payload"]["kept_ids"] == ["g1", "b1", "b2", "b3"]


def test_empty_retrieval_is_one_skipped_pair(case, llm, events) -> None:
    MeClearPostprocessor(llm=llm).postprocess_nodes([], query_str=case.query)
    assert [type(e) for e in events.events] == [ClearanceStartEvent, ClearanceEndEvent]
    assert all(e.payload["skipped"] == "empty" for e in events.events)


class Failing(SimulatedLLM):
    fail_after: int = 10
    calls: int = 0

    def _count(self) -> None:
        self.calls += 1
        if self.calls > self.fail_after:
            raise ConnectionError("provider down")

    def complete(self, prompt, formatted=False, **kwargs):
        self._count()
        return super().complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(self, prompt, formatted=False, **kwargs):
        self._count()
        return await super().acomplete(prompt, formatted=formatted, **kwargs)


def check_error_run(events) -> None:
    assert isinstance(events[0], ScreeningStartEvent)
    assert_balanced(events)
    failed = [e for e in events if isinstance(e, MeClearStageEndEvent) and e.error]
    assert failed and all("provider down" in e.error for e in failed)
    assert all(e.payload["phase"] == "error" for e in failed)


def test_error_path_closes_every_stage_sync(case, nodes, events) -> None:
    pp = MeClearPostprocessor(
        llm=Failing.from_case(case), reference=case.reference, on_failure="closed", clearance=FAST
    )
    with pytest.raises(EvaluatorError):
        pp.postprocess_nodes(nodes, query_str=case.query)
    check_error_run(events.events)


async def test_error_path_closes_every_stage_async(case, nodes, events) -> None:
    pp = MeClearPostprocessor(
        llm=Failing.from_case(case), reference=case.reference, on_failure="closed", clearance=FAST
    )
    with pytest.raises(EvaluatorError):
        await pp.apostprocess_nodes(nodes, query_str=case.query)
    check_error_run(events.events)


async def test_cancellation_closes_the_open_stage(case, nodes, events) -> None:
    """A cancelled aquery (the engine never reports an error) still ends every stage."""
    import asyncio

    slow = SimulatedLLM.from_case(case, latency=0.5)
    pp = MeClearPostprocessor(llm=slow, reference=case.reference)
    task = asyncio.create_task(pp.apostprocess_nodes(nodes, query_str=case.query))
    while not events.events:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_balanced(events.events)
    assert isinstance(events.events[-1], ScreeningEndEvent)
    assert events.events[-1].error.startswith("CancelledError")
