"""The two drivers of the query flow: one sync, one async (the engine's pattern).

The flow yields steps (:mod:`.steps`); a driver executes each and sends the value back, or
throws the step's exception into the flow. What the integration supplies is a host: the
framework's pieces of an engine run (:class:`~.engine_run.EngineJob`, run by
:func:`~.engine_run.run_engine` / :func:`~.engine_run.arun_engine`) and how to report an
event.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..core.step_driver import arun_steps, call_async, call_sync, run_steps
from .engine_run import EngineJob, arun_engine, run_engine
from .steps import Clear, Flow, FlowEvent, FlowResult, Notify, Step

__all__ = ["AsyncHost", "SyncHost", "run_async", "run_sync"]


class SyncHost(Protocol):
    """What the sync driver needs from an integration."""

    def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    def engine_job(self, request: Clear) -> EngineJob:
        """The engine run of ``request`` (the integration's agent, judge and listener)."""
        ...


class AsyncHost(Protocol):
    """What the async driver needs from an integration."""

    async def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    def engine_job(self, request: Clear) -> EngineJob:
        """The engine run of ``request`` (async agent and judge, awaited listener)."""
        ...


def run_sync(flow: Flow, host: SyncHost) -> FlowResult:
    """Drive ``flow`` on the calling thread.

    Args:
        flow: The flow generator.
        host: The integration's engine and event sink.

    Returns:
        The flow's result.
    """

    def handle(step: Step) -> Any:
        if isinstance(step, Notify):
            return host.notify(step.event)
        if isinstance(step, Clear):
            return run_engine(host.engine_job(step))
        return call_sync(step)

    return run_steps(flow, handle)


async def run_async(flow: Flow, host: AsyncHost) -> FlowResult:
    """Drive ``flow`` on the event loop (blocking calls in worker threads).

    Args:
        flow: The flow generator.
        host: The integration's engine and event sink.

    Returns:
        The flow's result.
    """

    async def handle(step: Step) -> Any:
        if isinstance(step, Notify):
            return await host.notify(step.event)
        if isinstance(step, Clear):
            return await arun_engine(host.engine_job(step))
        return await call_async(step)

    return await arun_steps(flow, handle)
