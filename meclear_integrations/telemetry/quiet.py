"""OpenTelemetry's switch for other instrumentations' spans of a clearance's internal runs.

Imported only by :mod:`meclear_integrations.core.tracing.hooks` once the application has loaded
OpenTelemetry. The suppress-instrumentation context key is what OpenTelemetry's own
instrumentations and OpenInference's LangChain and LlamaIndex instrumentations check
before making a span; MeClear's own spans come from the SDK tracer, which does not check
it, so they are unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context

__all__ = ["suppress_instrumentation"]

try:  # opentelemetry-api >= 1.15
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY as _KEY
except ImportError:  # pragma: no cover - older API
    _KEY = otel_context.create_key("suppress_instrumentation")


@contextmanager
def suppress_instrumentation(quiet: bool) -> Iterator[None]:
    """Within the block, instrumentations make no span (``quiet``) or do again (not ``quiet``).

    Args:
        quiet: True suppresses, False lifts an outer suppression.

    Yields:
        Nothing.
    """
    token = otel_context.attach(otel_context.set_value(_KEY, True if quiet else None))
    try:
        yield
    finally:
        otel_context.detach(token)
