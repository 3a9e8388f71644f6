"""A circuit breaker over clearances: stop paying a provider outage on every query.

One :class:`CircuitBreaker` belongs to a component instance (the LangChain
``ClearingRetriever`` / ``MeClearCompressor``, the LlamaIndex ``MeClearPostprocessor``);
pass the same instance to several components to share it. Every clearance asks it first
(:meth:`CircuitBreaker.admit`) and reports how the clearance went
(:meth:`CircuitBreaker.record`):

- **closed** (normal): every query runs. ``failures`` consecutive clearances that failed
  because of the provider (a transient error after the engine's retries: timeouts,
  connection refused, 429, 5xx; or the per-query wall bound running out while calls
  hung) open it. A clearance that got its model calls answered closes the count.
- **open**: queries skip clearance at once (``status="skipped"``, reason
  ``circuit_open``, no model call) for ``cooldown_seconds``.
- **half-open** (after the cool-down): one query runs as a probe while the others keep
  skipping; its success closes the breaker, its failure opens it for another cool-down.

Outcomes that say nothing about the provider (a skipped query, a call budget, a
rejection of one query's content, a permanent failure that raises) neither count nor
close.

**Provider health, not one query's content.** A hostile memory can make every call that
carries it slow or refused; the queries that retrieve it then time out, but the provider is
healthy and other users' queries must keep their clearance. So:

- a query counts at most once, whatever number of its calls failed;
- a query some of whose calls were answered (the provider works; only calls carrying
  some content failed) does not count (``guard.live_bounds.provider_outcome``);
- content rejections (``content_rejected``: context length, content filter) never count;
- the breaker is told each query's memory ids (:meth:`CircuitBreaker.record`,
  :meth:`CircuitBreaker.admit`). When the consecutive failures that open it all carried
  some memories, it opens **for those memories only**: a query carrying all of them skips
  clearance, every other query runs as if it were closed (and its success closes the
  breaker: the provider answers). When no memory is common to the failures (a real outage
  fails queries with different contexts) it opens for every query. So a hostile memory
  can at worst stop clearance of the queries that retrieve it, never another user's.

A judge that keeps failing the protocol (no readable verdict after its retries, on every
call of a query) counts as a provider failure too: a model that never gives a verdict
opens the breaker instead of costing every query its retries.

Why not a library: ``pybreaker`` holds its lock for the whole guarded call (a breaker
shared by concurrent queries would run them one at a time) and needs tornado for
coroutines; ``purgatory`` keeps separate, unlocked state for its sync and async
factories (one component's ``invoke`` and ``ainvoke`` would not share a breaker); both
let every concurrent call through when half-open, so the end of a cool-down would send a
burst of queries at a dead provider, each paying the wall bound. The state machine here
is a few lines under one lock, shared by threads and asyncio tasks, with one probe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Admission", "BreakerState", "CircuitBreaker", "Outcome"]

logger = logging.getLogger("meclear_integrations")

BreakerState = Literal["closed", "open", "half_open"]
Outcome = Literal["success", "failure", "neutral"]


@dataclass(frozen=True, slots=True)
class Admission:
    """The breaker's answer for one query."""

    admitted: bool
    """Run clearance (False: skip it, reason ``circuit_open``)."""
    probe: bool
    """This query is the half-open probe (its outcome closes or re-opens the breaker)."""
    state: BreakerState
    """The breaker's state when asked."""
    failures: int
    """Consecutive provider failures counted so far."""
    retry_in: float
    """Seconds until the breaker lets a probe through (0 when admitted)."""

    def payload(self) -> dict[str, object]:
        """The breaker's part of a skip event."""
        return {
            "state": self.state,
            "failures": self.failures,
            "retry_in_seconds": round(self.retry_in, 3),
        }


class CircuitBreaker:
    """Skips clearance for a cool-down after consecutive provider failures.

    Thread-safe and asyncio-safe (no call awaits under the lock); see the module docstring.

    Args:
        failures: Consecutive provider failures that open the breaker (>= 1).
        cooldown_seconds: How long an open breaker skips clearance before a probe (> 0).
        clock: A monotonic clock in seconds (injectable in tests).

    Raises:
        ValueError: For a bad ``failures`` or ``cooldown_seconds``.
    """

    def __init__(
        self,
        failures: int = 3,
        cooldown_seconds: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ValueError(f"failures must be an int >= 1, got {failures!r}")
        if not isinstance(cooldown_seconds, int | float) or not cooldown_seconds > 0:
            raise ValueError(f"cooldown_seconds must be > 0, got {cooldown_seconds!r}")
        self.failures = failures
        self.cooldown_seconds = float(cooldown_seconds)
        self.clock = clock
        self._state: BreakerState = "closed"
        self._count = 0
        self._opened_at = 0.0
        self._probing = False
        self._shared: frozenset[str] | None = None
        self._scope: frozenset[str] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker(failures={self.failures}, "
            f"cooldown_seconds={self.cooldown_seconds}, state={self.state!r})"
        )

    @property
    def state(self) -> BreakerState:
        """The state: ``closed``, ``open`` or ``half_open``.

        An open breaker whose cool-down is over reads ``half_open``.
        """
        with self._lock:
            if self._state == "open" and self._cooled_down():
                return "half_open"
            return self._state

    def _cooled_down(self) -> bool:
        return self.clock() - self._opened_at >= self.cooldown_seconds

    def admit(self, memory_ids: Iterable[str] | None = None) -> Admission:
        """Whether a query may run clearance now (a half-open breaker admits one probe).

        Args:
            memory_ids: The query's memories. A breaker opened by failures that all shared
                some memories (their content, not the provider) only declines queries that
                carry all of them; any other query runs as if it were closed.

        Returns:
            The :class:`Admission`; an admitted query must :meth:`record` its outcome.
        """
        with self._lock:
            if self._state == "open" and self._cooled_down():
                self._state = "half_open"
                logger.info("MeClear circuit breaker half-open: one query probes the provider")
            if self._state == "closed":
                return Admission(True, False, "closed", self._count, 0.0)
            if self._scope and memory_ids is not None and not self._scope <= set(memory_ids):
                return Admission(True, False, "closed", 0, 0.0)  # not the suspect content
            if self._state == "half_open" and not self._probing:
                self._probing = True
                return Admission(True, True, "half_open", self._count, 0.0)
            retry_in = max(0.0, self._opened_at + self.cooldown_seconds - self.clock())
            return Admission(False, False, self._state, self._count, retry_in)

    def record(
        self,
        outcome: Outcome,
        *,
        probe: bool = False,
        memory_ids: Iterable[str] | None = None,
    ) -> None:
        """Report how an admitted clearance went.

        Args:
            outcome: ``success`` closes the breaker, ``failure`` counts or re-opens it,
                ``neutral`` only frees the probe slot.
            probe: The query was admitted as the half-open probe.
            memory_ids: The query's memories (None: unknown). Consecutive failures whose
                contexts all share a memory do not open the breaker (module docstring).
        """
        with self._lock:
            if probe:
                self._probing = False
            if outcome == "success":
                if self._state != "closed":
                    logger.warning("MeClear circuit breaker closed: the provider answers again")
                self._state, self._count, self._shared = "closed", 0, None
                self._scope = None
            elif outcome == "failure":
                self._count += 1
                ids = frozenset(memory_ids) if memory_ids is not None else frozenset()
                self._shared = ids if self._shared is None else self._shared & ids
                reopen = probe or self._state == "half_open"
                widen = self._state != "closed" and bool(self._scope) and not self._shared
                if reopen or widen or (self._state == "closed" and self._count >= self.failures):
                    self._open()

    def _open(self) -> None:
        self._state, self._opened_at = "open", self.clock()
        self._scope = self._shared or None
        if self._scope:
            logger.warning(
                "MeClear circuit breaker open for queries carrying %d memories common to "
                "%d consecutive failures (their content, not the provider): those queries "
                "skip clearance for %.1fs; every other query runs",
                len(self._scope),
                self._count,
                self.cooldown_seconds,
            )
            return
        logger.warning(
            "MeClear circuit breaker open after %d consecutive provider failures: clearance "
            "is skipped for %.1fs (status='skipped', reason 'circuit_open')",
            self._count,
            self.cooldown_seconds,
        )

    def reset(self) -> None:
        """Close the breaker and forget the failures."""
        with self._lock:
            self._state, self._count, self._probing = "closed", 0, False
            self._shared = self._scope = None
