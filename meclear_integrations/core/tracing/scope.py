"""What an integration tells the engine's tracing about a clearance, and the traced evaluation.

The context variables shared by the engine's hook points (:mod:`.hooks`) and the
OpenTelemetry spans (:mod:`meclear_integrations.telemetry.spans`): a module of their own,
so the spans need nothing of :mod:`.hooks`, which loads them lazily (no import circle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EVALUATION",
    "SCOPE",
    "ClearanceScope",
    "clearance_scope",
    "evaluation_contexts",
    "register_evaluation_context",
]


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


SCOPE: ContextVar[ClearanceScope | None] = ContextVar("meclear_trace_scope", default=None)
"""The scope the integration named for the clearance about to run (:func:`clearance_scope`)."""
EVALUATION: ContextVar[Any] = ContextVar("meclear_trace_evaluation", default=None)
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
    token = SCOPE.set(scope)
    try:
        yield scope
    finally:
        SCOPE.reset(token)


_EVALUATION_CONTEXTS: dict[str, Callable[[], AbstractContextManager[Any]]] = {}


def register_evaluation_context(
    name: str, factory: Callable[[], AbstractContextManager[Any]]
) -> None:
    """Register a context every traced evaluation span runs its call in (an integration).

    Used to make a framework instrumentation parent its spans of the call to the
    evaluation span (the LlamaIndex integration detaches the call from the current
    LlamaIndex span under OpenInference, so its LLM spans nest under ``meclear.evaluate``).

    Args:
        name: A unique name (registering it again replaces the context).
        factory: Returns the context manager, entered around each traced evaluator call.
    """
    _EVALUATION_CONTEXTS[name] = factory


def evaluation_contexts() -> list[AbstractContextManager[Any]]:
    """New instances of the registered evaluation contexts.

    Returns:
        The context managers to enter around one traced evaluator call.
    """
    return [factory() for factory in _EVALUATION_CONTEXTS.values()]
