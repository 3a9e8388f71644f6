"""What of a clearance reaches LangChain's tracers (``TraceSettings.detail``), and its token usage.

``"evaluations"``: every evaluator call is a ``meclear_evaluate`` run holding the agent's and
the judge's model runs. ``"failures"`` (the default): evaluator calls run without tracers;
a call that raises is recorded as a ``meclear_evaluate`` run with its (redacted) error.
``"stages"``: no evaluation runs at all; the clearance run, its stage events and its
outputs remain.

Removing the tracers from the evaluation's callbacks is not enough when LangSmith is
switched on by environment variables (``LANGSMITH_TRACING=true``): LangChain's callback
configuration adds the environment's tracer back to every child run. So the LangChain
integration registers LangSmith's tracing context as a quieter of the engine
(:func:`~meclear_integrations.core.tracing.hooks.register_quieter`): below ``"evaluations"``
each evaluator call runs inside ``tracing_context(enabled=False)`` (runs started there
are not sent, and no tracer is added back), and :func:`failure_run` turns it on again
for the one run it records.

Internal runs: every run of an evaluator call (the ``meclear_evaluate`` run, the agent's
and the judge's model runs) carries the tag :data:`INTERNAL_TAG` (``meclear:internal``),
at every ``detail``, so tracers and callback handlers can filter them, and they are hidden
from ``astream_events`` / ``astream_log`` (the streaming handlers are not passed to them):
a UI streaming ``on_chat_model_stream`` sees the user-facing model only. Usage metering
and the application's own callback handlers still see every model call.

Token usage of the agent's and the judge's model calls: :data:`USAGE_CALLBACK` is added
(inheritable) to the callback manager of each clearance run, so it sees every model run
under it; ``on_llm_end`` hands the usage the provider reported
(``AIMessage.usage_metadata``, else ``llm_output["token_usage"]``) to
:func:`meclear_integrations.runtime.usage.record_usage`, which books it to the query's meter
under the role (agent or judge) the task evaluator set.

Under OpenInference's LangChain instrumentation the clearance run itself makes no span
when MeClear's own spans are on (:func:`clearance_run_context`): the ``meclear.clearance``
span stands for it, parented to the retriever's span, and at ``"evaluations"`` the
instrumentation's ``meclear_evaluate`` spans nest under MeClear's ``meclear.evaluate``
spans, inside their stage.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    BaseCallbackHandler,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.outputs import LLMResult
from langchain_core.tracers.base import AsyncBaseTracer, BaseTracer

from ..core.concurrency.step_driver import Call, Steps
from ..core.tracing.hooks import register_quieter
from ..core.tracing.settings import TraceDetail, TraceSettings
from ..runtime.usage import record_usage, usage_from_mapping

__all__ = [
    "INTERNAL_TAG",
    "USAGE_CALLBACK",
    "UsageCallback",
    "clearance_run_context",
    "evaluation_callbacks",
    "failure_run",
    "langsmith_quieter",
    "llm_usage",
]


def llm_usage(response: LLMResult) -> tuple[int, int] | None:
    """(input, output) tokens of a model run, when the provider reported them.

    Args:
        response: The model run's result.

    Returns:
        ``(input, output)`` tokens, or None.
    """
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            found = usage_from_mapping(getattr(message, "usage_metadata", None))
            if found is not None:
                return found
    llm_output = response.llm_output or {}
    return usage_from_mapping(llm_output.get("token_usage") or llm_output.get("usage"))


class UsageCallback(BaseCallbackHandler):
    """Books reported token usage to the current query's meter (stateless)."""

    run_inline = True
    """Run in the model call's own context (where the meter and role are set)."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Book the tokens the provider reported for this call, if any.

        Args:
            response: The model's result.
            **kwargs: The callback's other arguments (unused).
        """
        usage = llm_usage(response)
        if usage is not None:
            record_usage(*usage)


USAGE_CALLBACK = UsageCallback()
"""The one handler every clearance run adds."""


INTERNAL_TAG = "meclear:internal"
"""Tag of every run of the clearance's evaluator calls (agent and judge model runs)."""

_TRACERS = (BaseTracer, AsyncBaseTracer)
_OUTER_ENABLED: ContextVar[Any] = ContextVar("meclear_langsmith_outer_enabled", default=None)


@contextmanager
def langsmith_quieter(quiet: bool) -> Iterator[None]:
    """LangSmith's tracing context switched off (``quiet``) or on again for a block.

    Args:
        quiet: True: runs started in the block are not sent and no environment tracer is
            configured; False: undo an enclosing quiet block (the outer setting, or on).

    Yields:
        Nothing.
    """
    from langsmith.run_helpers import get_tracing_context, tracing_context

    current = dict(get_tracing_context())
    if quiet:
        token = _OUTER_ENABLED.set(current.get("enabled"))
        try:
            with tracing_context(**{**current, "enabled": False}):
                yield
        finally:
            _OUTER_ENABLED.reset(token)
        return
    outer = _OUTER_ENABLED.get()
    with tracing_context(**{**current, "enabled": True if outer is None else outer}):
        yield


register_quieter("langsmith", langsmith_quieter)


def _streaming(handler: object) -> bool:
    """Whether ``handler`` feeds ``astream_events`` / ``astream_log`` (or another stream)."""
    try:
        from langchain_core.tracers._streaming import _StreamingCallbackHandler

        return isinstance(handler, _StreamingCallbackHandler)
    except (ImportError, TypeError):  # pragma: no cover - other langchain-core versions
        return type(handler).__name__ in {
            "_AstreamEventsCallbackHandler",
            "LogStreamCallbackHandler",
        }


def clearance_run_context(tracing: TraceSettings) -> AbstractContextManager[Any]:
    """The context the clearance run is started in (module docstring, OpenInference).

    Args:
        tracing: The component's trace settings.

    Returns:
        OpenTelemetry's suppress-instrumentation block when MeClear's spans are on and
        OpenTelemetry is loaded; else a no-op.
    """
    if not tracing.enabled or "opentelemetry.context" not in sys.modules:
        return nullcontext()
    from ..telemetry.parents import suppress_instrumentation

    return suppress_instrumentation(True)


def evaluation_callbacks(
    run: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun, detail: TraceDetail
) -> CallbackManager | AsyncCallbackManager:
    """The callbacks one evaluator call runs under.

    Args:
        run: The clearance run.
        detail: The trace volume (see the module docstring).

    Returns:
        A copy of the clearance run's child manager tagged :data:`INTERNAL_TAG`, without
        the streaming handlers and, below ``"evaluations"``, without tracers.
    """
    child = run.get_child().copy()
    child.add_tags([INTERNAL_TAG], inherit=True)
    for handler in [*child.handlers, *child.inheritable_handlers]:
        if _streaming(handler) or (detail != "evaluations" and isinstance(handler, _TRACERS)):
            child.remove_handler(handler)
    return child


def failure_run(
    run: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun,
    detail: TraceDetail,
    name: str,
    inputs: dict[str, Any],
    error: BaseException,
) -> Steps[None]:
    """Record a failed evaluator call as a run of its own under ``"failures"``: the steps.

    Opens and fails the run on either path (``Call.on_both``: the run manager's sync or
    async methods); a step of the evaluator's flow (``yield from``).

    Args:
        run: The clearance run.
        detail: The trace volume.
        name: The run name (``meclear_evaluate``).
        inputs: The call's inputs (memory ids, trial).
        error: The (redacted) error the call raised.
    """
    if detail != "failures":
        return
    with langsmith_quieter(False):
        start = run.get_child().on_chain_start
        failed = yield Call.on_both(lambda: start({"name": name}, inputs, name=name))
        yield Call.on_both(lambda: failed.on_chain_error(error))
