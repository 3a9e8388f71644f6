"""The two drivers of the query flow: one sync, one async (the engine's pattern).

The flow yields steps (:mod:`.steps`); a driver executes each and sends the value back, or
throws the step's exception into the flow. What the integration supplies is a
:class:`Host`: how to run the engine and how to report an event.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..core.report import ClearanceReport
from ..core.step_driver import arun_steps, call_async, call_sync, run_steps
from .steps import Clear, Flow, FlowEvent, FlowResult, Notify, Step

__all__ = ["AsyncHost", "SyncHost", "run_async", "run_sync"]


class SyncHost(Protocol):
    """What the sync driver needs from an integration."""

    def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    def clear(self, request: Clear) -> ClearanceReport:
        """Run the engine (the integration's agent, judge and listener)."""
        ...


class AsyncHost(Protocol):
    """What the async driver needs from an integration."""

    async def notify(self, event: FlowEvent) -> None:
        """Report ``event``."""

    async def clear(self, request: Clear) -> ClearanceReport:
        """Run the engine on the event loop."""
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
            return host.clear(step)
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
            return await host.clear(step)
        return await call_async(step)

    return await arun_steps(flow, handle)
