"""Grouped settings of the clearing components, shared by both integrations.

``ClearingRetriever``, ``MeClearCompressor`` (LangChain) and ``MeClearPostprocessor``
(LlamaIndex) keep their everyday settings flat (``llm``, ``judge``, ``clearance``, ...) and
take the rest in nested groups defined here once, framework-free:

- :class:`Limits` (``limits=``): the circuit breaker, the shared call limiter and the
  size cap of event payloads.

The old flat spellings (``circuit_breaker=``, ``limiter=``, ``max_calls_in_flight=``,
``max_event_bytes=`` on the component) are rejected with a hint naming the new one
(:data:`MOVED`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.strict import reject_unknown
from ..runtime.breaker import CircuitBreaker
from ..runtime.limiter import CallLimiter
from ..runtime.payloads import DEFAULT_MAX_EVENT_BYTES

__all__ = ["MOVED", "Limits"]


class Limits(BaseModel):
    """Bounds of a clearing component: breaker, call limiter, event size.

    Pass as ``limits=Limits(...)`` (or a mapping of these settings) to ``ClearingRetriever``,
    ``MeClearCompressor`` or ``MeClearPostprocessor``. A breaker or limiter instance given
    here is used as is, so one instance passed to several components is shared by them.

    Example:
        >>> from meclear_integrations.pipeline.settings import Limits
        >>> Limits(max_calls_in_flight=4).max_calls_in_flight
        4
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    circuit_breaker: CircuitBreaker | None = Field(default_factory=CircuitBreaker, exclude=True)
    """Skips clearance (``status="skipped"``, reason ``circuit_open``) for a cool-down
    after consecutive provider failures (``meclear_integrations.runtime.breaker``; default: 3
    failures, 30 s). Pass one instance to several components to share it; None: off."""
    limiter: CallLimiter | None = Field(default=None, exclude=True)
    """Bounds the model calls in flight (agent and judge, each call one slot) across every
    query of the component (``meclear_integrations.runtime.limiter``); pass one instance to
    several components to bound the process. None: no bound beyond each query's
    ``clearance.budget.max_concurrency``."""
    max_calls_in_flight: int | None = Field(default=None, ge=1)
    """Shorthand for a limiter of the component's own: ``CallLimiter(max_calls_in_flight)``
    (not together with ``limiter``)."""
    max_event_bytes: int = Field(default=DEFAULT_MAX_EVENT_BYTES, ge=512)
    """Size cap (JSON bytes) of each event payload (and of a LangChain clearance run's
    outputs)."""

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: object) -> object:
        reject_unknown("Limits", data, cls.model_fields)
        return data


def _moved(group: str, cls: type[BaseModel]) -> dict[str, str]:
    return {
        name: (
            f"{name} moved into {group}: pass {group}={cls.__name__}({name}=...) "
            f"(from meclear_integrations.pipeline.settings import {cls.__name__}) "
            f"or {group}={{{name!r}: ...}}"
        )
        for name in cls.model_fields
    }


MOVED: dict[str, str] = _moved("limits", Limits)
"""Hints for the old flat spellings of the grouped settings, by old name."""
