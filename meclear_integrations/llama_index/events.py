"""Typed LlamaIndex instrumentation events of one clearance, in start/end pairs.

Per stage of Algorithm 1 (screening, attribution, interactions when enabled, clearance) a
``<Stage>StartEvent`` and a ``<Stage>EndEvent`` are emitted through the dispatcher of
:mod:`meclear_integrations.llama_index.postprocessor` (``get_dispatcher(__name__)``), so any
``BaseEventHandler`` on the root dispatcher receives them. Their ``span_id`` is the
postprocessor's span.

``payload`` is exactly the data of the LangChain integration's ``meclear.<stage>`` custom
event (:func:`~meclear_integrations.runtime.payloads.stage_event_payload`: ``stage``, ``phase``,
``query_id`` and the engine's stage payload, ids and numbers only, capped in size). When a
stage fails, its end event carries ``error`` and ``payload["phase"] == "error"``; a stage
still open when the clearance is aborted (cancellation, a failure outside the engine) is
closed by :class:`StageTracker` with an end event too, so every start has an end.

Between a stage's start and end, :class:`MeClearProgressEvent` reports each batch of
evaluator calls (the engine's ``progress`` events: ``batch``, ``calls_done``,
``calls_total``, ``run_calls_done``, ``elapsed_seconds``, ``model_calls_done``); it is no
stage event and opens or closes nothing.

Under OpenInference's LlamaIndex instrumentation, with ``TraceSettings(detail="evaluations")``,
each traced evaluator call runs detached from the current LlamaIndex span
(:func:`detached_from_llama_index_span`, registered with
:func:`~meclear_integrations.core.tracing.hooks.register_evaluation_context`), so the
instrumentation parents the agent's and judge's LLM spans to MeClear's ``meclear.evaluate``
span (the current OpenTelemetry span), inside its stage, instead of the postprocessor span.

Internal runs: every evaluator call (the agent's and the judge's LLM calls) runs with the
instrument tag :data:`INTERNAL_TAG` (``{"meclear": "internal"}``, merged into the current
tags; :func:`internal_run_tags`), so an event or span handler (a UI streaming
``LLMChatInProgressEvent`` tokens, say) can tell them from the user-facing LLM calls:
``event.tags.get("meclear") == "internal"``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.instrumentation.dispatcher import active_instrument_tags
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import active_span_id
from pydantic import Field

from ..core.events import Stage, StageEvent
from ..core.redaction import redact
from ..core.tracing.hooks import register_evaluation_context, register_internal_context
from ..runtime.payloads import DEFAULT_MAX_EVENT_BYTES, stage_event_payload

INTERNAL_TAG = {"meclear": "internal"}
"""The LlamaIndex instrument tag of the clearance's internal runs (``event.tags``)."""

__all__ = [
    "INTERNAL_TAG",
    "AttributionEndEvent",
    "AttributionStartEvent",
    "ClearanceEndEvent",
    "ClearanceStartEvent",
    "InteractionsEndEvent",
    "InteractionsStartEvent",
    "MeClearProgressEvent",
    "MeClearStageEndEvent",
    "MeClearStageEvent",
    "MeClearStageStartEvent",
    "ScreeningEndEvent",
    "ScreeningStartEvent",
    "StageTracker",
    "detached_from_llama_index_span",
    "internal_run_tags",
    "progress_event",
    "stage_events",
]


class MeClearStageEvent(BaseEvent):
    """Base of every MeClear stage event."""

    stage: Stage = Field(description="Which stage of Algorithm 1.")
    query_id: str | None = Field(
        default=None,
        description="Id of the clearance run (the same on every event of one query).",
    )
    payload: dict[str, Any] = Field(
        default_factory=dict,
        description="The ``meclear.<stage>`` payload shared with the LangChain integration.",
    )

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearStageEvent"


class MeClearProgressEvent(BaseEvent):
    """A batch of evaluator calls of a stage progresses (ids and numbers only)."""

    stage: Stage = Field(description="The stage the batch belongs to.")
    query_id: str | None = Field(
        default=None,
        description="Id of the clearance run (the same on every event of one query).",
    )
    batch: int = Field(description="The batch's number in the run (1, 2, ...).")
    calls_done: int = Field(description="Evaluator calls of the batch finished so far.")
    calls_total: int = Field(description="Evaluator calls in the batch.")
    run_calls_done: int = Field(description="Evaluator calls finished in the run so far.")
    elapsed_seconds: float = Field(description="Seconds since the clearance run started.")
    payload: dict[str, Any] = Field(
        default_factory=dict,
        description="The ``meclear.progress`` payload shared with the LangChain integration.",
    )

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearProgressEvent"


class MeClearStageStartEvent(MeClearStageEvent):
    """A stage starts."""

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearStageStartEvent"


class MeClearStageEndEvent(MeClearStageEvent):
    """A stage ends; ``error`` is set when it failed or the clearance was aborted."""

    error: str | None = Field(
        default=None,
        description='``"<ExceptionType>: message"`` when the stage did not complete, else None.',
    )

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearStageEndEvent"


class ScreeningStartEvent(MeClearStageStartEvent):
    """Leave-one-out screening starts (Eq. 7); payload: ``k``."""

    stage: Stage = Field(default="screening", description="Always ``screening``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearScreeningStartEvent"


class ScreeningEndEvent(MeClearStageEndEvent):
    """Screening done; payload: ``baseline_value``, ``baseline_recovered``, ``loo``...."""

    stage: Stage = Field(default="screening", description="Always ``screening``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearScreeningEndEvent"


class AttributionStartEvent(MeClearStageStartEvent):
    """Shapley attribution starts (Eq. 3 / 11); payload: ``estimator``."""

    stage: Stage = Field(default="attribution", description="Always ``attribution``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAttributionStartEvent"


class AttributionEndEvent(MeClearStageEndEvent):
    """Attribution done; payload: ``shapley`` (value, interval, rank), ``harmful_ids``."""

    stage: Stage = Field(default="attribution", description="Always ``attribution``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAttributionEndEvent"


class InteractionsStartEvent(MeClearStageStartEvent):
    """Pairwise interactions start (only when enabled in the config)."""

    stage: Stage = Field(default="interactions", description="Always ``interactions``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearInteractionsStartEvent"


class InteractionsEndEvent(MeClearStageEndEvent):
    """Pairwise interactions done."""

    stage: Stage = Field(default="interactions", description="Always ``interactions``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearInteractionsEndEvent"


class ClearanceStartEvent(MeClearStageStartEvent):
    """Verified clearance starts (Eq. 18-20).

    The payload holds ``candidates``, ``search`` and ``fallback_ids``.
    """

    stage: Stage = Field(default="clearance", description="Always ``clearance``.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearClearanceStartEvent"


class ClearanceEndEvent(MeClearStageEndEvent):
    """Clearance done; payload: ``cleared_ids``, ``kept_ids``, ``recovered``, ``cost``...

    An empty retrieval is one start/end pair with ``payload["skipped"] == "empty"``.
    """

    stage: Stage = Field(default="clearance", description="Always ``clearance``.")
    cleared_ids: list[str] = Field(
        default_factory=list,
        description="Memory (node) ids removed for this query.",
    )
    recovered: bool | None = Field(
        default=None,
        description=(
            "Whether the kept context was verified to recover the answer (Eq. 19); None on error."
        ),
    )

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearClearanceEndEvent"


_STARTS: dict[str, type[MeClearStageStartEvent]] = {
    "screening": ScreeningStartEvent,
    "attribution": AttributionStartEvent,
    "interactions": InteractionsStartEvent,
    "clearance": ClearanceStartEvent,
}
_ENDS: dict[str, type[MeClearStageEndEvent]] = {
    "screening": ScreeningEndEvent,
    "attribution": AttributionEndEvent,
    "interactions": InteractionsEndEvent,
    "clearance": ClearanceEndEvent,
}


def stage_events(
    event: StageEvent, *, query_id: str | None, max_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> MeClearStageEvent:
    """The typed event for an engine stage event (``error`` phase -> end event with error).

    Args:
        event: The engine's stage event.
        query_id: The id of the clearance (the postprocessor's span).
        max_bytes: The size cap of the payload's JSON.

    Returns:
        The start or end event of the stage.
    """
    payload = stage_event_payload(event, query_id=query_id, max_bytes=max_bytes)
    if event.phase == "start":
        return _STARTS[event.stage](stage=event.stage, query_id=query_id, payload=payload)
    error = None
    if event.phase == "error":
        error = f"{event.payload.get('error_type', 'Error')}: {event.payload.get('error', '')}"
    extra: dict[str, Any] = {}
    if event.stage == "clearance":
        extra = {
            "cleared_ids": list(event.payload.get("cleared_ids", [])),
            "recovered": event.payload.get("recovered"),
        }
    return _ENDS[event.stage](
        stage=event.stage, query_id=query_id, payload=payload, error=error, **extra
    )


def progress_event(
    event: StageEvent, *, query_id: str | None, max_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> MeClearProgressEvent:
    """The typed event for an engine ``progress`` event.

    Args:
        event: The engine's progress event.
        query_id: The id of the clearance (the postprocessor's span).
        max_bytes: The size cap of the payload's JSON.

    Returns:
        The progress event.
    """
    numbers = event.payload
    return MeClearProgressEvent(
        stage=event.stage,
        query_id=query_id,
        batch=int(numbers.get("batch", 0)),
        calls_done=int(numbers.get("calls_done", 0)),
        calls_total=int(numbers.get("calls_total", 0)),
        run_calls_done=int(numbers.get("run_calls_done", 0)),
        elapsed_seconds=float(numbers.get("elapsed_seconds", 0.0)),
        payload=stage_event_payload(event, query_id=query_id, max_bytes=max_bytes),
    )


class StageTracker:
    """Remembers open stages so an aborted clearance can close each with an end event.

    Args:
        query_id: The id of the clearance.
    """

    def __init__(self, query_id: str | None) -> None:
        self.query_id = query_id
        self.open: list[Stage] = []
        """Stages started and not yet ended, in start order."""

    def see(self, event: MeClearStageEvent) -> None:
        """Record ``event``.

        Args:
            event: An event just emitted.
        """
        if isinstance(event, MeClearStageStartEvent):
            self.open.append(event.stage)
        elif event.stage in self.open:
            self.open.remove(event.stage)

    def closing(self, error: BaseException) -> list[MeClearStageEndEvent]:
        """End events (innermost first) for every stage still open, carrying ``error``.

        Args:
            error: Why the clearance was aborted.

        Returns:
            The end events to emit.
        """
        text = redact(f"{type(error).__name__}: {error}")[:500]
        events = []
        for stage in reversed(self.open):
            payload = {"stage": stage, "phase": "error", "query_id": self.query_id}
            payload |= {"error_type": type(error).__name__, "error": redact(str(error))[:500]}
            events.append(
                _ENDS[stage](stage=stage, query_id=self.query_id, payload=payload, error=text)
            )
        self.open.clear()
        return events

    @staticmethod
    def start(
        stage: Stage, query_id: str | None, payload: dict[str, Any]
    ) -> MeClearStageStartEvent:
        """A start event built outside the engine (e.g. the empty-retrieval skip).

        Args:
            stage: The stage.
            query_id: The id of the clearance.
            payload: The event's payload.

        Returns:
            The start event.
        """
        return _STARTS[stage](stage=stage, query_id=query_id, payload=payload)

    @staticmethod
    def end(stage: Stage, query_id: str | None, payload: dict[str, Any]) -> MeClearStageEndEvent:
        """An end event built outside the engine.

        Args:
            stage: The stage.
            query_id: The id of the clearance.
            payload: The event's payload.

        Returns:
            The end event.
        """
        return _ENDS[stage](stage=stage, query_id=query_id, payload=payload)


@contextmanager
def detached_from_llama_index_span() -> Iterator[None]:
    """Within the block no LlamaIndex span is current, under OpenInference only.

    OpenInference's LlamaIndex instrumentation parents a span to its LlamaIndex parent span
    when there is one, else to the current OpenTelemetry span: detached, an evaluation's
    LLM spans nest under MeClear's ``meclear.evaluate`` span. Without the instrumentation
    loaded nothing changes (other span handlers keep LlamaIndex's own tree).

    Yields:
        Nothing.
    """
    if "openinference.instrumentation.llama_index" not in sys.modules:
        yield
        return
    token = active_span_id.set(None)
    try:
        yield
    finally:
        active_span_id.reset(token)


register_evaluation_context("llama_index", detached_from_llama_index_span)


@contextmanager
def internal_run_tags() -> Iterator[None]:
    """Within the block, LlamaIndex events and spans carry :data:`INTERNAL_TAG`.

    Yields:
        Nothing.
    """
    token = active_instrument_tags.set({**active_instrument_tags.get(), **INTERNAL_TAG})
    try:
        yield
    finally:
        active_instrument_tags.reset(token)


register_internal_context("llama_index", internal_run_tags)
