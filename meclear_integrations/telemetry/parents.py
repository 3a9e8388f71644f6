"""The span to parent a clearance to when a framework instrumentation keeps its own tree.

OpenInference's LangChain and LlamaIndex instrumentations map the framework's runs /
spans to OpenTelemetry spans without making them current, so inside a retriever or a
node postprocessor the current OpenTelemetry span is not the retrieval step. Their public
look-ups (``LangChainInstrumentor().get_span(run_id)``, LlamaIndex ``get_current_span()``)
give that span; they are used only when the instrumentation is already loaded (nothing
is imported here), and any failure means "no such span" (the current span is used).

:func:`instrumentation_provider` answers the same question for the tracer provider: an
application that hands its provider only to the instrumentation
(``LangChainInstrumentor().instrument(tracer_provider=provider)``) and sets no global one
still gets the clearance span in the same backend, through a provider that shares the
instrumentation's span processors, resource, sampler and id generator.

:func:`suppress_instrumentation` is OpenTelemetry's switch for other instrumentations' spans
of a clearance's internal runs, used only once the application has loaded OpenTelemetry
(:mod:`meclear_integrations.core.tracing.hooks`, :mod:`meclear_integrations.langchain.volume`).
The suppress-instrumentation context key is what OpenTelemetry's own instrumentations and
OpenInference's LangChain and LlamaIndex instrumentations check before making a span;
MeClear's own spans come from the SDK tracer, which does not check it, so they are
unaffected.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "instrumentation_provider",
    "langchain_run_span",
    "llama_index_span",
    "suppress_instrumentation",
]


_SHARED: dict[int, Any] = {}
"""Span processor id -> the provider built over it (one per instrumentation provider)."""


def _sdk_tracer(instance: Any, *path: str) -> Any:
    """The SDK tracer under an OpenInference ``OITracer`` found along ``path``, else None."""
    found = instance
    for name in path:
        found = getattr(found, name, None)
        if found is None:
            return None
    return getattr(found, "__wrapped__", None)


def instrumentation_provider() -> Any:
    """A tracer provider over an active OpenInference instrumentation's provider, else None.

    Looks at OpenInference's LangChain, then LlamaIndex instrumentor, only when already
    imported. The provider returned shares the instrumentation's span processors (so spans
    reach its exporters) under MeClear's own instrumentation scope; it never shuts them
    down (the application's provider owns them).
    """
    candidates = (
        (
            "openinference.instrumentation.langchain",
            "LangChainInstrumentor",
            ("_tracer", "_tracer"),
        ),
        (
            "openinference.instrumentation.llama_index",
            "LlamaIndexInstrumentor",
            ("_span_handler", "_otel_tracer"),
        ),
    )
    for module_name, class_name, path in candidates:
        module = sys.modules.get(module_name)
        instrumentor = getattr(module, class_name, None)
        if instrumentor is None:
            continue
        try:
            instance = instrumentor()
            if not instance.is_instrumented_by_opentelemetry:
                continue
            tracer = _sdk_tracer(instance, *path)
            processor = getattr(tracer, "span_processor", None)
            if processor is None:
                continue
            shared = _SHARED.get(id(processor))
            if shared is None:
                from opentelemetry.sdk.trace import TracerProvider

                shared = TracerProvider(
                    sampler=tracer.sampler,
                    resource=tracer.resource,
                    shutdown_on_exit=False,
                    active_span_processor=processor,
                    id_generator=tracer.id_generator,
                )
                _SHARED[id(processor)] = shared
            return shared
        except Exception:
            continue
    return None


def _valid(span: Any) -> Any:
    try:
        return span if span is not None and span.get_span_context().is_valid else None
    except Exception:
        return None


def langchain_run_span(*run_ids: Any) -> Any:
    """The OpenInference span of the first of ``run_ids`` that has one, else None."""
    module = sys.modules.get("openinference.instrumentation.langchain")
    instrumentor = getattr(module, "LangChainInstrumentor", None)
    if instrumentor is None:
        return None
    try:
        instance = instrumentor()
        if getattr(instance, "_tracer", None) is None:  # not instrumented
            return None
        for run_id in run_ids:
            span = _valid(instance.get_span(run_id)) if run_id is not None else None
            if span is not None:
                return span
    except Exception:
        return None
    return None


def llama_index_span() -> Any:
    """The OpenInference span of the current LlamaIndex span, else None."""
    module = sys.modules.get("openinference.instrumentation.llama_index")
    getter = getattr(module, "get_current_span", None)
    if getter is None:
        return None
    try:
        return _valid(getter())
    except Exception:
        return None


_SUPPRESS_KEY: list[Any] = []
"""OpenTelemetry's suppress-instrumentation context key, found on first use."""


def _suppress_key() -> Any:
    from opentelemetry import context as otel_context

    try:  # opentelemetry-api >= 1.15
        from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY as key
    except ImportError:  # pragma: no cover - older API
        key = otel_context.create_key("suppress_instrumentation")
    _SUPPRESS_KEY.append(key)
    return key


@contextmanager
def suppress_instrumentation(quiet: bool) -> Iterator[None]:
    """Within the block, instrumentations make no span (``quiet``) or do again (not ``quiet``).

    Args:
        quiet: True suppresses, False lifts an outer suppression.

    Yields:
        Nothing.
    """
    from opentelemetry import context as otel_context

    key = _SUPPRESS_KEY[0] if _SUPPRESS_KEY else _suppress_key()
    token = otel_context.attach(otel_context.set_value(key, True if quiet else None))
    try:
        yield
    finally:
        otel_context.detach(token)
