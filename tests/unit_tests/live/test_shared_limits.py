"""Shared limits in the components: six concurrent queries through a LangChain
``ClearingRetriever`` or a LlamaIndex ``MeClearPostprocessor`` sharing one ``CallLimiter``
never have more model calls in flight than its bound (and do without it), sync (threads)
and async (``gather``); every model call takes one slot; the clearance end event reports
the limiter. (A query waiting for a slot ends at its wall bound, on the real clock:
``tests/integration_tests/live/test_shared_limits_deadlines.py``.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.langchain import (
    ClearingRetriever,
    MeClearCompressor,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
from meclear_integrations.pipeline.settings import Limits
from meclear_integrations.runtime.breaker import CircuitBreaker
from meclear_integrations.runtime.limiter import CallLimiter
from meclear_integrations.simulation import redundant_harm_example
from tests.support.gauged_components import (
    COMPONENTS,
    FAST,
    GaugedChat,
    clearance_meta,
    cleared_stale,
    concurrent_queries,
    gauged_langchain,
    gauged_llama_index,
)
from tests.support.limits import CountingRateLimiter, Gauge


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_a_shared_limiter_bounds_calls_in_flight_across_queries(
    framework: str, asynchronous: bool
) -> None:
    gauge = Gauge()
    limiter = CallLimiter(2)
    outs = concurrent_queries(
        COMPONENTS[framework](gauge, limits={"limiter": limiter}), asynchronous
    )
    assert all(cleared_stale(out) for out in outs)
    assert gauge.peak <= 2
    stats = limiter.stats()
    assert stats.peak_in_flight == 2 and stats.in_flight == 0 and stats.waited > 0
    model_calls = sum(clearance_meta(out[0])["model_calls"]["total"] for out in outs)
    assert stats.acquisitions == model_calls  # one slot per agent or judge call


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_without_a_limiter_concurrent_queries_exceed_the_bound(
    framework: str, asynchronous: bool
) -> None:
    gauge = Gauge()
    outs = concurrent_queries(COMPONENTS[framework](gauge), asynchronous)
    assert all(cleared_stale(out) for out in outs)
    assert gauge.peak > 2


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_the_rate_limiter_gives_one_token_per_model_call(
    framework: str, asynchronous: bool
) -> None:
    pacer = CountingRateLimiter(0.001, requests_per_second=1000)  # asked for every 2 ms
    limiter = CallLimiter(3, rate_limiter=pacer)
    outs = concurrent_queries(
        COMPONENTS[framework](Gauge(), limits={"limiter": limiter}), asynchronous, 2
    )
    assert all(cleared_stale(out) for out in outs)
    model_calls = sum(clearance_meta(out[0])["model_calls"]["total"] for out in outs)
    assert pacer.granted == model_calls == limiter.stats().acquisitions


def test_components_share_one_limiter() -> None:
    gauge = Gauge()
    limiter = CallLimiter(3)
    runs = [
        gauged_langchain(gauge, limits={"limiter": limiter}),
        gauged_llama_index(gauge, limits={"limiter": limiter}),
    ]

    async def both() -> None:
        await asyncio.gather(*(run(True) for run in runs for _ in range(3)))

    asyncio.run(both())
    assert gauge.peak <= 3 and limiter.stats().peak_in_flight == 3


@pytest.mark.parametrize("framework", list(COMPONENTS))
def test_max_calls_in_flight_builds_a_limiter_per_component(framework: str) -> None:
    gauge = Gauge()
    outs = concurrent_queries(
        COMPONENTS[framework](gauge, limits={"max_calls_in_flight": 1}), True, 2
    )
    assert all(cleared_stale(out) for out in outs)
    assert gauge.peak == 1


async def test_the_langchain_clearance_end_event_reports_the_limiter() -> None:
    from langchain_core.documents import Document

    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    limiter = CallLimiter(2)
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
        llm=GaugedChat.from_case(case, gauge=Gauge(), latency=0.0),
        limits={"limiter": limiter},
        clearance=FAST,
    )
    ends: list[dict[str, Any]] = []
    config = reference_config(case.reference)
    async for event in retriever.astream_events(case.query, config=config, version="v2"):
        data = event["data"]
        custom = event["event"] == "on_custom_event"
        if custom and (data.get("stage"), data.get("phase")) == ("clearance", "end"):
            ends.append(data)
    assert len(ends) == 1
    entry = ends[0]["limiter"]
    assert entry["max_in_flight"] == 2 and entry["peak_in_flight"] <= 2
    assert entry["acquisitions"] == ends[0]["cost"]["model_calls"] == limiter.stats().acquisitions
    assert entry["waited"] <= entry["acquisitions"] and entry["wait_seconds"] >= 0.0


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_llama_index_clearance_end_event_reports_the_limiter(asynchronous: bool) -> None:
    from llama_index.core.instrumentation import get_dispatcher

    from tests.unit_tests.llama_index.conftest import EventCollector

    collector = EventCollector()
    root = get_dispatcher()
    root.add_event_handler(collector)
    limiter = CallLimiter(2)
    try:
        out = asyncio.run(gauged_llama_index(Gauge(), limits={"limiter": limiter})(asynchronous))
    finally:
        root.event_handlers.remove(collector)
    assert cleared_stale(out)
    ends = [
        e.payload
        for e in collector.events
        if (e.payload.get("stage"), e.payload.get("phase")) == ("clearance", "end")
    ]
    assert len(ends) == 1
    entry = ends[0]["limiter"]
    assert entry["max_in_flight"] == 2
    assert entry["acquisitions"] == clearance_meta(out[0])["model_calls"]["total"]
    assert entry["acquisitions"] == limiter.stats().acquisitions


def test_no_limiter_no_event_entry() -> None:
    from meclear_integrations.core.events import StageEvent
    from meclear_integrations.judges.task import TaskCalls
    from meclear_integrations.runtime.usage import with_event_cost

    event = StageEvent(stage="clearance", phase="end", payload={"cost": {}})
    calls = TaskCalls(agent_calls=1, agent_hits=0, judge_calls=1, judge_hits=0)
    assert "limiter" not in with_event_cost(event, calls, None).payload


@pytest.mark.parametrize("component", ["retriever", "compressor", "postprocessor"])
def test_limiter_settings_are_strict(component: str) -> None:
    case = redundant_harm_example()
    limiter = CallLimiter(2)

    def build(**kwargs: Any) -> Any:
        if component == "postprocessor":
            return MeClearPostprocessor(llm=SimulatedLLM.from_case(case), **kwargs)
        llm = SimulatedChatModel.from_case(case)
        if component == "compressor":
            return MeClearCompressor(llm=llm, **kwargs)
        return ClearingRetriever(retriever=RunnableLambda(lambda q: []), llm=llm, **kwargs)

    assert build(limits={"limiter": limiter})._limiter is limiter
    assert build(limits=Limits(limiter=limiter))._limiter is limiter
    assert build(limits={"max_calls_in_flight": 3})._limiter.max_in_flight == 3
    assert build()._limiter is None
    with pytest.raises((ConfigurationError, ValueError), match="not both"):
        build(limits={"limiter": limiter, "max_calls_in_flight": 3})
    with pytest.raises(ValueError, match="max_calls_in_flight"):
        build(limits={"max_calls_inflight": 3})
    with pytest.raises(ValueError):
        build(limits={"max_calls_in_flight": 0})
    with pytest.raises(ValueError):
        build(limits={"limiter": 4})  # a number is max_calls_in_flight's


@pytest.mark.parametrize("component", ["retriever", "compressor", "postprocessor"])
@pytest.mark.parametrize(
    "old", ["circuit_breaker", "limiter", "max_calls_in_flight", "max_event_bytes"]
)
def test_the_old_flat_spellings_name_their_group(component: str, old: str) -> None:
    case = redundant_harm_example()
    kwargs: dict[str, Any] = {old: None}
    with pytest.raises(ValueError, match=rf"{old} moved into limits: pass limits=Limits"):
        if component == "postprocessor":
            MeClearPostprocessor(llm=SimulatedLLM.from_case(case), **kwargs)
        elif component == "compressor":
            MeClearCompressor(llm=SimulatedChatModel.from_case(case), **kwargs)
        else:
            ClearingRetriever(
                retriever=RunnableLambda(lambda q: []),
                llm=SimulatedChatModel.from_case(case),
                **kwargs,
            )


def test_one_breaker_and_limiter_instance_is_shared_not_copied() -> None:
    case = redundant_harm_example()
    breaker, limiter = CircuitBreaker(), CallLimiter(2)
    limits = Limits(circuit_breaker=breaker, limiter=limiter)
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: []),
        llm=SimulatedChatModel.from_case(case),
        limits=limits,
    )
    pp = MeClearPostprocessor(llm=SimulatedLLM.from_case(case), limits=limits)
    for component in (retriever, pp):
        assert component.limits.circuit_breaker is breaker
        assert component._limiter is limiter
    fresh = [MeClearPostprocessor(llm=SimulatedLLM.from_case(case)) for _ in "ab"]
    assert fresh[0].limits.circuit_breaker is not fresh[1].limits.circuit_breaker
