"""Spans of the bare engine: tree, attributes, detail levels, nesting on every path."""

from __future__ import annotations

import asyncio
import time

import pytest
from opentelemetry import trace

from meclear_integrations import ClearanceConfig, MeClearEngine, Memory
from meclear_integrations.judges import ExactMatchJudge, task_evaluator
from meclear_integrations.simulation import redundant_harm_example
from meclear_integrations.telemetry import TraceSettings

from .conftest import Traces

STAGES = {"meclear.stage.screening", "meclear.stage.attribution", "meclear.stage.clearance"}


def _engine(traces: Traces, detail: str = "evaluations", **config) -> MeClearEngine:
    settings = TraceSettings(detail=detail, tracer_provider=traces.provider)
    return MeClearEngine(ClearanceConfig(**config), tracing=settings)


def test_span_tree_under_the_callers_span(traces: Traces) -> None:
    case = redundant_harm_example()
    caller = traces.provider.get_tracer("app")
    with caller.start_as_current_span("retrieve"):
        report = _engine(traces, one_batch=False).clear(case.memories, case.evaluator())
    root = traces.one("meclear.clearance")
    assert traces.parent_name(root) == "retrieve"
    stages = [s for s in traces.spans if s.name.startswith("meclear.stage.")]
    assert {s.name for s in stages} == STAGES
    assert all(traces.parent_name(s) == "meclear.clearance" for s in stages)
    evaluations = traces.named("meclear.evaluate")
    assert len(evaluations) == report.cost.attempts == report.cost.evaluator_calls
    assert all(traces.parent_name(s) in STAGES for s in evaluations)
    for span in evaluations:  # each sits in the stage it belongs to
        assert traces.parent_name(span) == "meclear.stage." + span.attributes["meclear.stage"]
    assert {s.attributes["meclear.stage"] for s in evaluations} == {
        "screening",
        "attribution",
        "clearance",
    }


def test_clearance_span_attributes(traces: Traces) -> None:
    case = redundant_harm_example()
    settings = TraceSettings(tracer_provider=traces.provider, data_source_id="john-memories")
    report = MeClearEngine(tracing=settings).clear(case.memories, case.evaluator())
    attrs = traces.one("meclear.clearance").attributes
    assert attrs["gen_ai.operation.name"] == "clearance"
    assert attrs["gen_ai.data_source.id"] == "john-memories"
    assert attrs["openinference.span.kind"] == "RERANKER"
    ids = [m.id for m in case.memories]
    assert list(attrs["meclear.memory_ids"]) == ids
    assert [attrs[f"reranker.input_documents.{i}.document.id"] for i in range(len(ids))] == ids
    kept = report.kept_ids
    assert [attrs[f"reranker.output_documents.{i}.document.id"] for i in range(len(kept))] == kept
    assert f"reranker.output_documents.{len(kept)}.document.id" not in attrs
    assert list(attrs["meclear.cleared_ids"]) == report.cleared_ids == ["f1", "f2"]
    assert attrs["meclear.cleared.count"] == 2 and attrs["meclear.kept.count"] == 4
    assert attrs["meclear.memories.count"] == 6
    assert attrs["meclear.recovered"] is True and attrs["meclear.status"] == "complete"
    assert attrs["meclear.final_value"] == report.final_value
    assert attrs["meclear.cost.evaluator_calls"] == report.cost.evaluator_calls
    assert attrs["meclear.cost.coalitions"] == report.cost.coalitions
    events = traces.one("meclear.clearance").events
    cleared = [e.attributes["gen_ai.memory.record.id"] for e in events]
    assert cleared == ["f1", "f2"]
    assert all(e.name == "meclear.memory.cleared" for e in events)
    # no content without opt-in
    assert not any("content" in k for k in attrs)
    assert "reranker.query" not in attrs
    assert "John" not in traces.texts()


def test_stage_payloads_on_stage_spans(traces: Traces) -> None:
    case = redundant_harm_example()
    report = _engine(traces, "stages").clear(case.memories, case.evaluator())
    attribution = traces.one("meclear.stage.attribution").attributes
    assert sorted(attribution["meclear.attribution.harmful_ids"]) == sorted(report.harmful_ids)
    assert attribution["meclear.attribution.estimator"] == report.estimator
    assert '"f1"' in attribution["meclear.attribution.shapley"]  # per-memory map as JSON
    clearance = traces.one("meclear.stage.clearance").attributes
    assert list(clearance["meclear.clearance.cleared_ids"]) == ["f1", "f2"]
    assert clearance["meclear.clearance.recovered"] is True
    screening = traces.one("meclear.stage.screening").attributes
    assert screening["meclear.screening.baseline_value"] == report.baseline_value


@pytest.mark.parametrize(
    ("detail", "evaluate_spans"), [("evaluations", True), ("failures", False), ("stages", False)]
)
def test_detail_levels(traces: Traces, detail: str, evaluate_spans: bool) -> None:
    case = redundant_harm_example()
    report = _engine(traces, detail).clear(case.memories, case.evaluator())
    names = [s.name for s in traces.spans]
    assert names.count("meclear.clearance") == 1
    assert set(names) - {"meclear.clearance", "meclear.evaluate"} == STAGES
    expected = report.cost.attempts if evaluate_spans else 0
    assert names.count("meclear.evaluate") == expected


def test_disabled_and_non_recording_emit_nothing(traces: Traces) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    case = redundant_harm_example()
    off = TraceSettings(enabled=False, tracer_provider=traces.provider)
    MeClearEngine(tracing=off).clear(case.memories, case.evaluator())
    assert traces.spans == []
    sampled_out = TracerProvider(sampler=ALWAYS_OFF)
    from meclear_integrations.core.tracing.hooks import NULL_TRACE, start_trace

    settings = TraceSettings(tracer_provider=sampled_out)
    trace = start_trace(settings, case.memories, ClearanceConfig())
    # no span object; at most the quieting of other tracing systems' internal runs
    assert getattr(trace, "trace", trace) is NULL_TRACE
    evaluations = TraceSettings(tracer_provider=sampled_out, detail="evaluations")
    trace = start_trace(evaluations, case.memories, ClearanceConfig())
    assert getattr(trace, "trace", trace) is NULL_TRACE
    assert getattr(trace, "quiet", False) is False  # every internal run traced elsewhere


def _slow(case):
    evaluator = case.evaluator()

    def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        time.sleep(0.002)  # slower than a thread hand-off: the batch goes to worker threads
        with trace.get_tracer("user").start_as_current_span("user.inner"):
            return evaluator(coalition, trial)

    return evaluate


@pytest.mark.parametrize("detail", ["evaluations", "stages"])
def test_worker_threads_nest_inside_the_evaluation(traces: Traces, detail: str) -> None:
    case = redundant_harm_example()
    engine = _engine(traces, detail, budget={"max_concurrency": 4})
    with _global_provider(traces):
        engine.clear(case.memories, _slow(case))
    inner = traces.named("user.inner")
    assert inner, "the evaluator's own spans were recorded"
    expected = {"meclear.evaluate"} if detail == "evaluations" else STAGES
    assert {traces.parent_name(s) for s in inner} <= expected
    assert len({s.context.trace_id for s in traces.spans}) == 1  # one trace, nothing orphaned


def test_async_nesting(traces: Traces) -> None:
    case = redundant_harm_example()
    evaluator = case.evaluator()

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        await asyncio.sleep(0)
        with trace.get_tracer("user").start_as_current_span("user.inner"):
            return evaluator(coalition, trial)

    async def main() -> None:
        with traces.provider.get_tracer("app").start_as_current_span("request"):
            await _engine(traces, budget={"max_concurrency": 4}).aclear(case.memories, evaluate)

    with _global_provider(traces):
        asyncio.run(main())
    root = traces.one("meclear.clearance")
    assert traces.parent_name(root) == "request"
    inner = traces.named("user.inner")
    assert inner and {traces.parent_name(s) for s in inner} == {"meclear.evaluate"}
    assert all(traces.parent_name(s) in STAGES for s in traces.named("meclear.evaluate"))


def test_async_path_with_a_sync_evaluator_in_threads(traces: Traces) -> None:
    case = redundant_harm_example()
    with _global_provider(traces):
        asyncio.run(_engine(traces).aclear(case.memories, _slow(case)))
    inner = traces.named("user.inner")
    assert inner and {traces.parent_name(s) for s in inner} == {"meclear.evaluate"}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_judge_spans_of_a_task_evaluator(traces: Traces, asynchronous: bool) -> None:
    case = redundant_harm_example()
    world = case.evaluator()

    def answer(coalition: tuple[Memory, ...]) -> str:
        return case.reference if world(coalition, 0) >= 1.0 else "January 2023"

    async def aanswer(coalition: tuple[Memory, ...]) -> str:
        return answer(coalition)

    task = task_evaluator(
        aanswer if asynchronous else answer,
        ExactMatchJudge(),
        question=case.query,
        reference=case.reference,
    )
    engine = _engine(traces)
    if asynchronous:
        report = asyncio.run(engine.aclear(case.memories, task))
    else:
        report = engine.clear(case.memories, task)
    judges = traces.named("meclear.judge")
    assert len(judges) == task.calls.judge_calls  # judge calls made (a cached verdict is none)
    assert task.calls.judge_calls + task.calls.judge_hits == report.cost.evaluator_calls
    assert {traces.parent_name(s) for s in judges} == {"meclear.evaluate"}
    scores = {s.attributes["gen_ai.evaluation.score.value"] for s in judges}
    assert scores == {0.0, 1.0}
    for span in judges:
        attrs = span.attributes
        assert attrs["openinference.span.kind"] == "EVALUATOR"
        assert attrs["gen_ai.evaluation.name"] == "correctness"
        label = "correct" if attrs["gen_ai.evaluation.score.value"] == 1.0 else "incorrect"
        assert attrs["gen_ai.evaluation.score.label"] == label
        assert attrs["meclear.judge.type"] == "ExactMatchJudge"
        assert attrs["meclear.judge.reference_given"] is True
        assert [e.name for e in span.events] == ["gen_ai.evaluation.result"]
        assert "input.value" not in attrs  # no content without opt-in
    evaluate = traces.named("meclear.evaluate")[0]
    (result,) = evaluate.events
    assert result.name == "gen_ai.evaluation.result"
    assert result.attributes["gen_ai.evaluation.name"] == "meclear.utility"


class _global_provider:
    """Route the global OpenTelemetry API to ``traces`` for one block (tests only)."""

    def __init__(self, traces: Traces) -> None:
        self.traces = traces

    def __enter__(self) -> None:
        from opentelemetry.trace import ProxyTracerProvider

        self._saved = trace._TRACER_PROVIDER
        trace._TRACER_PROVIDER = self.traces.provider
        assert not isinstance(self.traces.provider, ProxyTracerProvider)

    def __exit__(self, *exc: object) -> None:
        trace._TRACER_PROVIDER = self._saved
