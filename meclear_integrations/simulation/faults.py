"""Faults the stand-in model injects: seeded random ones (``meclear soak``) or scripted ones.

A fault is an exception (the call raises it) or a string (the call returns it as its reply).
:class:`RandomFaults` faults a seeded random ``rate`` share of calls with one of
:data:`FAULT_KINDS`, drawn uniformly: ``TimeoutError``, HTTP 429 with ``retry-after-ms``,
HTTP 429 without it, HTTP 500, ``ConnectionError`` (all transient, so retried), or a garbage
reply (``%%% <garbage> %%%``: a wrong answer for the agent, an unreadable verdict for a
judge). Calls whose prompt contains ``outage_marker`` always fault: a deterministic,
query-specific outage, independent of how concurrent calls interleave. :class:`ScriptedFaults`
faults chosen calls by number (or every call: a dead provider). Simulated, not a provider.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Protocol, TypeAlias, runtime_checkable

__all__ = [
    "FAULT_KINDS",
    "GARBAGE",
    "Fault",
    "Faults",
    "RandomFaults",
    "ScriptedFaults",
    "SimulatedHTTPError",
]

Fault: TypeAlias = BaseException | str
"""An exception the call raises, or the text it returns instead of the reply."""

FAULT_KINDS = ("timeout", "429", "429-no-retry-after", "500", "connection", "garbage")
"""The faults :class:`RandomFaults` injects, drawn uniformly."""
GARBAGE = "%%% <garbage> %%%"
"""The reply of a ``garbage`` fault."""


@runtime_checkable
class Faults(Protocol):
    """Which calls of the stand-in fault, and how."""

    def draw(self, prompt: str, number: int) -> Fault | None:
        """The fault of call ``number`` (1-based) on ``prompt``, or None to answer it.

        Args:
            prompt: The prompt of the call.
            number: The call's number (1-based, every call counted).

        Returns:
            The fault, or None.
        """
        ...


class _Response:
    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers


class SimulatedHTTPError(Exception):
    """An HTTP error shaped like a provider client's (``status_code``, ``response``)."""

    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"simulated HTTP {status_code}")
        self.status_code = status_code
        self.response = _Response(status_code, headers or {})


def fault_of_kind(kind: str) -> Fault:
    """The fault of one of :data:`FAULT_KINDS`.

    Args:
        kind: The kind's name.

    Returns:
        The exception to raise, or the garbage reply.
    """
    if kind == "timeout":
        return TimeoutError("simulated model timeout")
    if kind == "429":
        return SimulatedHTTPError(429, {"retry-after-ms": "1"})
    if kind == "429-no-retry-after":
        return SimulatedHTTPError(429)
    if kind == "500":
        return SimulatedHTTPError(500)
    if kind == "connection":
        return ConnectionError("simulated connection reset")
    return GARBAGE


class RandomFaults:
    """A seeded random ``rate`` share of calls fault (see the module docstring).

    The draws follow the order of the calls (one seeded generator, under a lock).

    Args:
        rate: Share of calls that fail or return garbage.
        seed: Seed of the fault draws.
        kinds: Which of :data:`FAULT_KINDS` may be injected.
        outage_marker: Calls whose prompt contains this text always fault (None: no outage).
    """

    def __init__(
        self,
        rate: float = 0.1,
        *,
        seed: int = 0,
        kinds: tuple[str, ...] = FAULT_KINDS,
        outage_marker: str | None = None,
    ) -> None:
        unknown = sorted(set(kinds) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; expected some of {FAULT_KINDS}")
        self.rate = rate
        self.kinds = tuple(kinds)
        self.outage_marker = outage_marker
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self, prompt: str, number: int) -> Fault | None:
        """A fault on the outage marker or on a seeded ``rate`` share of calls, else None.

        Args:
            prompt: The prompt of the call.
            number: The call's number (unused: the draws follow the call order).

        Returns:
            The fault, or None.
        """
        outage = self.outage_marker is not None and self.outage_marker in prompt
        with self._lock:
            if not outage and self._rng.random() >= self.rate:
                return None
            kind = self._rng.choice(self.kinds)
        return fault_of_kind(kind)


class ScriptedFaults:
    """Call ``n`` (1-based) faults with ``by_call[n]``; ``every``: every call faults with it.

    Args:
        by_call: Call number -> fault.
        every: A fault for every call (e.g. a dead provider; None: only ``by_call``).
    """

    def __init__(self, by_call: Mapping[int, Fault] | None = None, *, every: Fault | None = None):
        self.by_call = dict(by_call or {})
        self.every = every

    def draw(self, prompt: str, number: int) -> Fault | None:
        """The scripted fault of call ``number``, or None.

        Args:
            prompt: The prompt of the call (unused).
            number: The call's number (1-based).

        Returns:
            The fault, or None.
        """
        return self.every if self.every is not None else self.by_call.get(number)
