"""Progress events are span events on the open stage span, never spans, by trace volume."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine
from meclear_integrations.core.events import StageEvent
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

from .conftest import Traces


def _run(traces: Traces, detail: str) -> list[StageEvent]:
    case = redundant_harm_example()
    events: list[StageEvent] = []
    settings = TraceSettings(detail=detail, tracer_provider=traces.provider)
    MeClearEngine(ClearanceConfig(), tracing=settings, listener=events.append).clear(
        case.memories, case.evaluator()
    )
    return [e for e in events if e.phase == "progress"]


def _span_events(traces: Traces) -> dict[str, list[dict]]:
    return {
        span.name: [dict(e.attributes or {}) for e in span.events if e.name == "meclear.progress"]
        for span in traces.spans
        if span.name.startswith("meclear.stage.")
    }


@pytest.mark.parametrize("detail", ["evaluations", "failures", "stages"])
def test_progress_is_never_a_span(traces: Traces, detail: str) -> None:
    progress = _run(traces, detail)
    assert progress
    names = {s.name for s in traces.spans}
    assert not any("progress" in name for name in names)
    assert all(
        not e.name.startswith("meclear.progress")
        for s in traces.spans
        if not s.name.startswith("meclear.stage.")
        for e in s.events
    )


def test_default_detail_records_each_finished_batch(traces: Traces) -> None:
    progress = _run(traces, "failures")
    finished = [e for e in progress if e.payload["calls_done"] == e.payload["calls_total"]]
    recorded = _span_events(traces)
    for event in finished:
        attributes = {f"meclear.progress.{k}": v for k, v in event.payload.items()}
        assert attributes in recorded["meclear.stage." + event.stage]
    assert sum(len(v) for v in recorded.values()) == len(finished)


def test_evaluations_detail_records_every_progress_event(traces: Traces) -> None:
    progress = _run(traces, "evaluations")
    recorded = _span_events(traces)
    assert sum(len(v) for v in recorded.values()) == len(progress)
    assert len(progress) > len({e.payload["batch"] for e in progress})


def test_stages_detail_records_no_progress(traces: Traces) -> None:
    _run(traces, "stages")
    assert not any(_span_events(traces).values())
