"""The span to parent a clearance to when a framework instrumentation keeps its own tree.

OpenInference's LangChain and LlamaIndex instrumentations map the framework's runs /
spans to OpenTelemetry spans without making them current, so inside a retriever or a
node postprocessor the current OpenTelemetry span is not the retrieval step. Their public
look-ups (``LangChainInstrumentor().get_span(run_id)``, LlamaIndex ``get_current_span()``)
give that span; they are used only when the instrumentation is already loaded (nothing
is imported here), and any failure means "no such span" (the current span is used).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["langchain_run_span", "llama_index_span"]


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
