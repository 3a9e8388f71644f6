"""An SDK tracer provider with an in-memory exporter per test (never the global one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from meclear_integrations.telemetry import CAPTURE_CONTENT_ENV


class Traces:
    """The provider and what it exported, with tree helpers."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]

    def by_id(self) -> dict[int, ReadableSpan]:
        return {s.context.span_id: s for s in self.spans}

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self.by_id().get(span.parent.span_id) if span.parent is not None else None

    def parent_name(self, span: ReadableSpan) -> str | None:
        parent = self.parent(span)
        return parent.name if parent is not None else None

    def texts(self) -> str:
        """Every attribute value, event attribute and status description, as one text."""
        parts: list[str] = []
        for span in self.spans:
            parts.extend(str(v) for v in (span.attributes or {}).values())
            for event in span.events:
                parts.extend(str(v) for v in (event.attributes or {}).values())
            parts.append(str(span.status.description))
        return "\n".join(parts)


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    yield t
    t.provider.shutdown()


@pytest.fixture(autouse=True)
def _no_content_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
