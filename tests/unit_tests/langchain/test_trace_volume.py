"""``TraceSettings.detail`` sets how much of a clearance reaches LangChain's tracers
(LangSmith): every evaluation, failed ones only (the default), or the stage summary."""

from __future__ import annotations

import threading

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.langchain.clearing_step import (
    CLEARANCE_RUN_NAME,
    EVALUATE_RUN_NAME,
    default_agent,
)
from meclear_integrations.telemetry import TraceSettings

FAILURES = 2
FAST = {"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}}  # backoff is not tested


def flaky(llm):  # type: ignore[no-untyped-def]
    """The default agent whose first ``FAILURES`` calls hit a transient connection error."""
    chain = default_agent(llm)
    lock, calls = threading.Lock(), [0]

    def failing() -> bool:
        with lock:
            calls[0] += 1
            return calls[0] <= FAILURES

    def run(inputs):  # type: ignore[no-untyped-def]
        if failing():
            raise ConnectionError("connection reset by peer")
        return chain.invoke(inputs)

    async def arun(inputs):  # type: ignore[no-untyped-def]
        if failing():
            raise ConnectionError("connection reset by peer")
        return await chain.ainvoke(inputs)

    return RunnableLambda(run, afunc=arun)


def runs(collector: RunCollectorCallbackHandler) -> list:  # type: ignore[type-arg]
    out, todo = [], list(collector.traced_runs)
    while todo:
        run = todo.pop()
        out.append(run)
        todo.extend(run.child_runs)
    return out


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("detail", ["evaluations", "failures", "stages"])
async def test_trace_volume(case, inner, llm, detail: str, asynchronous: bool) -> None:
    collector = RunCollectorCallbackHandler()
    retriever = ClearingRetriever(
        retriever=inner,
        agent=flaky(llm),
        llm=llm,
        tracing=TraceSettings(detail=detail),
        clearance=FAST,
    )
    config = reference_config(case.reference, {"callbacks": [collector]})
    if asynchronous:
        out = await retriever.ainvoke(case.query, config=config)
    else:
        out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]  # the retries healed the failures

    traced = runs(collector)
    (clearance,) = [r for r in traced if r.name == CLEARANCE_RUN_NAME]
    evaluations = [r for r in traced if r.name == EVALUATE_RUN_NAME]
    failed = [r for r in evaluations if r.error]
    models = [r for r in traced if r.run_type in {"llm", "chat_model"}]
    cost = clearance.outputs["cost"]
    assert cost["agent_calls"] > 0 and cost["judge_calls"] > 0  # metering sees every call
    if detail == "evaluations":
        assert len(failed) == FAILURES
        assert len(evaluations) >= cost["evaluator_calls"]
        assert models
    elif detail == "failures":
        assert len(evaluations) == len(failed) == FAILURES
        assert all("connection reset" in r.error for r in failed)
        assert all(r.parent_run_id == clearance.id for r in failed)
        assert not models  # the model runs of evaluations are not traced
    else:
        assert evaluations == [] and not models
    assert clearance.outputs["cleared_ids"] == ["f1", "f2"]  # the summary is always there
