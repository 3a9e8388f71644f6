"""Fixtures of the background-mode tests: a ledger file, a job table on it, the case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meclear_integrations.ledger import HarmLedger
from meclear_integrations.simulation import SimulatedCase, redundant_harm_example


class Clock:
    """A settable epoch clock for the job table (no real waiting)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def case() -> SimulatedCase:
    return redundant_harm_example()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[HarmLedger]:
    with HarmLedger(tmp_path / "ledger.db") as store:
        yield store


@pytest.fixture
def clock() -> Clock:
    return Clock()
