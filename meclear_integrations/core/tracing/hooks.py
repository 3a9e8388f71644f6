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

Internal runs below ``detail="evaluations"``: the agent's and the judge's model calls are
the clearance's internal runs, and other tracing systems would record every one of them
(OpenInference's LangChain / LlamaIndex instrumentations make a span of each, LangSmith
switched on by ``LANGSMITH_TRACING=true`` a run of each). Below ``"evaluations"``
:func:`start_trace` wraps each evaluator call in :func:`quiet_internal_runs`: OpenTelemetry's
suppress-instrumentation context key (honoured by OpenInference's and OpenTelemetry's own
instrumentations; MeClear's spans use the SDK tracer directly and stay) and every quieter
an integration registered (:func:`register_quieter`: the LangChain integration turns
LangSmith's tracing context off).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ..events import StageEvent
from ..memory import Memory
from .scope import EVALUATION as _EVALUATION
from .scope import SCOPE as _SCOPE
from .scope import (
    ClearanceScope,
    clearance_scope,
    evaluation_contexts,
    register_evaluation_context,
)
from .settings import TraceSettings

if TYPE_CHECKING:
    from ..config import ClearanceConfig
    from ..judging.evaluator import Evaluator
    from ..report import ClearanceReport

__all__ = [
    "NULL_JUDGE",
    "NULL_TRACE",
    "ClearanceScope",
    "JudgeCall",
    "Trace",
    "clearance_scope",
    "evaluation_contexts",
    "judge_call",
    "quiet_internal_runs",
    "register_evaluation_context",
    "register_internal_context",
    "register_quieter",
    "start_trace",
]

_DEFAULT = TraceSettings()


Quieter = Callable[[bool], AbstractContextManager[Any]]
"""``quieter(quiet)``: a context manager turning a tracing system's recording of internal
runs off (``quiet=True``) or back on (``quiet=False``) for a block."""

_QUIETERS: dict[str, Quieter] = {}


def register_quieter(name: str, quieter: Quieter) -> None:
    """Register a tracing system's switch for internal runs (an integration, at import).

    Args:
        name: A unique name (registering it again replaces the switch).
        quieter: ``quieter(quiet) -> context manager``.
    """
    _QUIETERS[name] = quieter


def _quieters() -> list[Quieter]:
    found = list(_QUIETERS.values())
    if "opentelemetry.context" in sys.modules:
        # The one import of an outer layer from core (see start_trace): lazy, only once
        # the application has loaded OpenTelemetry.
        from ...telemetry.parents import suppress_instrumentation

        found.append(suppress_instrumentation)
    return found


@contextmanager
def quiet_internal_runs() -> Iterator[None]:
    """Within the block, other tracing systems record no run or span (module docstring).

    Yields:
        Nothing.
    """
    with ExitStack() as stack:
        _enter_quieters(stack)
        yield


def _enter_quieters(stack: ExitStack) -> None:
    for quieter in _quieters():
        stack.enter_context(quieter(True))


_INTERNAL_CONTEXTS: dict[str, Callable[[], AbstractContextManager[Any]]] = {}


def register_internal_context(
    name: str, factory: Callable[[], AbstractContextManager[Any]]
) -> None:
    """Register a context every evaluator call runs in, at every ``detail`` (an integration).

    Used to mark the clearance's internal runs (the LlamaIndex integration adds the
    instrument tag ``meclear: internal`` to the events and spans of the agent's and the
    judge's calls).

    Args:
        name: A unique name (registering it again replaces the context).
        factory: Returns the context manager, entered around each evaluator call.
    """
    _INTERNAL_CONTEXTS[name] = factory


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
    trace = _spans(settings, context, config)
    quiet = settings.detail != "evaluations" and bool(
        _QUIETERS or "opentelemetry.context" in sys.modules
    )
    if not (quiet or _INTERNAL_CONTEXTS):
        return trace
    return _Quieted(trace, quiet=quiet)


def _spans(settings: TraceSettings, context: Sequence[Memory], config: ClearanceConfig) -> Trace:
    if not settings.enabled:
        return NULL_TRACE
    if settings.tracer_provider is None and "opentelemetry.trace" not in sys.modules:
        return NULL_TRACE
    # The one import of an outer layer from core: lazy, and only once the application
    # has loaded OpenTelemetry (see the module docstring).
    from ...telemetry.spans import open_clearance

    trace = open_clearance(settings, context, config, _SCOPE.get())
    return trace if trace is not None else NULL_TRACE


class _Quieted:
    """``trace`` whose evaluator calls run in the internal-run contexts (and quieted).

    Quieted (:func:`quiet_internal_runs`) when ``quiet``: below ``detail="evaluations"``.
    """

    def __init__(self, trace: Trace, *, quiet: bool = True) -> None:
        self.trace = trace
        self.quiet = quiet

    def __enter__(self) -> _Quieted:
        self.trace.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.trace.__exit__(exc_type, exc, tb)

    def evaluator(self, evaluate: Evaluator) -> Evaluator:
        from ..judging.evaluator import is_async_evaluator  # no import cycle at module level

        if is_async_evaluator(evaluate):

            async def quiet_async(coalition: tuple[Memory, ...], trial: int) -> Any:
                with ExitStack() as stack:
                    self._enter_internal(stack)
                    score = evaluate(coalition, trial)
                    if hasattr(score, "__await__"):
                        score = await score
                    return score

            return self.trace.evaluator(quiet_async)

        def quiet(coalition: tuple[Memory, ...], trial: int) -> Any:
            with ExitStack() as stack:
                self._enter_internal(stack)
                return evaluate(coalition, trial)

        return self.trace.evaluator(quiet)

    def _enter_internal(self, stack: ExitStack) -> None:
        """Enter the internal-run contexts, then (``quiet``) the quieters, on ``stack``.

        The order and nesting of :func:`quiet_internal_runs` inside the internal-run contexts,
        entered on one stack: this wraps every evaluator call, so it skips a generator-based
        context manager and a second stack per call.
        """
        for factory in _INTERNAL_CONTEXTS.values():
            stack.enter_context(factory())
        if self.quiet:
            _enter_quieters(stack)

    def stage(self, event: StageEvent) -> None:
        self.trace.stage(event)

    def done(self, report: ClearanceReport) -> ClearanceReport:
        return self.trace.done(report)


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
