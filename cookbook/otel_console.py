"""OpenTelemetry spans of a clearance, printed by the SDK's ``ConsoleSpanExporter``.

A LangChain RAG step (``ClearingRetriever``) runs under an application span; the agent
and judge are the SIMULATED evidence world (no model, no network). MeClear emits its spans
because a tracer provider is configured: nothing else is needed (``TraceSettings`` only
changes how much is traced). In production, replace the console exporter by an OTLP
exporter to Phoenix, Langfuse, Datadog, Honeycomb or any OpenTelemetry backend.

Run: ``python cookbook/otel_console.py`` (``--detail evaluations`` adds one span per agent
run and per judge call; ``--json`` prints the exporter's full JSON instead of one line per
span; ``--content`` records the query, memory texts and answers, redacted).
Needs ``pip install "meclear-integrations[otel,langchain]" opentelemetry-sdk``.
"""

from __future__ import annotations

import argparse

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from meclear_integrations.langchain import ClearingRetriever, SimulatedChatModel, reference_config
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

SHOWN = (
    "gen_ai.operation.name",
    "openinference.span.kind",
    "meclear.memories.count",
    "meclear.cleared_ids",
    "meclear.recovered",
    "meclear.status",
    "meclear.cost.evaluator_calls",
    "meclear.screening.baseline_value",
    "meclear.attribution.harmful_ids",
    "meclear.clearance.final_value",
    "meclear.coalition.memory_ids",
    "meclear.score",
    "gen_ai.evaluation.score.value",
    "gen_ai.evaluation.score.label",
    "reranker.query",
)


def one_line(span: ReadableSpan) -> str:
    """A compact rendering: name, parent span id, the most telling attributes."""
    attrs = span.attributes or {}
    shown = ", ".join(
        f"{k}={list(attrs[k]) if isinstance(attrs[k], tuple) else attrs[k]}"
        for k in SHOWN
        if k in attrs
    )
    parent = f"{span.parent.span_id:016x}" if span.parent else "-"
    return f"{span.name:<26} id={span.context.span_id:016x} parent={parent}  {shown}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", choices=["evaluations", "failures", "stages"])
    parser.add_argument("--json", action="store_true", help="the exporter's full JSON")
    parser.add_argument("--content", action="store_true", help="record contents (redacted)")
    args = parser.parse_args()

    provider = TracerProvider()
    exporter = ConsoleSpanExporter() if args.json else ConsoleSpanExporter(formatter=one_line)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    case = redundant_harm_example()
    documents = [Document(page_content=m.content, id=m.id) for m in case.memories]
    settings = {"detail": args.detail} if args.detail else {}
    retriever = ClearingRetriever(
        retriever=RunnableLambda(lambda query: list(documents)),
        llm=SimulatedChatModel.from_case(case),
        tracing=TraceSettings(
            capture_content=True if args.content else None,
            data_source_id="locomo-john",
            **settings,
        ),
    )
    print("SIMULATED agent and judge; spans as they end (children before parents):")
    with trace.get_tracer("my_app").start_as_current_span("answer_question"):
        kept = retriever.invoke(case.query, config=reference_config(case.reference))
    print("kept for this query:", ", ".join(d.id for d in kept))
    provider.shutdown()


if __name__ == "__main__":
    main()
