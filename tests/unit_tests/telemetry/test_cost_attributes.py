"""The clearance span carries the same cost as the documents' metadata: agent and judge
model calls, their total and, when the provider reports usage, the tokens per role (under
``meclear.cost.*``) and their sums (``gen_ai.usage.*``), in both integrations, sync and
async."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import ClearingRetriever
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.telemetry import TraceSettings
from meclear_integrations.telemetry import attributes as A
from tests.support import stale_city as scripted
from tests.unit_tests.live.test_cost import FAST, UsageChat, UsageLLM

from .conftest import Traces


def _check(traces: Traces, calls: dict[str, Any]) -> None:
    """The span's figures are the metadata's ``model_calls``."""
    attrs = traces.one("meclear.clearance").attributes
    assert calls["agent"] > 0 and calls["judge"] > 0
    assert attrs[A.COST_AGENT_CALLS] == calls["agent"]
    assert attrs[A.COST_JUDGE_CALLS] == calls["judge"]
    assert attrs[A.COST_MODEL_CALLS] == calls["total"]
    agent = calls["tokens"]["agent"]
    for key in ("input_tokens", "output_tokens", "calls_reported"):
        assert attrs[f"{A.COST_AGENT_TOKENS}.{key}"] == agent[key]
    assert f"{A.COST_JUDGE_TOKENS}.input_tokens" not in attrs  # a function judge: no usage
    assert attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == agent["input_tokens"]
    assert attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == agent["output_tokens"]
    # and the engine's own cost fields, as before
    assert attrs["meclear.cost.evaluator_calls"] > 0 and "meclear.cost.attempts" in attrs


@pytest.mark.parametrize("detail", ["failures", "stages"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_langchain_span_cost_is_the_metadata_cost(
    traces: Traces, asynchronous: bool, detail: str
) -> None:
    rec, docs = scripted.Recorder(), scripted.documents()
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=UsageChat(),
        judge=rec.judge,
        clearance=FAST,
        tracing=TraceSettings(detail=detail, tracer_provider=traces.provider),
    )
    if asynchronous:
        out = await retriever.ainvoke(scripted.QUESTION)
    else:
        out = retriever.invoke(scripted.QUESTION)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    _check(traces, out[0].metadata["meclear"]["model_calls"])


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_llama_index_span_cost_is_the_metadata_cost(
    traces: Traces, asynchronous: bool
) -> None:
    rec = scripted.Recorder()
    pp = MeClearPostprocessor(
        llm=UsageLLM(),
        judge=rec.judge,
        clearance=FAST,
        tracing=TraceSettings(tracer_provider=traces.provider),
    )
    if asynchronous:
        result = await pp.aclear_nodes(scripted.nodes(), scripted.QUESTION)
    else:
        result = pp.clear_nodes(scripted.nodes(), scripted.QUESTION)
    assert [n.node.node_id for n in result.nodes] == ["g1", "b1", "b2", "b3"]
    _check(traces, result.nodes[0].node.metadata["meclear"]["model_calls"])


def test_the_bare_engine_records_no_model_calls(traces: Traces) -> None:
    """Without an integration the engine cannot know the model calls: none are claimed."""
    from meclear_integrations import MeClearEngine
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    engine = MeClearEngine(tracing=TraceSettings(tracer_provider=traces.provider))
    engine.clear(case.memories, case.evaluator())
    attrs = traces.one("meclear.clearance").attributes
    assert attrs["meclear.cost.evaluator_calls"] == 52
    assert A.COST_AGENT_CALLS not in attrs and A.COST_MODEL_CALLS not in attrs
    assert A.GEN_AI_USAGE_INPUT_TOKENS not in attrs
