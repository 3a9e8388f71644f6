"""A clearance's per-memory contributions next to its trace in Arize Phoenix.

A ``ClearingRetriever`` over an ``InMemoryVectorStore`` answers one question; OpenInference's
LangChain instrumentation sends the trace to Phoenix over OTLP/HTTP, and
``meclear_integrations.exports.phoenix`` writes each memory's harm score and verdict
(``cleared`` / ``harmful`` / ``kept``) as a document annotation on the vector store's
retriever span, at the memory's position among the retrieved documents. Open the trace in
Phoenix, select the retriever span: every document shows its ``meclear harm`` annotation.
The task agent and judge are the SIMULATED evidence world (offline; not a real model).

Needs a running Phoenix and a few packages::

    pip install arize-phoenix && phoenix serve          # http://127.0.0.1:6006 (anywhere)
    pip install -e ".[langchain,ledger,otel,phoenix]" opentelemetry-sdk \\
        opentelemetry-exporter-otlp-proto-http openinference-instrumentation-langchain
    PHOENIX_COLLECTOR_ENDPOINT=http://127.0.0.1:6006 python cookbook/phoenix_review.py

MeClear's own clearance span (cleared ids, cost) goes to the same provider: the
retriever is given it (``TraceSettings(tracer_provider=provider)``), so it appears in
Phoenix under the retriever span. Without a server answering at the endpoint the cookbook
stops at once with one line (exit status 2) instead of retrying the export.

``--screenshot trace.png`` also saves what Phoenix shows for the retriever span (the trace
tree, each document with its annotation) with headless Chromium (Debian's ``chromium``).
``tests/integration_tests/exports/test_phoenix_server.py`` runs it against a real Phoenix
when ``MECLEAR_TEST_PHOENIX_URL`` names one (skipped otherwise).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from meclear_integrations.exports.phoenix import phoenix_document_annotations
from meclear_integrations.langchain import (
    ClearingRetriever,
    Loop,
    SimulatedChatModel,
    reference_config,
)
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

PROJECT = "meclear-review"


class PhoenixUnavailable(ConnectionError):
    """No Phoenix server answers at the endpoint."""


def check_server(endpoint: str, timeout: float = 3.0) -> None:
    """Fail fast when no Phoenix answers (the span exporter would retry for a minute).

    Args:
        endpoint: Phoenix's base URL.
        timeout: Seconds to wait for an answer.

    Raises:
        PhoenixUnavailable: Nothing answers at ``endpoint``.
    """
    import httpx

    try:
        httpx.get(f"{endpoint}/healthz", timeout=timeout)
    except httpx.HTTPError as exc:
        raise PhoenixUnavailable(
            f"no Phoenix server answers at {endpoint} ({type(exc).__name__}); start one "
            "(phoenix serve) or pass --endpoint / PHOENIX_COLLECTOR_ENDPOINT; nothing was sent"
        ) from None


def _tracing(endpoint: str) -> tuple[Any, Any, Any]:
    """A tracer provider sending to Phoenix, a local copy of the spans, the instrumentor."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider(resource=Resource({"openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    local = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(local))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return provider, local, instrumentor


def _retriever_span(local: Any, k: int) -> Any:
    """The vector store's retriever span: the RETRIEVER span listing all k documents."""
    for span in local.get_finished_spans():
        attributes = span.attributes or {}
        if attributes.get("openinference.span.kind") != "RETRIEVER":
            continue
        if f"retrieval.documents.{k - 1}.document.content" in attributes:
            return span
    raise RuntimeError("no retriever span with every retrieved document was recorded")


def _clearance_span(local: Any) -> Any:
    """MeClear's clearance span (cleared ids, cost), sent to Phoenix with the rest."""
    for span in local.get_finished_spans():
        if span.name == "meclear.clearance":
            return span
    raise RuntimeError("MeClear's clearance span was not recorded")


def _wait_for_span(client: Any, span_id: str, seconds: float = 30.0) -> None:
    """Phoenix ingests spans asynchronously: annotate once the span is there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        spans = client.spans.get_spans(project_identifier=PROJECT, span_ids=[span_id])
        if any(s["context"]["span_id"] == span_id for s in spans):
            return
        time.sleep(0.5)
    raise TimeoutError(f"span {span_id} did not reach Phoenix within {seconds:.0f} s")


def span_url(client: Any, endpoint: str, span_id: str) -> str:
    """The Phoenix UI page of a span (its trace, the span selected).

    Args:
        client: A ``phoenix.client.Client``.
        endpoint: Phoenix's base URL.
        span_id: The span's id (16 hex characters).

    Returns:
        The page's URL.
    """
    (span,) = client.spans.get_spans(project_identifier=PROJECT, span_ids=[span_id])
    projects = client.projects.list()
    project = next(p["id"] for p in projects if p["name"] == PROJECT)
    trace = span["context"]["trace_id"]
    return f"{endpoint}/projects/{project}/traces/{trace}?selectedSpanNodeId={span['id']}"


def screenshot(url: str, path: Path) -> Path:
    """Save what headless Chromium shows at ``url`` as a PNG.

    Args:
        url: The page.
        path: The PNG to write.

    Returns:
        ``path``.

    Raises:
        FileNotFoundError: No Chromium on the PATH (``apt-get install chromium``).
    """
    browser = next(
        (b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
    )
    if browser is None:
        raise FileNotFoundError("no headless browser: apt-get install chromium")
    subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1600,1000",
            "--virtual-time-budget=15000",  # let the page load its data before the shot
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return path


def main(endpoint: str | None = None, shot: Path | None = None) -> dict[str, Any]:
    """Trace one cleared query into Phoenix and annotate its retriever span's documents.

    Args:
        endpoint: Phoenix's base URL (default ``$PHOENIX_COLLECTOR_ENDPOINT`` or
            ``http://127.0.0.1:6006``).
        shot: Save a screenshot of the retriever span's page here (headless Chromium).

    Returns:
        The trace and span ids, the span's page, the annotations written and the kept
        document ids.
    """
    from phoenix.client import Client

    endpoint = (endpoint or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT") or "").rstrip("/")
    endpoint = endpoint or "http://127.0.0.1:6006"
    check_server(endpoint)
    provider, local, instrumentor = _tracing(endpoint)
    case = redundant_harm_example()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=m.content, id=m.id) for m in case.memories])
    k = len(case.memories)
    try:
        with tempfile.TemporaryDirectory(prefix="meclear-phoenix-") as folder:
            with HarmLedger(Path(folder) / "ledger.db") as ledger:
                retriever = ClearingRetriever(
                    retriever=store.as_retriever(search_kwargs={"k": k}),
                    llm=SimulatedChatModel.from_case(case),
                    loop=Loop(ledger=ledger),
                    tracing=TraceSettings(tracer_provider=provider),  # MeClear's span too
                )
                kept = retriever.invoke(case.query, config=reference_config(case.reference))
                run = ledger.runs(limit=1)[0]
            provider.force_flush()
            span = _retriever_span(local, k)
            clearance = _clearance_span(local)
            span_id = format(span.context.span_id, "016x")
            trace_id = format(span.context.trace_id, "032x")
            # The span's documents are the retrieval order the clearance saw.
            ids = {m.content: m.id for m in case.memories}
            order = [
                ids[span.attributes[f"retrieval.documents.{i}.document.content"]] for i in range(k)
            ]
            assert order == [m.memory_id for m in sorted(run.memories, key=lambda m: m.position)]
            client = Client(base_url=endpoint)
            _wait_for_span(client, span_id)
            written = phoenix_document_annotations(run, span_id, client=client)
            url = span_url(client, endpoint, span_id)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    print("SIMULATED evidence world (offline)")
    print(
        f"kept {[d.id for d in kept]}; cleared {[m.memory_id for m in run.memories if m.cleared]}"
    )
    print(f"{written} 'meclear harm' annotations on span {span_id} of trace {trace_id}")
    cleared = list(clearance.attributes.get("meclear.cleared_ids", ()))
    calls = clearance.attributes.get("meclear.cost.model_calls")
    print(
        f"clearance span {format(clearance.context.span_id, '016x')}: cleared {cleared}, "
        f"{calls} model calls"
    )
    print(f"open {url}")
    if shot is not None:
        print(f"wrote {screenshot(url, shot)}")
    return {
        "url": url,
        "trace_id": trace_id,
        "span_id": span_id,
        "annotations": written,
        "kept": [d.id for d in kept],
        "order": order,
        "clearance_span_id": format(clearance.context.span_id, "016x"),
        "ledger_run_id": run.run_id,
    }


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="a clearance's per-memory scores in Phoenix")
    cli.add_argument("--endpoint", default=None, help="Phoenix URL ($PHOENIX_COLLECTOR_ENDPOINT)")
    cli.add_argument("--screenshot", type=Path, default=None, help="save the span's page (PNG)")
    options = cli.parse_args()
    try:
        main(options.endpoint, options.screenshot)
    except PhoenixUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
