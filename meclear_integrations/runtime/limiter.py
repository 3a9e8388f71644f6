"""A bound on model calls in flight, shared by queries, components, threads and event loops.

``ClearanceConfig.budget.max_concurrency`` bounds the evaluator calls of ONE query; six concurrent
queries still put six times that at the provider. A :class:`CallLimiter` bounds the total:
every model call the package makes on a component's behalf (the task agent's and the
judge's calls of a clearance, each ConMem admission call) first takes one of its
``max_in_flight`` slots and gives it back when the call returns. Pass one instance to
several components (``limiter=``) to bound a whole process; ``max_calls_in_flight=N`` on
a component builds one for that component alone.

- **Model calls, not evaluator calls.** The agent call and the judge call of one evaluator
  call are separate acquisitions, and a caller never holds a slot while it waits for
  another, so a limiter of 1 cannot deadlock (the judge's single-flight cache in
  ``judges.task`` waits without a slot). A nested acquisition of the same limiter in the
  same context (a model called inside a limited call) takes no second slot.
- **Threads and coroutines alike, first come first served.** A thread waits on a
  ``threading.Event``; a coroutine on a future of its own loop (woken with
  ``call_soon_threadsafe``), so waiting never blocks an event loop. One FIFO queue serves
  both; a freed slot passes straight to the oldest waiter. A cancelled waiter leaves the
  queue, or passes on the slot it was just given: cancellation never leaks a slot.
- **Deadlines.** Inside an engine run a wait never keeps the query past its wall bound
  (``max_wall_seconds``, read through ``core.concurrency.workers``' call gate): at the deadline the
  engine abandons the waiting call and stops the run, and the waiter leaves the queue,
  raising the engine's ``BudgetExceededError`` (reason ``"time_budget"``); nothing starts a
  model call after the deadline. A run nobody stops ends the wait
  :data:`DEADLINE_GRACE_SECONDS` after its deadline.
- **Pacing.** ``rate_limiter=`` takes any object with LangChain's rate-limiter interface
  (``acquire(blocking=...)`` / ``aacquire(blocking=...)``, e.g.
  ``langchain_core.rate_limiters.InMemoryRateLimiter``): after a caller gets its slot it
  takes one token, so call starts follow the rate. Tokens are asked for without blocking,
  four times per token interval (``requests_per_second``, when the rate limiter declares
  it), so the run's deadline holds and a one-token bucket loses little (LangChain's own
  blocking ``acquire`` checks every ``check_every_n_seconds``, 0.1 s, per waiter). Give
  the rate limiter to the limiter or to the chat model (``ChatOpenAI(rate_limiter=...)``),
  not both.
- **Counters.** :meth:`CallLimiter.stats` (in flight now, peak, acquisitions, waits, wait
  seconds); each acquisition yields a :class:`SlotTicket`, and a query's waits are summed
  by a :class:`WaitTally` (the integrations put it into the clearance end event).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..core.concurrency.workers import check_call_allowed, remaining_call_seconds
from ..core.errors import ConfigurationError

if TYPE_CHECKING:
    from ..core.concurrency.step_driver import Call, Steps

# ``core.concurrency.step_driver`` is imported where a flow is driven or a step made: a
# component's import stays within its cold-start budget (tests/integration_tests).

__all__ = [
    "CallLimiter",
    "LimiterStats",
    "RateLimiter",
    "SlotTicket",
    "WaitTally",
    "alimited",
    "limited",
    "limiter_summary",
    "limiting",
    "resolve_limiter",
]

POLL_SECONDS = 0.1
"""A thread waiting inside an engine run re-checks whether the run was stopped this often."""
PACE_SECONDS = 0.05
"""The longest pause between two asks for a token while pacing inside an engine run (a
rate limiter declaring ``requests_per_second`` is asked four times per token interval)."""
DEADLINE_GRACE_SECONDS = 0.25
"""A waiter outlives the run's deadline by this much before it gives up on its own: the
engine abandons the call at the deadline and stops the run first, which reports the
deadline as the run's (a waiter giving up at the same instant would race it and report an
evaluator error instead)."""

_HELD: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "meclear_limiter_slots", default=frozenset()
)


class RateLimiter(Protocol):
    """LangChain's rate-limiter interface (``langchain_core.rate_limiters.BaseRateLimiter``)."""

    def acquire(self, *, blocking: bool = True) -> bool:
        """Take a token (``blocking=False``: return False at once when there is none)."""
        ...

    async def aacquire(self, *, blocking: bool = True) -> bool:
        """Async :meth:`acquire`."""
        ...


@dataclass(frozen=True, slots=True)
class SlotTicket:
    """What one acquisition waited."""

    waited: bool
    """The caller found every slot taken (or no token) and waited."""
    wait_seconds: float
    """Seconds it waited for the slot and the token."""


FREE = SlotTicket(waited=False, wait_seconds=0.0)
"""The ticket of an acquisition that did not wait (or a nested one)."""


@dataclass(frozen=True, slots=True)
class LimiterStats:
    """The counters of a :class:`CallLimiter` (since it was made)."""

    max_in_flight: int
    """The bound."""
    in_flight: int
    """Slots held now."""
    waiting: int
    """Callers queued for a slot now."""
    peak_in_flight: int
    """Most slots held at once."""
    acquisitions: int
    """Slots granted (nested acquisitions not counted)."""
    waited: int
    """Acquisitions that had to wait (for a slot or a token)."""
    wait_seconds: float
    """Seconds spent waiting, summed over callers (waits that gave up included)."""
    gave_up: int
    """Waits that ended without a slot: the run's deadline, a stopped run, cancellation."""


class _Waiter:
    """One queued caller; ``granted`` is set under the limiter's lock."""

    __slots__ = ("granted",)

    def __init__(self) -> None:
        self.granted = False

    def wake(self) -> bool:
        raise NotImplementedError

    def waiting(self, timeout: float | None) -> Call:
        """The step that waits until woken or ``timeout`` seconds (None: no timeout)."""
        raise NotImplementedError

    def cancel(self) -> None:
        """The caller gives up its wait."""


class _ThreadWaiter(_Waiter):
    __slots__ = ("event",)

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def wake(self) -> bool:
        self.event.set()
        return True

    def waiting(self, timeout: float | None) -> Call:
        from ..core.concurrency.step_driver import Call

        return Call(partial(self.event.wait, timeout))


class _LoopWaiter(_Waiter):
    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()

    @classmethod
    async def running(cls) -> _LoopWaiter:
        """A waiter on the running loop."""
        return cls(asyncio.get_running_loop())

    def wake(self) -> bool:
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future)
        except RuntimeError:  # the loop is closed: nobody will take the slot
            return False
        return True

    def waiting(self, timeout: float | None) -> Call:
        from ..core.concurrency.step_driver import Call

        return Call(_never, partial(asyncio.wait, {self.future}, timeout=timeout))

    def cancel(self) -> None:
        self.future.cancel()


def _never() -> None:
    raise RuntimeError("a loop waiter waits on its event loop only")


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class CallLimiter:
    """At most ``max_in_flight`` model calls at once, optionally paced by a rate limiter.

    Args:
        max_in_flight: The most model calls in flight at once (>= 1).
        rate_limiter: Paces call starts (LangChain's ``acquire`` / ``aacquire`` interface,
            e.g. ``InMemoryRateLimiter(requests_per_second=5)``); None: no pacing.
        clock: Monotonic clock for the wait counters (injectable in tests).

    Raises:
        ConfigurationError: ``max_in_flight`` < 1, or a ``rate_limiter`` without
            ``acquire``.

    Example:
        >>> from meclear_integrations.runtime.limiter import CallLimiter
        >>> limiter = CallLimiter(2)
        >>> with limiter.slot() as ticket:
        ...     limiter.stats().in_flight, ticket.waited
        (1, False)
        >>> limiter.stats().acquisitions, limiter.stats().in_flight
        (1, 0)
    """

    def __init__(
        self,
        max_in_flight: int,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int):
            raise ConfigurationError(f"max_in_flight must be an int, got {max_in_flight!r}")
        if max_in_flight < 1:
            raise ConfigurationError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if rate_limiter is not None and not callable(getattr(rate_limiter, "acquire", None)):
            raise ConfigurationError(
                "rate_limiter needs acquire(blocking=...) (LangChain's BaseRateLimiter "
                f"interface); got {type(rate_limiter).__name__}"
            )
        self.max_in_flight = max_in_flight
        self.rate_limiter = rate_limiter
        self.clock = clock
        self._lock = threading.Lock()
        self._waiters: deque[_Waiter] = deque()
        self._in_flight = 0
        self._peak = 0
        self._acquisitions = 0
        self._waited = 0
        self._wait_seconds = 0.0
        self._gave_up = 0

    def __repr__(self) -> str:
        paced = "" if self.rate_limiter is None else f", rate_limiter={self.rate_limiter!r}"
        return f"CallLimiter({self.max_in_flight}{paced})"

    def stats(self) -> LimiterStats:
        """The counters now.

        Returns:
            In flight and queued now, peak, acquisitions, waits, wait seconds and waits
            given up.
        """
        with self._lock:
            return LimiterStats(
                max_in_flight=self.max_in_flight,
                in_flight=self._in_flight,
                waiting=len(self._waiters),
                peak_in_flight=self._peak,
                acquisitions=self._acquisitions,
                waited=self._waited,
                wait_seconds=self._wait_seconds,
                gave_up=self._gave_up,
            )

    # ------------------------------------------------------------------ slots
    def _try_take(self) -> bool:
        """Take a free slot when nobody is queued (under the lock)."""
        if self._in_flight < self.max_in_flight and not self._waiters:
            self._in_flight += 1
            self._acquisitions += 1
            self._peak = max(self._peak, self._in_flight)
            return True
        return False

    def _release(self) -> None:
        """Give a slot back: to the oldest waiter, or to the pool."""
        while True:
            with self._lock:
                if not self._waiters:
                    self._in_flight -= 1
                    return
                waiter = self._waiters.popleft()
                waiter.granted = True  # the slot changes hands: in_flight unchanged
                self._acquisitions += 1
            if waiter.wake():
                return
            # its loop is gone: the slot goes to the next waiter

    def _abandon(self, waiter: _Waiter, started: float) -> None:
        """A waiter gives up: leave the queue, or pass on the slot it was just given."""
        with self._lock:
            granted = waiter.granted
            if not granted:
                self._waiters.remove(waiter)
            self._gave_up += 1
            self._wait_seconds += self.clock() - started
        if granted:
            self._release()

    def _count(
        self, slot_wait: float | None, pace_wait: float | None, *, gave_up: bool = False
    ) -> SlotTicket:
        """Book an acquisition's waits (None: it did not wait for that)."""
        if slot_wait is None and pace_wait is None and not gave_up:
            return FREE
        seconds = (slot_wait or 0.0) + (pace_wait or 0.0)
        with self._lock:
            self._wait_seconds += seconds
            if gave_up:
                self._gave_up += 1
            else:
                self._waited += 1
        return SlotTicket(waited=True, wait_seconds=seconds)

    @staticmethod
    def _timeout() -> float | None:
        """How long to wait before looking at the run again (None: outside a run).

        Raises:
            BudgetExceededError: The run was stopped, or its deadline passed more than
                :data:`DEADLINE_GRACE_SECONDS` ago.
        """
        remaining = remaining_call_seconds()
        if remaining is None:
            return None
        if remaining > 0.0 or remaining <= -DEADLINE_GRACE_SECONDS:
            check_call_allowed()
        return max(0.0, min(POLL_SECONDS, remaining + DEADLINE_GRACE_SECONDS))

    def _acquiring(self) -> Steps[float | None]:
        """Take a slot, waiting in the queue for one; seconds waited (None: it did not wait).

        A thread blocks on its waiter's event, a coroutine awaits its future (never
        blocking the loop).
        """
        from ..core.concurrency.step_driver import Call

        check_call_allowed()
        waiter: _Waiter = yield Call(_ThreadWaiter, _LoopWaiter.running)
        with self._lock:
            if self._try_take():
                return None
            self._waiters.append(waiter)
        started = self.clock()
        try:
            while True:
                yield waiter.waiting(self._timeout())  # raises once the run is over
                with self._lock:
                    if waiter.granted:
                        return self.clock() - started
        except BaseException:  # cancellation included: never leak the slot
            waiter.cancel()
            self._abandon(waiter, started)
            raise

    # ------------------------------------------------------------------ pacing
    def _pace_seconds(self) -> float:
        """The pause between two asks for a token.

        Short against the token interval: a bucket of one token loses what accrues while
        nobody asks.
        """
        rate = getattr(self.rate_limiter, "requests_per_second", None)
        if isinstance(rate, int | float) and rate > 0:
            return max(0.002, min(PACE_SECONDS, 0.25 / rate))
        return PACE_SECONDS

    def _pause(self) -> float:
        """How long to sleep before asking for a token again (raises once the run is over)."""
        timeout = self._timeout()
        pause = self._pace_seconds()
        return pause if timeout is None else min(pause, timeout)

    def _pacing(self) -> Steps[float | None]:
        """Take one token of the rate limiter; seconds waited (None: it did not wait).

        Tokens are asked for without blocking (``acquire(blocking=False)``; on the event
        loop ``aacquire``, or ``acquire`` when the limiter has none) every
        :meth:`_pace_seconds`, so that the run's deadline holds.
        """
        from ..core.concurrency.step_driver import Call

        limiter = self.rate_limiter
        if limiter is None:
            return None
        aacquire = getattr(limiter, "aacquire", None)
        take = Call(
            partial(limiter.acquire, blocking=False),
            partial(_take_async, limiter, aacquire),
        )
        if (yield take):
            return None
        started = self.clock()
        while True:
            pause = self._pause()
            yield Call(partial(time.sleep, pause), partial(asyncio.sleep, pause))
            if (yield take):
                return self.clock() - started

    # ------------------------------------------------------------------ public
    @contextlib.contextmanager
    def slot(self) -> Iterator[SlotTicket]:
        """Hold one slot (and a token) for the model call inside the block (blocking).

        Returns:
            A context manager yielding the acquisition's :class:`SlotTicket`.

        Raises:
            BudgetExceededError: The engine run's deadline passed, or the run was stopped,
                before the call could start.
        """
        from ..core.concurrency.step_driver import run_steps

        with self._holding(run_steps(self._entering())) as ticket:
            yield ticket

    @contextlib.asynccontextmanager
    async def aslot(self) -> AsyncIterator[SlotTicket]:
        """Async twin of :meth:`slot`: waiting for the slot never blocks the loop."""
        from ..core.concurrency.step_driver import arun_steps

        with self._holding(await arun_steps(self._entering())) as ticket:
            yield ticket

    def _entering(self) -> Steps[SlotTicket | None]:
        """:meth:`slot`'s steps up to the call: a slot, then a token (None: nested)."""
        key = id(self)
        if key in _HELD.get():
            return None
        waited = yield from self._acquiring()
        _HELD.set(_HELD.get() | {key})
        try:
            paced = yield from self._pacing()
            check_call_allowed()  # the wait may have outlived the run
        except BaseException:
            self._count(waited, None, gave_up=True)
            self._leave()
            raise
        return self._count(waited, paced)

    @contextlib.contextmanager
    def _holding(self, ticket: SlotTicket | None) -> Iterator[SlotTicket]:
        """Hold the slot :meth:`_entering` took until the block ends (None: nested)."""
        if ticket is None:
            yield FREE
            return
        try:
            yield ticket
        finally:
            self._leave()

    def _leave(self) -> None:
        """Give the slot back and forget that this context holds it."""
        _HELD.set(_HELD.get() - {id(self)})
        self._release()


async def _take_async(limiter: RateLimiter, aacquire: Callable[..., Any] | None) -> bool:
    """One token without blocking, on the loop (``aacquire``, else ``acquire``)."""
    if aacquire is not None:
        return bool(await aacquire(blocking=False))
    return limiter.acquire(blocking=False)


class WaitTally:
    """What one query's acquisitions waited (thread-safe)."""

    def __init__(self) -> None:
        self.acquisitions = 0
        self.waited = 0
        self.wait_seconds = 0.0
        self._lock = threading.Lock()

    def add(self, ticket: SlotTicket) -> None:
        """Count one acquisition.

        Args:
            ticket: What it waited.
        """
        with self._lock:
            self.acquisitions += 1
            self.waited += int(ticket.waited)
            self.wait_seconds += ticket.wait_seconds


@contextlib.contextmanager
def limited(limiter: CallLimiter | None, tally: WaitTally | None = None) -> Iterator[None]:
    """``limiter.slot()`` counted in ``tally``; nothing when ``limiter`` is None.

    Args:
        limiter: The limiter, or None.
        tally: Where the acquisition's wait is counted.

    Returns:
        A context manager.
    """
    from ..core.concurrency.step_driver import run_steps

    with run_steps(limiting(limiter, tally)):
        yield


@contextlib.asynccontextmanager
async def alimited(
    limiter: CallLimiter | None, tally: WaitTally | None = None
) -> AsyncIterator[None]:
    """Async twin of :func:`limited` (``limiter.aslot()``)."""
    from ..core.concurrency.step_driver import arun_steps

    with await arun_steps(limiting(limiter, tally)):
        yield


def limiting(
    limiter: CallLimiter | None, tally: WaitTally | None = None
) -> Steps[contextlib.AbstractContextManager[None]]:
    """:func:`limited` as steps, for a flow written once (``core.concurrency.step_driver``).

    The steps wait for the slot (and the token); enter the context manager they return at
    once: it holds the slot until its block ends and counts the acquisition in ``tally``.

    Args:
        limiter: The limiter, or None (no steps, nothing held).
        tally: Where the acquisition's wait is counted.

    Returns:
        The steps, returning the context manager.
    """
    if limiter is None:
        return contextlib.nullcontext()
    ticket = yield from limiter._entering()
    return _counted(limiter._holding(ticket), tally)


@contextlib.contextmanager
def _counted(
    holding: contextlib.AbstractContextManager[SlotTicket], tally: WaitTally | None
) -> Iterator[None]:
    """Hold the slot of ``holding``, its acquisition counted in ``tally``."""
    with holding as ticket:
        if tally is not None:
            tally.add(ticket)
        yield


def resolve_limiter(
    limiter: CallLimiter | None, max_calls_in_flight: int | None
) -> CallLimiter | None:
    """A component's limiter: the shared one given, or its own of ``max_calls_in_flight``.

    Args:
        limiter: A limiter to share (``limiter=``).
        max_calls_in_flight: The bound of a limiter of the component's own.

    Returns:
        The limiter, or None (no bound).

    Raises:
        ConfigurationError: Both are given.
    """
    if limiter is not None and max_calls_in_flight is not None:
        raise ConfigurationError(
            "pass limiter=CallLimiter(...) (shared) or max_calls_in_flight=N (this component's "
            "own), not both"
        )
    if max_calls_in_flight is not None:
        return CallLimiter(max_calls_in_flight)
    return limiter


def limiter_summary(limiter: CallLimiter, tally: WaitTally) -> dict[str, Any]:
    """The ``limiter`` entry of a clearance end event.

    Args:
        limiter: The component's limiter.
        tally: The query's acquisitions.

    Returns:
        The bound, the limiter's peak so far, and the query's acquisitions and waits.
    """
    stats = limiter.stats()
    return {
        "max_in_flight": stats.max_in_flight,
        "peak_in_flight": stats.peak_in_flight,
        "acquisitions": tally.acquisitions,
        "waited": tally.waited,
        "wait_seconds": round(tally.wait_seconds, 6),
    }
