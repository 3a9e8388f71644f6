"""Without the extra (import blocked) or without OpenTelemetry loaded: nothing is traced,
nothing is imported, and clearance works unchanged."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts an interpreter

BLOCK_OTEL = textwrap.dedent(
    """
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "opentelemetry":
                raise ImportError(f"blocked import of {name}")
            return None
    sys.meta_path.insert(0, Block())
    """
)

RUN_CLEARANCES = textwrap.dedent(
    """
    import asyncio
    from meclear_integrations import ClearanceConfig, MeClearEngine
    from meclear_integrations.judges import ExactMatchJudge, task_evaluator
    from meclear_integrations.simulation import redundant_harm_example
    from meclear_integrations.telemetry import TraceSettings, clearance_scope
    case = redundant_harm_example()
    engine = MeClearEngine(ClearanceConfig(), tracing=TraceSettings(detail="evaluations"))
    with clearance_scope(query=case.query):
        report = engine.clear(case.memories, case.evaluator())
    assert report.cleared_ids == ["f1", "f2"], report.cleared_ids
    world = case.evaluator()
    async def answer(coalition):
        return case.reference if world(coalition, 0) >= 1.0 else "January 2023"
    task = task_evaluator(answer, ExactMatchJudge(), question=case.query, reference=case.reference)
    report = asyncio.run(engine.aclear(case.memories, task))
    assert report.cleared_ids == ["f1", "f2"], report.cleared_ids
    loaded = [m for m in sys.modules if m.split(".")[0] == "opentelemetry"]
    assert not loaded, loaded
    print("ok")
    """
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_clearance_with_the_extra_blocked() -> None:
    result = _run(BLOCK_OTEL + "import sys\n" + RUN_CLEARANCES)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_installed_but_not_loaded_costs_no_import() -> None:
    result = _run("import sys\n" + RUN_CLEARANCES)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_global_provider_is_used_without_settings() -> None:
    """The zero-configuration path: the application sets the global provider, the engine
    (default settings) traces into it, parented to the application's span."""
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        from meclear_integrations import MeClearEngine
        from meclear_integrations.simulation import redundant_harm_example
        case = redundant_harm_example()
        with trace.get_tracer("app").start_as_current_span("app.request") as app:
            MeClearEngine().clear(case.memories, case.evaluator())
        spans = {s.name: s for s in exporter.get_finished_spans()}
        root = spans["meclear.clearance"]
        assert root.parent.span_id == app.get_span_context().span_id
        assert root.instrumentation_scope.name == "meclear_integrations"
        print(sorted(spans))
        """
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "meclear.stage.screening" in result.stdout
