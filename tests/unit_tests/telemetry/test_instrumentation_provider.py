"""The clearance span reaches the tracer provider handed only to the OpenInference
instrumentation (no global provider set: the Phoenix cookbook's wiring), under MeClear's own
instrumentation scope, with the instrumentation's retriever span as its parent."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode
from opentelemetry import trace

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.llama_index import HashEmbedding, MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example

from .conftest import Traces


@pytest.fixture
def no_global_provider(monkeypatch) -> None:
    """As in a process that set none (another test may have set the global one)."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    assert not trace.get_tracer("probe").start_span("probe").is_recording()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_langchain_instrumentation_provider_gets_the_clearance_span(
    traces: Traces, no_global_provider: None, asynchronous: bool
) -> None:
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    try:
        case = redundant_harm_example()
        docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
            llm=SimulatedChatModel.from_case(case),
        )  # no tracing= : nothing but the instrumentation knows the provider
        config = reference_config(case.reference)
        if asynchronous:
            asyncio.run(retriever.ainvoke(case.query, config=config))
        else:
            retriever.invoke(case.query, config=config)
    finally:
        instrumentor.uninstrument()
    root = traces.one("meclear.clearance")
    assert root.instrumentation_scope.name == "meclear_integrations"
    assert sorted(root.attributes["meclear.cleared_ids"]) == ["f1", "f2"]
    assert root.attributes["meclear.cost.model_calls"] > 0
    parent = traces.parent(root)
    assert parent is not None and parent.attributes["openinference.span.kind"] == "RETRIEVER"


def test_llama_index_instrumentation_provider_gets_the_clearance_span(
    traces: Traces, no_global_provider: None
) -> None:
    instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
    instrumentor = instrumentation.LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    try:
        case = redundant_harm_example()
        llm = SimulatedLLM.from_case(case)
        nodes = [TextNode(id_=m.id, text=m.content) for m in case.memories]
        index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
        pp = MeClearPostprocessor(llm=llm, reference=case.reference)
        index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp]).query(
            case.query
        )
    finally:
        instrumentor.uninstrument()
    root = traces.one("meclear.clearance")
    assert sorted(root.attributes["meclear.cleared_ids"]) == ["f1", "f2"]


def test_without_any_provider_nothing_is_built(traces: Traces, no_global_provider: None) -> None:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs), llm=SimulatedChatModel.from_case(case)
    )
    retriever.invoke(case.query, config=reference_config(case.reference))
    assert traces.spans == []


def test_the_instrumentation_provider_wins_over_another_global_one(monkeypatch) -> None:
    """A global provider for the app, another for the instrumentation (e.g. Phoenix): the
    clearance span follows its parent, the instrumentation's retriever span."""
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    app, phoenix = Traces(), Traces()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", app.provider)
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=phoenix.provider)
    try:
        case = redundant_harm_example()
        docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
            llm=SimulatedChatModel.from_case(case),
        )
        retriever.invoke(case.query, config=reference_config(case.reference))
    finally:
        instrumentor.uninstrument()
    root = phoenix.one("meclear.clearance")
    assert phoenix.parent(root) is not None
    assert app.named("meclear.clearance") == []
