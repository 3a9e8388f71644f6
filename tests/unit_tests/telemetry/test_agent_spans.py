"""The clearance span of an agent's middleware, under OpenInference's LangChain instrumentation
(what Phoenix shows): one trace, the clearance inside the agent's tool step, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.tools import tool

from meclear_integrations.langchain import MeClearMiddleware, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

from .conftest import Traces


@pytest.fixture
def openinference_langchain(traces: Traces) -> Iterator[None]:
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    yield
    instrumentor.uninstrument()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_clearance_span_inside_the_agent_trace(
    traces: Traces, openinference_langchain: None, asynchronous: bool
) -> None:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]

    @tool(response_format="content_and_artifact")
    def search_memories(query: str):
        """Search the user's memories."""
        return "\n\n".join(d.page_content for d in docs), docs

    llm = SimulatedChatModel.from_case(case)
    tracing = TraceSettings(tracer_provider=traces.provider)
    agent = create_agent(
        llm, tools=[search_memories], middleware=[MeClearMiddleware(llm=llm, tracing=tracing)]
    )
    ask = {"messages": [("user", case.query)]}
    config = reference_config(case.reference)
    out = (
        asyncio.run(agent.ainvoke(ask, config=config))
        if asynchronous
        else agent.invoke(ask, config=config)
    )
    assert out["messages"][-1].text == "December 2023"
    root = traces.one("meclear.clearance")
    assert sorted(root.attributes["meclear.cleared_ids"]) == ["f1", "f2"]
    assert traces.named("meclear_clearance") == []  # the span stands for the clearance run
    assert len({s.context.trace_id for s in traces.spans}) == 1  # one trace: the agent's
    ancestors = []
    span = traces.parent(root)
    while span is not None:
        ancestors.append(span.name)
        span = traces.parent(span)
    assert "tools" in ancestors and "LangGraph" in ancestors
