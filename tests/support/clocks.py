"""Fake clocks: tests advance time themselves, nothing waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class Clock:
    """A settable epoch clock (seconds); set ``now`` to move it."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class StepClock:
    """A clock that advances one second per reading (distinct, ordered timestamps)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now
