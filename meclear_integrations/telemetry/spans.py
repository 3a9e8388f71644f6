"""The OpenTelemetry side: the clearance span, its stage spans, evaluation and judge spans.

Imported only by :func:`~meclear_integrations.core.tracing.hooks.start_trace` once the
application has loaded OpenTelemetry. Spans are started with explicit parents (no
context is attached across the engine's steps); an evaluation attaches its span (or, when
evaluations are not traced, the stage span) as the current span only for the duration of
the call, so the agent's and the judge's model spans of any OpenTelemetry
instrumentation nest inside it, on the caller's thread, in the engine's worker threads
(which run in a copy of the caller's context) and in asyncio tasks alike.

Nothing unredacted leaves this module: every string attribute passes through
:func:`~meclear_integrations.core.redaction.redact`; errors are recorded as an
``exception`` event with the exception type and its redacted message (no stack trace, no
``record_exception``, which would export the raw message).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.config import ClearanceConfig
from ..core.events import StageEvent
from ..core.judging.evaluator import Evaluator, is_async_evaluator
from ..core.memory import Memory
from ..core.redaction import redact
from ..core.report import ClearanceReport
from ..core.tracing.scope import EVALUATION as _EVALUATION
from ..core.tracing.scope import SCOPE as _SCOPE
from ..core.tracing.scope import ClearanceScope, evaluation_contexts
from ..core.tracing.settings import TraceSettings
from ..runtime.payloads import stage_event_payload
from . import attributes as A
from .parents import instrumentation_provider

__all__ = ["ClearanceTrace", "open_clearance"]

MAX_IDS = 256
"""Longest id list recorded as one attribute (longer lists are cut, ``*.truncated``)."""
MAX_JSON_CHARS = 8192
"""Cap of a JSON-encoded stage payload attribute."""
_VERSION = "0.1.0"


def _tracer(settings: TraceSettings) -> Tracer:
    provider = settings.tracer_provider
    if provider is not None:
        return provider.get_tracer(A.TRACER_NAME, _VERSION)
    return trace.get_tracer(A.TRACER_NAME, _VERSION)


def _ids(ids: Sequence[str]) -> list[str]:
    return [redact(str(i)) for i in ids[:MAX_IDS]]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def record_error(span: Span, exc: BaseException) -> None:
    """``exc`` on ``span``: ``error.type``, a redacted ``exception`` event, ERROR status.

    Args:
        span: The span that failed.
        exc: The error.
    """
    kind = getattr(exc, "original_type", None) or type(exc).__name__
    message = redact(str(exc))[:500]
    span.set_attribute(A.ERROR_TYPE, kind)
    span.add_event("exception", {"exception.type": kind, "exception.message": message})
    span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"[:300]))


def _homogeneous(values: list[Any]) -> bool:
    """All strings, or all numbers: an array an OpenTelemetry attribute can hold."""
    if all(isinstance(v, str) for v in values):
        return True
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _flatten(prefix: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Scalars and lists of scalars as attributes; nested maps as one JSON string each."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key in ("stage", "phase", "query_id"):
            continue
        name = f"{prefix}.{key}"
        if value is None:
            continue
        if isinstance(value, bool | int | float | str):
            out[name] = value
        elif isinstance(value, list) and _homogeneous(value):
            out[name] = value[:MAX_IDS]
        else:
            out[name] = json.dumps(value, default=str, sort_keys=True)[:MAX_JSON_CHARS]
    return out


class _Evaluation:
    """One evaluator call and its span.

    The span is started eagerly (``evaluations``) or only once something in it fails
    (``failures``), back-dated to the call's start.
    """

    def __init__(
        self, trace_: ClearanceTrace, parent: Span, memory_ids: list[str], trial: int
    ) -> None:
        self.trace = trace_
        self.parent = parent
        self.memory_ids = memory_ids
        self.trial = trial
        self.started = time.time_ns()
        self.attempt = trace_.attempt(memory_ids, trial)
        self.span: Span | None = None
        if trace_.settings.detail == "evaluations":
            self.ensure_span()

    def ensure_span(self) -> Span:
        if self.span is None:
            t = self.trace
            self.span = t.tracer.start_span(
                A.EVALUATE_SPAN,
                context=trace.set_span_in_context(self.parent),
                start_time=self.started,
                attributes={
                    A.OPENINFERENCE_SPAN_KIND: "CHAIN",
                    "meclear.stage": t.current_stage or "unknown",
                    "meclear.coalition.memory_ids": _ids(self.memory_ids),
                    "meclear.coalition.size": len(self.memory_ids),
                    "meclear.trial": self.trial,
                    "meclear.attempt": self.attempt,
                },
            )
        return self.span

    def judge(self, judge: object, question: str, answer: str, reference: str | None):
        return _JudgeCall(self, judge, question, answer, reference)

    def succeeded(self, score: Any) -> None:
        if self.span is None:
            return
        value = _number(score)
        if value is not None:
            self.span.set_attribute("meclear.score", value)
            passed = value >= self.trace.config.verification.success_threshold
            self.span.add_event(
                A.EVALUATION_RESULT_EVENT,
                {
                    A.EVALUATION_NAME: A.UTILITY_EVALUATION_NAME,
                    A.EVALUATION_SCORE_VALUE: value,
                    A.EVALUATION_SCORE_LABEL: "pass" if passed else "fail",
                },
            )
        self.span.end()

    def failed(self, exc: BaseException) -> None:
        if self.span is None and (
            self.trace.settings.detail == "stages" or not isinstance(exc, Exception)
        ):
            return
        span = self.ensure_span()
        if isinstance(exc, Exception):
            record_error(span, exc)
        else:
            span.set_attribute("meclear.cancelled", True)
        span.end()


class _JudgeCall:
    """The span of one judge call (``EVALUATOR``), current while the judge runs."""

    def __init__(
        self,
        evaluation: _Evaluation,
        judge: object,
        question: str,
        answer: str,
        reference: str | None,
    ) -> None:
        self.evaluation = evaluation
        self.judge = judge
        self.question = question
        self.answer = answer
        self.reference = reference
        self.started = 0
        self.span: Span | None = None
        self._token: Token[otel_context.Context] | None = None

    def _start(self) -> Span:
        t = self.evaluation.trace
        parent = self.evaluation.ensure_span()
        span = t.tracer.start_span(
            A.JUDGE_SPAN,
            context=trace.set_span_in_context(parent),
            start_time=self.started,
            attributes={
                A.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
                A.EVALUATION_NAME: A.JUDGE_EVALUATION_NAME,
                "meclear.judge.type": type(self.judge).__name__,
                "meclear.judge.reference_given": self.reference is not None,
                "meclear.coalition.memory_ids": _ids(self.evaluation.memory_ids),
                "meclear.trial": self.evaluation.trial,
            },
        )
        if t.content:
            span.set_attribute(A.INPUT_VALUE, t.text(self.answer))
            span.set_attribute("meclear.question", t.text(self.question))
        return span

    def __enter__(self) -> _JudgeCall:
        self.started = time.time_ns()
        if self.evaluation.trace.settings.detail == "evaluations":
            self.span = self._start()
            self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def verdict(self, verdict: Any) -> None:
        if self.span is None:
            return
        score = _number(getattr(verdict, "score", None))
        attrs: dict[str, Any] = {}
        if score is not None:
            label = (
                "correct"
                if score >= self.evaluation.trace.config.verification.success_threshold
                else ("incorrect")
            )
            attrs = {A.EVALUATION_SCORE_VALUE: score, A.EVALUATION_SCORE_LABEL: label}
            self.span.set_attributes(attrs)
        parsed_by = getattr(verdict, "parsed_by", None)
        if isinstance(parsed_by, str):
            self.span.set_attribute("meclear.judge.parsed_by", parsed_by)
        reason = getattr(verdict, "reason", None)
        if self.evaluation.trace.content and isinstance(reason, str) and reason:
            attrs[A.EVALUATION_EXPLANATION] = self.evaluation.trace.text(reason)
            self.span.set_attribute(A.EVALUATION_EXPLANATION, attrs[A.EVALUATION_EXPLANATION])
        event = {A.EVALUATION_NAME: A.JUDGE_EVALUATION_NAME, **attrs}
        self.span.add_event(A.EVALUATION_RESULT_EVENT, event)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
        if exc is not None and isinstance(exc, Exception):
            if self.span is None and self.evaluation.trace.settings.detail == "failures":
                self.span = self._start()
            if self.span is not None:
                record_error(self.span, exc)
        if self.span is not None:
            self.span.end()


class ClearanceTrace:
    """The spans of one clearance: see the package docstring for the tree.

    Args:
        settings: The trace settings.
        tracer: The OpenTelemetry tracer.
        root: The clearance span.
        config: The engine configuration.
        scope: The integration's scope (query, framework, parent, cost source), if any.
    """

    def __init__(
        self,
        settings: TraceSettings,
        tracer: Tracer,
        root: Span,
        config: ClearanceConfig,
        scope: ClearanceScope | None = None,
    ) -> None:
        self.settings = settings
        self.scope = scope
        self.tracer = tracer
        self.root = root
        self.config = config
        self.content = settings.captures_content()
        self.current_stage: str | None = None
        self._stages: dict[str, Span] = {}
        self._attempts: Counter[tuple[tuple[str, ...], int]] = Counter()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ helpers
    def text(self, value: str) -> str:
        """A content attribute: redacted, cut to ``max_content_chars``.

        Args:
            value: The text.

        Returns:
            The redacted, shortened text.
        """
        return redact(value)[: self.settings.max_content_chars]

    def attempt(self, memory_ids: list[str], trial: int) -> int:
        """Count one more attempt of the evaluator call on (``memory_ids``, ``trial``).

        Args:
            memory_ids: The coalition's memory ids.
            trial: The trial index.

        Returns:
            The attempt's number (1 for the first, higher for retries).
        """
        with self._lock:
            key = (tuple(memory_ids), trial)
            self._attempts[key] += 1
            return self._attempts[key]

    def _parent(self) -> Span:
        stage = self.current_stage
        return self._stages.get(stage, self.root) if stage is not None else self.root

    # ------------------------------------------------------------------ Trace protocol
    def __enter__(self) -> ClearanceTrace:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        for stage in list(self._stages):
            span = self._stages.pop(stage)
            if exc is not None and isinstance(exc, Exception):
                record_error(span, exc)
            span.end()
        if exc is not None:
            if isinstance(exc, Exception):
                self.root.set_attribute("meclear.status", "raised")
                record_error(self.root, exc)
            else:
                self.root.set_attribute("meclear.cancelled", True)
        self.root.end()

    def evaluator(self, evaluate: Evaluator) -> Evaluator:
        """Wrap ``evaluate`` so that each call gets its evaluation span (sync or async alike).

        Args:
            evaluate: The engine's evaluator.

        Returns:
            An evaluator of the same kind that records its calls in this trace.
        """
        if is_async_evaluator(evaluate):

            async def traced_async(coalition: tuple[Memory, ...], trial: int) -> Any:
                return await arun_steps(self._evaluation(evaluate, coalition, trial))

            return traced_async

        def traced(coalition: tuple[Memory, ...], trial: int) -> Any:
            return run_steps(self._evaluation(evaluate, coalition, trial))

        return traced

    def _evaluation(
        self, evaluate: Evaluator, coalition: tuple[Memory, ...], trial: int
    ) -> Steps[Any]:
        """One evaluator call inside its span (an awaitable score is awaited on the loop)."""
        evaluation, tokens = self._begin(coalition, trial)
        try:
            score = evaluate(coalition, trial)
            if hasattr(score, "__await__"):
                awaitable = score
                score = yield Call(lambda: awaitable, lambda: awaitable)
        except BaseException as exc:
            evaluation.failed(exc)
            raise
        finally:
            self._end(tokens)
        evaluation.succeeded(score)
        return score

    def _begin(self, coalition: tuple[Memory, ...], trial: int) -> tuple[_Evaluation, tuple]:
        evaluation = _Evaluation(self, self._parent(), [m.id for m in coalition], trial)
        current = evaluation.span if evaluation.span is not None else evaluation.parent
        contexts = ExitStack()
        tokens = (
            otel_context.attach(trace.set_span_in_context(current)),
            _EVALUATION.set(evaluation),
            _SCOPE.set(None),  # a clearance inside the evaluator is a new clearance
            contexts,
        )
        if evaluation.span is not None:  # framework spans of the call go under it
            for context in evaluation_contexts():
                contexts.enter_context(context)
        return evaluation, tokens

    @staticmethod
    def _end(tokens: tuple) -> None:
        otel_token, evaluation_token, scope_token, contexts = tokens
        contexts.close()
        _SCOPE.reset(scope_token)
        _EVALUATION.reset(evaluation_token)
        otel_context.detach(otel_token)

    def stage(self, event: StageEvent) -> None:
        """Open or close the span of an engine stage.

        A ``progress`` event opens and closes nothing: it becomes a ``meclear.progress``
        span event on the open stage span (:meth:`_progress`).

        Args:
            event: The engine's stage event (``start`` opens, ``end`` closes).
        """
        if event.phase == "progress":
            self._progress(event)
            return
        if event.phase == "start":
            previous = self._stages.pop(event.stage, None)
            if previous is not None:  # a stage reopened without an end: close the old span
                previous.end()
            self._stages[event.stage] = self.tracer.start_span(
                A.STAGE_SPAN_PREFIX + event.stage,
                context=trace.set_span_in_context(self.root),
                attributes={A.OPENINFERENCE_SPAN_KIND: "CHAIN", "meclear.stage": event.stage},
            )
            self.current_stage = event.stage
        span = self._stages.get(event.stage)
        if span is None:
            return
        payload = stage_event_payload(event, max_bytes=MAX_JSON_CHARS)
        span.set_attributes(_flatten(f"meclear.{event.stage}", payload))
        if event.phase == "start":
            return
        if event.phase == "error":
            kind = str(payload.get("error_type", "error"))
            message = str(payload.get("error", ""))
            span.set_attribute(A.ERROR_TYPE, kind)
            span.add_event("exception", {"exception.type": kind, "exception.message": message})
            span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"[:300]))
        span.end()
        del self._stages[event.stage]

    def _progress(self, event: StageEvent) -> None:
        """A span event per finished batch (``"evaluations"``: per progress event).

        ``"stages"`` records no progress; ``"failures"`` (the default) one span event when
        a batch completes; ``"evaluations"`` every progress event of the batch.
        """
        span = self._stages.get(event.stage)
        detail = self.settings.detail
        if span is None or detail == "stages":
            return
        numbers = {k: v for k, v in event.payload.items() if isinstance(v, int | float)}
        complete = numbers.get("calls_done") == numbers.get("calls_total")
        if detail == "evaluations" or complete:
            span.add_event(A.PROGRESS_EVENT, _flatten("meclear.progress", numbers))

    def _cost(self, report: ClearanceReport) -> dict[str, Any]:
        """The cost attributes: the report's, with the integration's model calls and tokens.

        Args:
            report: The engine's report (model calls not yet filled in).

        Returns:
            ``meclear.cost.*`` and ``gen_ai.usage.*`` attributes.
        """
        cost = report.cost
        source = self.scope.cost if self.scope is not None else None
        if source is not None:
            try:
                fields = {k: v for k, v in source().items() if v is not None}
                cost = cost.model_copy(update=fields)
            except Exception:  # a broken cost source never breaks the clearance
                pass
        attrs: dict[str, Any] = {}
        for name, value in cost.model_dump().items():
            if _number(value) is not None:
                attrs[A.COST_PREFIX + name] = value
        if cost.model_calls is not None:
            attrs[A.COST_MODEL_CALLS] = cost.model_calls
        inputs = outputs = 0
        reported = False
        for prefix, usage in (
            (A.COST_AGENT_TOKENS, cost.agent_tokens),
            (A.COST_JUDGE_TOKENS, cost.judge_tokens),
        ):
            if usage is None:
                continue
            reported = True
            for key, value in usage.model_dump().items():
                attrs[f"{prefix}.{key}"] = value
            inputs += usage.input_tokens
            outputs += usage.output_tokens
        if reported:
            attrs[A.GEN_AI_USAGE_INPUT_TOKENS] = inputs
            attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] = outputs
        return attrs

    def done(self, report: ClearanceReport) -> ClearanceReport:
        """Record the report's outcome on the root span.

        Args:
            report: The clearance report.

        Returns:
            ``report``, unchanged.
        """
        root = self.root
        kept, cleared = report.kept_ids, report.cleared_ids
        attrs: dict[str, Any] = {
            "meclear.status": report.status,
            "meclear.recovered": report.recovered,
            "meclear.early_exit": report.early_exit,
            "meclear.kept_ids": _ids(kept),
            "meclear.cleared_ids": _ids(cleared),
            "meclear.kept.count": len(kept),
            "meclear.cleared.count": len(cleared),
            "meclear.clearance_search": report.clearance_search,
        }
        for name, value in (
            ("baseline_value", report.baseline_value),
            ("final_value", report.final_value),
        ):
            if _number(value) is not None:
                attrs[f"meclear.{name}"] = float(value)  # type: ignore[arg-type]
        if report.estimator:
            attrs["meclear.estimator"] = report.estimator
        if report.status_reason:
            attrs["meclear.status_reason"] = redact(report.status_reason)[:200]
        for name, ids in (
            ("suspect_ids", report.suspect_ids),
            ("suspects_kept", report.suspects_kept),
        ):
            if ids:  # instruction-like memories (core.instructions), as in the metadata
                attrs[f"meclear.{name}"] = tuple(redact(i) for i in ids[:MAX_IDS])
        attrs.update(self._cost(report))
        by_id = {m.id: m for m in report.kept}
        for i, mid in enumerate(kept[:MAX_IDS]):
            attrs[f"{A.RERANKER_OUTPUT_DOCUMENTS}.{i}.{A.DOCUMENT_ID}"] = redact(mid)
            if self.content:
                key = f"{A.RERANKER_OUTPUT_DOCUMENTS}.{i}.{A.DOCUMENT_CONTENT}"
                attrs[key] = self.text(by_id[mid].content)
        root.set_attributes(attrs)
        for mid in cleared[:MAX_IDS]:
            root.add_event(A.MEMORY_CLEARED_EVENT, {A.MEMORY_RECORD_ID: redact(mid)})
        failure = report.failure
        if failure is not None:
            root.set_attribute("meclear.failure.reason", failure.reason)
            if failure.kind is not None:  # the same name as the metadata and the warning
                root.set_attribute("meclear.failure.kind", failure.kind)
            root.set_attribute("meclear.failure.stage", failure.stage)
            root.set_attribute("meclear.failure.failed_count", len(failure.failed_coalitions))
            root.set_attribute(A.ERROR_TYPE, failure.reason)
            why = redact(f"failed open ({failure.reason}): {failure.error}")[:300]
            root.set_status(Status(StatusCode.ERROR, why))
        return report


def open_clearance(
    settings: TraceSettings,
    context: Sequence[Memory],
    config: ClearanceConfig,
    scope: ClearanceScope | None,
) -> ClearanceTrace | None:
    """Start the clearance span; None when it does not record (no provider, sampled out).

    Args:
        settings: The trace settings (provider, detail, content capture).
        context: The retrieved memories.
        config: The engine configuration (recorded as attributes).
        scope: The integration's scope (query, framework, parent span), if any.

    Returns:
        The clearance's trace, or None.
    """
    parent = scope.parent if scope is not None else None
    parent_context = (
        trace.set_span_in_context(parent)
        if parent is not None and parent.get_span_context().is_valid
        else None  # the current context
    )
    # Under an OpenInference instrumentation's span, the provider that instrumentation was
    # given (the span tree stays in one backend), unless one is passed explicitly.
    provider = (
        instrumentation_provider()
        if settings.tracer_provider is None and parent_context is not None
        else None
    )
    tracer = provider.get_tracer(A.TRACER_NAME, _VERSION) if provider else _tracer(settings)
    ids = [m.id for m in context]
    attributes: dict[str, Any] = {
        A.GEN_AI_OPERATION_NAME: A.CLEARANCE_OPERATION,
        A.OPENINFERENCE_SPAN_KIND: "RERANKER",
        "meclear.memories.count": len(ids),
        "meclear.memory_ids": _ids(ids),
        "meclear.trace.detail": settings.detail,
        "meclear.config.estimator": config.estimator_name,
        "meclear.config.trials": config.trials,
        "meclear.config.success_threshold": config.verification.success_threshold,
    }
    if len(ids) > MAX_IDS:
        attributes["meclear.memory_ids.truncated"] = True
    if settings.data_source_id:
        attributes[A.GEN_AI_DATA_SOURCE_ID] = redact(settings.data_source_id)
    if scope is not None and scope.framework:
        attributes["meclear.framework"] = scope.framework
    root = tracer.start_span(A.CLEARANCE_SPAN, context=parent_context, attributes=attributes)
    if not root.is_recording() and settings.tracer_provider is None and provider is None:
        # No global provider records: the one given to the OpenInference instrumentation.
        provider = instrumentation_provider()
        if provider is not None:
            root.end()
            tracer = provider.get_tracer(A.TRACER_NAME, _VERSION)
            root = tracer.start_span(
                A.CLEARANCE_SPAN, context=parent_context, attributes=attributes
            )
    if not root.is_recording():
        root.end()
        return None
    traced = ClearanceTrace(settings, tracer, root, config, scope)
    docs: dict[str, Any] = {}
    for i, memory in enumerate(context[:MAX_IDS]):
        docs[f"{A.RERANKER_INPUT_DOCUMENTS}.{i}.{A.DOCUMENT_ID}"] = redact(memory.id)
        if traced.content:
            docs[f"{A.RERANKER_INPUT_DOCUMENTS}.{i}.{A.DOCUMENT_CONTENT}"] = traced.text(
                memory.content
            )
    if traced.content and scope is not None and scope.query:
        docs[A.RERANKER_QUERY] = traced.text(scope.query)
        docs[A.INPUT_VALUE] = traced.text(scope.query)
    root.set_attributes(docs)
    return traced
