"""Write a flow once, run it sync or async: step generators and their two drivers.

The engine's pattern (Algorithm 1 as stage generators, :mod:`..stages`) applied to any
flow that does I/O: the flow is a generator that never does I/O itself. It yields steps;
a driver executes each step and sends its value back (or throws its exception in), so
the logic between the calls is written once and runs on both paths.

The common step is :class:`Call`, blocking work with an optional coroutine twin. Flows
with steps of their own (the engine's coalition batches, the query flow's events) pass a
``handle`` function that executes them and defers the rest to :func:`call_sync` /
:func:`call_async`. :func:`fan_out` is the step that runs several sub-flows: one after
another on the sync path, concurrently on the async one (an integration's batch of searches
or candidates).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from .workers import gather_or_cancel

__all__ = ["Call", "Steps", "arun_steps", "call_async", "call_sync", "fan_out", "run_steps"]

T = TypeVar("T")

Steps = Generator[Any, Any, T]
"""A flow: yields steps, receives each step's value, returns its result."""


@dataclass(frozen=True, slots=True)
class Call:
    """Blocking work: ``sync()`` on the sync path, ``asynchronous()`` awaited on the async one.

    Args:
        sync: The blocking call.
        asynchronous: Its coroutine twin (None: ``sync`` in a worker thread).
    """

    sync: Callable[[], Any]
    asynchronous: Callable[[], Awaitable[Any]] | None = None

    @classmethod
    def on_both(cls, call: Callable[[], Any]) -> Call:
        """The same call on both paths: it returns a coroutine on the async one.

        For a framework object whose sync and async variants share a method name (a run
        manager: ``on_chain_end`` returns None on the sync one and a coroutine on the async
        one).
        """
        return cls(call, call)

    def awaitable(self) -> Awaitable[Any]:
        """The coroutine the async driver awaits."""
        if self.asynchronous is not None:
            return self.asynchronous()
        return asyncio.to_thread(self.sync)


def call_sync(step: Any) -> Any:
    """Execute a :class:`Call` step on the calling thread.

    Raises:
        TypeError: ``step`` is not a :class:`Call` (the flow needs a ``handle``).
    """
    if isinstance(step, Call):
        return step.sync()
    raise TypeError(f"no handler for the step {type(step).__name__}")


async def call_async(step: Any) -> Any:
    """Execute a :class:`Call` step on the event loop.

    Raises:
        TypeError: ``step`` is not a :class:`Call` (the flow needs a ``handle``).
    """
    if isinstance(step, Call):
        return await step.awaitable()
    raise TypeError(f"no handler for the step {type(step).__name__}")


def run_steps(flow: Steps[T], handle: Callable[[Any], Any] = call_sync) -> T:
    """Drive ``flow`` on the calling thread.

    Each step's value is sent back into the flow; an exception a step raises (any
    ``BaseException``) is thrown into the flow at the ``yield``, so the flow's own
    ``try`` blocks see it exactly as straight-line code would.

    Args:
        flow: The step generator.
        handle: Executes one step and returns its value (default: :func:`call_sync`).

    Returns:
        What the flow returns.
    """
    value: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = flow.send(value) if failure is None else flow.throw(failure)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, failure = None, None
        try:
            value = handle(step)
        except BaseException as exc:
            failure = exc


async def arun_steps(flow: Steps[T], handle: Callable[[Any], Awaitable[Any]] = call_async) -> T:
    """Drive ``flow`` on the event loop (see :func:`run_steps`).

    Args:
        flow: The step generator.
        handle: Executes one step on the loop (default: :func:`call_async`).

    Returns:
        What the flow returns.
    """
    value: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = flow.send(value) if failure is None else flow.throw(failure)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, failure = None, None
        try:
            value = await handle(step)
        except BaseException as exc:
            failure = exc


def fan_out(flows: Iterable[Steps[Any]]) -> Call:
    """The step that runs ``flows`` and returns their results, in order.

    The sync path runs them one after another on the calling thread (the first failure
    stops the rest); the async path runs them concurrently on the loop, the first failure
    cancelling the others (:func:`~.workers.gather_or_cancel`). Each flow
    yields only :class:`Call` steps.

    Args:
        flows: The sub-flows (each a step generator, not yet started).

    Returns:
        A :class:`Call` whose value is the list of results.
    """
    pending = list(flows)

    def sync() -> list[Any]:
        return [run_steps(flow) for flow in pending]

    async def asynchronous() -> list[Any]:
        return await gather_or_cancel(arun_steps(flow) for flow in pending)

    return Call(sync, asynchronous)
