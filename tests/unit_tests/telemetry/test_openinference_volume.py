"""``TraceSettings.detail`` governs the spans OpenInference's LangChain and LlamaIndex
instrumentations make of a clearance's internal runs (218 spans per LangChain clearance at
every detail before): below ``"evaluations"`` the clearance adds its 4 spans (the
``meclear.clearance`` span and three stage spans) and nothing else; at ``"evaluations"``
the instrumentation's evaluation spans nest under MeClear's evaluation spans, inside their
stage. Spans of the user's own calls around the clearance stay."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.langchain.clearing_step import default_agent
from meclear_integrations.llama_index import HashEmbedding, MeClearPostprocessor, SimulatedLLM
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

from .conftest import Traces

OURS = "meclear_integrations"
STAGES = {"meclear.stage.screening", "meclear.stage.attribution", "meclear.stage.clearance"}
CLEARANCE_SPANS = {"meclear.clearance", *STAGES}


@pytest.fixture
def oi_langchain(traces: Traces) -> Iterator[None]:
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    yield
    instrumentor.uninstrument()


@pytest.fixture
def oi_llama_index(traces: Traces) -> Iterator[None]:
    instrumentation = pytest.importorskip("openinference.instrumentation.llama_index")
    instrumentor = instrumentation.LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    yield
    instrumentor.uninstrument()


def _theirs(traces: Traces) -> list:
    return [s for s in traces.spans if s.instrumentation_scope.name != OURS]


def _flaky_agent(llm, failures: int):  # type: ignore[no-untyped-def]
    chain = default_agent(llm)
    lock, calls = threading.Lock(), [0]

    def run(inputs):  # type: ignore[no-untyped-def]
        with lock:
            calls[0] += 1
            failing = calls[0] <= failures
        if failing:
            raise ConnectionError("connection reset by peer")
        return chain.invoke(inputs)

    async def arun(inputs):  # type: ignore[no-untyped-def]
        return run(inputs)

    return RunnableLambda(run, afunc=arun)


def _langchain(traces: Traces, detail: str, asynchronous: bool, failures: int = 0) -> None:
    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    llm = SimulatedChatModel.from_case(case)
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy() for d in docs]),
        llm=llm,
        agent=_flaky_agent(llm, failures) if failures else None,
        clearance={"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}},
        tracing=TraceSettings(detail=detail, tracer_provider=traces.provider),
    )
    config = reference_config(case.reference)
    if asynchronous:
        out = asyncio.run(retriever.ainvoke(case.query, config=config))
    else:
        out = retriever.invoke(case.query, config=config)
    assert [d.id for d in out] == ["g1", "b1", "b2", "b3"]


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("detail", ["failures", "stages"])
def test_langchain_four_spans_per_clearance(
    traces: Traces, oi_langchain: None, detail: str, asynchronous: bool
) -> None:
    _langchain(traces, detail, asynchronous)
    names = Counter(s.name for s in traces.spans)
    # the retrieval step's own spans (retriever, inner retriever) and the clearance's 4
    theirs = Counter(s.name for s in _theirs(traces))
    assert theirs == {"ClearingRetriever": 1, "RunnableLambda": 1}, theirs
    assert set(names) - set(theirs) == CLEARANCE_SPANS and len(traces.spans) - 2 == 4
    root = traces.one("meclear.clearance")
    assert traces.parent_name(root) == "ClearingRetriever"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_langchain_failed_calls_are_our_spans_under_their_stage(
    traces: Traces, oi_langchain: None, asynchronous: bool
) -> None:
    _langchain(traces, "failures", asynchronous, failures=2)
    failed = traces.named("meclear.evaluate")
    assert len(failed) == 2 and all(not s.status.is_ok for s in failed)
    assert {traces.parent_name(s) for s in failed} <= STAGES
    assert Counter(s.name for s in _theirs(traces)) == {"ClearingRetriever": 1, "RunnableLambda": 1}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_langchain_evaluation_spans_nest_under_their_stage(
    traces: Traces, oi_langchain: None, asynchronous: bool
) -> None:
    _langchain(traces, "evaluations", asynchronous)
    runs = traces.named("meclear_evaluate")  # the instrumentation's evaluation spans
    assert len(runs) >= 52
    assert {traces.parent_name(s) for s in runs} == {"meclear.evaluate"}
    assert {traces.parent_name(s) for s in traces.named("meclear.evaluate")} <= STAGES
    models = [s for s in traces.spans if s.attributes.get("openinference.span.kind") == "LLM"]
    assert len(models) >= 52  # the agent's and judge's model spans are there, inside them


def _llama_index(traces: Traces, detail: str | None, asynchronous: bool) -> str:
    case = redundant_harm_example()
    llm = SimulatedLLM.from_case(case)
    nodes = [TextNode(id_=m.id, text=m.content) for m in case.memories]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    pps = []
    if detail is not None:
        tracing = TraceSettings(detail=detail, tracer_provider=traces.provider)
        pps = [MeClearPostprocessor(llm=llm, reference=case.reference, tracing=tracing)]
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=pps)
    response = asyncio.run(engine.aquery(case.query)) if asynchronous else engine.query(case.query)
    return str(response)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("detail", ["failures", "stages"])
def test_llama_index_four_spans_per_clearance(
    traces: Traces, oi_llama_index: None, detail: str, asynchronous: bool
) -> None:
    assert _llama_index(traces, None, asynchronous) == "January 2023"  # the plain query
    plain = Counter(s.name for s in traces.spans)
    traces.exporter.clear()
    assert _llama_index(traces, detail, asynchronous) == "December 2023"
    cleared = Counter(s.name for s in traces.spans)
    added = cleared - plain
    # the postprocessor's own span (the retrieval step) and the clearance's 4; no LLM span
    assert {n for n in added if not n.startswith("MeClearPostprocessor")} == CLEARANCE_SPANS
    assert sum(added.values()) == 5, added
    assert plain - cleared == Counter()  # the answer's own LLM span is still there


@pytest.mark.parametrize("asynchronous", [False, True])
def test_llama_index_evaluation_spans_nest_under_their_stage(
    traces: Traces, oi_llama_index: None, asynchronous: bool
) -> None:
    _llama_index(traces, "evaluations", asynchronous)
    models = [s for s in traces.spans if s.attributes.get("openinference.span.kind") == "LLM"]
    parents = Counter(traces.parent_name(s) for s in models)
    # every agent call under its evaluation span, every judge call under its judge span;
    # none directly under the postprocessor, the answer's own LLM spans where they were
    assert parents["meclear.evaluate"] == 52 and parents["meclear.judge"] >= 1
    assert not [p for p in parents if p and p.startswith("MeClearPostprocessor")], parents
    assert any(p and p.startswith(("SimulatedLLM", "DefaultRefine")) for p in parents)
    assert {traces.parent_name(s) for s in traces.named("meclear.evaluate")} <= STAGES
    query = traces.parent(traces.one("meclear.clearance"))
    assert {s.context.trace_id for s in models} == {query.context.trace_id}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_llama_index_internal_llm_events_are_tagged(asynchronous: bool) -> None:
    """Every LLM event of the clearance's agent and judge calls carries the instrument tag
    ``meclear: internal``; the answer's own LLM call does not (a streaming handler can
    tell them apart)."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events.llm import LLMCompletionStartEvent

    from meclear_integrations.llama_index.events import INTERNAL_TAG

    seen: list[dict] = []

    class Starts(BaseEventHandler):
        @classmethod
        def class_name(cls) -> str:
            return "Starts"

        def handle(self, event, **kwargs) -> None:  # type: ignore[no-untyped-def]
            if isinstance(event, LLMCompletionStartEvent):
                seen.append(dict(event.tags))

    root = get_dispatcher()
    before = list(root.event_handlers)
    root.add_event_handler(Starts())
    try:
        traces = Traces()
        assert _llama_index(traces, "failures", asynchronous) == "December 2023"
    finally:
        root.event_handlers[:] = before
    internal = [t for t in seen if t.get("meclear") == INTERNAL_TAG["meclear"]]
    assert len(internal) >= 52 and len(seen) - len(internal) == 1  # + the answer's call
