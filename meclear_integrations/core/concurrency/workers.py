"""Where concurrent calls run, and how they stop: daemon worker threads, tasks that cancel.

Blocking calls run on daemon worker threads, gated at the run's deadline; coroutines run
together as tasks of which the first failure cancels the rest (:func:`gather_or_cancel`).
Either way no call outlives the caller's interest in it.

**Worker threads.** Why not ``concurrent.futures.ThreadPoolExecutor`` /
``asyncio.to_thread``: their workers are non-daemon threads that ``threading._shutdown``
joins (through ``threading._register_atexit``) when the interpreter exits, and
``asyncio.run`` joins the loop's default executor before it returns. A provider call that
never returns would keep the process (or ``asyncio.run``) alive forever, whatever deadline
the run had. The workers here are **daemon threads**: nothing ever joins them, so an
abandoned call can neither delay the caller past its deadline nor keep the interpreter from
exiting (a daemon thread still running at exit is simply stopped with the process).

- :func:`submit` runs a function on a worker of the module's pool (idle workers are reused
  and exit after :data:`IDLE_SECONDS` without work; a busy or hung worker never blocks
  anyone). Each call runs in a copy of the submitter's context variables (tracing spans,
  callback managers, the call gate below).
- :func:`in_worker` awaits a blocking call from a coroutine without blocking the event
  loop; cancelling the awaiting task abandons the call (its result is discarded).
- The **call gate**: a context variable holding the run's
  :class:`~meclear_integrations.core.budget.RunBudget` while an evaluator call runs.
  Code that is about to start a model call on the engine's behalf calls
  :func:`check_call_allowed`; once the run's deadline has passed or the run was stopped
  (``RunBudget.close``), it raises :class:`~..errors.BudgetExceededError`, so an abandoned
  worker finishes the call it is in and starts no other one (the judge call after an
  abandoned agent call, a retry).
  :func:`remaining_call_seconds` tells code that waits before a model call (the shared
  call limiter) how long the run has left.

**Tasks.** ``asyncio.gather`` lets the siblings of a failed awaitable run on (and keep
calling models) after the caller has already received the error. :func:`gather_or_cancel` is the
equivalent of an ``asyncio.TaskGroup`` that raises the first error itself rather than an
``ExceptionGroup``: on the first failure, or when the caller is cancelled, every other
task is cancelled and awaited before the error propagates, so nothing outlives the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import math
import queue
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "IDLE_SECONDS",
    "call_gate",
    "check_call_allowed",
    "gather_or_cancel",
    "in_worker",
    "remaining_call_seconds",
    "submit",
]

T = TypeVar("T")

IDLE_SECONDS = 2.0
"""An idle pool worker exits after this many seconds without work."""


class _Gate(Protocol):
    def check_open(self) -> None: ...

    def remaining_seconds(self) -> float | None: ...


_GATE: contextvars.ContextVar[_Gate | None] = contextvars.ContextVar("meclear_gate", default=None)


@contextlib.contextmanager
def call_gate(gate: _Gate) -> Iterator[None]:
    """Make ``gate`` (a run budget) the gate of every model call made inside the block.

    Args:
        gate: the run's budget.

    Returns:
        A context manager.
    """
    token = _GATE.set(gate)
    try:
        yield
    finally:
        _GATE.reset(token)


def check_call_allowed() -> None:
    """Raise when the current run's deadline has passed or it was stopped.

    Raise ``BudgetExceededError`` when the current run's deadline has passed or the run
    was stopped; a no-op outside an engine run.
    """
    gate = _GATE.get()
    if gate is not None:
        gate.check_open()


def remaining_call_seconds() -> float | None:
    """Seconds before the current run's deadline, for code that waits before a model call.

    Returns:
        None outside an engine run, ``math.inf`` inside a run without a deadline, else the
        seconds left (may be <= 0).
    """
    gate = _GATE.get()
    if gate is None:
        return None
    remaining = gate.remaining_seconds()
    return math.inf if remaining is None else remaining


Job = Callable[[], None]


class _DaemonPool:
    """Unbounded pool of daemon threads (callers bound their own concurrency)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._idle = 0  # waiting workers not yet promised a job
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def submit(self, job: Job) -> None:
        with self._lock:
            reuse = self._idle > 0
            if reuse:
                self._idle -= 1
        if reuse:
            self._jobs.put(job)
            return
        thread = threading.Thread(
            target=self._work, args=(job,), name=f"{self._name}-{next(self._ids)}", daemon=True
        )
        thread.start()

    def _work(self, job: Job) -> None:
        while True:
            job()
            with self._lock:
                self._idle += 1
            while True:
                try:
                    job = self._jobs.get(timeout=IDLE_SECONDS)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # nobody promised us a job: retire
                            self._idle -= 1
                            return
                    # a submitter promised a job to a waiting worker: wait for it


_POOL = _DaemonPool("meclear-worker")


def submit(fn: Callable[[], Any]) -> None:
    """Run ``fn()`` on a daemon worker, in a copy of the caller's context.

    Exceptions are the caller's to catch inside ``fn``.

    Args:
        fn: the work.
    """
    context = contextvars.copy_context()
    _POOL.submit(lambda: context.run(fn))


async def in_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a daemon worker, awaited without blocking the loop.

    Cancelling the awaiting task abandons the call: the worker finishes it in the
    background and its result is discarded.

    Args:
        fn: the function.
        *args: its positional arguments.
        **kwargs: its keyword arguments.

    Returns:
        What ``fn`` returns.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
        except StopIteration as exc:  # a future cannot carry StopIteration
            outcome = (False, RuntimeError(f"the call raised StopIteration: {exc!r}"))
        except BaseException as exc:  # handed to the awaiting task
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting
            loop.call_soon_threadsafe(deliver, *outcome)

    submit(run)
    return await future


def map_in_workers(fn: Callable[[Any], T], items: list[Any], workers: int) -> list[T]:
    """``[fn(item) for item in items]`` on up to ``workers`` daemon workers, in order.

    Waits for every call, then raises the first error (if any). With one worker (or one
    item) the calls run inline.

    Args:
        fn: the function.
        items: its inputs.
        workers: the most workers used.

    Returns:
        The results, in order.
    """
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    pending = iter(range(len(items)))
    lock = threading.Lock()
    finished = threading.Event()
    running = [min(workers, len(items))]

    def work() -> None:
        try:
            while True:
                with lock:
                    index = None if errors else next(pending, None)
                if index is None:
                    return
                try:
                    results[index] = fn(items[index])
                except BaseException as exc:
                    with lock:
                        errors.append(exc)
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    finished.set()

    for _ in range(running[0]):
        submit(work)
    finished.wait()
    if errors:
        raise errors[0]
    return results


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
