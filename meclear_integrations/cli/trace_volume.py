"""Spans per clearance at each ``TraceSettings.detail``.

``python -m meclear_integrations.cli.trace_volume`` prints the table: the simulated
redundant-harm case cleared by the bare engine, the LangChain ``ClearingRetriever`` and the
LlamaIndex ``MeClearPostprocessor`` (SIMULATED models), counted with the OpenTelemetry
SDK's in-memory exporter (needs ``opentelemetry-sdk``, in the ``dev`` extra). Only MeClear's
spans are counted; the model spans of your own instrumentation come on top.

``--openinference`` prints the spans per clearance under OpenInference's LangChain and
LlamaIndex instrumentations instead (the ``dev`` extra installs both): every span of the
query except those of the retrieval step itself (LangChain: the retriever and its inner
retriever; LlamaIndex: the spans of the same query engine without the postprocessor, and
the postprocessor's own span).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..core.tracing.settings import TraceDetail, TraceSettings

__all__ = ["DETAILS", "count_spans", "main", "openinference_table", "volume_table"]

DETAILS: tuple[TraceDetail, ...] = ("evaluations", "failures", "stages")


def _engine(tracing: TraceSettings) -> int:
    from ..core.engine import MeClearEngine
    from ..simulation import redundant_harm_example

    case = redundant_harm_example()
    return MeClearEngine(tracing=tracing).clear(case.memories, case.evaluator()).cost.attempts


def _flaky_engine(tracing: TraceSettings) -> int:
    """The engine with every first attempt on a 3-memory coalition failing (retried)."""
    from ..core.config import ClearanceConfig, FailurePolicy, RetryPolicy
    from ..core.engine import MeClearEngine
    from ..core.errors import TransientError
    from ..simulation import redundant_harm_example

    case = redundant_harm_example()
    evaluator = case.evaluator()
    seen: set[Any] = set()

    def flaky(coalition: tuple, trial: int) -> float:
        key = (tuple(m.id for m in coalition), trial)
        if len(coalition) == 3 and key not in seen:
            seen.add(key)
            raise TransientError("simulated 503")
        return evaluator(coalition, trial)

    config = ClearanceConfig(
        failure=FailurePolicy(retry=RetryPolicy(initial_backoff=0.0, jitter=0.0))
    )
    engine = MeClearEngine(config, tracing=tracing, sleep=lambda s: None)
    return engine.clear(case.memories, flaky).cost.attempts


def _langchain(tracing: TraceSettings) -> int:
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from ..langchain import ClearingRetriever, SimulatedChatModel, reference_config
    from ..simulation import redundant_harm_example

    case = redundant_harm_example()
    docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda q: list(docs)),
        llm=SimulatedChatModel.from_case(case),
        tracing=tracing,
    )
    out = retriever.invoke(case.query, config=reference_config(case.reference))
    return len(out)


def _llama_index(tracing: TraceSettings) -> int:
    from llama_index.core.schema import NodeWithScore, TextNode

    from ..llama_index import MeClearPostprocessor, SimulatedLLM
    from ..simulation import redundant_harm_example

    case = redundant_harm_example()
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    pp = MeClearPostprocessor(
        llm=SimulatedLLM.from_case(case), reference=case.reference, tracing=tracing
    )
    return len(asyncio.run(pp.aclear_nodes(nodes, case.query)).nodes)


RUNS: dict[str, Callable[[TraceSettings], int]] = {
    "engine": _engine,
    "engine, 1st attempt on 3-memory coalitions fails": _flaky_engine,
    "LangChain retriever": _langchain,
    "LlamaIndex postprocessor (async)": _llama_index,
}


def count_spans(run: Callable[[TraceSettings], int], detail: TraceDetail) -> int:
    """MeClear's spans of one clearance by ``run`` at ``detail``.

    Args:
        run: Clears the simulated case with the given trace settings.
        detail: The trace detail.

    Returns:
        The number of finished spans.
    """
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run(TraceSettings(detail=detail, tracer_provider=provider))
    provider.shutdown()
    return len(exporter.get_finished_spans())


def volume_table() -> str:
    """The Markdown table of spans per clearance (rows: runs; columns: detail)."""
    lines = [
        "| spans per clearance (SIMULATED case) | " + " | ".join(f"`{d}`" for d in DETAILS) + " |",
        "|---|" + "---:|" * len(DETAILS),
    ]
    for name, run in RUNS.items():
        counts = [count_spans(run, d) for d in DETAILS]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in counts) + " |")
    return "\n".join(lines)


def _provider() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _oi_langchain(detail: TraceDetail) -> int:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider, exporter = _provider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        _langchain(TraceSettings(detail=detail, tracer_provider=provider))
    finally:
        instrumentor.uninstrument()
    return len(exporter.get_finished_spans()) - 2  # the retriever and its inner retriever


def _oi_llama_index_query(detail: TraceDetail | None) -> int:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    from ..llama_index import HashEmbedding, MeClearPostprocessor, SimulatedLLM
    from ..simulation import redundant_harm_example

    case = redundant_harm_example()
    llm = SimulatedLLM.from_case(case)
    index = VectorStoreIndex(
        [TextNode(id_=m.id, text=m.content) for m in case.memories], embed_model=HashEmbedding()
    )
    provider, exporter = _provider()
    pps = []
    if detail is not None:
        tracing = TraceSettings(detail=detail, tracer_provider=provider)
        pps = [MeClearPostprocessor(llm=llm, reference=case.reference, tracing=tracing)]
    engine = index.as_query_engine(llm=llm, similarity_top_k=6, node_postprocessors=pps)
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        engine.query(case.query)
    finally:
        instrumentor.uninstrument()
    return len(exporter.get_finished_spans())


def _oi_llama_index(detail: TraceDetail) -> int:
    return _oi_llama_index_query(detail) - _oi_llama_index_query(None) - 1


def openinference_table() -> str:
    """The Markdown table of clearance spans under OpenInference (rows: instrumentations)."""
    lines = [
        "| clearance spans under OpenInference (SIMULATED case) | "
        + " | ".join(f"`{d}`" for d in DETAILS)
        + " |",
        "|---|" + "---:|" * len(DETAILS),
    ]
    runs = {"LangChain retriever": _oi_langchain, "LlamaIndex query engine": _oi_llama_index}
    for name, run in runs.items():
        lines.append(f"| {name} | " + " | ".join(str(run(d)) for d in DETAILS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the table (``python -m meclear_integrations.cli.trace_volume [--openinference]``).

    Args:
        argv: The command-line arguments (None: ``sys.argv``).
    """
    import argparse

    parser = argparse.ArgumentParser(description="Spans per clearance at each detail.")
    parser.add_argument(
        "--openinference",
        action="store_true",
        help="count the spans under OpenInference's LangChain and LlamaIndex instrumentations",
    )
    args = parser.parse_args(argv)
    print(openinference_table() if args.openinference else volume_table())


if __name__ == "__main__":
    main()
