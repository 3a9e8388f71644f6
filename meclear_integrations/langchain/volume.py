"""How much of a clearance reaches LangChain's tracers (LangSmith): ``TraceSettings.detail``.

``"evaluations"``: every evaluator call is a ``meclear_evaluate`` run holding the agent's and
the judge's model runs. ``"failures"`` (the default): evaluator calls run without tracers;
a call that raises is recorded as a ``meclear_evaluate`` run with its (redacted) error.
``"stages"``: no evaluation runs at all; the clearance run, its stage events and its
outputs remain. Handlers that are not tracers (usage metering, the application's own
callbacks, ``astream_events``) still see every model call.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.tracers.base import AsyncBaseTracer, BaseTracer

from ..core.trace_settings import TraceDetail

__all__ = ["arecord_failure", "evaluation_callbacks", "record_failure"]

_TRACERS = (BaseTracer, AsyncBaseTracer)


def evaluation_callbacks(
    run: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun, detail: TraceDetail
) -> CallbackManager | AsyncCallbackManager:
    """The callbacks one evaluator call runs under.

    Args:
        run: The clearance run.
        detail: The trace volume (see the module docstring).

    Returns:
        The clearance run's child manager; below ``"evaluations"`` a copy without tracers.
    """
    child = run.get_child()
    if detail == "evaluations":
        return child
    quiet = child.copy()
    for handler in [*quiet.handlers, *quiet.inheritable_handlers]:
        if isinstance(handler, _TRACERS):
            quiet.remove_handler(handler)
    return quiet


def record_failure(
    run: CallbackManagerForChainRun,
    detail: TraceDetail,
    name: str,
    inputs: dict[str, Any],
    error: BaseException,
) -> None:
    """Record a failed evaluator call as a run of its own under ``"failures"``.

    Args:
        run: The clearance run.
        detail: The trace volume.
        name: The run name (``meclear_evaluate``).
        inputs: The call's inputs (memory ids, trial).
        error: The (redacted) error the call raised.
    """
    if detail != "failures":
        return
    failed = run.get_child().on_chain_start({"name": name}, inputs, name=name)
    failed.on_chain_error(error)


async def arecord_failure(
    run: AsyncCallbackManagerForChainRun,
    detail: TraceDetail,
    name: str,
    inputs: dict[str, Any],
    error: BaseException,
) -> None:
    """:func:`record_failure` on the async path.

    Args:
        run: The clearance run.
        detail: The trace volume.
        name: The run name (``meclear_evaluate``).
        inputs: The call's inputs (memory ids, trial).
        error: The (redacted) error the call raised.
    """
    if detail != "failures":
        return
    failed = await run.get_child().on_chain_start({"name": name}, inputs, name=name)
    await failed.on_chain_error(error)
