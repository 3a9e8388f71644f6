"""Running coroutines together so that one failure cancels the others.

``asyncio.gather`` lets the siblings of a failed awaitable run on (and keep calling
models) after the caller has already received the error. :func:`gather_or_cancel` is the
equivalent of an ``asyncio.TaskGroup`` that raises the first error itself rather than an
``ExceptionGroup``: on the first failure, or when the caller is cancelled, every other
task is cancelled and awaited before the error propagates, so nothing outlives the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import TypeVar

__all__ = ["gather_or_cancel"]

T = TypeVar("T")


async def _cancel_all(tasks: Sequence[asyncio.Future[T]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def gather_or_cancel(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``awaitables`` in order; the first error cancels the rest.

    Args:
        awaitables: the work to run concurrently.

    Returns:
        The results, in order.

    Raises:
        Exception: the first error, after the rest were cancelled.
    """
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # the caller was cancelled
        await _cancel_all(tasks)
        raise
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            await _cancel_all(tasks)
            raise task.exception()  # type: ignore[misc]
    return [task.result() for task in tasks]
