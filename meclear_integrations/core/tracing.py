"""The engine's tracing hook points (no OpenTelemetry import here).

:func:`start_trace` is called once per clearance by the engine's drivers; it returns
:data:`NULL_TRACE` (identity evaluator, no-op stage hook) unless tracing is enabled, the
application has loaded OpenTelemetry (``opentelemetry.trace`` already imported, or a
``tracer_provider`` passed) and the clearance span records. Only then is the
OpenTelemetry-backed :mod:`~meclear_integrations.telemetry.spans` imported. A configured
tracer provider implies the application imported OpenTelemetry, so checking
``sys.modules`` misses no span and costs nothing when the extra is absent.

:func:`judge_call` is the task evaluator's hook around one judge call: a no-op unless an
evaluation of a traced clearance is running in this context.

:func:`clearance_scope` lets an integration name the query and the framework of the
clearance that the engine is about to trace (a context variable, read at the start).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .events import StageEvent
from .memory import Memory
from .trace_settings import TraceSettings

if TYPE_CHECKING:
    from .config import ClearanceConfig
    from .evaluation import Evaluator
    from .report import ClearanceReport

__all__ = [
    "NULL_JUDGE",
    "NULL_TRACE",
    "ClearanceScope",
    "JudgeCall",
    "Trace",
    "clearance_scope",
    "judge_call",
    "start_trace",
]

_DEFAULT = TraceSettings()


@dataclass(frozen=True, slots=True)
class ClearanceScope:
    """What an integration knows about the clearance it is about to run."""

    query: str | None = None
    """The query (recorded only when contents are captured)."""
    framework: str | None = None
    """``langchain`` / ``llama_index``; None for the bare engine."""
    parent: Any = None
    """An OpenTelemetry span to parent the clearance span to (a framework
    instrumentation's span of the current step); None: the current span."""
    cost: Callable[[], Mapping[str, Any]] | None = None
    """The model-call cost the integration adds to the engine's report, read when the
    clearance ends (``cost.cost_fields``: ``agent_calls``, ``judge_calls``,
    ``agent_tokens``, ``judge_tokens``), so the clearance span carries the same figures
    as the documents' metadata; None for the bare engine."""


_SCOPE: ContextVar[ClearanceScope | None] = ContextVar("meclear_trace_scope", default=None)
_EVALUATION: ContextVar[Any] = ContextVar("meclear_trace_evaluation", default=None)
"""The traced evaluation running in this context (set by the evaluation wrapper)."""


@contextmanager
def clearance_scope(
    *,
    query: str | None = None,
    framework: str | None = None,
    parent: Any = None,
    cost: Callable[[], Mapping[str, Any]] | None = None,
) -> Iterator[ClearanceScope]:
    """Name the query / framework / parent span / cost of the clearance run inside the block.

    Args:
        query: the query being answered.
        framework: the integration running the clearance.
        parent: the span to parent the clearance span to.
        cost: returns the model-call fields of the run's ``ClearanceCost`` so far.

    Returns:
        A context manager yielding the scope.
    """
    scope = ClearanceScope(query=query, framework=framework, parent=parent, cost=cost)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


class JudgeCall(Protocol):
    """The hook around one judge call: ``with judge_call(...) as call: call.verdict(v)``."""

    def __enter__(self) -> JudgeCall: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...

    def verdict(self, verdict: Any) -> None:
        """Record the judge's verdict (score, how it was read, reason).

        Args:
            verdict: the judge's parsed verdict.
        """


class Trace(Protocol):
    """One clearance's tracing, as the engine's drivers use it."""

    def __enter__(self) -> Trace: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...

    def evaluator(self, evaluate: Evaluator) -> Evaluator:
        """``evaluate`` wrapped so each call runs inside its span (same sync/async kind).

        Args:
            evaluate: the run's evaluator.

        Returns:
            The traced evaluator.
        """

    def stage(self, event: StageEvent) -> None:
        """Open or close the stage span of ``event`` (``progress``: a span event at most).

        Args:
            event: a stage event.
        """

    def done(self, report: ClearanceReport) -> ClearanceReport:
        """Record the report on the clearance span; returns ``report``.

        Args:
            report: the run's report.

        Returns:
            ``report``.
        """


class _NullJudge:
    def __enter__(self) -> _NullJudge:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    def verdict(self, verdict: Any) -> None:
        return None


class _NullTrace:
    def __enter__(self) -> _NullTrace:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    def evaluator(self, evaluate: Evaluator) -> Evaluator:
        return evaluate

    def stage(self, event: StageEvent) -> None:
        return None

    def done(self, report: ClearanceReport) -> ClearanceReport:
        return report


NULL_JUDGE: JudgeCall = _NullJudge()
NULL_TRACE: Trace = _NullTrace()


def start_trace(
    settings: TraceSettings | None, context: Sequence[Memory], config: ClearanceConfig
) -> Trace:
    """The tracing of one clearance over ``context`` (see the module docstring).

    Args:
        settings: the tracing settings (None: the defaults).
        context: the frozen context.
        config: the run's settings.

    Returns:
        The trace (a no-op when nothing records spans).
    """
    settings = settings if settings is not None else _DEFAULT
    if not settings.enabled:
        return NULL_TRACE
    if settings.tracer_provider is None and "opentelemetry.trace" not in sys.modules:
        return NULL_TRACE
    # The one import of an outer layer from core: lazy, and only once the application
    # has loaded OpenTelemetry (see the module docstring).
    from ..telemetry.spans import open_clearance

    trace = open_clearance(settings, context, config, _SCOPE.get())
    return trace if trace is not None else NULL_TRACE


def judge_call(
    judge: object, question: str, answer: str, *, reference: str | None = None
) -> JudgeCall:
    """The hook around one judge call of the evaluation running in this context.

    Args:
        judge: the judge.
        question: the query.
        answer: the answer judged.
        reference: the reference answer, if any.

    Returns:
        The hook (a no-op outside a traced evaluation).
    """
    evaluation = _EVALUATION.get()
    if evaluation is None:
        return NULL_JUDGE
    call: JudgeCall = evaluation.judge(judge, question, answer, reference)
    return call
