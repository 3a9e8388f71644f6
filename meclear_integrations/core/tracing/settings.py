"""What a clearance puts into OpenTelemetry: how much (``detail``) and whether contents.

Pure pydantic: importing this module never imports OpenTelemetry.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CAPTURE_CONTENT_ENV", "TraceDetail", "TraceSettings", "content_capture_from_env"]

TraceDetail = Literal["evaluations", "failures", "stages"]
"""How many spans a clearance records: stages only, failed evaluations too, or every evaluation."""

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' content-capture switch, honoured when
``TraceSettings.capture_content`` is left unset."""

_CAPTURE_VALUES = {"true", "1", "yes", "on", "span_only", "span_and_event", "event_only"}
"""Values of :data:`CAPTURE_CONTENT_ENV` that turn capture on (case-insensitive); anything
else (unset, ``false``, ``no_content``...) leaves it off."""


def content_capture_from_env() -> bool:
    """True when :data:`CAPTURE_CONTENT_ENV` asks for contents.

    Returns:
        The environment's choice.
    """
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_VALUES


class TraceSettings(BaseModel):
    """OpenTelemetry spans of a clearance (the ``otel`` extra).

    Spans are emitted only when the application has OpenTelemetry loaded with a tracer
    provider that records (or passes ``tracer_provider``); otherwise nothing is imported
    and nothing is built. See ``meclear_integrations.telemetry`` for the span tree and
    the attributes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    enabled: bool = True
    """Emit spans when a tracer provider records; False turns MeClear's spans off."""
    detail: TraceDetail = "failures"
    """How much of each clearance is traced: ``"evaluations"`` (every evaluator call as a
    ``meclear.evaluate`` span with its judge span: the most detail, about two spans per
    model-call pair), ``"failures"`` (default: the clearance and stage spans, plus an
    evaluation span only for calls that raised, retried attempts included), or
    ``"stages"`` (the clearance and one span per stage, nothing per call). Below
    ``"evaluations"`` other tracing systems record no internal run either: each evaluator
    call runs with OpenTelemetry's suppress-instrumentation key set (OpenInference's
    LangChain and LlamaIndex instrumentations) and LangSmith's tracing context off (also
    when switched on by ``LANGSMITH_TRACING=true``); see ``core.tracing.hooks``."""
    capture_content: bool | None = None
    """Record contents (query, memory texts, answers, judge reasons), redacted and cut to
    ``max_content_chars``. None follows the environment variable
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true`` turns it on); an
    explicit True / False overrides it. Off by default: ids, numbers and decisions only."""
    max_content_chars: int = Field(default=2000, ge=16, le=100_000)
    """Cap of each recorded content attribute, in characters."""
    data_source_id: str | None = None
    """``gen_ai.data_source.id`` of the clearance span: the memory store the context came
    from (your identifier)."""
    tracer_provider: Any = Field(default=None, exclude=True)
    """An OpenTelemetry ``TracerProvider`` to use instead of the global one."""

    def captures_content(self) -> bool:
        """Whether contents are recorded (the explicit setting, else the environment).

        Returns:
            True when contents are recorded.
        """
        if self.capture_content is not None:
            return self.capture_content
        return content_capture_from_env()
