"""Spans of the LangChain retriever and the LlamaIndex postprocessor, sync and async,
nested under the caller's span and under OpenInference's framework instrumentations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.llama_index import HashEmbedding, MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

from .conftest import Traces

STAGES = {"meclear.stage.screening", "meclear.stage.attribution", "meclear.stage.clearance"}
OURS = "meclear_integrations"


def _ours(traces: Traces) -> list:
    return [s for s in traces.spans if s.instrumentation_scope.name == OURS]


def _retriever(traces: Traces, detail: str = "evaluations", **kwargs) -> ClearingRetriever:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    inner = RunnableLambda(lambda query: [d.model_copy() for d in docs])
    tracing = TraceSettings(detail=detail, tracer_provider=traces.provider, **kwargs)
    return ClearingRetriever(
        retriever=inner, llm=SimulatedChatModel.from_case(case), tracing=tracing
    )


def _check_tree(traces: Traces, framework: str) -> None:
    root = traces.one("meclear.clearance")
    assert root.attributes["meclear.framework"] == framework
    assert sorted(root.attributes["meclear.cleared_ids"]) == ["f1", "f2"]
    assert {traces.parent_name(s) for s in traces.named("meclear.evaluate")} <= STAGES
    judges = traces.named("meclear.judge")
    assert judges and {traces.parent_name(s) for s in judges} == {"meclear.evaluate"}
    evaluations = traces.named("meclear.evaluate")
    assert 0 < len(judges) < len(evaluations)  # the judge is called once per distinct answer
    assert {s.attributes["gen_ai.evaluation.score.label"] for s in judges} == {
        "correct",
        "incorrect",
    }


@pytest.mark.parametrize("asynchronous", [False, True])
def test_langchain_retriever_spans(traces: Traces, asynchronous: bool) -> None:
    case = redundant_harm_example()
    retriever = _retriever(traces)
    app = traces.provider.get_tracer("app")
    config = reference_config(case.reference)
    with app.start_as_current_span("handle_request"):
        if asynchronous:
            out = asyncio.run(retriever.ainvoke(case.query, config=config))
        else:
            out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]
    _check_tree(traces, "langchain")
    assert traces.parent_name(traces.one("meclear.clearance")) == "handle_request"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_llama_index_query_engine_spans(traces: Traces, asynchronous: bool) -> None:
    case = redundant_harm_example()
    llm = SimulatedLLM.from_case(case)
    nodes = [TextNode(id_=m.id, text=m.content) for m in case.memories]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    tracing = TraceSettings(detail="evaluations", tracer_provider=traces.provider)
    pp = MeClearPostprocessor(llm=llm, reference=case.reference, tracing=tracing)
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    with traces.provider.get_tracer("app").start_as_current_span("handle_request"):
        if asynchronous:
            response = asyncio.run(engine.aquery(case.query))
        else:
            response = engine.query(case.query)
    assert str(response) == "December 2023"
    _check_tree(traces, "llama_index")
    assert traces.parent_name(traces.one("meclear.clearance")) == "handle_request"


def test_langchain_content_opt_in(traces: Traces) -> None:
    case = redundant_harm_example()
    retriever = _retriever(traces, capture_content=True)
    retriever.invoke(case.query, config=reference_config(case.reference))
    root = traces.one("meclear.clearance").attributes
    assert root["reranker.query"] == case.query
    assert root["reranker.input_documents.0.document.content"] == case.memories[0].content
    answers = {s.attributes["input.value"] for s in traces.named("meclear.judge")}
    assert {"December 2023", "January 2023"} <= answers


def test_a_provider_error_with_a_key_reaches_no_attribute(traces: Traces) -> None:
    key = "sk-live-0123456789abcdefghijklmnop"
    case = redundant_harm_example()
    docs = [Document(page_content=f"{m.content} (api_key={key})", id=m.id) for m in case.memories]

    def broken(prompt: object) -> str:
        raise ConnectionError(f"503 from provider; key in the message: {key}")  # fails open

    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: docs),
        agent=RunnableLambda(broken),
        judge=lambda answer: 1.0,
        clearance={"failure": {"retry": {"max_attempts": 1}}},
        tracing=TraceSettings(detail="evaluations", tracer_provider=traces.provider),
    )
    out = retriever.invoke(case.query)
    assert len(out) == len(docs) and out[0].metadata["meclear"]["status"] == "failed"
    ours = _ours(traces)
    assert any(not s.status.is_ok for s in ours)
    texts = traces.texts()
    assert key not in texts and "0123456789abcdef" not in texts


@pytest.fixture
def openinference_langchain(traces: Traces) -> Iterator[None]:
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    yield
    instrumentor.uninstrument()


@pytest.fixture
def openinference_llama_index(traces: Traces) -> Iterator[None]:
    instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
    instrumentor = instrumentation.LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    yield
    instrumentor.uninstrument()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_inside_the_retrieval_step_of_openinference_langchain(
    traces: Traces, openinference_langchain: None, asynchronous: bool
) -> None:
    case = redundant_harm_example()
    retriever = _retriever(traces)
    config = reference_config(case.reference)
    if asynchronous:
        asyncio.run(retriever.ainvoke(case.query, config=config))
    else:
        retriever.invoke(case.query, config=config)
    root = traces.one("meclear.clearance")
    # the clearance span stands for the clearance run (no duplicate meclear_clearance span)
    assert traces.named("meclear_clearance") == []
    retrieval = traces.parent(root)
    assert retrieval is not None and retrieval.attributes["openinference.span.kind"] == "RETRIEVER"
    assert len({s.context.trace_id for s in traces.spans}) == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_inside_the_postprocessor_span_of_openinference_llama_index(
    traces: Traces, openinference_llama_index: None, asynchronous: bool
) -> None:
    case = redundant_harm_example()
    llm = SimulatedLLM.from_case(case)
    nodes = [TextNode(id_=m.id, text=m.content) for m in case.memories]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    pp = MeClearPostprocessor(
        llm=llm,
        reference=case.reference,
        tracing=TraceSettings(detail="evaluations", tracer_provider=traces.provider),
    )
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=[pp])
    response = asyncio.run(engine.aquery(case.query)) if asynchronous else engine.query(case.query)
    assert str(response) == "December 2023"
    root = traces.one("meclear.clearance")
    step = traces.parent(root)
    assert step is not None and step.name.startswith("MeClearPostprocessor")
    assert {s.context.trace_id for s in _ours(traces)} == {step.context.trace_id}
    # the agent's and judge's LLM spans belong to the same query trace
    llm_spans = [s for s in traces.spans if s.attributes.get("openinference.span.kind") == "LLM"]
    assert llm_spans and {s.context.trace_id for s in llm_spans} == {step.context.trace_id}
