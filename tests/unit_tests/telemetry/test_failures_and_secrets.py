"""Failed calls, fail-open runs and secrets: errors are traced, keys never are."""

from __future__ import annotations

import pytest

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.core.config import RetryPolicy
from meclear_integrations.core.errors import TransientError
from meclear_integrations.judges import CallableJudge, task_evaluator
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import CAPTURE_CONTENT_ENV, TraceSettings

from .conftest import Traces

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX0123456789"
NO_WAIT = RetryPolicy(max_attempts=3, initial_backoff=0.0, jitter=0.0)


def _secret_case() -> list[Memory]:
    memories = list(redundant_harm_example().memories)
    leaked = Memory(id="leak", content=f"the deploy key is {KEY}, Authorization: Bearer {KEY}")
    return [*memories, leaked]


def _engine(traces: Traces, detail: str, **settings) -> MeClearEngine:
    tracing = TraceSettings(detail=detail, tracer_provider=traces.provider, **settings)
    return MeClearEngine(
        ClearanceConfig(failure={"retry": NO_WAIT}),
        tracing=tracing,
        sleep=lambda s: None,
    )


@pytest.mark.parametrize("detail", ["failures", "evaluations"])
def test_a_retried_call_is_an_error_span_without_the_key(traces: Traces, detail: str) -> None:
    case = redundant_harm_example()
    evaluator = case.evaluator()
    failed: set[tuple[tuple[str, ...], int]] = set()

    def flaky(coalition: tuple[Memory, ...], trial: int) -> float:
        key = (tuple(m.id for m in coalition), trial)
        if len(coalition) == 3 and key not in failed:
            failed.add(key)
            raise TransientError(f"upstream 503, request had api_key={KEY} Bearer {KEY}")
        return evaluator(coalition, trial)

    report = _engine(traces, detail).clear(case.memories, flaky)
    assert report.status == "complete" and report.cost.retries == len(failed) > 0
    errors = [s for s in traces.named("meclear.evaluate") if not s.status.is_ok]
    assert len(errors) == len(failed)
    for span in errors:
        assert span.attributes["error.type"] == "TransientError"
        assert span.attributes["meclear.attempt"] == 1
        (event,) = [e for e in span.events if e.name == "exception"]
        assert "[REDACTED]" in event.attributes["exception.message"]
        assert "exception.stacktrace" not in event.attributes
    if detail == "failures":
        assert len(traces.named("meclear.evaluate")) == len(failed)
    assert KEY not in traces.texts() and "ABCDEFGHIJKLMNOP" not in traces.texts()


def test_fail_open_marks_the_clearance_span(traces: Traces) -> None:
    case = redundant_harm_example()

    def broken(coalition: tuple[Memory, ...], trial: int) -> float:
        raise ConnectionError(f"503 upstream unavailable; api key {KEY}")  # transient: fails open

    report = _engine(traces, "failures").clear(case.memories, broken)
    assert report.status == "failed"
    root = traces.one("meclear.clearance")
    assert not root.status.is_ok and root.attributes["error.type"] == "evaluator_error"
    assert root.attributes["meclear.status"] == "failed"
    assert root.attributes["meclear.failure.stage"] == "screening"
    assert root.attributes["meclear.cleared.count"] == 0
    screening = traces.one("meclear.stage.screening")
    assert not screening.status.is_ok and screening.attributes["meclear.screening.outcome"] == (
        "fail_open"
    )
    assert traces.named("meclear.evaluate"), "the failed calls are traced"
    assert KEY not in traces.texts()


def test_a_raising_run_closes_every_span(traces: Traces) -> None:
    case = redundant_harm_example()

    def broken(coalition: tuple[Memory, ...], trial: int) -> float:
        raise RuntimeError(f"boom {KEY}")

    engine = MeClearEngine(
        ClearanceConfig(
            failure={"mode": "closed", "retry": NO_WAIT},
        ),
        tracing=TraceSettings(tracer_provider=traces.provider),
    )
    with pytest.raises(Exception, match="boom"):
        engine.clear(case.memories, broken)
    root = traces.one("meclear.clearance")
    assert root.attributes["meclear.status"] == "raised" and not root.status.is_ok
    assert traces.one("meclear.stage.screening").end_time is not None
    assert KEY not in traces.texts()


def _judged(capture: bool | None, traces: Traces):
    memories = _secret_case()

    def answer(coalition: tuple[Memory, ...]) -> str:
        return f"It was January 2023 (key {KEY})"

    judge = CallableJudge(lambda answer: 0.0)
    task = task_evaluator(
        answer, judge, question=f"When was John in Italy? token={KEY}", context=memories
    )
    tracing = TraceSettings(
        detail="evaluations", capture_content=capture, tracer_provider=traces.provider
    )
    engine = MeClearEngine(ClearanceConfig(), tracing=tracing)
    from meclear_integrations.telemetry import clearance_scope

    with clearance_scope(query=task.question):
        engine.clear(memories, task)
    return memories


def test_contents_only_on_opt_in_and_redacted(
    traces: Traces, monkeypatch: pytest.MonkeyPatch
) -> None:
    _judged(None, traces)
    text = traces.texts()
    assert "Italy" not in text and "January" not in text and KEY not in text
    traces.exporter.clear()

    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    memories = _judged(None, traces)
    root = traces.one("meclear.clearance").attributes
    assert root["reranker.query"].startswith("When was John in Italy?")
    assert root["reranker.input_documents.0.document.content"] == memories[0].content
    leak = root[f"reranker.input_documents.{len(memories) - 1}.document.content"]
    assert "[REDACTED]" in leak and "the deploy key is" in leak
    judge = traces.named("meclear.judge")[0].attributes
    assert judge["input.value"].startswith("It was January 2023")
    assert "[REDACTED]" in judge["meclear.question"]
    assert KEY not in traces.texts()
    traces.exporter.clear()

    _judged(False, traces)  # an explicit False overrides the environment
    assert "Italy" not in traces.texts()


def test_content_is_capped(traces: Traces) -> None:
    long = Memory(id="long", content="x" * 10_000)
    tracing = TraceSettings(
        capture_content=True, max_content_chars=100, tracer_provider=traces.provider
    )
    MeClearEngine(tracing=tracing).clear([long], lambda coalition, trial: 1.0)
    attrs = traces.one("meclear.clearance").attributes
    assert attrs["reranker.input_documents.0.document.content"] == "x" * 100


def test_a_hostile_memory_id_is_redacted(traces: Traces) -> None:
    hostile = Memory(id=f"mem-{KEY}", content="harmless")
    tracing = TraceSettings(tracer_provider=traces.provider)
    MeClearEngine(tracing=tracing).clear([hostile], lambda coalition, trial: 1.0)
    assert KEY not in traces.texts()
    assert traces.one("meclear.clearance").attributes["meclear.memory_ids"] == ("mem-[REDACTED]",)
